#!/usr/bin/env bash
# bench/run.sh: TraceLoom benchmarks against bare SQLite baselines (what `make bench` runs).
#
#   bench/run.sh [--record]          BUILD=build-x bench/run.sh
#   bench/run.sh --scaling [--record]   (or BENCH_SCALING=1) the scaling series
#
# Generates (once, cached under bench/out/) a synthetic Ascend profile of at least
# 2,000,000 kernel rows with tools/genprofile.py, then times on it, in this run:
#   bare scan      bench/bare_scan.c: sqlite3_step over the TASK columns the reader uses
#   bare reader    the same over every table the events reader reads (the scan target's floor)
#   bare copy      CREATE TABLE copy AS SELECT those columns into a fresh DB file
#   events         SELECT count(*) FROM traceloom_events(PROFILE) in the sqlite3 shell
#   analyze        SELECT traceloom_analyze(PROFILE) into a fresh DB in the sqlite3 shell
#   cli            $BUILD/traceloom PROFILE --output X.db
#   python         traceloom.analyze() of the python/ package (it drives the same CLI)
#   perfetto       traceloom export-perfetto of that analysis, against zlib writing as many
#                  fixed JSON lines in the same run
# and prints seconds, rows/s, the ratios to the bare scan and copy, and peak RSS.
# --record (or BENCH_RECORD=1) appends the results to bench/RESULTS.md.
#
# --scaling (or BENCH_SCALING=1) runs the scaling series instead: profiles of 100k, 1M and
# 3M kernel rows (and 10M with BENCH_10M=1: minutes), each timed by bare scan, events
# count(*) and the CLI analysis, with ns per event, peak RSS and whether the time per
# event grows with size. BENCH_SIZES=a,b,c overrides the sizes.
#
# It first runs bench/recovery_bench.c: anchor selection, cost packets and repeat recovery of
# BENCH_RECOVERY_ANCHORS (default 10,000,000) in-memory anchors, against a bare radix sort of
# as many pairs in the same process, with the 10 s / 1 GB peak RSS targets (BENCH_RECOVERY=0
# skips it).
#
# It also runs bench/kineto_bench.py: the Kineto reader's CPU time as a ratio to Python's
# json.load of the same file, on a 64 MB CPU-only trace (real decode steps repeated) and a
# 64 MB GPU-style trace, target >= 3x on both; then a 1 GB trace, MB/s against the 180 MB/s
# target (BENCH_KINETO=0 skips it).
#
# It also runs bench/perfetto_bench.py: the Perfetto export of the 1M-task profile as a
# protobuf trace against the JSON of the same analysis, and Perfetto's trace processor
# importing both (BENCH_PERFETTO=0 skips it; BENCH_PERFETTO_ROWS sets the size).
#
# It also runs bench/replay_bench.py: exact graph replay reconstruction on an ACL graph decode
# profile of BENCH_REPLAY_ROWS kernel rows (default 10,000,000: minutes; BENCH_REPLAY=0 skips
# it), end to end with and without reconstruction, plus a CUDA graph of 5 x 10,000 members.
#
# It also runs bench/compare_bench.py: traceloom_compare of two 1M-task analyses (a clean and a
# noisy pair, one operator 10% slower) against reading both analyses' tree tables, with the
# <= 2x target (BENCH_COMPARE=0 skips it).
# It also runs bench/cluster_bench.py: traceloom.cluster over 16 ranks x 250,000 kernel rows,
# 2 Dask workers against 1, the merge's share and each worker's peak against a single-rank
# analysis (BENCH_CLUSTER=0 skips it; it needs dask and distributed: the test venv's python,
# .venv, is used when it exists).
# It also runs bench/reports_bench.py: what the report surfaces add to the analysis time and
# file of a BENCH_REPORTS_ROWS (default 1,000,000) kernel-row Ascend profile, and each of the
# 34 reference report queries timed through the sqlite3 shell (BENCH_REPORTS=0 skips it).
#
# It also runs bench/storage_bench.py: the analysis of the ~1,000,000-task Ascend profile as
# a ratio to a bare CREATE TABLE AS SELECT copy of the rows it reads (CPU; <= 5x, goal 3x),
# the analysis database against its input (<= 1.5x), and the first 100 rows of every shipped
# view (< 1 s) and every catalog example (< 2 s) on that analysis (BENCH_STORAGE=0 skips it).
#
# It also runs bench/parity_bench.py: ours against the reference TraceLoom 0.1.4 on the same
# 1,000,000-task Ascend profile (BENCH_PARITY_ROWS), time, peak RSS and database size as
# ratios against the >= 10x / 20x / 10x targets of issue 19 (the reference needs ~13 GB and
# minutes; BENCH_PARITY=0 skips it; without the reference it says why and goes on).
#
# Environment: BUILD (build folder, default build), BENCH_ROWS (default 2000000),
# BENCH_FORMAT (ascend | nsys, default ascend), BENCH_REPEAT (best of N, default 3).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD="${BUILD:-build}"
record=()
scaling=()
for arg in "$@"; do
  case "$arg" in
    --record) record=(--record) ;;
    --scaling) scaling=(--scaling) ;;
    *) echo "usage: bench/run.sh [--scaling] [--record]" >&2; exit 2 ;;
  esac
done
if [ "${BENCH_RECORD:-0}" = 1 ]; then record=(--record); fi
if [ "${BENCH_SCALING:-0}" = 1 ]; then scaling=(--scaling); fi
if [ ${#scaling[@]} -gt 0 ]; then
  sizes="${BENCH_SIZES:-100000,1000000,3000000}"
  if [ "${BENCH_10M:-0}" = 1 ] && [ -z "${BENCH_SIZES:-}" ]; then sizes="$sizes,10000000"; fi
  scaling+=(--sizes "$sizes")
fi
mkdir -p "$BUILD/bench" bench/out
cc -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -o "$BUILD/bench/bare_scan" bench/bare_scan.c -lsqlite3
if [ "${BENCH_RECOVERY:-1}" = 1 ]; then
  # Structure recovery of BENCH_RECOVERY_ANCHORS (default 10M) anchors, in memory.
  cc -std=c11 -D_GNU_SOURCE -DSQLITE_CORE -O2 -Wall -Wextra -Werror -Iext \
    -o "$BUILD/bench/recovery_bench" bench/recovery_bench.c "$BUILD/libtraceloom_core.a" \
    -lsqlite3 -lyaml -lz -lm -lpthread
  out=$("$BUILD/bench/recovery_bench" "${BENCH_RECOVERY_ANCHORS:-10000000}")
  printf '%s\n' "$out" | sed '/^---$/,$d'
  if [ ${#record[@]} -gt 0 ]; then
    { printf '\n## %s structure recovery (bench/recovery_bench.c)\n\n' "$(date -u '+%Y-%m-%d %H:%M UTC')"
      printf -- '- machine: %s CPUs (nproc), %s\n' "$(nproc)" "$(uname -m)"
      printf '%s\n' "$out" | sed '1,/^---$/d'; } >> bench/RESULTS.md
  fi
fi
if [ "${BENCH_KINETO:-1}" = 1 ]; then python3 bench/kineto_bench.py --build "$BUILD" "${record[@]}"; fi
if [ "${BENCH_PERFETTO:-1}" = 1 ]; then
  python3 bench/perfetto_bench.py --build "$BUILD" --rows "${BENCH_PERFETTO_ROWS:-1000000}" "${record[@]}"
fi
if [ "${BENCH_REPLAY:-1}" = 1 ]; then python3 bench/replay_bench.py --build "$BUILD" "${record[@]}"; fi
if [ "${BENCH_COMPARE:-1}" = 1 ]; then python3 bench/compare_bench.py --build "$BUILD" "${record[@]}"; fi
if [ "${BENCH_CLUSTER:-1}" = 1 ]; then
  py=python3; if [ -x .venv/bin/python ]; then py=.venv/bin/python; fi
  "$py" bench/cluster_bench.py --build "$BUILD" "${record[@]}"
fi
if [ "${BENCH_REPORTS:-1}" = 1 ]; then python3 bench/reports_bench.py --build "$BUILD" "${record[@]}"; fi
if [ "${BENCH_STORAGE:-1}" = 1 ]; then python3 bench/storage_bench.py --build "$BUILD" "${record[@]}"; fi
if [ "${BENCH_PARITY:-1}" = 1 ]; then
  python3 bench/parity_bench.py --build "$BUILD" --rows "${BENCH_PARITY_ROWS:-1000000}" "${record[@]}"
fi
exec python3 bench/measure.py --build "$BUILD" --rows "${BENCH_ROWS:-2000000}" \
  --format "${BENCH_FORMAT:-ascend}" --repeat "${BENCH_REPEAT:-3}" "${record[@]}" "${scaling[@]}"
