#!/usr/bin/env bash
# Runs the check unit-test programs given as arguments; prints check's summary per program
# and a final "N passed, N failed" line. Exits non-zero when any program fails.
set -uo pipefail
export TRACELOOM_BUILD="${BUILD:-build}"
passed=0; failed=0
for t in "$@"; do
  out="$("$t" 2>&1)"; rc=$?
  echo "$out" | grep -E '^[0-9]+%: ' | sed "s|^|$(basename "$t"): |"
  if [ $rc -ne 0 ]; then echo "$out" | grep -vE '^[0-9]+%: ' | tail -40; fi
  p=$(echo "$out" | sed -nE 's/^[0-9]+%: Checks: ([0-9]+), Failures: ([0-9]+), Errors: ([0-9]+).*/\1 \2 \3/p' | head -1)
  if [ -n "$p" ]; then
    set -- $p "$@"; c=$1; f=$2; er=$3; shift 3
    passed=$((passed + c - f - er)); failed=$((failed + f + er))
  fi
  [ $rc -ne 0 ] && [ -z "$p" ] && failed=$((failed + 1))
  [ $rc -ne 0 ] && any_fail=1
done
echo "unit: $passed passed, $failed failed"
[ "${any_fail:-0}" = 0 ] && [ $failed = 0 ]
