-- Scheduler context views (context-observer.md section 4.2): the identity chain from
-- executions to device work, its typed states, and step / request shapes.
--
-- Device work is reached only through: an execution's one marker (supported_marker) ->
-- runtime calls claimed by that execution alone (traceloom_context_runtime_call) ->
-- supported_exact / supported_deterministic provider relations -> traceloom_device_work,
-- and for ACL graph launches -> the launch that owns the MODEL_EXECUTE -> every exact body
-- member. Work with more than one candidate step is excluded (ambiguous_step), never split.
-- Joins go through integers: runtime calls by call_n and their relations by the call's
-- relation range, device work and anchors by event_n and anchor_n, launches by launch_n
-- (the context tables keep text ids; their integer is parsed once per context row), never
-- by a computed text id; CROSS JOIN keeps the (small) context side as the outer loop,
-- whatever the statistics say.

-- @surface traceloom_v_execution_context | one worker execution | Each execution with its step and marker support state (missing_step, marker_unavailable, marker_not_found, ambiguous_marker, supported_marker) | SELECT support_state, count(*) FROM traceloom_v_execution_context GROUP BY 1
CREATE VIEW traceloom_v_execution_context AS
SELECT x.run_id, x.execution_id, x.step_id, x.marker, x.worker_rank, x.phase, x.execution_status,
       x.marker_state, x.source_id, x.line_no,
       s.scheduler_id, s.ordinal, s.total_scheduled_tokens, s.scheduled_requests, s.cache_json,
       coalesce(m.n, 0) AS marker_count,
       CASE WHEN s.step_id IS NULL THEN 'missing_step'
            WHEN x.marker_state <> 'emitted' THEN 'marker_unavailable'
            WHEN coalesce(m.n, 0) = 0 THEN 'marker_not_found'
            WHEN m.n > 1 THEN 'ambiguous_marker'
            ELSE 'supported_marker' END AS support_state
FROM traceloom_context_execution x
LEFT JOIN traceloom_scheduler_step s ON s.run_id = x.run_id AND s.step_id = x.step_id
LEFT JOIN (SELECT execution_id, count(*) AS n FROM traceloom_context_marker GROUP BY execution_id) m
  ON m.execution_id = x.execution_id;

-- @surface traceloom_v_context_direct_device_candidate | one (step, device work) through a runtime call | Device work reached from a step by host scope and a supported provider relation, before the one-step rule | SELECT association_basis, provider_support_state, count(*) FROM traceloom_v_context_direct_device_candidate GROUP BY 1, 2
CREATE VIEW traceloom_v_context_direct_device_candidate AS
SELECT x.run_id, x.step_id, x.execution_id, x.worker_rank, x.phase, rc.runtime_call_id,
       'device-work-' || w.event_id AS device_work_id, w.device_id, w.event_id, w.start_ns,
       w.end_ns, w.dur_us, COALESCE(w.op_name, w.raw_label, w.task_type) AS symbol,
       r.support_state AS provider_support_state,
       rc.association_basis || '_then_provider_relation' AS association_basis
FROM traceloom_context_runtime_call rc
CROSS JOIN traceloom_context_execution x ON x.execution_id = rc.execution_id
CROSS JOIN traceloom_runtime_call_core cc ON cc.call_n = CAST(substr(rc.runtime_call_id, 14) AS INTEGER)
CROSS JOIN traceloom_runtime_device_relation r
  ON r.relation_n >= cc.first_relation_n AND r.relation_n < cc.first_relation_n + cc.relation_count
 AND r.support_state IN ('supported_exact', 'supported_deterministic')
-- the event's device work (traceloom_device_work's first branch, by key: that view is a
-- compound, which a join could only search through an automatic index)
CROSS JOIN traceloom_event w ON w.event_n = r.event_n AND w.task_type IS NOT 'COMMUNICATION_OP'
WHERE rc.support_state = 'supported_host_scope';

-- @surface traceloom_v_context_replay_member_candidate | one (step, exact replay member) | Every body member of a launch candidate, with the member's own device work | SELECT launch_id, count(*) FROM traceloom_v_context_replay_member_candidate GROUP BY 1 LIMIT 20
CREATE VIEW traceloom_v_context_replay_member_candidate AS
SELECT lc.run_id, lc.step_id, lc.execution_id, lc.worker_rank, lc.phase, lc.runtime_call_id,
       'device-work-' || w.event_id AS device_work_id, w.device_id, w.event_id, w.start_ns,
       w.end_ns, w.dur_us, COALESCE(w.op_name, w.raw_label, w.task_type) AS symbol,
       lc.provider_support_state,
       lc.association_basis || '_then_exact_replay_member' AS association_basis,
       lc.launch_id, m.member_id, m.db_idx, m.lane_ordinal, m.task_ordinal
FROM traceloom_context_replay_launch_candidate lc
CROSS JOIN traceloom_graph_body_member m ON m.launch_n = CAST(substr(lc.launch_id, 14) AS INTEGER)
CROSS JOIN traceloom_event w ON w.event_n = m.event_n AND w.task_type IS NOT 'COMMUNICATION_OP';

-- @surface traceloom_v_context_device_candidate | one (step, device work) candidate | Direct candidates and exact replay member candidates together, before the one-step rule | SELECT association_basis, count(*) FROM traceloom_v_context_device_candidate GROUP BY 1
CREATE VIEW traceloom_v_context_device_candidate AS
SELECT run_id, step_id, execution_id, worker_rank, phase, runtime_call_id, device_work_id,
       device_id, event_id, start_ns, end_ns, dur_us, symbol, provider_support_state,
       association_basis
FROM traceloom_v_context_direct_device_candidate
UNION ALL
SELECT run_id, step_id, execution_id, worker_rank, phase, runtime_call_id, device_work_id,
       device_id, event_id, start_ns, end_ns, dur_us, symbol, provider_support_state,
       association_basis
FROM traceloom_v_context_replay_member_candidate;

-- @surface traceloom_v_context_device_work | one (step, device work) with exactly one step | Supported step membership of device work: competing steps are excluded, not split | SELECT run_id, step_id, count(DISTINCT device_work_id) AS work FROM traceloom_v_context_device_work GROUP BY 1, 2 LIMIT 20
CREATE VIEW traceloom_v_context_device_work AS
SELECT c.run_id, c.step_id, c.execution_id, c.worker_rank, c.phase, c.runtime_call_id,
       c.device_work_id, c.device_id, c.event_id, c.start_ns, c.end_ns, c.dur_us, c.symbol,
       c.provider_support_state, c.association_basis
FROM traceloom_v_context_device_candidate c
JOIN traceloom_context_device_assignment a ON a.device_work_id = c.device_work_id
WHERE a.step_count = 1;

-- Every device work item, read on the storage tables: traceloom_device_work's rows (an event
-- with its input, not a COMMUNICATION_OP envelope nor a launch anchor's derived graph_replay
-- event; then each observed graph launch) and columns, and the state of the event's
-- relation by LEFT JOIN on integer keys. Through traceloom_device_work each item paid the
-- event view's subqueries (its task type, then launch_call_n: a subquery on the relation
-- nested around one on its shape, each opening its cursor per evaluation); at a million
-- tasks (1.1M items) the example spent 1.1 s of its 2.2 s CPU there. tests/sql/
-- context_states.sql checks the rows against the formulation over traceloom_device_work.
-- @surface traceloom_v_context_device_coverage | one device work item (every one) | Global denominator of step identity: supported_step, ambiguous_step, outside_supported_execution_scope or no_supported_provider_relation | SELECT support_state, count(*), round(sum(dur_us), 3) FROM traceloom_v_context_device_coverage GROUP BY 1
CREATE VIEW traceloom_v_context_device_coverage AS
SELECT 'device-work-event-' || e.event_n AS device_work_id, e.device_id, e.event_id,
       COALESCE(s.op_name, s.raw_label, s.task_type) AS symbol, e.start_ns,
       e.start_ns + e.dur_ns AS end_ns, e.dur_ns / 1000.0 AS dur_us,
       coalesce(a.step_count, 0) AS candidate_steps,
       CASE WHEN a.step_count = 1 THEN 'supported_step'
            WHEN a.step_count > 1 THEN 'ambiguous_step'
            -- the work's event has a supported provider relation with a call (launch_call_n)
            WHEN r.call_n IS NOT NULL
             AND rs.support_state IN ('supported_exact', 'supported_deterministic')
            THEN 'outside_supported_execution_scope'
            ELSE 'no_supported_provider_relation' END AS support_state
FROM traceloom_event_core e
CROSS JOIN traceloom_input i ON i.db_idx = e.db_idx
LEFT JOIN traceloom_event_shape s ON s.shape_id = e.shape_id
LEFT JOIN traceloom_runtime_device_relation_core r ON r.relation_n = e.relation_n
LEFT JOIN traceloom_runtime_device_relation_shape rs ON rs.shape_id = r.shape_id
LEFT JOIN traceloom_context_device_assignment a
  ON a.device_work_id = 'device-work-event-' || e.event_n
-- (nor a replay unit's event: its launches are the work, below)
WHERE s.task_type IS NOT 'COMMUNICATION_OP'
  AND s.source_table NOT IN ('graph_replay', 'ACLGRAPH_REPLAY_UNIT', 'CUDA_GRAPH_REPLAY_UNIT')
UNION ALL
-- a graph launch's work (no event; its call is its graph_launch relation's, not a supported
-- provider relation's: launch_call_n NULL in traceloom_device_work)
SELECT 'device-work-graph-launch-' || g.launch_n, g.device_id, NULL, 'graph_launch', g.start_ns,
       g.end_ns, g.dur_us, coalesce(a.step_count, 0),
       CASE WHEN a.step_count = 1 THEN 'supported_step'
            WHEN a.step_count > 1 THEN 'ambiguous_step'
            ELSE 'no_supported_provider_relation' END
FROM traceloom_graph_launch g
CROSS JOIN traceloom_input i ON i.db_idx = g.db_idx
LEFT JOIN traceloom_context_device_assignment a
  ON a.device_work_id = 'device-work-graph-launch-' || g.launch_n;

-- @surface traceloom_v_context_replay_launch | one graph launch with exactly one step | Exact launches mapped to their one step through the launch call and the launch's MODEL_EXECUTE | SELECT run_id, step_id, count(*) AS launches FROM traceloom_v_context_replay_launch GROUP BY 1, 2 LIMIT 20
CREATE VIEW traceloom_v_context_replay_launch AS
SELECT lc.run_id, lc.step_id, lc.execution_id, lc.worker_rank, lc.phase, lc.runtime_call_id,
       lc.device_work_id, lc.device_id, lc.event_id, lc.start_ns, lc.end_ns, lc.dur_us,
       lc.symbol, lc.provider_support_state, lc.association_basis, lc.launch_id, lc.db_idx,
       lc.replay_unit_id, lc.anchor_id, lc.graph_launch_occurrence_id
FROM traceloom_context_replay_launch_candidate lc
JOIN traceloom_context_device_assignment a ON a.device_work_id = lc.device_work_id
WHERE a.step_count = 1;

-- @surface traceloom_v_context_replay_member | one exact replay member with exactly one step | Every body member of a linked launch shares its launch's step (one row per member when all launches are linked) | SELECT run_id, step_id, count(*) AS members FROM traceloom_v_context_replay_member GROUP BY 1, 2 LIMIT 20
CREATE VIEW traceloom_v_context_replay_member AS
SELECT mc.run_id, mc.step_id, mc.execution_id, mc.worker_rank, mc.phase, mc.runtime_call_id,
       mc.device_work_id, mc.device_id, mc.event_id, mc.start_ns, mc.end_ns, mc.dur_us,
       mc.symbol, mc.provider_support_state, mc.association_basis, mc.launch_id, mc.member_id,
       mc.db_idx, mc.lane_ordinal, mc.task_ordinal
FROM traceloom_v_context_replay_member_candidate mc
JOIN traceloom_context_device_assignment a ON a.device_work_id = mc.device_work_id
WHERE a.step_count = 1;

-- @surface traceloom_v_context_anchor_candidate | one (anchor, step) candidate | Anchors reached by a step: device-event anchors through their device work, launch anchors through their launch | SELECT association_basis, count(*) FROM traceloom_v_context_anchor_candidate GROUP BY 1
CREATE VIEW traceloom_v_context_anchor_candidate AS
SELECT an.anchor_id, an.db_idx, an.device_id, an.anchor_idx, an.event_id, an.symbol,
       c.run_id, c.step_id, c.execution_id, c.device_work_id, NULL AS launch_id,
       c.association_basis
FROM traceloom_v_context_device_candidate c
CROSS JOIN traceloom_event_core ce ON ce.event_n = CAST(substr(c.event_id, 7) AS INTEGER)
CROSS JOIN traceloom_anchor an ON an.anchor_n = ce.anchor_n
UNION ALL
SELECT an.anchor_id, an.db_idx, an.device_id, an.anchor_idx, an.event_id, an.symbol,
       lc.run_id, lc.step_id, lc.execution_id, lc.device_work_id, lc.launch_id,
       lc.association_basis || '_then_exact_launch_anchor'
FROM traceloom_context_replay_launch_candidate lc
CROSS JOIN traceloom_anchor an ON an.anchor_n = CAST(substr(lc.anchor_id, 8) AS INTEGER);

-- @surface traceloom_v_context_anchor | one anchor with exactly one step | Anchors whose candidates name exactly one step (the step partition of step-constrained recovery, before the closed-capture rule) | SELECT run_id, step_id, count(*) AS anchors FROM traceloom_v_context_anchor GROUP BY 1, 2 LIMIT 20
CREATE VIEW traceloom_v_context_anchor AS
SELECT anchor_id, db_idx, device_id, anchor_idx, event_id, symbol, min(run_id) AS run_id,
       min(step_id) AS step_id, count(*) AS candidate_rows
FROM traceloom_v_context_anchor_candidate
GROUP BY anchor_id, db_idx, device_id
HAVING count(DISTINCT run_id || char(31) || step_id) = 1;

-- @surface traceloom_v_scheduler_step_context | one scheduler step | Each step with its file's capture state, the executions recorded for it and how many have a supported marker (0 executions means none was supplied, not "no device work") | SELECT ordinal, total_scheduled_tokens, capture_state, recorded_executions, supported_markers FROM traceloom_v_scheduler_step_context ORDER BY scheduler_id, ordinal LIMIT 20
CREATE VIEW traceloom_v_scheduler_step_context AS
SELECT s.run_id, s.step_id, s.scheduler_id, s.ordinal, s.total_scheduled_tokens,
       s.scheduled_requests, s.cache_json, s.free_blocks_after_schedule,
       s.pool_blocks_after_schedule, s.source_id, s.line_no, src.capture_state,
       coalesce(x.n, 0) AS recorded_executions, coalesce(x.supported, 0) AS supported_markers
FROM traceloom_scheduler_step s
JOIN traceloom_context_source src ON src.source_id = s.source_id
LEFT JOIN (SELECT run_id, step_id, count(*) AS n,
                  sum(support_state = 'supported_marker') AS supported
           FROM traceloom_v_execution_context GROUP BY run_id, step_id) x
  ON x.run_id = s.run_id AND x.step_id = s.step_id;

-- @surface traceloom_v_scheduler_request_phase | one request scheduled in a step | Scheduled prompt and generation tokens of each request, relative to its prompt (NULL when the producer could not tell) | SELECT scheduled_phase, count(*), sum(scheduled_tokens) FROM traceloom_v_scheduler_request_phase GROUP BY 1
CREATE VIEW traceloom_v_scheduler_request_phase AS
SELECT run_id, step_id, request_id, scheduled_tokens, request_json, source_id, line_no,
       scheduled_prompt_tokens,
       scheduled_tokens - scheduled_prompt_tokens AS scheduled_generation_tokens,
       CASE WHEN scheduled_prompt_tokens IS NULL THEN 'unknown'
            WHEN scheduled_tokens = 0 THEN 'no_tokens'
            WHEN scheduled_prompt_tokens = scheduled_tokens THEN 'prefill'
            WHEN scheduled_prompt_tokens = 0 THEN 'decode'
            ELSE 'mixed' END AS scheduled_phase
FROM (SELECT q.*,
             CASE WHEN json_type(q.request_json, '$.scheduled_token_start') = 'integer'
                   AND json_extract(q.request_json, '$.scheduled_token_start') >= 0
                   AND json_type(q.request_json, '$.prompt_tokens') = 'integer'
                   AND json_extract(q.request_json, '$.prompt_tokens') >= 0
                   AND json_extract(q.request_json, '$.scheduled_token_start_basis')
                       IS 'scheduler_output_num_computed_tokens'
                  THEN min(q.scheduled_tokens,
                           max(0, json_extract(q.request_json, '$.prompt_tokens')
                                  - json_extract(q.request_json, '$.scheduled_token_start')))
             END AS scheduled_prompt_tokens
      FROM traceloom_scheduler_request q);

-- @surface traceloom_v_scheduler_step_shape | one scheduler step | Step kind from the scheduled token ranges (prefill, decode, mixed, empty_decision, unknown) and the observed scheduling shape | SELECT step_kind, step_shape, count(*) FROM traceloom_v_scheduler_step_shape GROUP BY 1, 2
CREATE VIEW traceloom_v_scheduler_step_shape AS
SELECT c.*,
       CASE WHEN c.scheduled_requests = 0 AND c.total_scheduled_tokens = 0 THEN 'empty_decision'
            WHEN r.unknown > 0 THEN 'unknown'
            WHEN r.prompt > 0 AND r.generation = 0 THEN 'prefill'
            WHEN r.prompt = 0 AND r.generation > 0 THEN 'decode'
            WHEN r.prompt > 0 AND r.generation > 0 THEN 'mixed'
            ELSE 'unknown' END AS step_kind,
       'scheduled_token_range_relative_to_prompt_not_completion' AS step_kind_basis,
       CASE WHEN c.scheduled_requests = 0 THEN 0 WHEN r.unknown = 0 THEN r.prompt END
         AS scheduled_prompt_tokens,
       CASE WHEN c.scheduled_requests = 0 THEN 0 WHEN r.unknown = 0 THEN r.generation END
         AS scheduled_generation_tokens,
       CASE WHEN c.scheduled_requests = 0 THEN 'empty_decision'
            WHEN c.scheduled_requests = 1 AND c.total_scheduled_tokens = 1
              THEN 'single_request_single_token'
            WHEN c.scheduled_requests = 1 THEN 'single_request_other_tokens'
            ELSE 'multiple_requests' END AS step_shape,
       'observed_scheduling_shape_not_semantic_phase' AS classification_basis
FROM traceloom_v_scheduler_step_context c
LEFT JOIN (SELECT run_id, step_id, sum(scheduled_prompt_tokens IS NULL) AS unknown,
                  sum(scheduled_prompt_tokens) AS prompt,
                  sum(scheduled_generation_tokens) AS generation
           FROM traceloom_v_scheduler_request_phase GROUP BY run_id, step_id) r
  ON r.run_id = c.run_id AND r.step_id = c.step_id;

-- @surface traceloom_v_scheduler_step_device_cost | one (step, device) | Linked device work per step and device: summed work, busy union and envelope (supported event work, not step latency); a step without links has one row with NULL costs | SELECT ordinal, step_kind, device_id, linked_device_work, summed_device_work_us, device_busy_union_us FROM traceloom_v_scheduler_step_device_cost ORDER BY ordinal LIMIT 20
CREATE VIEW traceloom_v_scheduler_step_device_cost AS
WITH work AS (
  SELECT DISTINCT run_id, step_id, device_id, device_work_id, start_ns, end_ns, dur_us
  FROM traceloom_v_context_device_work WHERE event_id IS NOT NULL),
ordered AS (
  SELECT w.*, max(end_ns) OVER (PARTITION BY run_id, step_id, device_id
                                ORDER BY start_ns, end_ns, device_work_id
                                ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prior_end
  FROM work w),
agg AS (
  SELECT run_id, step_id, device_id, count(*) AS linked_device_work,
         round(sum(end_ns - start_ns) / 1000.0, 3) AS summed_device_work_us,
         round(sum(max(0, end_ns - max(start_ns, coalesce(prior_end, start_ns)))) / 1000.0, 3)
           AS device_busy_union_us,
         round((max(end_ns) - min(start_ns)) / 1000.0, 3) AS device_envelope_us
  FROM ordered GROUP BY run_id, step_id, device_id)
SELECT s.*, a.device_id, coalesce(a.linked_device_work, 0) AS linked_device_work,
       a.summed_device_work_us, a.device_busy_union_us, a.device_envelope_us,
       'supported_event_work_not_step_latency_or_request_allocation' AS measure_scope
FROM traceloom_v_scheduler_step_shape s
LEFT JOIN agg a ON a.run_id = s.run_id AND a.step_id = s.step_id;

-- @surface traceloom_v_context_coverage | one worker execution | Execution context with its file's capture state, supported runtime calls and linked device work (not a complete step membership) | SELECT support_state, sum(supported_runtime_calls), sum(linked_device_work) FROM traceloom_v_context_coverage GROUP BY 1
CREATE VIEW traceloom_v_context_coverage AS
SELECT v.*, src.capture_state AS execution_capture_state,
       coalesce(rc.n, 0) AS supported_runtime_calls, coalesce(dw.n, 0) AS linked_device_work,
       'not_complete_step_membership' AS membership_contract
FROM traceloom_v_execution_context v
JOIN traceloom_context_source src ON src.source_id = v.source_id
LEFT JOIN (SELECT execution_id, count(*) AS n FROM traceloom_context_runtime_call
           WHERE support_state = 'supported_host_scope' GROUP BY execution_id) rc
  ON rc.execution_id = v.execution_id
LEFT JOIN (SELECT execution_id, count(DISTINCT device_work_id) AS n
           FROM traceloom_v_context_device_work GROUP BY execution_id) dw
  ON dw.execution_id = v.execution_id;

-- @surface traceloom_request_observation | one observation of a request in a step | Where each (pseudonymous) request was scheduled, or observed finished, preempted or resumed | SELECT observation_kind, count(*) FROM traceloom_request_observation GROUP BY 1
CREATE VIEW traceloom_request_observation AS
SELECT s.run_id, s.scheduler_id, q.request_id, s.step_id, s.ordinal, 'scheduled' AS observation_kind,
       q.scheduled_tokens, s.source_id, s.line_no
FROM traceloom_scheduler_request q
JOIN traceloom_scheduler_step s ON s.run_id = q.run_id AND s.step_id = q.step_id
UNION ALL
SELECT s.run_id, s.scheduler_id, j.value, s.step_id, s.ordinal,
       CASE k.key WHEN 'finished_request_ids' THEN 'finished_observed'
                  WHEN 'preempted_request_ids' THEN 'preempted_observed'
                  ELSE 'resumed_observed' END,
       NULL, s.source_id, s.line_no
FROM traceloom_scheduler_step s
JOIN traceloom_context_record r ON r.source_id = s.source_id AND r.line_no = s.line_no
JOIN (SELECT 'finished_request_ids' AS key UNION ALL SELECT 'preempted_request_ids'
      UNION ALL SELECT 'resumed_request_ids') k
JOIN json_each(r.raw_json, '$.' || k.key) j
WHERE json_type(r.raw_json, '$.' || k.key) = 'array';

-- @surface traceloom_v_request_step | one (request, step) where the request was scheduled | Each request's scheduled tokens per step, in scheduler order, with its prompt/generation split | SELECT request_id, ordinal, scheduled_tokens, scheduled_phase FROM traceloom_v_request_step ORDER BY request_id, ordinal LIMIT 20
CREATE VIEW traceloom_v_request_step AS
SELECT s.run_id, s.scheduler_id, p.request_id, s.step_id, s.ordinal, p.scheduled_tokens,
       p.scheduled_prompt_tokens, p.scheduled_generation_tokens, p.scheduled_phase,
       s.total_scheduled_tokens AS step_total_scheduled_tokens,
       s.scheduled_requests AS step_scheduled_requests
FROM traceloom_v_scheduler_request_phase p
JOIN traceloom_scheduler_step s ON s.run_id = p.run_id AND s.step_id = p.step_id;

-- @surface traceloom_v_request_catalog | one (pseudonymous) request of one scheduler | Each request's scheduled steps and tokens and its lifecycle observations; pseudonyms are stable within one producer only | SELECT request_id, scheduled_steps, total_scheduled_tokens, finished_observed FROM traceloom_v_request_catalog LIMIT 20
CREATE VIEW traceloom_v_request_catalog AS
SELECT run_id, scheduler_id, request_id,
       sum(observation_kind = 'scheduled') AS scheduled_steps,
       min(CASE WHEN observation_kind = 'scheduled' THEN ordinal END) AS first_scheduled_ordinal,
       max(CASE WHEN observation_kind = 'scheduled' THEN ordinal END) AS last_scheduled_ordinal,
       coalesce(sum(scheduled_tokens), 0) AS total_scheduled_tokens,
       max(observation_kind = 'finished_observed') AS finished_observed,
       sum(observation_kind = 'preempted_observed') AS preempted_observations,
       sum(observation_kind = 'resumed_observed') AS resumed_observations
FROM traceloom_request_observation
GROUP BY run_id, scheduler_id, request_id;
