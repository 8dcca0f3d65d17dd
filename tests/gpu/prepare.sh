#!/usr/bin/env bash
# Prepares the GPU check (tests/gpu/run.sh) on a machine with the package index: builds graphwidget's wheel and
# downloads the wheels of its dependencies that the GPU machine's image lacks (it has torch, networkx and numpy, but
# not anywidget, ipywidgets, plotly or IPython), for its Python (3.12, x86-64; PYVER overrides), into
# tests/gpu/wheels/ (git-ignored). The device tool carries that folder: name tests/gpu/wheels in `carry`.
set -euo pipefail
cd "$(dirname "$0")/../.."
PY=${PY:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}
PYVER=${PYVER:-3.12}
DEST=tests/gpu/wheels
LIMIT_MB=48   # the device tool carries 64 MiB in all, the working tree included
start=$(date +%s)
rm -rf "$DEST" && mkdir -p "$DEST"
echo "== graphwidget's wheel (the front-end bundle is built by hatch_build.py when missing or stale)"
"$PY" -m pip wheel -q --no-deps --no-build-isolation -w "$DEST" .
echo "== the dependencies, resolved for CPython $PYVER on manylinux x86-64"
"$PY" -m pip download -q --only-binary=:all: --python-version "$PYVER" --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  -d "$DEST" "anywidget>=0.9" "ipywidgets>=8.0" "plotly>=5.0" "networkx>=3.0"
# What the GPU machine's image already has (KINDS.md beside the device tool lists it): carrying another version of
# it would shadow the image's own.
for name in networkx numpy pygments typing_extensions packaging narwhals six python_dateutil \
            markupsafe jinja2 attrs psutil; do
  rm -f "$DEST"/"$name"-*.whl
done
ls "$DEST"
size_kb=$(du -sk "$DEST" | cut -f1)
echo "== $DEST: $(ls "$DEST" | wc -l) wheels, $((size_kb / 1024)) MiB, prepared in $(( $(date +%s) - start )) s"
if [ "$size_kb" -gt $((LIMIT_MB * 1024)) ]; then
  echo "prepare.sh: $DEST is over $LIMIT_MB MiB: the device tool would not carry it with the tree" >&2
  exit 1
fi
