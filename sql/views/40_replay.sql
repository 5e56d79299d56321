-- Read surfaces over the exact replay relations (outputs.md section 5).

-- The members as launches x slots (storage: sql/schema/40_replay.sql): member k of a launch is
-- slot first_slot_n + k, its event the launch's first member event plus the slot's offset.
-- Every join is by key: the launch and its cost by launch_n, the slots as a range of slot_n,
-- the event by event_n.
-- @surface traceloom_graph_member_core | one exact member (integer form) | Every member of every promoted launch as integers: launch, event, ordinals, kind, share and aggregate (a view over slots and launches) | SELECT launch_n, count(*) FROM traceloom_graph_member_core GROUP BY 1 LIMIT 5
CREATE VIEW traceloom_graph_member_core AS
SELECT l.first_member_n + s.slot_n - g.first_slot_n AS member_n, g.launch_n,
       g.first_event_n + s.event_offset AS event_n, s.slot_n - g.first_slot_n AS member_order,
       s.lane_ordinal, s.task_ordinal, s.kind, s.original_graph_node_id,
       -- trunc(dur * 10^6 / the launch's task_sum), as ext/replay/costmap.c computes it
       coalesce(s.scheduled_work_share_ppm,
                CASE WHEN c.task_sum_ns > 0 THEN e.dur_ns * 1000000 / c.task_sum_ns ELSE 0 END)
         AS scheduled_work_share_ppm,
       coalesce(s.aggregate_n, g.first_aggregate_n + s.aggregate_offset) AS aggregate_n,
       coalesce(s.contributor_order, g.contributor_order) AS contributor_order
FROM traceloom_graph_member_range_core g
JOIN traceloom_graph_launch l ON l.launch_n = g.launch_n
JOIN traceloom_graph_slot_core s ON s.slot_n >= g.first_slot_n
 AND s.slot_n < g.first_slot_n + l.member_count
LEFT JOIN traceloom_event_core e ON e.event_n = g.first_event_n + s.event_offset
LEFT JOIN traceloom_replay_cost_launch c ON c.launch_n = g.launch_n;

-- @surface traceloom_graph_body_member | one exact member task of a promoted launch | Graph body members by identity, with lane and task ordinals, timing and provenance | SELECT kind, count(*), round(sum(dur_us), 3) FROM traceloom_graph_body_member GROUP BY 1
CREATE VIEW traceloom_graph_body_member AS
SELECT 'graph-body-member-' || c.member_n AS member_id, l.launch_id, l.db_idx, l.device_id,
       l.graph_provider, l.graph_event_id, l.replay_unit_id, l.graph_template_id,
       l.graph_launch_occurrence_id, l.body_id, l.replay_body_template_id,
       -- the launch's columns, as outputs.md section 5 lists them after body_id: member_order
       -- is the launch's place in its unit and correlation_id the launch's (its host call's),
       -- the reference's; the member's place in its body is (lane_ordinal, task_ordinal)
       l.member_order, l.slot_order, c.lane_ordinal, c.task_ordinal, c.kind, e.event_id, e.task_id,
       (SELECT s.source_table FROM traceloom_event_shape s WHERE s.shape_id = e.shape_id)
         AS source_table,
       COALESCE((SELECT so.source_rowid_offset FROM traceloom_event_shape so WHERE so.shape_id = e.shape_id) + e.event_n, (SELECT sk.source_key FROM traceloom_event_source_key sk WHERE sk.event_n = e.event_n)) AS source_row_id,
       e.task_id AS raw_task_id, e.start_ns, e.start_ns + e.dur_ns AS end_ns,
       e.dur_ns / 1000.0 AS dur_us,
       l.correlation_id,
       CASE WHEN l.graph_provider = 'cuda'
            THEN (SELECT s.graph_node_id FROM traceloom_event_shape s WHERE s.shape_id = e.shape_id)
       END AS graph_node_id,
       c.original_graph_node_id, l.match_policy, l.association_policy, l.evidence_level,
       e.stream_id,
       -- the name its body signature compares (ext/replay/publish_replay.c member_identity):
       -- a CUDA child's own name (the kernel's, a copy's label), an Ascend task's operator
       (SELECT CASE WHEN l.graph_provider = 'cuda' THEN s.raw_label
                    ELSE coalesce(s.comm_name, s.op_type, s.op_name, s.raw_label) END
          FROM traceloom_event_shape s WHERE s.shape_id = e.shape_id) AS identity,
       c.scheduled_work_share_ppm, c.aggregate_n, c.contributor_order, c.member_n, l.launch_n,
       c.event_n
-- (a member is an event: its core row by key and its shape's text by key, as traceloom_event
-- reads them, without that view's filter on the key, which only leaves out rows no member is)
FROM traceloom_graph_member_core c
JOIN traceloom_graph_launch l ON l.launch_n = c.launch_n
JOIN traceloom_event_core e ON e.event_n = c.event_n;

-- @surface traceloom_replay_cost_member | one exact member with its share of the body | Member timing relative to its launch and its scheduled-work share (ppm of the body task-sum) | SELECT identity, count(*), avg(duration_ns), avg(scheduled_work_share_ppm) FROM traceloom_replay_cost_member GROUP BY 1 ORDER BY 3 DESC LIMIT 10
CREATE VIEW traceloom_replay_cost_member AS
SELECT m.member_id, m.launch_id, c.cost_unit_id, m.db_idx, m.device_id, c.composition_slot_id,
       c.slot_role, c.slot_order, m.replay_body_template_id, m.body_id, m.stream_id,
       m.lane_ordinal, m.task_ordinal, m.kind, m.event_id, m.identity, m.raw_task_id,
       m.start_ns, m.end_ns, m.end_ns - m.start_ns AS duration_ns,
       m.start_ns - c.first_member_start_ns AS relative_start_ns,
       m.end_ns - c.first_member_start_ns AS relative_end_ns,
       m.scheduled_work_share_ppm, c.task_sum_ns > 0 AS scheduled_work_share_supported,
       c.task_sum_ns AS scheduled_work_denominator_body_task_sum_ns, m.member_n, m.launch_n,
       m.event_n
FROM traceloom_graph_body_member m
JOIN traceloom_replay_cost_launch c ON c.launch_n = m.launch_n;

-- @surface traceloom_replay_cost_aggregate_member | one member contributing to an aggregate | Which exact members make up each aggregate, in contributor (time) order | SELECT aggregate_id, count(*) FROM traceloom_replay_cost_aggregate_member GROUP BY 1 LIMIT 10
CREATE VIEW traceloom_replay_cost_aggregate_member AS
SELECT 'replay-cost-aggregate-' || c.aggregate_n AS aggregate_id,
       'graph-body-member-' || c.member_n AS member_id, l.db_idx, l.device_id,
       c.contributor_order
FROM traceloom_graph_member_core c JOIN traceloom_graph_launch l ON l.launch_n = c.launch_n;

-- The node occurrences that cover a launch anchor are its atom occurrence and that
-- occurrence's ancestors: walked up the parent chain from the launch anchors alone (a few
-- per launch), never by searching the anchor ranges of every occurrence.
-- @surface traceloom_v_node_graph_body_member | one exact body member under a tree node occurrence | Which member kernels realize each launch anchor of the tree, with the anchor's cost packet and the member's event | SELECT node_id, occurrence_idx, node_launch_id, member_id, kind, member_symbol, dur_us FROM traceloom_v_node_graph_body_member LIMIT 20
CREATE VIEW traceloom_v_node_graph_body_member AS
WITH RECURSIVE cover(launch_n, anchor_n, occurrence_n) AS (
  SELECT l.launch_n, a.anchor_n, a.occurrence_n
  FROM traceloom_graph_launch l
  CROSS JOIN traceloom_anchor_core a ON a.anchor_n = l.anchor_n
  WHERE a.occurrence_n IS NOT NULL
  UNION ALL
  SELECT c.launch_n, c.anchor_n, o.parent_n
  FROM cover c JOIN traceloom_position_occurrence_core o ON o.occurrence_n = c.occurrence_n
  WHERE o.parent_n IS NOT NULL)
SELECT o.position_id AS node_id, 'native_report_tree' AS view_name, o.occurrence_idx,
       cv.anchor_n - o.anchor_first_n AS idx_in_occurrence,
       cv.anchor_n - o.anchor_first_n + 1 AS anchor_order, o.coverage_kind, o.repeat_context,
       a.compute_us AS anchor_compute_us, a.comm_us AS anchor_comm_us,
       a.idle_us AS anchor_idle_us, a.total_us AS anchor_total_us, a.self_us AS anchor_self_us,
       a.aux_events AS anchor_aux_events, a.aux_us AS anchor_aux_us,
       l.launch_id AS node_launch_id, l.graph_event_id AS node_event_id,
       l.anchor_id AS node_anchor_id, l.replay_unit_id AS node_replay_unit_id,
       l.graph_template_id AS node_graph_template_id,
       l.graph_launch_occurrence_id AS node_graph_launch_occurrence_id,
       l.member_order AS node_member_order, l.slot_order AS node_slot_order,
       l.correlation_id AS launch_correlation_id, l.match_policy AS launch_match_policy,
       l.association_policy AS launch_association_policy, l.start_ns AS launch_start_ns,
       l.end_ns AS launch_end_ns, l.dur_us AS launch_dur_us,
       m.*,
       e.symbol AS member_symbol, e.label AS member_label, e.task_type AS member_task_type,
       e.semantic_role AS member_semantic_role
-- CROSS JOINs: from the covering occurrences of each launch anchor to their rows by key, and
-- to the launch's members as one key range, never from every member or occurrence
FROM cover cv
CROSS JOIN traceloom_position_occurrence o ON o.occurrence_n = cv.occurrence_n
CROSS JOIN traceloom_anchor a ON a.anchor_n = cv.anchor_n
CROSS JOIN traceloom_graph_launch l ON l.launch_n = cv.launch_n
CROSS JOIN traceloom_graph_body_member m ON m.launch_n = cv.launch_n
CROSS JOIN traceloom_event e ON e.event_n = m.event_n;

-- @surface traceloom_v_node_replay_cost_member | one member cost row under the node that owns its launch anchor | The replay cost map seen from the tree (self coverage only, so each member appears once per owning node) | SELECT node_id, slot_role, identity, duration_ns, scheduled_work_share_ppm FROM traceloom_v_node_replay_cost_member LIMIT 20
CREATE VIEW traceloom_v_node_replay_cost_member AS
SELECT o.position_id AS node_id, o.occurrence_idx, 'native_report_tree' AS view_name,
       o.coverage_kind, l.anchor_id AS node_anchor_id, l.member_order AS node_member_order,
       l.slot_order AS node_slot_order, c.*, e.source_table,
       CAST(e.source_key AS INTEGER) AS source_row_id,
       CASE WHEN l.graph_provider = 'cuda' THEN e.graph_node_id END AS graph_node_id,
       s.original_graph_node_id, l.evidence_level
-- the member's slot by key (member_n is an expression over slots, not a key to join on)
FROM traceloom_graph_launch l
JOIN traceloom_anchor_core a ON a.anchor_n = l.anchor_n
JOIN traceloom_position_occurrence o ON o.occurrence_n = a.occurrence_n
JOIN traceloom_replay_cost_member c ON c.launch_n = l.launch_n
JOIN traceloom_graph_member_range_core g ON g.launch_n = l.launch_n
JOIN traceloom_graph_slot_core s ON s.slot_n = g.first_slot_n + c.member_n - l.first_member_n
JOIN traceloom_event e ON e.event_n = c.event_n;

-- @surface traceloom_v_exact_replay_partition_status | one tree and whether its root splits at exact replays | Counts of protected replay intervals and why the root can or cannot be partitioned at them | SELECT tree_id, replay_interval_count, exact_replay_count, support_state, reason_code FROM traceloom_v_exact_replay_partition_status
CREATE VIEW traceloom_v_exact_replay_partition_status AS
WITH iv AS (
  SELECT p.db_idx, p.device_id, p.support_state, p.first_anchor_n AS lo, p.last_anchor_n AS hi,
         lag(p.last_anchor_n) OVER (PARTITION BY p.db_idx, p.device_id
                                    ORDER BY p.first_anchor_n, p.last_anchor_n) AS prev_hi
  FROM traceloom_protected_interval p
  WHERE p.kind = 'graph_replay_unit'),
agg AS (
  SELECT db_idx, device_id, count(*) AS n,
         sum(support_state = 'supported' AND lo IS NOT NULL AND hi IS NOT NULL) AS exact,
         sum(support_state <> 'supported') AS unsupported,
         sum(lo IS NULL OR hi IS NULL OR hi < lo) AS invalid,
         sum(prev_hi IS NOT NULL AND lo <= prev_hi) AS overlap
  FROM iv GROUP BY db_idx, device_id)
SELECT t.tree_id, t.db_idx, t.device_id, coalesce(a.n, 0) AS replay_interval_count,
       coalesce(a.exact, 0) AS exact_replay_count,
       coalesce(a.unsupported, 0) AS unsupported_interval_count,
       coalesce(a.invalid, 0) AS invalid_bound_count, coalesce(a.overlap, 0) AS overlap_count,
       CASE WHEN coalesce(a.n, 0) > 0 AND a.unsupported = 0 AND a.invalid = 0 AND a.overlap = 0
            THEN 'supported' ELSE 'unsupported' END AS support_state,
       CASE WHEN coalesce(a.n, 0) = 0 THEN 'no_exact_replays'
            WHEN a.unsupported > 0 THEN 'non_exact_protected_interval'
            WHEN a.invalid > 0 THEN 'invalid_anchor_bounds'
            WHEN a.overlap > 0 THEN 'overlapping_replay_intervals'
            ELSE 'ordered_disjoint_exact_replays' END AS reason_code
FROM traceloom_semantic_tree t
LEFT JOIN agg a ON a.db_idx = t.db_idx AND a.device_id = t.device_id
WHERE t.view_name = 'anchor_tree';

-- @surface traceloom_v_exact_replay_partition | one root segment between or at exact replays | The root's anchors split at exact replays: X1, R1, U1, R2, ..., Rn, X2 (open boundary, replay, between replays), each kept with its costs, an empty one with no anchor range and zero costs | SELECT segment_label, coordinate_kind, first_anchor_idx, last_anchor_idx, total_us FROM traceloom_v_exact_replay_partition ORDER BY db_idx, device_id, segment_order
CREATE VIEW traceloom_v_exact_replay_partition AS
-- Segments are ranges of anchor_n (the anchors of one device are consecutive numbers), so
-- the costs are a rowid range of the anchors; anchor_idx is anchor_n less the tree's first.
-- n exact replays always cut the root into the 2n + 1 segments X1, R1, U1, ..., Rn, X2 in
-- segment_order 0 .. 2n (coordinate_index counts each kind from 0), as the reference does: a
-- segment with no anchor (replays back to back, a replay at the root's edge) is still a
-- coordinate of the partition, with no anchor range, anchor_count 0 and zero costs.
WITH st AS (SELECT s.*, t.first_anchor_n AS base, t.anchor_count
            FROM traceloom_v_exact_replay_partition_status s
            JOIN traceloom_tree_core t ON t.db_idx = s.db_idx AND t.device_id = s.device_id
            WHERE s.support_state = 'supported'),
iv AS (
  SELECT p.db_idx, p.device_id, st.tree_id, st.base, p.protected_interval_id, p.replay_unit_id,
         p.first_anchor_n - st.base + 1 AS lo, p.last_anchor_n - st.base + 1 AS hi,
         row_number() OVER (PARTITION BY p.db_idx, p.device_id ORDER BY p.first_anchor_n) AS k,
         count(*) OVER (PARTITION BY p.db_idx, p.device_id) AS cnt
  FROM traceloom_protected_interval p
  JOIN st ON st.db_idx = p.db_idx AND st.device_id = p.device_id),
ext AS (SELECT db_idx, device_id, anchor_count AS n FROM st),
-- each segment carries its tree (id, first anchor) from its replay, so the anchors are read
-- straight from the segments, without joining the trees again
seg AS (
  SELECT i.db_idx, i.device_id, i.tree_id, i.base, 2 * i.k - 1 AS segment_order, 'replay' AS kind,
         i.k - 1 AS idx, 'R' || i.k AS label,
         i.protected_interval_id AS lpi, i.protected_interval_id AS rpi,
         i.replay_unit_id AS lru, i.replay_unit_id AS rru, i.lo, i.hi
  FROM iv i
  UNION ALL
  -- the segment before each replay: X1 before the first, U(k-1) between replays k-1 and k
  SELECT i.db_idx, i.device_id, i.tree_id, i.base, 2 * i.k - 2,
         CASE WHEN i.k = 1 THEN 'open_boundary' ELSE 'between_replays' END,
         CASE WHEN i.k = 1 THEN 0 ELSE i.k - 2 END,
         CASE WHEN i.k = 1 THEN 'X1' ELSE 'U' || (i.k - 1) END,
         p.protected_interval_id, i.protected_interval_id, p.replay_unit_id, i.replay_unit_id,
         coalesce(p.hi, 0) + 1, i.lo - 1
  FROM iv i LEFT JOIN iv p ON p.db_idx = i.db_idx AND p.device_id = i.device_id AND p.k = i.k - 1
  UNION ALL
  SELECT i.db_idx, i.device_id, i.tree_id, i.base, 2 * i.cnt, 'open_boundary', 1, 'X2', i.protected_interval_id,
         NULL, i.replay_unit_id, NULL, i.hi + 1, x.n
  FROM iv i JOIN ext x ON x.db_idx = i.db_idx AND x.device_id = i.device_id WHERE i.k = i.cnt)
SELECT printf('db%06d:d%06d:%s:replay-partition:%06d', z.db_idx, z.device_id, z.tree_id,
              z.segment_order) AS partition_id,
       z.tree_id, z.db_idx, z.device_id, z.segment_order, z.kind AS coordinate_kind,
       z.idx AS coordinate_index, z.label AS segment_label, 'supported' AS support_state,
       z.lpi AS left_protected_interval_id, z.rpi AS right_protected_interval_id,
       z.lru AS left_replay_unit_id, z.rru AS right_replay_unit_id,
       CASE WHEN z.hi >= z.lo THEN z.lo END AS first_anchor_idx,
       CASE WHEN z.hi >= z.lo THEN z.hi END AS last_anchor_idx,
       max(z.hi - z.lo + 1, 0) AS anchor_count,
       round(coalesce(sum(a.compute_us), 0.0), 3) AS compute_us,
       round(coalesce(sum(a.comm_us), 0.0), 3) AS comm_us,
       round(coalesce(sum(a.idle_us), 0.0), 3) AS idle_us,
       round(coalesce(sum(a.total_us), 0.0), 3) AS total_us,
       round(coalesce(sum(a.aux_us), 0.0), 3) AS aux_us
FROM seg z
-- an empty segment (hi < lo) matches no anchor and keeps its row
LEFT JOIN traceloom_anchor a ON a.anchor_n BETWEEN z.base + z.lo - 1 AND z.base + z.hi - 1
GROUP BY z.db_idx, z.device_id, z.segment_order;
