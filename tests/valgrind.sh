#!/usr/bin/env bash
# Runs the plain (non-sanitizer) unit test programs and the CLI under valgrind memcheck and
# fails on any memory error or definite leak (docs/RELIABILITY.md, make valgrind).
#
#   BUILD=build tests/valgrind.sh [test binaries...]     (default: every $BUILD/tests/test_*)
#
# check runs each test in-process (CK_FORK=no) so valgrind sees the code under test; the
# fault-injection sweep of test_faults is cut to a few points (TL_FAULTS_POINTS) because
# every point is a whole analysis. The CLI analyses two fixtures (Ascend with graph replay,
# Nsight) into a scratch folder. Logs: $BUILD/valgrind/*.log.
set -uo pipefail
BUILD="${BUILD:-build}"
if ! command -v valgrind >/dev/null; then
  echo "valgrind: not installed (apt-get install valgrind)"; exit 1
fi
out="$BUILD/valgrind"
mkdir -p "$out"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
VG=(valgrind --error-exitcode=99 --leak-check=full --show-leak-kinds=definite
    --errors-for-leak-kinds=definite --track-origins=yes --num-callers=30 -q)
export TRACELOOM_BUILD="$BUILD" CK_FORK=no CK_DEFAULT_TIMEOUT=0 TL_FAULTS_POINTS="${TL_FAULTS_POINTS:-12}"

bins=("$@")
if [ ${#bins[@]} -eq 0 ]; then bins=("$BUILD"/tests/test_*); fi
status=0
run() { # name, command...
  local name="$1"; shift
  local log="$out/$name.log" t0=$SECONDS
  "${VG[@]}" --log-file="$log.vg" "$@" >"$log" 2>&1
  local rc=$?
  cat "$log.vg" >>"$log"; rm -f "$log.vg"
  if [ $rc -eq 99 ]; then
    echo "FAIL valgrind $name: memory errors or leaks (see $log)"; grep -m5 -E "==[0-9]+== (Invalid|Conditional|Use of|.*definitely lost|Mismatched|Source and destination)" "$log"
    status=1
  elif [ $rc -ne 0 ]; then
    echo "FAIL valgrind $name: exit $rc (see $log)"; tail -5 "$log"; status=1
  else
    echo "valgrind $name: clean ($((SECONDS - t0)) s)"
  fi
}
for b in "${bins[@]}"; do
  [ -x "$b" ] || continue
  run "$(basename "$b")" "$b"
done
if [ $# -eq 0 ]; then
  for p in exact_hlt/mono nsys/nsys_basic.sqlite; do
    name="cli-$(echo "$p" | tr '/.' '__')"
    run "$name" "$BUILD/traceloom" "$BUILD/fixtures/$p" --output "$scratch/$name.db"
  done
fi
exit $status
