-- Replay report surfaces (docs/REPORTS.md "Replay surfaces"): graph replay envelopes with the
-- events they enclose in time, the anchors of exact replay units, and the realization members
-- of each promoted launch in observed order.

-- Replays by their index: the envelope rows look their replay up.
CREATE INDEX traceloom_cuda_graph_replay_idx ON traceloom_cuda_graph_replay_core(graph_event_idx);

-- What an envelope encloses is its children (every event of its device wholly inside its
-- interval but its own, ext/reports/envelopes.c), counted here rather than stored: the events
-- (enclosed_event_*) and, of them, the device work (enclosed_kernel_*: kind compute,
-- communication or data_move, so a CUDA graph's copies count, as in the reference, and an ACL
-- launch's MODEL_EXECUTE and notify controls do not). Each count reads the envelope's runs by
-- their key and the runs' events as key ranges of the event core; a query that selects none
-- of these columns computes none of them.
-- @surface traceloom_cuda_graph_replay | one graph replay envelope (temporal evidence) | Best-effort replay envelopes of ACL and CUDA graphs, one per promoted replay unit, one per graph-level GRAPH_TRACE row and one per Kineto cudaGraphLaunch (its kernels' interval), with the events and device work each encloses in time; never used as membership | SELECT graph_provider, graph_kind, count(*), sum(enclosed_kernel_count) FROM traceloom_cuda_graph_replay GROUP BY 1, 2
CREATE VIEW traceloom_cuda_graph_replay AS
SELECT g.graph_event_id, g.db_idx, g.device_id, g.graph_provider, g.graph_kind,
       g.graph_event_idx, g.event_id, g.step_idx, g.stream_id, g.correlation_id, g.graph_id,
       g.graph_exec_id, g.context_id, g.start_ns, g.end_ns, g.dur_us,
       (SELECT coalesce(sum(r.run_length), 0) FROM traceloom_graph_envelope_child_run_core r
         WHERE r.graph_event_idx = g.graph_event_idx) AS enclosed_event_count,
       (SELECT coalesce(sum(e.dur_ns), 0) / 1000.0 FROM traceloom_graph_envelope_child_run_core r
         JOIN traceloom_event_core e ON e.event_n >= r.first_event_n
          AND e.event_n < r.first_event_n + r.run_length
         WHERE r.graph_event_idx = g.graph_event_idx) AS enclosed_event_us,
       (SELECT count(*) FROM traceloom_graph_envelope_child_run_core r
         JOIN traceloom_event_core e ON e.event_n >= r.first_event_n
          AND e.event_n < r.first_event_n + r.run_length
         JOIN traceloom_event_shape s ON s.shape_id = e.shape_id
         WHERE r.graph_event_idx = g.graph_event_idx
           AND s.kind IN ('compute', 'communication', 'data_move')) AS enclosed_kernel_count,
       (SELECT coalesce(sum(e.dur_ns), 0) / 1000.0
          FROM traceloom_graph_envelope_child_run_core r
          JOIN traceloom_event_core e ON e.event_n >= r.first_event_n
           AND e.event_n < r.first_event_n + r.run_length
          JOIN traceloom_event_shape s ON s.shape_id = e.shape_id
         WHERE r.graph_event_idx = g.graph_event_idx
           AND s.kind IN ('compute', 'communication', 'data_move')) AS enclosed_kernel_us,
       g.raw_json, g.event_n
FROM traceloom_cuda_graph_replay_core g;

-- @surface traceloom_v_cuda_graph_replay | one graph replay envelope | Each envelope with its event's symbol, label and role, and the anchor it is (anchor_idx, NULL when it is none) | SELECT graph_provider, graph_kind, count(*), count(anchor_idx) FROM traceloom_v_cuda_graph_replay GROUP BY 1, 2
CREATE VIEW traceloom_v_cuda_graph_replay AS
SELECT g.*, e.symbol, e.label, e.task_type, e.semantic_role, e.semantic_role_reason,
       (SELECT a.anchor_idx FROM traceloom_graph_envelope_anchor x
          JOIN traceloom_anchor a ON a.anchor_n = x.anchor_n
         WHERE x.graph_event_idx = g.graph_event_idx) AS anchor_idx
FROM traceloom_cuda_graph_replay g
LEFT JOIN traceloom_event e ON e.event_n = g.event_n;

-- @surface traceloom_cuda_graph_envelope | one device event inside a graph replay envelope | Temporal containment of device events in a replay envelope (relation contains; stream_relation same_stream or cross_stream), with offsets from the envelope's ends; never used as membership | SELECT graph_kind, stream_relation, count(*) FROM traceloom_cuda_graph_envelope GROUP BY 1, 2
CREATE VIEW traceloom_cuda_graph_envelope AS
-- envelope_idx numbers the rows of every envelope from 1 in envelope order, the reference's
-- envelope_idx and envelope_id
SELECT CASE WHEN g.graph_provider = 'aclgraph' THEN 'aclgraph-graph-envelope-'
            ELSE 'cuda-graph-envelope-' END || (c.order_base + ch.event_n) AS envelope_id,
       g.db_idx, g.device_id, g.graph_provider, g.graph_kind, (c.order_base + ch.event_n) AS envelope_idx,
       -- the step indexes are the envelope's and the child's event ordinals (the reference's
       -- step_idx of an event), the envelope's NULL where it has no event of its own
       g.graph_event_id, ch.event_id AS child_event_id, g.event_n AS graph_step_idx,
       ch.event_n AS child_step_idx, 'contains' AS relation,
       CASE WHEN ch.stream_id IS g.stream_id THEN 'same_stream' ELSE 'cross_stream' END
         AS stream_relation,
       g.graph_id, g.graph_exec_id, g.correlation_id AS graph_correlation_id,
       g.start_ns AS graph_start_ns, g.end_ns AS graph_end_ns, ch.start_ns AS child_start_ns,
       ch.end_ns AS child_end_ns, ROUND((ch.start_ns - g.start_ns) / 1000.0, 3) AS start_offset_us,
       ROUND((g.end_ns - ch.end_ns) / 1000.0, 3) AS end_offset_us, ch.dur_us AS child_dur_us,
       NULL AS raw_json, ch.event_n AS child_event_n,
       -- the envelope's own event where its id names one (a promoted launch's event-<n>)
       CASE WHEN g.graph_event_id = g.event_id THEN g.event_n END AS graph_event_n,
       g.graph_event_idx
-- the children's runs (sql/schema/60_reports.sql) read as event ranges directly, not through
-- traceloom_graph_envelope_child, which would walk each range once more
FROM (SELECT r.graph_event_idx, r.first_child_order - r.first_event_n AS order_base,
             r.first_event_n, r.run_length
      FROM traceloom_graph_envelope_child_run_core r) c
JOIN traceloom_cuda_graph_replay_core g ON g.graph_event_idx = c.graph_event_idx
JOIN traceloom_event ch ON ch.event_n >= c.first_event_n
 AND ch.event_n < c.first_event_n + c.run_length;

-- @surface traceloom_v_cuda_graph_envelope | one device event inside a graph replay envelope | The containment rows with the envelope's anchor and label and the child's label, task type, table, stream, symbol and role | SELECT graph_event_id, child_symbol, stream_relation, start_offset_us FROM traceloom_v_cuda_graph_envelope LIMIT 20
CREATE VIEW traceloom_v_cuda_graph_envelope AS
SELECT ge.*,
       (SELECT a.anchor_idx FROM traceloom_graph_envelope_anchor x
          JOIN traceloom_anchor a ON a.anchor_n = x.anchor_n
         WHERE x.graph_event_idx = ge.graph_event_idx) AS graph_anchor_idx,
       graph.label AS graph_label, graph.stream_id AS graph_stream_id, child.label AS child_label,
       child.task_type AS child_task_type, child.source_table AS child_source_table,
       child.stream_id AS child_stream_id, child.symbol AS child_symbol,
       child.semantic_role AS child_semantic_role
FROM traceloom_cuda_graph_envelope ge
LEFT JOIN traceloom_event graph ON graph.event_n = ge.graph_event_n
JOIN traceloom_event child ON child.event_n = ge.child_event_n;

-- @surface traceloom_replay_unit_anchor | one launch anchor of an exact replay unit | Which anchors an exact replay unit's launches became | SELECT replay_unit_id, count(*) FROM traceloom_replay_unit_anchor GROUP BY 1 LIMIT 10
CREATE VIEW traceloom_replay_unit_anchor AS
SELECT 'replay-unit-' || l.replay_unit_id AS replay_unit_id, l.anchor_id, l.db_idx, l.device_id
FROM traceloom_graph_launch l
WHERE l.anchor_id IS NOT NULL AND l.replay_unit_id IS NOT NULL;

-- @surface traceloom_v_replay_position_realization_member | one exact member of a promoted launch | Each member realizing a launch position, with its role decision, timing relative to the launch anchor, observed order within the launch (start, end, lane, task, member; timestamp order, not dependency) and relation to the previous member | SELECT launch_id, observed_order, identity, interval_relation, observed_relation_to_previous FROM traceloom_v_replay_position_realization_member ORDER BY launch_id, observed_order LIMIT 20
CREATE VIEW traceloom_v_replay_position_realization_member AS
WITH ordered AS (
  SELECT m.*, ROW_NUMBER() OVER w - 1 AS observed_order,
         LAG(m.member_id) OVER w AS previous_member_id, LAG(m.end_ns) OVER w AS previous_member_end_ns
  FROM traceloom_replay_cost_member m
  WINDOW w AS (PARTITION BY m.db_idx, m.device_id, m.launch_n
               ORDER BY m.start_ns, m.end_ns, m.lane_ordinal, m.task_ordinal, m.member_id)
)
SELECT launch.anchor_id AS position_anchor_id, o.launch_id, o.cost_unit_id, o.db_idx, o.device_id,
       launch.replay_unit_id, launch.graph_template_id, launch.graph_launch_occurrence_id,
       o.composition_slot_id, o.slot_role, o.slot_order AS position_order,
       o.replay_body_template_id, o.body_id, anchor.symbol AS position_symbol,
       anchor.role AS position_role, anchor.label AS position_label,
       anchor.start_ns AS position_start_ns, anchor.end_ns AS position_end_ns, o.member_id,
       o.observed_order, o.previous_member_id, o.previous_member_end_ns, o.stream_id,
       o.lane_ordinal, o.task_ordinal, o.kind, o.identity, role.decision_id AS role_decision_id,
       role.policy_role, role.final_role, role.policy_structural_participation,
       role.effective_structural_participation, role.support_state AS role_support_state,
       role.reason_code AS role_reason_code, role.rule_id AS role_rule_id, o.start_ns, o.end_ns,
       o.duration_ns, o.relative_start_ns, o.relative_end_ns, o.scheduled_work_share_ppm,
       o.scheduled_work_share_supported, o.scheduled_work_denominator_body_task_sum_ns,
       launch.match_policy, launch.association_policy, launch.evidence_level, ev.source_table,
       CAST(ev.source_key AS INTEGER) AS source_row_id, role.source_table AS role_source_table,
       role.source_key AS role_source_key, o.event_id, o.raw_task_id,
       'exact_graph_body_member' AS membership_relation,
       CASE WHEN anchor.start_ns IS NULL OR anchor.end_ns IS NULL THEN 'unavailable'
            WHEN o.start_ns >= anchor.start_ns AND o.end_ns <= anchor.end_ns THEN 'contained'
            WHEN o.start_ns < anchor.end_ns AND o.end_ns > anchor.start_ns THEN 'boundary_overlap'
            ELSE 'disjoint' END AS interval_relation,
       CASE WHEN o.previous_member_id IS NULL THEN 'first'
            WHEN o.start_ns < o.previous_member_end_ns THEN 'overlaps_previous'
            WHEN o.start_ns = o.previous_member_end_ns THEN 'meets_previous'
            ELSE 'after_previous' END AS observed_relation_to_previous,
       'timestamp_order_not_dependency' AS observation_semantics
FROM ordered o
CROSS JOIN traceloom_graph_launch launch ON launch.launch_n = o.launch_n
CROSS JOIN traceloom_event ev ON ev.event_n = o.event_n
LEFT JOIN traceloom_anchor anchor ON anchor.anchor_n = launch.anchor_n
-- every event has its decision (an inner join keeps the rows and searches by key)
JOIN traceloom_evidence_role_decision role ON role.event_n = ev.event_n;
