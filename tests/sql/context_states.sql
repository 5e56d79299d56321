-- Typed states of the scheduler context (context-observer.md sections 3, 4.2 and 5) on the
-- mutated graph profile of tests/fixtures/make_context_gen.py (states/, see expect.json):
-- ambiguous_marker, marker_not_found (deleted and non-canonical marker rows),
-- ambiguous_execution_scope, ambiguous_step, missing_step and marker_unavailable; then the
-- unclosed, dropped_records and scheduler-only captures.

SELECT 'analyze with context', traceloom_analyze('fixtures/context_gen/states',
  '{"context":["fixtures/context_gen/states/context/scheduler.jsonl","fixtures/context_gen/states/context/worker0.jsonl"]}')
  LIKE 'traceloom: analysed 1 input(s)%';
CREATE TEMP TABLE expect AS SELECT readfile('fixtures/context_gen/states/expect.json') AS j;
CREATE TEMP VIEW truth_launch AS
  SELECT CAST(json_extract(value, '$.connection_id') AS TEXT) AS conn, json_extract(value, '$.step') AS step
  FROM json_each(readfile('fixtures/context_gen/states/ground_truth.json'), '$.ranks[0].graph.launch_list');
CREATE TEMP VIEW exec_state AS
  SELECT s.ordinal, v.* FROM traceloom_v_execution_context v
  LEFT JOIN traceloom_scheduler_step s ON s.run_id = v.run_id AND s.step_id = v.step_id;

SELECT 'missing_step: an execution whose step was never recorded',
  (SELECT group_concat(execution_id) FROM exec_state WHERE support_state = 'missing_step')
  = json_extract((SELECT j FROM expect), '$.missing_step_execution')
  AND (SELECT ordinal IS NULL AND scheduler_id IS NULL FROM exec_state WHERE support_state = 'missing_step');
SELECT 'marker_unavailable wins over marker counting',
  (SELECT group_concat(execution_id || ':' || phase || ':' || ordinal) FROM exec_state WHERE support_state = 'marker_unavailable')
  = json_extract((SELECT j FROM expect), '$.marker_unavailable_execution') || ':sample_tokens:4';
SELECT 'ambiguous_marker: two PYTORCH_API rows carry step 0''s marker',
  (SELECT group_concat(ordinal || ':' || marker_count) FROM exec_state WHERE support_state = 'ambiguous_marker') = '0:2';
SELECT 'marker_not_found: deleted row (step 1) and non-canonical startNs (step 2)',
  (SELECT group_concat(ordinal, ',') FROM (SELECT ordinal FROM exec_state WHERE support_state = 'marker_not_found' ORDER BY 1)) = '1,2';
SELECT 'supported markers: steps 3 (twice), 4 and 5',
  (SELECT group_concat(ordinal, ',') FROM (SELECT ordinal FROM exec_state WHERE support_state = 'supported_marker' ORDER BY 1)) = '3,3,4,5';

-- Two executions claim step 3's calls: ambiguous_execution_scope, so nothing of step 3 links.
SELECT 'ambiguous_execution_scope: both step-3 executions, every call of the step',
  (SELECT count(DISTINCT execution_id) FROM traceloom_context_runtime_call WHERE support_state = 'ambiguous_execution_scope') = 2
  AND (SELECT count(*) FROM traceloom_context_runtime_call rc JOIN exec_state x USING (execution_id)
       WHERE (x.ordinal = 3) <> (rc.support_state = 'ambiguous_execution_scope')) = 0;
SELECT 'step 3 links no device work',
  (SELECT count(*) FROM traceloom_v_context_device_candidate c JOIN traceloom_scheduler_step s
     ON s.run_id = c.run_id AND s.step_id = c.step_id WHERE s.ordinal = 3) = 0;
SELECT 'its launch work is outside the supported execution scope',
  (SELECT count(*) FROM traceloom_v_context_device_coverage v JOIN traceloom_graph_launch_control lc ON lc.event_id = v.event_id
   JOIN traceloom_graph_launch gl ON gl.launch_id = lc.launch_id
   WHERE gl.correlation_id IN (SELECT conn FROM truth_launch WHERE step = 3) AND lc.control_kind IN ('execute', 'wait')
     AND v.support_state = 'outside_supported_execution_scope') = 10;

-- A body member of a step-4 launch also has its own host call in step 5: ambiguous_step.
SELECT 'ambiguous_step: exactly the mutated member',
  (SELECT CASE WHEN count(*) = 1 THEN max(e.global_task_id) END FROM traceloom_v_context_device_coverage v
   JOIN traceloom_event e ON e.event_id = v.event_id WHERE v.support_state = 'ambiguous_step' AND v.candidate_steps = 2)
  = json_extract((SELECT j FROM expect), '$.ambiguous_member_global_task_id');
SELECT 'its two candidates: the direct step 5 and the launch step 4',
  (SELECT group_concat(s.ordinal || ':' || c.association_basis, ',') FROM (SELECT * FROM traceloom_v_context_device_candidate c
     JOIN traceloom_event e ON e.event_id = c.event_id
     WHERE e.global_task_id = json_extract((SELECT j FROM expect), '$.ambiguous_member_global_task_id')
     ORDER BY c.step_id = (SELECT step_id FROM traceloom_scheduler_step WHERE ordinal = 4)) c
   JOIN traceloom_scheduler_step s ON s.run_id = c.run_id AND s.step_id = c.step_id)
  = '5:task_queue_connection_then_provider_relation,4:same_thread_host_scope_then_provider_relation_then_exact_replay_member';
SELECT 'competing steps are excluded, not split',
  (SELECT count(*) FROM traceloom_v_context_device_work d JOIN traceloom_event e ON e.event_id = d.event_id
   WHERE e.global_task_id = json_extract((SELECT j FROM expect), '$.ambiguous_member_global_task_id')) = 0
  AND (SELECT count(*) FROM traceloom_v_context_replay_member m JOIN traceloom_event e ON e.event_id = m.event_id
       WHERE e.global_task_id = json_extract((SELECT j FROM expect), '$.ambiguous_member_global_task_id')) = 0;
-- The coverage view reads the storage tables; its rows are those of the formulation over
-- traceloom_device_work (every state present here, ambiguous_step included).
CREATE TEMP VIEW coverage_by_work AS
SELECT w.device_work_id, w.device_id, w.event_id, w.symbol, w.start_ns, w.end_ns, w.dur_us,
       coalesce(a.step_count, 0) AS candidate_steps,
       CASE WHEN a.step_count = 1 THEN 'supported_step' WHEN a.step_count > 1 THEN 'ambiguous_step'
            WHEN w.launch_call_n IS NOT NULL THEN 'outside_supported_execution_scope'
            ELSE 'no_supported_provider_relation' END AS support_state
FROM traceloom_device_work w
LEFT JOIN traceloom_context_device_assignment a ON a.device_work_id = w.device_work_id;
SELECT 'coverage rows are the device work formulation''s',
  (SELECT count(*) FROM traceloom_v_context_device_coverage) = (SELECT count(*) FROM coverage_by_work)
  AND NOT EXISTS (SELECT * FROM traceloom_v_context_device_coverage EXCEPT SELECT * FROM coverage_by_work)
  AND NOT EXISTS (SELECT * FROM coverage_by_work EXCEPT SELECT * FROM traceloom_v_context_device_coverage)
  AND (SELECT count(DISTINCT support_state) FROM coverage_by_work) = 4;
SELECT 'launches of steps 4 and 5 stay linked; the others are not',
  (SELECT group_concat(ordinal || '=' || n, ',') FROM (SELECT s.ordinal, count(*) AS n FROM traceloom_v_context_replay_launch l
     JOIN traceloom_scheduler_step s ON s.run_id = l.run_id AND s.step_id = l.step_id GROUP BY 1 ORDER BY 1)) = '4=5,5=5';
SELECT 'replay members: all of steps 4 and 5 but the ambiguous one',
  (SELECT count(*) FROM traceloom_v_context_replay_member)
  = (SELECT count(*) FROM traceloom_graph_body_member b JOIN traceloom_graph_launch gl ON gl.launch_id = b.launch_id
     WHERE gl.correlation_id IN (SELECT conn FROM truth_launch WHERE step IN (4, 5))) - 1;
SELECT 'step context counts recorded and supported executions',
  (SELECT group_concat(ordinal || ':' || recorded_executions || '/' || supported_markers, ',') FROM
    (SELECT * FROM traceloom_v_scheduler_step_context ORDER BY ordinal)) = '0:1/0,1:1/0,2:1/0,3:2/2,4:2/1,5:1/1';
SELECT 'steps without links get one cost row with NULL costs, never 0',
  (SELECT count(*) FROM traceloom_v_scheduler_step_device_cost WHERE linked_device_work = 0 AND device_id IS NULL
     AND summed_device_work_us IS NULL AND device_busy_union_us IS NULL) = 4
  AND (SELECT count(*) FROM traceloom_v_scheduler_step_device_cost) = 6;

-- Capture states: an unclosed and a dropped_records worker file stay importable.
SELECT 'unclosed worker file', traceloom_analyze('fixtures/context_gen/graph',
  '{"context":["fixtures/context_gen/graph/context_unclosed/scheduler.jsonl","fixtures/context_gen/graph/context_unclosed/worker0.jsonl"]}')
  LIKE 'traceloom: analysed%';
SELECT 'capture states closed and unclosed',
  (SELECT group_concat(capture_state, ',') FROM (SELECT capture_state FROM traceloom_context_source ORDER BY source_id)) = 'closed,unclosed'
  AND (SELECT count(*) FROM traceloom_v_context_coverage WHERE execution_capture_state = 'unclosed') = 6;
SELECT 'an unclosed worker still links (the evidence is exact)',
  (SELECT count(*) FROM traceloom_v_context_replay_launch) = 20;
SELECT 'dropped_records worker file', traceloom_analyze('fixtures/context_gen/graph',
  '{"context":["fixtures/context_gen/graph/context_dropped/scheduler.jsonl","fixtures/context_gen/graph/context_dropped/worker0.jsonl"]}')
  LIKE 'traceloom: analysed%';
SELECT 'capture state dropped_records',
  (SELECT capture_state FROM traceloom_context_source WHERE source_id = 2) = 'dropped_records';

-- Scheduler-only mode: steps and requests, no device association at all.
SELECT 'scheduler-only analysis', traceloom_analyze('fixtures/context_gen/sched_only',
  '{"context":["fixtures/context_gen/sched_only/context/scheduler.jsonl"]}') LIKE 'traceloom: analysed%';
SELECT 'scheduler-only: 4 steps, no executions',
  (SELECT count(*) FROM traceloom_scheduler_step) = 4 AND (SELECT count(*) FROM traceloom_context_execution) = 0
  AND (SELECT json_extract(raw_json, '$.metadata.association_contract') FROM traceloom_context_record WHERE line_no = 1) = 'scheduler_only';
SELECT 'scheduler-only: nothing inferred from ordinals or timestamps',
  (SELECT count(*) FROM traceloom_context_marker) + (SELECT count(*) FROM traceloom_context_runtime_call)
  + (SELECT count(*) FROM traceloom_context_device_assignment) + (SELECT count(*) FROM traceloom_v_context_replay_launch) = 0
  AND (SELECT count(*) FROM traceloom_v_context_device_coverage WHERE support_state IN ('supported_step', 'ambiguous_step')) = 0;
SELECT 'scheduler-only: steps show 0 recorded executions and no cost',
  (SELECT count(*) FROM traceloom_v_scheduler_step_context WHERE recorded_executions = 0) = 4
  AND (SELECT count(*) FROM traceloom_v_scheduler_step_device_cost WHERE linked_device_work = 0 AND device_id IS NULL) = 4;
