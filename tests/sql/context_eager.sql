-- Scheduler context on a generated eager profile with two ranks (tests/fixtures/
-- make_context_gen.py, eager2/): one scheduler file, one worker file per rank, each rank's
-- markers in its own msprof DB; auxiliary kernels have their own host calls.

SELECT 'analyze two ranks with context', traceloom_analyze('fixtures/context_gen/eager2',
  '{"context":["fixtures/context_gen/eager2/context/scheduler.jsonl","fixtures/context_gen/eager2/context/worker0.jsonl","fixtures/context_gen/eager2/context/worker1.jsonl"]}')
  LIKE 'traceloom: analysed 2 input(s)%';
SELECT 'three closed sources, 4 steps, 8 executions',
  (SELECT count(*) FROM traceloom_context_source WHERE capture_state = 'closed') = 3
  AND (SELECT count(*) FROM traceloom_scheduler_step) = 4 AND (SELECT count(*) FROM traceloom_context_execution) = 8;
SELECT 'each rank''s marker is in its own database',
  (SELECT count(*) FROM traceloom_context_marker m JOIN traceloom_context_execution x USING (execution_id)
   JOIN traceloom_raw_source_database d ON d.source_id = m.source_id WHERE d.db_idx = x.worker_rank) = 8
  AND (SELECT count(*) FROM traceloom_v_execution_context WHERE support_state = 'supported_marker') = 8;
SELECT 'calls are claimed by the execution of their own rank',
  (SELECT count(*) FROM traceloom_context_runtime_call rc JOIN traceloom_context_execution x USING (execution_id)
   JOIN traceloom_runtime_call c ON c.runtime_call_id = rc.runtime_call_id WHERE c.db_idx = x.worker_rank
     AND rc.support_state = 'supported_host_scope') = (SELECT count(*) FROM traceloom_runtime_call);
SELECT 'every task of both ranks has exactly one step',
  (SELECT count(*) FROM traceloom_v_context_device_coverage WHERE support_state = 'supported_step')
  = (SELECT count(*) FROM traceloom_device_work WHERE source_table = 'TASK')
  AND (SELECT count(*) FROM traceloom_v_context_device_coverage WHERE support_state <> 'supported_step') = 0;
-- Auxiliary kernels are the last TASK rows of each rank, in the order the truth lists them.
CREATE TEMP TABLE aux AS SELECT e.db_idx, e.global_task_id, s.ordinal,
  row_number() OVER (PARTITION BY e.db_idx ORDER BY e.global_task_id DESC) AS k
  FROM traceloom_event e JOIN traceloom_v_context_device_work w ON w.event_id = e.event_id
  JOIN traceloom_scheduler_step s ON s.run_id = w.run_id AND s.step_id = w.step_id WHERE e.source_table = 'TASK';
CREATE TEMP TABLE truth AS SELECT readfile('fixtures/context_gen/eager2/ground_truth.json') AS j;
SELECT 'auxiliary kernels belong to the steps they were placed in',
  (SELECT count(*) FROM (SELECT 0 AS r UNION ALL SELECT 1) ranks
   WHERE (SELECT group_concat(ordinal, ',') FROM (SELECT ordinal FROM aux WHERE db_idx = ranks.r
            AND k <= json_array_length((SELECT j FROM truth), '$.ranks[' || ranks.r || '].perturbation_positions.extras')
            ORDER BY global_task_id))
       = (SELECT group_concat(json_extract(value, '$.step'), ',') FROM json_each((SELECT j FROM truth),
            '$.ranks[' || ranks.r || '].perturbation_positions.extras'))) = 2
  AND json_array_length((SELECT j FROM truth), '$.ranks[0].perturbation_positions.extras') > 0;
SELECT 'step x device cost rows: 4 steps on devices 0 and 1',
  (SELECT count(*) FROM traceloom_v_scheduler_step_device_cost WHERE device_id IN (0, 1) AND linked_device_work > 0) = 8;
SELECT 'one prefill and three decode steps',
  (SELECT group_concat(step_kind, ',') FROM (SELECT step_kind FROM traceloom_v_scheduler_step_shape ORDER BY ordinal))
  = 'prefill,decode,decode,decode';
