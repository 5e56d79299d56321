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
export TRACELOOM_BUILD="${BUILD:-build}"
"$VENV/bin/python" -m pytest -q tests/python "$@"
