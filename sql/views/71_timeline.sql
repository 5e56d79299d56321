-- Timelines on one observed plane (the reference's annotated and flattened timelines,
-- docs/PARITY.md): every mainline anchor with the exact replay region around it, and the
-- same plane with each exact launch anchor replaced by its member kernels. Views over the
-- anchors, protected intervals, launches and graph members; nothing is stored.

-- A region's anchors are found from an anchor by the interval that starts at or before it.
CREATE INDEX traceloom_protected_interval_first_anchor ON traceloom_protected_interval(first_anchor_n);

-- Per device (tree): whether the exact replay regions can be drawn on the anchor timeline.
-- Regions are the protected graph_replay_unit intervals; their times are their anchors'
-- (ours stores no separate span), so a boundary never mismatches.
-- @surface traceloom_v_replay_region_annotation_status | one device (tree) | Whether the exact replay regions of a device form ordered, disjoint, exact regions that can be highlighted on its anchor timeline, and why not | SELECT db_idx, device_id, replay_region_count, support_state, reason_code FROM traceloom_v_replay_region_annotation_status
CREATE VIEW traceloom_v_replay_region_annotation_status AS
WITH region AS (
  SELECT p.db_idx, p.device_id, p.support_state, p.first_anchor_n AS lo, p.last_anchor_n AS hi,
         lead(p.first_anchor_n) OVER (PARTITION BY p.db_idx, p.device_id
                                      ORDER BY p.first_anchor_n, p.last_anchor_n) AS next_lo
  FROM traceloom_protected_interval p WHERE p.kind = 'graph_replay_unit'),
per_device AS (
  -- one row per tree, plus one per region: summed without a join
  SELECT t.db_idx, t.device_id, 0 AS n, 0 AS sup, 0 AS unsup, 0 AS invalid, 0 AS overlap
  FROM traceloom_tree_core t
  UNION ALL
  SELECT db_idx, device_id, 1, support_state = 'supported', support_state <> 'supported',
         lo IS NULL OR hi IS NULL OR lo > hi, next_lo IS NOT NULL AND hi >= next_lo
  FROM region),
summary AS (
  SELECT db_idx, device_id, sum(n) AS n, sum(sup) AS sup, sum(unsup) AS unsup,
         sum(invalid) AS invalid, sum(overlap) AS overlap
  FROM per_device GROUP BY db_idx, device_id)
SELECT db_idx, device_id, n AS replay_region_count, sup AS supported_region_count,
       unsup AS unsupported_region_count, invalid AS invalid_bound_count,
       0 AS boundary_time_mismatch_count, overlap AS overlap_count,
       CASE WHEN n = 0 THEN 'unavailable'
            WHEN unsup > 0 OR invalid > 0 OR overlap > 0 THEN 'unsupported'
            ELSE 'supported' END AS support_state,
       CASE WHEN n = 0 THEN 'no_exact_replay_regions'
            WHEN unsup > 0 THEN 'non_exact_protected_interval'
            WHEN invalid > 0 THEN 'invalid_anchor_bounds'
            WHEN overlap > 0 THEN 'overlapping_replay_regions'
            ELSE 'ordered_disjoint_exact_replay_regions' END AS reason_code
FROM summary;

-- Every mainline anchor once, in its device's order, with the exact replay region it lies
-- in (a highlight: the region does not own the anchor's time) and, for an exact launch
-- anchor, the launch (position) it stands for.
-- @surface traceloom_v_annotated_anchor_timeline | one mainline anchor | Compute, communication and replay-launch anchors on one plane, each with the exact replay region around it and its launch: replay is a background region annotation, not event ownership | SELECT anchor_idx, symbol, replay_region_state, replay_occurrence_id, replay_position_id, start_ns, end_ns FROM traceloom_v_annotated_anchor_timeline ORDER BY db_idx, device_id, anchor_idx LIMIT 20
CREATE VIEW traceloom_v_annotated_anchor_timeline AS
WITH status AS (SELECT * FROM traceloom_v_replay_region_annotation_status),
base AS (
  SELECT a.anchor_n, a.db_idx, a.device_id, a.anchor_n - t.first_anchor_n + 1 AS anchor_idx,
         a.event_n, t.first_anchor_n AS base,
         s.support_state, s.reason_code, s.replay_region_count,
         -- the interval starting last at or before the anchor (regions are disjoint when
         -- supported); the join below keeps it when it also ends at or after the anchor
         (SELECT p.rowid FROM traceloom_protected_interval p
           WHERE s.support_state = 'supported' AND p.first_anchor_n <= a.anchor_n
           ORDER BY p.first_anchor_n DESC LIMIT 1) AS region_rowid,
         (SELECT count(*) FROM traceloom_graph_launch l WHERE l.anchor_n = a.anchor_n) AS npos
  FROM status s
  CROSS JOIN traceloom_tree_core t
  CROSS JOIN traceloom_anchor_core a
  WHERE t.db_idx = s.db_idx AND t.device_id = s.device_id
    AND a.anchor_n >= t.first_anchor_n AND a.anchor_n < t.first_anchor_n + t.anchor_count)
SELECT av.anchor_id, b.db_idx, b.device_id, b.anchor_idx, av.event_id, av.step_idx, av.symbol,
       av.role, av.label, av.family,
       -- the anchor's event's columns: none for a promoted launch's anchor (no event; its row,
       -- event_n < 0, is the launch's interval)
       (SELECT x.source_table FROM traceloom_event_shape x WHERE x.shape_id = e.shape_id AND e.event_n >= 0) AS source_table,
       CASE WHEN e.event_n >= 0 THEN CAST(COALESCE((SELECT so.source_rowid_offset FROM traceloom_event_shape so WHERE so.shape_id = e.shape_id) + e.event_n, (SELECT sk.source_key FROM traceloom_event_source_key sk WHERE sk.event_n = e.event_n)) AS TEXT) END AS source_key,
       CASE WHEN e.event_n >= 0 THEN e.stream_id END AS stream_id,
       (SELECT x.category FROM traceloom_event_shape x WHERE x.shape_id = e.shape_id AND e.event_n >= 0) AS category,
       (SELECT x.semantic_role FROM traceloom_event_shape x WHERE x.shape_id = e.shape_id AND e.event_n >= 0) AS semantic_role,
       (SELECT x.task_type FROM traceloom_event_shape x WHERE x.shape_id = e.shape_id AND e.event_n >= 0) AS task_type,
       av.start_ns, av.end_ns, av.dur_us,
       b.support_state AS replay_annotation_support_state,
       b.reason_code AS replay_annotation_reason_code, b.replay_region_count,
       CASE WHEN b.support_state = 'supported' AND r.rowid IS NOT NULL THEN 'inside_exact_replay'
            WHEN b.support_state = 'supported' THEN 'outside_exact_replay'
            WHEN b.support_state = 'unavailable' THEN 'unavailable'
            ELSE 'unsupported' END AS replay_region_state,
       r.protected_interval_id, r.replay_unit_id AS replay_occurrence_id,
       (SELECT x.start_ns FROM traceloom_anchor_core y JOIN traceloom_event_core x ON x.event_n = y.event_n
         WHERE y.anchor_n = r.first_anchor_n) AS replay_region_start_ns,
       (SELECT x.start_ns + x.dur_ns FROM traceloom_anchor_core y JOIN traceloom_event_core x ON x.event_n = y.event_n
         WHERE y.anchor_n = r.last_anchor_n) AS replay_region_end_ns,
       r.first_anchor_n - b.base + 1 AS replay_region_first_anchor_idx,
       r.last_anchor_n - b.base + 1 AS replay_region_last_anchor_idx,
       b.anchor_n - r.first_anchor_n AS replay_region_anchor_offset,
       b.npos AS position_match_count,
       CASE WHEN b.npos = 1 THEN 'exact_position' WHEN b.npos > 1 THEN 'ambiguous_position_anchor'
            ELSE 'not_position' END AS position_support_state,
       l.launch_id AS replay_position_id, l.graph_provider,
       l.replay_unit_id AS provider_replay_unit_id, l.graph_template_id AS replay_pattern_id,
       l.graph_launch_occurrence_id, l.replay_body_template_id, l.body_id,
       l.member_order AS replay_position_member_order, l.slot_order AS replay_position_order,
       l.match_policy AS replay_position_match_policy,
       l.association_policy AS replay_position_association_policy,
       l.evidence_level AS replay_position_evidence_level,
       'one_mainline_anchor' AS row_grain,
       'region_highlight_not_event_ownership' AS replay_annotation_semantics,
       'anchor_order_not_dependency' AS observation_semantics,
       b.anchor_n, b.event_n, l.launch_n
FROM base b
JOIN traceloom_anchor av ON av.anchor_n = b.anchor_n
JOIN traceloom_event_core e ON e.event_n = b.event_n
LEFT JOIN traceloom_protected_interval r ON r.rowid = b.region_rowid
 AND r.kind = 'graph_replay_unit' AND r.last_anchor_n >= b.anchor_n
LEFT JOIN traceloom_graph_launch l ON b.npos = 1 AND l.anchor_n = b.anchor_n;

-- The annotated timeline with every exact launch anchor (inside a supported region, one
-- launch, at least one member) replaced by its member kernels: one observed plane of
-- operators. Items may overlap (members run on several streams); their durations are not
-- a cost lens and do not add up.
-- @surface traceloom_v_flattened_execution_timeline | one retained mainline anchor or one exact member of an expanded launch | Ordinary anchors, communication operations and the member kernels of exact replays on one observed timestamp plane, in timeline_order, without drawing a launch and its members twice | SELECT timeline_order, item_kind, symbol, start_ns, end_ns, replay_position_id FROM traceloom_v_flattened_execution_timeline ORDER BY db_idx, device_id, timeline_order LIMIT 30
CREATE VIEW traceloom_v_flattened_execution_timeline AS
-- Items are ordered on integer keys first (anchor_key, item_key: no text), and the wide
-- columns are looked up by key for each output row only: the first rows come without
-- building every anchor's text. A mainline anchor's (start, end, anchor_idx, item_kind) is
-- unique on its device (anchor_idx is), so only members of one launch reach the last sort
-- key, their timeline_item_id; an anchor's is left out of the sort (NULL).
WITH anchor_key AS NOT MATERIALIZED (
  -- expanded: the annotated timeline's test (inside_exact_replay: a supported device and the
  -- region found as it finds it; exact_position: one launch; and that launch has members),
  -- asked only of an anchor with a launch
  SELECT a.anchor_n, t.db_idx, t.device_id, a.anchor_n - t.first_anchor_n + 1 AS anchor_idx,
         -- (a reconciled pair's merged anchor: its extent, by key)
         COALESCE(CASE WHEN (SELECT max(anchor_n) FROM traceloom_anchor_extent_core) IS NOT NULL THEN (SELECT x.start_ns FROM traceloom_anchor_extent_core x WHERE x.anchor_n = a.anchor_n) END, e.start_ns) AS start_ns,
         COALESCE(CASE WHEN (SELECT max(anchor_n) FROM traceloom_anchor_extent_core) IS NOT NULL THEN (SELECT x.end_ns FROM traceloom_anchor_extent_core x WHERE x.anchor_n = a.anchor_n) END, e.start_ns + e.dur_ns) AS end_ns, s.support_state,
         CASE WHEN s.support_state = 'supported'
                   AND EXISTS (SELECT 1 FROM traceloom_graph_launch l WHERE l.anchor_n = a.anchor_n)
                   AND (SELECT count(*) FROM traceloom_graph_launch l WHERE l.anchor_n = a.anchor_n) = 1
                   AND (SELECT l.member_count FROM traceloom_graph_launch l
                         WHERE l.anchor_n = a.anchor_n) > 0
                   AND EXISTS (SELECT 1 FROM traceloom_protected_interval r
                                WHERE r.rowid = (SELECT p.rowid FROM traceloom_protected_interval p
                                                  WHERE p.first_anchor_n <= a.anchor_n
                                                  ORDER BY p.first_anchor_n DESC LIMIT 1)
                                  AND r.kind = 'graph_replay_unit' AND r.last_anchor_n >= a.anchor_n)
              THEN 1 ELSE 0 END AS expanded
  FROM traceloom_v_replay_region_annotation_status s
  CROSS JOIN traceloom_tree_core t
  CROSS JOIN traceloom_anchor_core a
  LEFT JOIN traceloom_event_core e ON e.event_n = a.event_n
  WHERE t.db_idx = s.db_idx AND t.device_id = s.device_id
    AND a.anchor_n >= t.first_anchor_n AND a.anchor_n < t.first_anchor_n + t.anchor_count),
member AS (
  -- an expanded anchor has exactly one launch: start from the launches
  SELECT k.db_idx, k.device_id, k.anchor_idx, k.anchor_n, l.launch_n, c.member_n,
         k.support_state,
         c.lane_ordinal, c.task_ordinal, c.kind, c.event_n AS member_event_n
  FROM traceloom_graph_launch l
  CROSS JOIN anchor_key k
  CROSS JOIN traceloom_graph_member_core c
  WHERE k.anchor_n = l.anchor_n AND +k.expanded = 1 AND c.launch_n = l.launch_n),
item_key AS NOT MATERIALIZED (
  SELECT k.db_idx, k.device_id, k.support_state, k.start_ns, k.end_ns, k.anchor_idx,
         'mainline_anchor' AS item_kind, NULL AS member_item_id, k.anchor_n,
         NULL AS member_n, NULL AS member_event_n, NULL AS observed_order,
         NULL AS member_kind, NULL AS lane_ordinal, NULL AS task_ordinal
  FROM anchor_key k WHERE k.expanded = 0
  UNION ALL
  SELECT m.db_idx, m.device_id, m.support_state, e.start_ns, e.start_ns + e.dur_ns, m.anchor_idx,
         'position_member', 'member:graph-body-member-' || m.member_n, m.anchor_n,
         m.member_n, m.member_event_n,
         row_number() OVER (PARTITION BY m.launch_n
                            ORDER BY e.start_ns, e.start_ns + e.dur_ns, m.lane_ordinal,
                                     m.task_ordinal, m.member_n) - 1,
         m.kind, m.lane_ordinal, m.task_ordinal
  FROM member m
  CROSS JOIN traceloom_event_core e
  WHERE e.event_n = m.member_event_n),
ordered AS (
  -- A device without supported replay regions expands no anchor: its items are its mainline
  -- anchors, which ext/anchor orders by start, then end, then the rest of its total key (the
  -- order anchor_idx numbers): the sort below would give each its anchor_idx - 1, so none is
  -- made (the window buffered and sorted every anchor of the device: 2-3 s at a million).
  SELECT k.*, k.anchor_idx - 1 AS timeline_order
  FROM item_key k WHERE k.support_state <> 'supported'
  UNION ALL
  SELECT k.*,
         row_number() OVER (PARTITION BY k.db_idx, k.device_id
                            ORDER BY k.start_ns, k.end_ns, k.anchor_idx, k.item_kind,
                                     k.member_item_id) - 1 AS timeline_order
  FROM item_key k WHERE k.support_state = 'supported')
SELECT COALESCE(o.member_item_id, 'anchor:' || a.anchor_id) AS timeline_item_id,
       o.db_idx, o.device_id, a.anchor_idx AS mainline_anchor_idx,
       a.anchor_id AS mainline_anchor_id,
       CASE WHEN o.member_n IS NOT NULL OR a.position_support_state = 'exact_position'
            THEN a.anchor_id END AS position_anchor_id,
       o.item_kind, x.event_id,
       CASE WHEN o.member_n IS NULL THEN a.symbol
            ELSE (SELECT s.symbol FROM traceloom_event_shape s WHERE s.shape_id = x.shape_id) END AS symbol,
       CASE WHEN o.member_n IS NULL THEN a.role
            ELSE (SELECT s.role FROM traceloom_event_shape s WHERE s.shape_id = x.shape_id) END AS role,
       CASE WHEN o.member_n IS NULL THEN a.label
            ELSE (SELECT s.label FROM traceloom_event_shape s WHERE s.shape_id = x.shape_id) END AS label,
       CASE WHEN o.member_n IS NULL THEN a.family
            ELSE (SELECT s.family FROM traceloom_event_shape s WHERE s.shape_id = x.shape_id) END AS family,
       -- the anchor's own event, or the member's
       (SELECT s.source_table FROM traceloom_event_shape s WHERE s.shape_id = x.shape_id) AS source_table,
       CAST(COALESCE((SELECT so.source_rowid_offset FROM traceloom_event_shape so WHERE so.shape_id = x.shape_id) + x.event_n, (SELECT sk.source_key FROM traceloom_event_source_key sk WHERE sk.event_n = x.event_n)) AS TEXT) AS source_key, x.stream_id,
       (SELECT s.category FROM traceloom_event_shape s WHERE s.shape_id = x.shape_id) AS category,
       (SELECT s.semantic_role FROM traceloom_event_shape s WHERE s.shape_id = x.shape_id) AS semantic_role,
       (SELECT s.task_type FROM traceloom_event_shape s WHERE s.shape_id = x.shape_id) AS task_type,
       -- (o's interval: the anchor's, a reconciled pair's extent included, or the member's)
       o.start_ns, o.end_ns, (o.end_ns - o.start_ns) / 1000.0 AS dur_us,
       o.member_kind, o.lane_ordinal, o.task_ordinal,
       CASE WHEN o.member_n IS NOT NULL THEN x.task_id END AS raw_task_id,
       o.observed_order AS observed_position_member_order,
       CASE WHEN o.member_n IS NULL THEN a.replay_annotation_support_state ELSE 'supported' END
         AS replay_annotation_support_state,
       CASE WHEN o.member_n IS NULL THEN a.replay_annotation_reason_code
            ELSE 'ordered_disjoint_exact_replay_regions' END AS replay_annotation_reason_code,
       CASE WHEN o.member_n IS NULL THEN a.replay_region_state ELSE 'inside_exact_replay' END
         AS replay_region_state,
       a.protected_interval_id, a.replay_occurrence_id,
       a.replay_region_start_ns, a.replay_region_end_ns, a.replay_region_first_anchor_idx,
       a.replay_region_last_anchor_idx, a.replay_region_anchor_offset, a.replay_pattern_id,
       a.provider_replay_unit_id, a.replay_position_id, a.graph_launch_occurrence_id,
       a.replay_body_template_id, a.body_id, a.replay_position_member_order,
       a.replay_position_order, a.graph_provider, a.replay_position_match_policy,
       a.replay_position_association_policy, a.replay_position_evidence_level,
       CASE WHEN o.member_n IS NOT NULL THEN 'expanded_exact_position_member'
            WHEN a.position_support_state = 'exact_position' THEN 'unexpanded_position_anchor'
            ELSE 'retained_mainline_anchor' END AS flattening_action,
       o.anchor_n, x.event_n, o.member_n, o.timeline_order,
       'one_retained_anchor_or_exact_position_member' AS row_grain,
       'exact_position_expansion_else_mainline_anchor' AS flattening_semantics,
       'region_highlight_not_event_ownership' AS replay_annotation_semantics,
       'timestamp_order_not_dependency' AS observation_semantics,
       'flat_items_may_overlap_do_not_sum_without_cost_lens' AS duration_aggregation_semantics
FROM ordered o
CROSS JOIN traceloom_v_annotated_anchor_timeline a
CROSS JOIN traceloom_event_core x
WHERE a.anchor_n = o.anchor_n AND x.event_n = COALESCE(o.member_event_n, a.event_n);
