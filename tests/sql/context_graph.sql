-- Scheduler context on a generated ACL-graph profile (tests/fixtures/make_context_gen.py,
-- graph/): 2 eager prefill steps and 4 graph decode steps (head + 3 layers + tail = 5
-- launches each), markers in PYTORCH_API, odd steps reaching their calls through the
-- task queue. Expected steps come from the generator's ground_truth.json (readfile).

SELECT 'analyze with context', traceloom_analyze('fixtures/context_gen/graph',
  '{"context":["fixtures/context_gen/graph/context/scheduler.jsonl","fixtures/context_gen/graph/context/worker0.jsonl"]}')
  LIKE 'traceloom: analysed 1 input(s)%';
CREATE TEMP TABLE truth AS SELECT readfile('fixtures/context_gen/graph/ground_truth.json') AS j;
CREATE TEMP VIEW truth_launch AS
  SELECT json_extract(value, '$.connection_id') AS conn, json_extract(value, '$.step') AS step,
         json_extract(value, '$.member_tasks') AS members
  FROM json_each((SELECT j FROM truth), '$.ranks[0].graph.launch_list');
CREATE TEMP VIEW truth_step AS
  SELECT json_extract(value, '$.ordinal') AS ordinal, json_extract(value, '$.step_id') AS step_id,
         json_extract(value, '$.basis') AS basis, json_extract(value, '$.graph') AS graph
  FROM json_each((SELECT j FROM truth), '$.context.steps');

-- Files and records (section 3).
SELECT 'two closed sources in input order',
  (SELECT group_concat(source_id || ':' || capture_state, ',') FROM traceloom_context_source) = '1:closed,2:closed';
SELECT 'size_bytes is the file size',
  (SELECT count(*) FROM traceloom_context_source WHERE size_bytes = length(readfile(source_path))) = 2;
SELECT 'records are the lines verbatim',
  (SELECT count(*) FROM traceloom_context_source s
   WHERE (SELECT group_concat(raw_json || char(10), '') FROM (SELECT raw_json FROM traceloom_context_record r
          WHERE r.source_id = s.source_id ORDER BY line_no)) = CAST(readfile(s.source_path) AS TEXT)) = 2;
SELECT 'record types', (SELECT group_concat(record_type || '=' || n, ',') FROM (SELECT record_type, count(*) AS n
  FROM traceloom_context_record GROUP BY 1 ORDER BY 1)) = 'execution=6,session=2,step=6,summary=2';
SELECT 'steps carry the generator''s ids and ordinals',
  (SELECT count(*) FROM traceloom_scheduler_step s JOIN truth_step t ON t.step_id = s.step_id AND t.ordinal = s.ordinal
   WHERE s.scheduler_id = json_extract((SELECT j FROM truth), '$.context.scheduler_id')) = 6;
SELECT 'requests: 8 per step, cache counters typed',
  (SELECT count(*) FROM traceloom_scheduler_request) = 48
  AND (SELECT count(*) FROM traceloom_scheduler_step WHERE scheduled_requests = 8 AND pool_blocks_after_schedule = 1024
       AND free_blocks_after_schedule = 900 - ordinal) = 6;

-- Markers and the host side of the chain (section 5, 1-4).
SELECT 'every execution has supported_marker',
  (SELECT count(*) FROM traceloom_v_execution_context WHERE support_state = 'supported_marker' AND marker_count = 1) = 6;
SELECT 'markers are PYTORCH_API rows named like their execution',
  (SELECT count(*) FROM traceloom_context_marker m JOIN traceloom_context_execution x USING (execution_id)
   WHERE m.source_table = 'PYTORCH_API' AND m.marker_name = x.marker AND m.source_path LIKE '%/msprof_0.db'
     AND m.start_ns < m.end_ns AND typeof(m.global_tid) = 'text') = 6;
SELECT 'task queue: 3 enqueue/dequeue pairs on two threads of one process',
  (SELECT count(*) FROM traceloom_context_task_queue) = 6
  AND (SELECT count(*) FROM traceloom_context_queue_pair WHERE enqueue_tid <> dequeue_tid
       AND enqueue_tid >> 32 = dequeue_tid >> 32 AND enqueue_start_ns <= dequeue_start_ns) = 3;
SELECT 'every claimed call is supported and has its step''s basis',
  (SELECT count(*) FROM traceloom_context_runtime_call rc
   JOIN traceloom_context_execution x USING (execution_id)
   JOIN truth_step t ON t.step_id = x.step_id
   WHERE rc.support_state = 'supported_host_scope' AND rc.association_basis = t.basis)
  = (SELECT count(*) FROM traceloom_context_runtime_call) AND (SELECT count(*) FROM traceloom_context_runtime_call) > 0;
SELECT 'every runtime call of the profile is claimed (all steps are marked)',
  (SELECT count(*) FROM traceloom_context_runtime_call) = (SELECT count(*) FROM traceloom_runtime_call);
SELECT 'queue audit: one row per call reached through the queue',
  (SELECT count(*) FROM traceloom_context_queue_runtime)
  = (SELECT count(*) FROM traceloom_context_runtime_call WHERE association_basis = 'task_queue_connection');
SELECT 'candidates list one basis per claim',
  (SELECT count(*) FROM traceloom_context_runtime_candidate) = (SELECT count(*) FROM traceloom_context_runtime_call);

-- Graph launches and their members (section 5, 6-7; the acceptance of issue 7).
SELECT 'every launch is linked to its step',
  (SELECT count(*) FROM traceloom_v_context_replay_launch rl
   JOIN traceloom_graph_launch gl ON gl.launch_id = rl.launch_id AND gl.db_idx = rl.db_idx
   JOIN traceloom_scheduler_step s ON s.run_id = rl.run_id AND s.step_id = rl.step_id
   JOIN truth_launch t ON CAST(t.conn AS TEXT) = gl.correlation_id AND t.step = s.ordinal)
  = json_extract((SELECT j FROM truth), '$.ranks[0].graph.launches')
  AND (SELECT count(*) FROM traceloom_v_context_replay_launch) = 20;
SELECT 'one replay_member row per body member',
  (SELECT count(*) FROM traceloom_v_context_replay_member) = (SELECT count(*) FROM traceloom_graph_body_member)
  AND (SELECT count(*) FROM traceloom_graph_body_member) = (SELECT sum(members) FROM truth_launch);
SELECT 'every member shares its launch''s step',
  (SELECT count(*) FROM traceloom_v_context_replay_member m JOIN traceloom_v_context_replay_launch l
     ON l.launch_id = m.launch_id AND l.db_idx = m.db_idx
   WHERE m.step_id = l.step_id AND m.runtime_call_id = l.runtime_call_id) = 72;
SELECT 'members are the body members'' own device work',
  (SELECT count(*) FROM traceloom_v_context_replay_member m JOIN traceloom_graph_body_member b
     ON b.member_id = m.member_id AND b.event_id = m.event_id AND b.lane_ordinal = m.lane_ordinal
    AND b.task_ordinal = m.task_ordinal) = 72;
SELECT 'no replay unit maps to more than one step',
  (SELECT count(*) FROM (SELECT replay_unit_id FROM traceloom_v_context_replay_launch GROUP BY replay_unit_id
                         HAVING count(DISTINCT step_id) > 1)) = 0
  AND (SELECT count(DISTINCT replay_unit_id) FROM traceloom_v_context_replay_launch) = 4;
SELECT 'bases of launches and members',
  (SELECT count(*) FROM traceloom_v_context_replay_launch WHERE association_basis LIKE '%_then_provider_relation'
     AND provider_support_state = 'supported_exact') = 20
  AND (SELECT count(*) FROM traceloom_v_context_replay_member
       WHERE association_basis LIKE '%_then_provider_relation_then_exact_replay_member') = 72;
SELECT 'launch anchors take their launch''s step',
  (SELECT count(*) FROM traceloom_v_context_anchor a JOIN traceloom_v_context_replay_launch l
     ON l.anchor_id = a.anchor_id AND l.db_idx = a.db_idx WHERE a.step_id = l.step_id) = 20;

-- Coverage: the global denominator.
SELECT 'supported_step: every TASK except the notify records (no host call)',
  (SELECT count(*) FROM traceloom_v_context_device_coverage WHERE support_state = 'supported_step')
  = (SELECT count(*) FROM traceloom_device_work w JOIN traceloom_event e ON e.event_id = w.event_id
     WHERE e.source_table = 'TASK' AND e.task_type <> 'NOTIFY_RECORD');
SELECT 'the rest has no supported provider relation',
  (SELECT count(*) FROM traceloom_v_context_device_coverage WHERE support_state = 'no_supported_provider_relation')
  = (SELECT count(*) FROM traceloom_device_work) - (SELECT count(*) FROM traceloom_v_context_device_coverage
                                                     WHERE support_state = 'supported_step');
SELECT 'assignment counts the distinct steps of the candidates',
  (SELECT count(*) FROM traceloom_context_device_assignment a
   WHERE a.step_count = (SELECT count(*) FROM (SELECT DISTINCT run_id, step_id FROM traceloom_v_context_device_candidate c
                                               WHERE c.device_work_id = a.device_work_id)))
  = (SELECT count(*) FROM traceloom_context_device_assignment)
  AND (SELECT max(step_count) FROM traceloom_context_device_assignment) = 1;

-- Step and request shapes.
SELECT 'step kinds: prefill for the prefill steps, decode after',
  (SELECT group_concat(ordinal || step_kind || ':' || scheduled_prompt_tokens || '/' || scheduled_generation_tokens, ',')
   FROM (SELECT * FROM traceloom_v_scheduler_step_shape ORDER BY ordinal))
  = '0prefill:2048/0,1prefill:2048/0,2decode:0/8,3decode:0/8,4decode:0/8,5decode:0/8';
SELECT 'shape bases and scopes', (SELECT count(*) FROM traceloom_v_scheduler_step_shape
  WHERE step_shape = 'multiple_requests' AND step_kind_basis = 'scheduled_token_range_relative_to_prompt_not_completion'
    AND classification_basis = 'observed_scheduling_shape_not_semantic_phase') = 6;
SELECT 'request phases', (SELECT group_concat(scheduled_phase || '=' || n, ',') FROM (SELECT scheduled_phase, count(*) AS n
  FROM traceloom_v_scheduler_request_phase GROUP BY 1 ORDER BY 1)) = 'decode=32,prefill=16';
SELECT 'step context: one execution and one supported marker per step',
  (SELECT count(*) FROM traceloom_v_scheduler_step_context WHERE capture_state = 'closed' AND recorded_executions = 1
     AND supported_markers = 1) = 6;
SELECT 'device cost: eager steps link every task of their step',
  (SELECT count(*) FROM traceloom_v_scheduler_step_device_cost WHERE ordinal < 2 AND device_id = 0
     AND linked_device_work = json_extract((SELECT j FROM truth), '$.structure.phases[0].kernel_rows_per_step')) = 2;
SELECT 'device cost: decode steps link 2 controls per launch and every member',
  (SELECT count(*) FROM traceloom_v_scheduler_step_device_cost c
   WHERE c.ordinal >= 2 AND c.linked_device_work = 2 * 5 + (SELECT sum(members) FROM truth_launch t WHERE t.step = c.ordinal)) = 4;
SELECT 'device cost lenses: busy union <= summed work, busy union <= envelope',
  (SELECT count(*) FROM traceloom_v_scheduler_step_device_cost WHERE device_busy_union_us <= summed_device_work_us
     AND device_busy_union_us <= device_envelope_us
     AND measure_scope = 'supported_event_work_not_step_latency_or_request_allocation') = 6;
-- The busy union of a decode step, recomputed by walking its intervals in start order.
CREATE TEMP TABLE w4 AS SELECT DISTINCT device_work_id, start_ns, end_ns FROM traceloom_v_context_device_work d
  JOIN traceloom_scheduler_step s ON s.run_id = d.run_id AND s.step_id = d.step_id WHERE s.ordinal = 4;
SELECT 'device busy union of step 4 merges overlapping intervals',
  (SELECT device_busy_union_us FROM traceloom_v_scheduler_step_device_cost WHERE ordinal = 4)
  = (WITH RECURSIVE s AS (SELECT row_number() OVER (ORDER BY start_ns, end_ns, device_work_id) AS k, start_ns, end_ns FROM w4),
     m(k, reach, total) AS (SELECT 1, end_ns, end_ns - start_ns FROM s WHERE k = 1
       UNION ALL SELECT s.k, max(m.reach, s.end_ns),
                        m.total + CASE WHEN s.end_ns > m.reach THEN s.end_ns - max(s.start_ns, m.reach) ELSE 0 END
       FROM m JOIN s ON s.k = m.k + 1)
     SELECT round(total / 1000.0, 3) FROM m ORDER BY k DESC LIMIT 1)
  AND (SELECT count(*) FROM w4) = 28;

-- Requests.
SELECT 'request observations', (SELECT group_concat(observation_kind || '=' || n, ',') FROM (SELECT observation_kind,
  count(*) AS n FROM traceloom_request_observation GROUP BY 1 ORDER BY 1)) = 'finished_observed=8,scheduled=48';
SELECT 'request catalog: the decoded requests ran 5 steps and finished',
  (SELECT count(*) FROM traceloom_v_request_catalog WHERE scheduled_steps = 5 AND finished_observed = 1
     AND total_scheduled_tokens = 256 + 4 AND first_scheduled_ordinal = 1 AND last_scheduled_ordinal = 5) = 8
  AND (SELECT count(*) FROM traceloom_v_request_catalog) = 16;
SELECT 'request step rows', (SELECT count(*) FROM traceloom_v_request_step) = 48;
SELECT 'coverage per execution', (SELECT count(*) FROM traceloom_v_context_coverage WHERE execution_capture_state = 'closed'
  AND supported_runtime_calls > 0 AND linked_device_work > 0 AND membership_contract = 'not_complete_step_membership') = 6;

-- Exact column orders (section 4.2).
SELECT 'direct candidate columns', (SELECT group_concat(name, ',') FROM pragma_table_info('traceloom_v_context_direct_device_candidate'))
  = 'run_id,step_id,execution_id,worker_rank,phase,runtime_call_id,device_work_id,device_id,event_id,start_ns,end_ns,dur_us,symbol,provider_support_state,association_basis';
SELECT 'replay launch columns', (SELECT group_concat(name, ',') FROM pragma_table_info('traceloom_v_context_replay_launch'))
  = 'run_id,step_id,execution_id,worker_rank,phase,runtime_call_id,device_work_id,device_id,event_id,start_ns,end_ns,dur_us,symbol,provider_support_state,association_basis,launch_id,db_idx,replay_unit_id,anchor_id,graph_launch_occurrence_id';
SELECT 'replay member columns', (SELECT group_concat(name, ',') FROM pragma_table_info('traceloom_v_context_replay_member'))
  = 'run_id,step_id,execution_id,worker_rank,phase,runtime_call_id,device_work_id,device_id,event_id,start_ns,end_ns,dur_us,symbol,provider_support_state,association_basis,launch_id,member_id,db_idx,lane_ordinal,task_ordinal';
SELECT 'coverage columns', (SELECT group_concat(name, ',') FROM pragma_table_info('traceloom_v_context_device_coverage'))
  = 'device_work_id,device_id,event_id,symbol,start_ns,end_ns,dur_us,candidate_steps,support_state';
SELECT 'execution context columns', (SELECT group_concat(name, ',') FROM pragma_table_info('traceloom_v_execution_context'))
  = 'run_id,execution_id,step_id,marker,worker_rank,phase,execution_status,marker_state,source_id,line_no,scheduler_id,ordinal,total_scheduled_tokens,scheduled_requests,cache_json,marker_count,support_state';
SELECT 'device cost ends with the cost columns', (SELECT group_concat(name, ',') FROM (SELECT name FROM pragma_table_info('traceloom_v_scheduler_step_device_cost') WHERE cid >= 20))
  = 'device_id,linked_device_work,summed_device_work_us,device_busy_union_us,device_envelope_us,measure_scope';
SELECT 'catalog: every context relation is listed',
  (SELECT count(*) FROM traceloom_analysis_surface WHERE surface_name LIKE 'traceloom\_context\_%' ESCAPE '\'
     OR surface_name LIKE 'traceloom\_scheduler\_%' ESCAPE '\' OR surface_name LIKE 'traceloom\_v\_context%' ESCAPE '\'
     OR surface_name LIKE 'traceloom\_v\_scheduler%' ESCAPE '\' OR surface_name IN ('traceloom_v_execution_context',
     'traceloom_request_observation', 'traceloom_v_request_step', 'traceloom_v_request_catalog')) = 31;

-- Without context the tables exist and stay empty; the structure does not change.
CREATE TEMP TABLE with_ctx AS SELECT node_id, occurrence_count, total_us FROM traceloom_semantic_node;
SELECT 'analyze without context', traceloom_analyze('fixtures/context_gen/graph') LIKE 'traceloom: analysed%';
SELECT 'context tables empty', (SELECT count(*) FROM traceloom_context_source) + (SELECT count(*) FROM traceloom_scheduler_step)
  + (SELECT count(*) FROM traceloom_context_device_assignment) = 0;
SELECT 'context import changes no structural result',
  (SELECT count(*) FROM traceloom_semantic_node) = (SELECT count(*) FROM with_ctx)
  AND NOT EXISTS (SELECT node_id, occurrence_count, total_us FROM traceloom_semantic_node EXCEPT SELECT * FROM with_ctx);
