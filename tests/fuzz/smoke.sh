#!/usr/bin/env bash
# Runs every libFuzzer harness of FUZZ_DIR (make fuzz) for a bounded time on its seed
# corpus and fails on the first crash, leak, sanitizer report or timeout.
#
#   tests/fuzz/smoke.sh build/fuzz            (TL_FUZZ_SECONDS per harness, default 12)
#
# New inputs found during the run go to a scratch corpus that is thrown away, so the seed
# corpus stays what make_corpus.py built and the smoke run is repeatable in cost.
# Crash reproducers are kept in FUZZ_DIR/crashes/ for the report. A corpus may come with
# NAME.dict (libFuzzer dictionary) and NAME.max_len (input size limit, default 8192).
set -uo pipefail
DIR="${1:-build/fuzz}"
SECS="${TL_FUZZ_SECONDS:-12}"
mkdir -p "$DIR/crashes"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
status=0
for bin in "$DIR"/fuzz_*; do
  [ -x "$bin" ] || continue
  name="$(basename "$bin")"; name="${name#fuzz_}"
  mkdir -p "$scratch/$name"
  dict=(); [ -f "$DIR/corpus/$name.dict" ] && dict=("-dict=$DIR/corpus/$name.dict")
  # Inputs larger than 8 KiB where the seeds are (whole JSON traces, JSONL file pairs).
  max_len=8192; [ -f "$DIR/corpus/$name.max_len" ] && max_len="$(cat "$DIR/corpus/$name.max_len")"
  log="$scratch/$name.log"
  if TMPDIR="$scratch" "$bin" "${dict[@]}" -max_total_time="$SECS" -timeout=10 -rss_limit_mb=2048 \
      -max_len="$max_len" -print_final_stats=1 -artifact_prefix="$DIR/crashes/$name-" \
      "$scratch/$name" "$DIR/corpus/$name" >"$log" 2>&1; then
    runs="$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$')"
    cov="$(grep -o 'cov: [0-9]*' "$log" | tail -1)"
    echo "fuzz $name: ${runs:-?} executions in ${SECS}s, $cov, no crash"
  else
    echo "FAIL fuzz $name: see the reproducer in $DIR/crashes/"; tail -40 "$log"
    status=1
  fi
done
exit $status
