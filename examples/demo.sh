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
echo "== what the profile can tell (traceloom_profile('$PROFILE'), item = 'capability')"
# One line per capability, the reason in full where it is not usable (paths made relative).
sqlite3 -cmd ".load $BUILD/traceloom" :memory: \
  "SELECT printf('%-26s %s', capability,
                 CASE usable WHEN 1 THEN 'usable'
                      ELSE 'not usable: ' || replace(coalesce(detail, '?'), '$(pwd)/', '') END)
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
echo "== recovered structure (SELECT traceloom_loop_tree(), also written to $OUT/analysis.loop_tree.md)"
echo "   total_us = compute + comm + idle: a node's device time including the idle gaps before"
echo "   its operators, so it exceeds the busy kernel time of the summary further down."
sqlite3 -cmd ".load $BUILD/traceloom" "$OUT/analysis.db" "SELECT traceloom_loop_tree('{\"max_depth\": 3, \"max_children\": 14}');" | sed -n '/^Outline/,/^### /p' | sed '$d'
echo
echo "== kernel summary by structural symbol (traceloom_v_symbol_summary: busy kernel time only)"
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
# The same model served as ACL graph replays (head + layer x 4 + tail per decode step), with
# the scheduler's context: exact replays and which step each launch served.
GRAPH="$OUT/graph_profile"
if [ ! -f "$GRAPH/ground_truth.json" ]; then
  rm -rf "$GRAPH"
  python3 tools/genprofile.py --format ascend --graph --graph-layers shared --out "$GRAPH" \
    --prefill-steps 1 --decode-steps 6 --layers 4 --ops 6 --noise 0 --missing 0 --aux 0 \
    --seed 7 --context "$GRAPH/context" --quiet
fi
CONTEXT_ARGS=()
for f in "$GRAPH"/context/*.jsonl; do CONTEXT_ARGS+=(--context "$f"); done
echo "== graph replays (traceloom $GRAPH --context ... --output $OUT/graph.db)"
"$BUILD/traceloom" "$GRAPH" --output "$OUT/graph.db" "${CONTEXT_ARGS[@]}" | head -1
sqlite3 -column -header "$OUT/graph.db" \
  "SELECT status, shape_policy, count(*) AS regions, sum(observed_launch_count) AS launches
     FROM traceloom_aclgraph_reconstruction_region GROUP BY 1, 2;"
echo
echo "== the layer graph's costliest body positions across all replays (traceloom_replay_cost_aggregate)"
sqlite3 -column -header "$OUT/graph.db" \
  "SELECT slot_role, identity, member_occurrence_count AS n, duration_median_ns AS median_ns,
          duration_p75_ns AS p75_ns
     FROM traceloom_replay_cost_aggregate WHERE slot_role = 'layer'
    ORDER BY duration_median_ns DESC LIMIT 5;"
echo
echo "== exact replay launches and members per scheduler step (traceloom_v_context_replay_member)"
sqlite3 -column -header "$OUT/graph.db" \
  "SELECT s.ordinal AS step, s.total_scheduled_tokens AS tokens, count(DISTINCT l.launch_id) AS launches,
          count(m.member_id) AS exact_members
     FROM traceloom_scheduler_step s
     LEFT JOIN traceloom_v_context_replay_launch l ON l.step_id = s.step_id
     LEFT JOIN traceloom_v_context_replay_member m ON m.step_id = s.step_id AND m.launch_id = l.launch_id
    GROUP BY s.step_id ORDER BY s.ordinal;"
echo
echo "Query it yourself: sqlite3 $OUT/analysis.db 'SELECT surface_name, purpose FROM traceloom_analysis_surface'"
