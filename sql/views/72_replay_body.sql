-- Repeats inside exact replay bodies (ext/bodypattern; tables in
-- sql/schema/72_replay_body.sql, filled by the analysis once the replay cost map and its
-- members are published); the views read its small tables and join the members by key.

CREATE INDEX traceloom_replay_body_position_aggregate ON traceloom_replay_body_position_core(aggregate_n);
CREATE INDEX traceloom_replay_body_occurrence_span ON traceloom_replay_body_pattern_occurrence(domain_n, position_start);
CREATE INDEX traceloom_replay_body_occurrence_pattern ON traceloom_replay_body_pattern_occurrence(pattern_n);

-- @surface traceloom_replay_body_position | one body position of a domain | Each position of a replay body at native resolution: its aggregate, operator identity and kind, how often it was replayed, its duration quantiles and its share of the body's scheduled work | SELECT position_id, position_ordinal, identity, kind, duration_median_ns, scheduled_work_share_ppm FROM traceloom_replay_body_position LIMIT 20
CREATE VIEW traceloom_replay_body_position AS
SELECT d.domain_id || '-position-' || c.position_ordinal AS position_id, d.domain_id, d.db_idx,
       d.device_id, c.position_ordinal, a.aggregate_id, a.identity, a.kind,
       a.member_occurrence_count, a.replay_unit_count, a.launch_member_count,
       a.duration_p25_ns, a.duration_median_ns, a.duration_p75_ns,
       c.scheduled_work_share_ppm, c.scheduled_work_share_supported, c.position_n, c.domain_n,
       c.aggregate_n
FROM traceloom_replay_body_position_core c
JOIN traceloom_replay_body_pattern_domain d ON d.domain_n = c.domain_n
JOIN traceloom_replay_cost_aggregate a ON a.rowid = c.aggregate_rowid;

-- @surface traceloom_replay_body_position_refinement | one (parent pattern, slot) | Which pattern fills each slot of a body pattern (a repeat's slots are the children of one iteration) | SELECT parent_position_id, slot_ordinal, child_position_id FROM traceloom_replay_body_position_refinement LIMIT 20
CREATE VIEW traceloom_replay_body_position_refinement AS
SELECT p.pattern_id AS parent_position_id, c.slot_ordinal, c.pattern_id AS child_position_id,
       c.domain_id, c.db_idx, c.device_id, p.pattern_n AS parent_pattern_n,
       c.pattern_n AS child_pattern_n
FROM traceloom_replay_body_pattern_definition c
JOIN traceloom_replay_body_pattern_definition p ON p.pattern_n = c.parent_pattern_n;

-- @surface traceloom_replay_body_position_member | one direct member of a body pattern occurrence | The children of each occurrence by (slot, member_order), and for an atom its terminal body position (slot 0) | SELECT parent_occurrence_id, slot_ordinal, member_order, member_kind, child_occurrence_id, terminal_position_id FROM traceloom_replay_body_position_member LIMIT 20
CREATE VIEW traceloom_replay_body_position_member AS
SELECT p.pattern_id AS parent_position_id, p.occurrence_id AS parent_occurrence_id,
       c.slot_ordinal, c.member_order, 'child_occurrence' AS member_kind,
       c.pattern_id AS child_position_id, c.occurrence_id AS child_occurrence_id,
       NULL AS terminal_position_id, NULL AS terminal_position_ordinal,
       NULL AS terminal_aggregate_id, c.domain_id, c.db_idx, c.device_id,
       p.occurrence_n AS parent_n, c.occurrence_n AS child_n, NULL AS terminal_position_n
FROM traceloom_replay_body_pattern_occurrence c
JOIN traceloom_replay_body_pattern_occurrence p ON p.occurrence_n = c.parent_n
UNION ALL
SELECT o.pattern_id, o.occurrence_id, 0, 1, 'terminal_token', NULL, NULL,
       o.domain_id || '-position-' || o.position_start, o.position_start,
       (SELECT a.aggregate_id FROM traceloom_replay_body_position_core pc
          JOIN traceloom_replay_cost_aggregate a ON a.rowid = pc.aggregate_rowid
         WHERE pc.position_n = d.first_position_n + o.position_start),
       o.domain_id, o.db_idx, o.device_id, o.occurrence_n, NULL,
       d.first_position_n + o.position_start
FROM traceloom_replay_body_pattern_occurrence o
JOIN traceloom_replay_body_pattern_definition f ON f.pattern_n = o.pattern_n
JOIN traceloom_replay_body_pattern_domain d ON d.domain_n = o.domain_n
WHERE f.node_kind = 'atom';

-- @surface traceloom_v_replay_body_pattern | one body pattern with its domain | Every pattern of every replay body with its domain's template, slot, stream and support, and the spread of its occurrences' summed median durations | SELECT slot_role, stream_id, local_pattern_id, node_kind, label, occurrence_count, avg_occurrence_median_sum_ns FROM traceloom_v_replay_body_pattern LIMIT 20
CREATE VIEW traceloom_v_replay_body_pattern AS
SELECT d.run_id, d.graph_template_id, d.slot_role, d.aggregation_scope, d.replay_body_template_id,
       d.stream_id, d.support_status, f.pattern_id, f.domain_id, f.db_idx, f.device_id,
       f.local_pattern_id, f.node_kind, f.label, f.category, f.repeat_count, f.display_depth,
       f.loop_depth, f.occurrence_count, f.positions_per_occurrence, f.visibility_reason,
       (SELECT min(o.duration_median_sum_ns) FROM traceloom_replay_body_pattern_occurrence o
         WHERE o.pattern_n = f.pattern_n) AS min_occurrence_median_sum_ns,
       (SELECT avg(o.duration_median_sum_ns) FROM traceloom_replay_body_pattern_occurrence o
         WHERE o.pattern_n = f.pattern_n) AS avg_occurrence_median_sum_ns,
       (SELECT max(o.duration_median_sum_ns) FROM traceloom_replay_body_pattern_occurrence o
         WHERE o.pattern_n = f.pattern_n) AS max_occurrence_median_sum_ns,
       f.pattern_n, f.domain_n
FROM traceloom_replay_body_pattern_definition f
JOIN traceloom_replay_body_pattern_domain d ON d.domain_n = f.domain_n;

-- @surface traceloom_v_replay_body_position_definition | one body pattern | The body patterns named as positions (position_id, local_position_id, position_kind), for queries written against the hierarchical-position vocabulary | SELECT position_id, local_position_id, position_kind, label, occurrence_count FROM traceloom_v_replay_body_position_definition LIMIT 20
CREATE VIEW traceloom_v_replay_body_position_definition AS
SELECT pattern_id AS position_id, domain_id, db_idx, device_id, local_pattern_id AS local_position_id,
       node_kind AS position_kind, label, category, repeat_count, display_depth, loop_depth,
       occurrence_count, positions_per_occurrence AS terminal_positions_per_occurrence,
       visibility_reason, pattern_n
FROM traceloom_replay_body_pattern_definition;

-- @surface traceloom_v_replay_body_position_occurrence | one body pattern occurrence | The occurrences named as position occurrences, with their span and summed quantiles | SELECT occurrence_id, position_id, repeat_iteration, position_start, position_end_exclusive, duration_median_sum_ns FROM traceloom_v_replay_body_position_occurrence LIMIT 20
CREATE VIEW traceloom_v_replay_body_position_occurrence AS
SELECT occurrence_id, pattern_id AS position_id, domain_id, parent_occurrence_id, db_idx,
       device_id, occurrence_index, repeat_iteration, position_start, position_end_exclusive,
       position_count, duration_p25_sum_ns, duration_median_sum_ns, duration_p75_sum_ns,
       scheduled_work_share_ppm_sum, scheduled_work_share_supported, occurrence_n, pattern_n
FROM traceloom_replay_body_pattern_occurrence;

-- @surface traceloom_v_replay_body_position_direct_member | one direct member of a body pattern occurrence | traceloom_replay_body_position_member with the terminal position's identity, kind and duration quantiles | SELECT parent_occurrence_id, member_kind, terminal_identity, duration_median_ns FROM traceloom_v_replay_body_position_direct_member LIMIT 20
CREATE VIEW traceloom_v_replay_body_position_direct_member AS
SELECT m.*, a.identity AS terminal_identity, a.kind AS terminal_kind,
       a.duration_p25_ns, a.duration_median_ns, a.duration_p75_ns
FROM traceloom_replay_body_position_member m
LEFT JOIN traceloom_replay_body_position_core p ON p.position_n = m.terminal_position_n
LEFT JOIN traceloom_replay_cost_aggregate a ON a.rowid = p.aggregate_rowid;

-- @surface traceloom_v_replay_body_pattern_position | one (body pattern occurrence, body position it covers) | Each occurrence with every body position in its span and that position's aggregate, quantiles and share | SELECT occurrence_id, position_ordinal, identity, duration_median_ns FROM traceloom_v_replay_body_pattern_position LIMIT 20
CREATE VIEW traceloom_v_replay_body_pattern_position AS
SELECT o.occurrence_id, o.pattern_id, o.parent_occurrence_id, o.occurrence_index,
       o.repeat_iteration, o.position_start, o.position_end_exclusive, p.position_id,
       p.domain_id, p.db_idx, p.device_id, p.position_ordinal, p.aggregate_id, p.identity,
       p.kind, p.member_occurrence_count, p.replay_unit_count, p.launch_member_count,
       p.duration_p25_ns, p.duration_median_ns, p.duration_p75_ns, p.scheduled_work_share_ppm,
       p.scheduled_work_share_supported, o.occurrence_n, p.position_n
FROM traceloom_replay_body_pattern_occurrence o
JOIN traceloom_replay_body_pattern_domain d ON d.domain_n = o.domain_n
JOIN traceloom_replay_body_position p
  ON p.position_n >= d.first_position_n + o.position_start
 AND p.position_n < d.first_position_n + o.position_end_exclusive;

-- Driven by the exact members (each member's position, then the occurrences whose span
-- holds that position): the members table is the large one, read once.
-- @surface traceloom_v_replay_body_pattern_member | one (body pattern occurrence, exact member) | Every exact launch member covered by a body pattern occurrence, with its launch, cost unit, event and timing | SELECT occurrence_id, position_ordinal, member_id, launch_id, identity, duration_ns FROM traceloom_v_replay_body_pattern_member LIMIT 20
CREATE VIEW traceloom_v_replay_body_pattern_member AS
SELECT o.occurrence_id, o.pattern_id, o.parent_occurrence_id, o.occurrence_index,
       o.repeat_iteration, o.domain_id, pc.position_ordinal,
       'replay-cost-aggregate-' || m.aggregate_n AS aggregate_id,
       'graph-body-member-' || m.member_n AS member_id, m.contributor_order, l.launch_id,
       c.cost_unit_id, 'event-' || m.event_n AS event_id,
       (SELECT a.identity FROM traceloom_replay_cost_aggregate a WHERE a.rowid = pc.aggregate_rowid) AS identity,
       m.kind, e.dur_ns AS duration_ns, e.start_ns, e.start_ns + e.dur_ns AS end_ns,
       e.task_id AS raw_task_id, c.composition_slot_id, c.slot_order, c.body_id,
       m.task_ordinal, o.db_idx, o.device_id, o.occurrence_n, m.member_n, m.launch_n, m.event_n
FROM traceloom_graph_member_core m
CROSS JOIN traceloom_replay_body_position_core pc
CROSS JOIN traceloom_replay_body_pattern_occurrence o
JOIN traceloom_graph_launch l ON l.launch_n = m.launch_n
JOIN traceloom_event_core e ON e.event_n = m.event_n
LEFT JOIN traceloom_replay_cost_launch c ON c.launch_n = m.launch_n
WHERE pc.aggregate_n = m.aggregate_n
  AND o.domain_n = pc.domain_n AND o.position_start <= pc.position_ordinal
  AND o.position_end_exclusive > pc.position_ordinal;

-- @surface traceloom_v_replay_body_pattern_source_locator | one (body pattern occurrence, exact member) with its raw row | Where each member of a body pattern occurrence came from: source table and row | SELECT occurrence_id, member_id, source_table, source_key FROM traceloom_v_replay_body_pattern_source_locator LIMIT 20
CREATE VIEW traceloom_v_replay_body_pattern_source_locator AS
SELECT m.occurrence_id, m.pattern_id, m.domain_id, m.position_ordinal, m.aggregate_id,
       m.member_id, m.event_id, m.identity, m.kind, m.duration_ns, 0 AS source_ordinal,
       (SELECT s.source_table FROM traceloom_event_core x JOIN traceloom_event_shape s ON s.shape_id = x.shape_id
         WHERE x.event_n = m.event_n) AS source_table,
       (SELECT CAST(COALESCE((SELECT so.source_rowid_offset FROM traceloom_event_shape so WHERE so.shape_id = x.shape_id) + x.event_n, (SELECT sk.source_key FROM traceloom_event_source_key sk WHERE sk.event_n = x.event_n)) AS TEXT) FROM traceloom_event_core x WHERE x.event_n = m.event_n) AS source_key,
       'primary' AS source_role, NULL AS raw_json, m.db_idx, m.device_id, m.occurrence_n,
       m.member_n, m.event_n
FROM traceloom_v_replay_body_pattern_member m;
