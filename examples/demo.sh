#!/usr/bin/env bash
# `make demo`: analyses the bundled example profile and prints a readable summary.
#
# The example is a generated Ascend msprof profile of a small transformer serving run
# (1 prefill step, 6 decode steps x 4 layers x 6 operators, a tensor-parallel all-reduce per
# layer, host CANN_API launches, copies), built from tools/genprofile.py with a fixed seed, so it is
# the same on every machine. Output goes to build/demo/.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD="${BUILD:-build}"
OUT="$BUILD/demo"
PROFILE="$OUT/profile"
if [ ! -f "$PROFILE/ground_truth.json" ]; then
  rm -rf "$PROFILE"
  python3 tools/genprofile.py --format ascend --out "$PROFILE" --prefill-steps 1 \
    --decode-steps 6 --layers 4 --ops 6 --noise 0 --missing 0 --aux 0 --seed 7 --quiet
fi
echo "== profile inventory (SELECT ... FROM traceloom_profile('$PROFILE'))"
sqlite3 -cmd ".load $BUILD/traceloom" -column -header :memory: \
  "SELECT db_idx, capability, usable, substr(coalesce(detail, ''), 1, 60) AS detail
     FROM traceloom_profile('$PROFILE') WHERE item = 'capability';"
echo
echo "== analysis (traceloom $PROFILE --output $OUT/analysis.db)"
"$BUILD/traceloom" "$PROFILE" --output "$OUT/analysis.db"
echo
echo "== device events by kind"
sqlite3 -column -header "$OUT/analysis.db" \
  "SELECT kind, count(*) AS events, round(sum(dur_us), 3) AS busy_us
     FROM traceloom_event GROUP BY kind ORDER BY events DESC;"
echo
echo "== top operators by device time"
sqlite3 -column -header "$OUT/analysis.db" \
  "SELECT coalesce(op_type, raw_label) AS operator, count(*) AS n, round(sum(dur_us), 3) AS total_us,
          round(avg(dur_us), 3) AS avg_us
     FROM traceloom_event GROUP BY operator ORDER BY total_us DESC LIMIT 8;"
echo
echo "== recovered structure (SELECT traceloom_loop_tree(), also written to $OUT/loop_tree.md)"
sqlite3 -cmd ".load $BUILD/traceloom" "$OUT/analysis.db" "SELECT traceloom_loop_tree('{\"max_depth\": 3, \"max_children\": 14}');" | sed -n '/^Outline/,/^### /p' | sed '$d'
echo
echo "== kernel summary by structural symbol (traceloom_v_symbol_summary)"
sqlite3 -column -header "$OUT/analysis.db" \
  "SELECT symbol, anchor_count AS n, total_us, avg_us, median_us, p90_us, max_us
     FROM traceloom_v_symbol_summary ORDER BY total_us DESC LIMIT 8;"
echo
echo "== host-to-device relations"
sqlite3 -column -header "$OUT/analysis.db" \
  "SELECT support_state, cardinality, count(*) AS n FROM traceloom_runtime_device_relation
    GROUP BY 1, 2 ORDER BY n DESC;"
echo
echo "== Perfetto timeline"
"$BUILD/traceloom" export-perfetto "$OUT/analysis.db" --output "$OUT/timeline.perfetto.json.gz"
echo "open $OUT/timeline.perfetto.json.gz in https://ui.perfetto.dev"
echo
echo "Query it yourself: sqlite3 $OUT/analysis.db 'SELECT surface_name, purpose FROM traceloom_analysis_surface'"
