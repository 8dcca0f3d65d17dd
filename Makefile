# Two entry points for a fresh clone (see README):
#   make demo  – set everything up, run the demo on the built-in examples
#   make test  – set everything up, run the whole test suite
# Everything lives in ./.venv; torch is pinned to the local CPU wheel here only
# (the package itself supports torch>=2.4 on Python 3.9-3.13: `make matrix` tests the oldest and the newest).
PY      ?= python3
VENV    := .venv
VPY     := $(VENV)/bin/python
TORCH   ?= torch==2.13.0
STAMP   := $(VENV)/.setup-done
# pytest-xdist: `make test`, `make test-fast` and `make test-python` run pytest in WORKERS processes (auto: one per
# core). Tests that share something expensive or must not overlap carry @pytest.mark.xdist_group: one worker runs
# each group. WORKERS=0: one process, no xdist.
WORKERS ?= auto
XDIST   := -n $(WORKERS) --dist loadgroup
BUNDLE  := graphwidget/static/widget.js

.PHONY: setup need-node native demo test test-fast test-python lint matrix bench js clean browser

$(VPY):
	@echo "== creating the virtualenv $(VENV)"
	$(PY) -m venv $(VENV)
	$(VPY) -m pip install -q --upgrade pip

browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "installing Debian's chromium (browser tests)"; \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq chromium fonts-liberation >/dev/null; \
	  else sudo apt-get update -qq && sudo apt-get install -y -qq chromium fonts-liberation >/dev/null; fi; }

# Each step says what it is doing first: the first one downloads torch and takes minutes. pip runs without -q so its
# progress shows.
$(STAMP): $(VPY) pyproject.toml js/package.json
	@echo "== installing $(TORCH) for the CPU (once; ~1 GB, a few minutes on a first run)"
	$(VPY) -m pip install --progress-bar on "$(TORCH)"
	@echo "== installing graphwidget (editable) with its dev extra: jupyterlab, playwright, transformers, pytest, ... (once)"
	$(VPY) -m pip install --progress-bar on -e ".[dev]"
	@echo "== installing anywidget 0.9.0 beside the newest (tests/test_house.py runs the widget on the oldest supported)"
	$(VPY) -m pip install -q --no-deps --target $(VENV)/anywidget-oldest "anywidget==0.9.0"
	touch $(STAMP)

# The compiled capture core (graphwidget/capturing/native/): a few minutes of g++, once per environment, built into
# ~/.cache/graphwidget/native/<this venv>. Without a compiler graphwidget still works (pure Python, slower on big
# graphs), so `make native` goes on; `make test` requires it. `make demo` does not wait for it.
native: $(STAMP)
	@echo "== the optional compiled capture core (a few minutes of g++, once per environment)"
	$(VPY) -m graphwidget build-native || echo "graphwidget: continuing without the compiled capture core"

setup: need-node $(STAMP) native

# The editable install builds the viewer with Node.js (hatch_build.py): say so before downloading torch (~1 GB).
need-node:
	@if [ -f graphwidget/static/viewer.js ] && [ -f graphwidget/static/widget.js ]; then exit 0; fi; \
	if command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; then exit 0; fi; \
	echo "graphwidget: this needs Node.js 18+ with npm to build the viewer (Debian/Ubuntu: apt-get install nodejs npm;"; \
	echo "  or https://nodejs.org). Nothing was downloaded. Without Node: pip install a wheel built elsewhere (README, Install)."; \
	exit 1

js: $(STAMP)
	cd js && npm install --no-audit --no-fund && npm run build

# The demo runs on whichever engine is there (pure Python on a fresh clone: the built-in examples are small); the
# compiled core is left to `make native` / `make test` so the demo is not minutes of g++ away.
demo: need-node $(STAMP)
	@echo "== running the demo (python -m graphwidget demo --out out)"
	$(VPY) -m graphwidget demo --out out

# The whole suite: the front end's own tests, then every pytest test (browser, JupyterLab, slow ones included) in
# parallel, with the compiled core required; the few marked `timing` (a measured speed-up must show) after, alone.
test: setup browser
	cd js && npm install --no-audit --no-fund --silent && npm run build && npm test
	GRAPHWIDGET_REQUIRE_NATIVE=1 $(VPY) -m pytest -q $(XDIST) -m "not timing" tests; status=$$?; \
	GRAPHWIDGET_REQUIRE_NATIVE=1 $(VPY) -m pytest -q -m timing tests || status=1; exit $$status

# A contributor's loop (~2-3 min on 2 cores): everything but the tests marked slow, in parallel; browser tests
# included (the bundle is rebuilt when a js/ source changed). The core is used when built, not required.
test-fast: $(STAMP) browser $(BUNDLE)
	$(VPY) -m pytest -q $(XDIST) -m "not slow" tests

$(BUNDLE): $(shell find js/src -type f 2>/dev/null) js/build.mjs js/package.json
	@echo "== building the front-end bundle (js/)"
	cd js && npm install --no-audit --no-fund --silent && npm run build
	touch $(BUNDLE) graphwidget/static/viewer.js

PYTHON_ONLY := --ignore=tests/browser --ignore=tests/jupyter --ignore=tests/bench --ignore=tests/test_install.py
# The non-browser suite on the pure-Python engine (what a plain `pip install` user runs).
test-python: $(STAMP)
	GRAPHWIDGET_NATIVE=0 $(VPY) -m pytest -q $(XDIST) tests $(PYTHON_ONLY) -m "not browser and not jupyterlab and not timing"; \
	  status=$$?; \
	GRAPHWIDGET_NATIVE=0 $(VPY) -m pytest -q tests $(PYTHON_ONLY) -m "timing and not browser and not jupyterlab" || status=1; \
	  exit $$status

# ruff (config in pyproject.toml) and mypy (the package ships py.typed)
lint: $(STAMP)
	$(VPY) -m ruff check graphwidget tests
	$(VPY) -m mypy

# Fresh venvs in /tmp for the oldest and the newest supported torch and Python, installed from a wheel (.ci/matrix).
matrix: $(STAMP)
	.ci/matrix

bench: setup
	$(VPY) tests/bench/bench_capture.py

clean:
	-$(VPY) -m graphwidget build-native --clean
	rm -rf $(VENV) js/node_modules graphwidget/static out dist
