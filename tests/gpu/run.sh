#!/usr/bin/env bash
# The GPU check, whole, in one call on a GPU machine (one GPU, its own torch, no package index):
#   tests/gpu/run.sh             the full-size check (tests/gpu/gpu_check.py), then the CUDA tests (tests/gpu/)
#   tests/gpu/run.sh --dry-run   the same steps on the CPU with small sizes (fails only on errors)
# Extra arguments go to gpu_check.py (e.g. --only memory compare). First, where pip reaches the index:
# tests/gpu/prepare.sh, which fills tests/gpu/wheels/ (carried to the GPU machine: carry tests/gpu/wheels).
# graphwidget is installed from its wheel into a fresh folder (never imported from this checkout), with the
# dependency wheels this Python lacks, and runs its pure-Python engine (the compiled core needs torch >= 2.13).
# Figures: $OUT/gpu_check.json and $OUT/gpu_check.md (OUT defaults to out/gpu), the pytest log beside them.
set -uo pipefail
cd "$(dirname "$0")/../.."
REPO=$PWD
DRY=()
if [ "${1:-}" = "--dry-run" ]; then DRY=(--dry-run); shift; fi
PY=${PY:-python3}
OUT=${OUT:-$REPO/out/gpu}
mkdir -p "$OUT"
WHEELS=$REPO/tests/gpu/wheels
SITE=$(mktemp -d /tmp/gw-site.XXXXXX)
# The whole run stays within 8 minutes: the check, then the tests.
CHECK_S=${CHECK_S:-300}
TESTS_S=${TESTS_S:-150}
start=$(date +%s)

echo "== environment"
"$PY" -c "import sys, torch; print('python', sys.version.split()[0], sys.executable); print('torch', torch.__version__, 'cuda', torch.version.cuda, 'available', torch.cuda.is_available())" || exit 2
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm --format=csv,noheader

echo "== installing graphwidget from its wheel into $SITE"
ls "$WHEELS"/graphwidget-*.whl >/dev/null 2>&1 || { echo "run.sh: no wheel in $WHEELS: run tests/gpu/prepare.sh first" >&2; exit 2; }
"$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$SITE" "$WHEELS"/graphwidget-*.whl || exit 2
# Each dependency wheel whose distribution this Python lacks, one at a time: a compiled wheel made for another
# Python version is reported and skipped (the check itself needs none of the views' packages).
missing=$("$PY" - "$WHEELS" <<'PYEOF'
import importlib.metadata as md, pathlib, sys
for w in sorted(pathlib.Path(sys.argv[1]).glob("*.whl")):
    name = w.name.split("-")[0]
    if name == "graphwidget":
        continue
    try:
        md.version(name)
    except md.PackageNotFoundError:
        print(w)
PYEOF
)
for w in $missing; do
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$SITE" "$w" \
    || echo "run.sh: could not install $(basename "$w") here (another Python version?): going on without it"
done
echo "installed: $(ls "$SITE" | grep -c dist-info) distributions"
export PYTHONPATH=$SITE GRAPHWIDGET_NATIVE=0 PYTHONUNBUFFERED=1
# Python puts the working directory on sys.path for -c and -m: it must not be the checkout.
cd "$SITE"
"$PY" -c "import graphwidget, sys; f = graphwidget.__file__; print('graphwidget', graphwidget.__version__, f); sys.exit(0 if f.startswith('$SITE') else 'graphwidget was not imported from the wheel')" || exit 2
"$PY" -c "import anywidget, ipywidgets, plotly; print('views: anywidget', anywidget.__version__, 'ipywidgets', ipywidgets.__version__, 'plotly', plotly.__version__)" \
  || echo "run.sh: the views' packages do not import (the check does not need them)"

echo "== the check (tests/gpu/gpu_check.py ${DRY[*]} $*), at most $CHECK_S s"
timeout "$CHECK_S" "$PY" "$REPO/tests/gpu/gpu_check.py" --out "$OUT" "${DRY[@]}" "$@"
check=$?
[ $check = 124 ] && echo "run.sh: the check ran past $CHECK_S s; $OUT/gpu_check.json holds the groups it finished"

echo "== the tests (tests/gpu/), at most $TESTS_S s"
timeout "$TESTS_S" "$PY" -m pytest -q -p no:cacheprovider -c "$REPO/pyproject.toml" --rootdir "$REPO" \
  "$REPO/tests/gpu" 2>&1 | tee "$OUT/pytest.log" | tail -15
tests=${PIPESTATUS[0]}
cd "$REPO" && rm -rf "$SITE"
echo "== run.sh: check exit $check, tests exit $tests, $(( $(date +%s) - start )) s in all"
[ $check = 0 ] && [ $tests = 0 ]
