-- Relations of the reference TraceLoom 0.1.4 that are read-outs of facts stored elsewhere
-- (docs/PARITY.md): loops, structural order, each anchor's atom, per-node anchor and
-- auxiliary costs, the operator inventory, the symbol policy, collectives across ranks,
-- device-work source locators. Views over the integer keys; nothing here is stored.

-- The graph-slot category of an atom or anchor (traceloom_viz_node.category,
-- traceloom_anchor_cost_breakdown.anchor_kind) looks its launch up by anchor, and the
-- auxiliary costs of a node look the links up by anchor (traceloom_aux_link_anchor, on
-- anchor_n, made with the evidence-role views). A launch table has one row per graph launch.
CREATE INDEX traceloom_graph_launch_anchor_n ON traceloom_graph_launch(anchor_n);

-- The example orders by node_n, the integer key, which numbers each tree's nodes in preorder
-- (preorder_idx is node_n less the tree's first): the same rows as ORDER BY preorder_idx, read
-- in key order, where sorting by the computed preorder_idx builds every node row first (2.2-2.6
-- s CPU at a million tasks, 0.01 s by key).
-- @surface traceloom_v_semantic_tree_node | one node of the semantic tree | Every structural position with its parent's local id and label and its communication and idle shares of its total | SELECT local_node_id, parent_local_id, parent_label, label, total_us, comm_pct, idle_pct FROM traceloom_v_semantic_tree_node ORDER BY db_idx, device_id, node_n LIMIT 20
CREATE VIEW traceloom_v_semantic_tree_node AS
SELECT n.*,
       (SELECT printf('N%03d', p.local_n) FROM traceloom_node_core p WHERE p.node_n = n.parent_n) AS parent_local_id,
       (SELECT s.label FROM traceloom_node_core p JOIN traceloom_node_shape s ON s.shape_id = p.shape_id
         WHERE p.node_n = n.parent_n) AS parent_label,
       CASE WHEN COALESCE(n.total_us, 0) = 0 THEN 0.0 ELSE ROUND(COALESCE(n.comm_us, 0) / n.total_us, 6) END AS comm_pct,
       CASE WHEN COALESCE(n.total_us, 0) = 0 THEN 0.0 ELSE ROUND(COALESCE(n.idle_us, 0) / n.total_us, 6) END AS idle_pct
FROM traceloom_semantic_node n;

-- @surface traceloom_loop_node | one repeat node | The loops of each tree in display order (loop_rank), with iterations, occurrences, costs, the cost of one iteration and the loop's share of its tree's total | SELECT node_id, loop_rank, repeat_label, occurrence_count, total_us, avg_total_us, loop_total_pct FROM traceloom_loop_node ORDER BY db_idx, device_id, loop_rank
CREATE VIEW traceloom_loop_node AS
SELECT n.node_id, n.db_idx, n.device_id, 'native_report_tree' AS view_name,
       row_number() OVER (PARTITION BY n.tree_n ORDER BY n.node_n) AS loop_rank,
       'Rep x' || n.repeat_count AS repeat_label, n.repeat_count, n.occurrence_count,
       n.occurrence_count * n.token_len AS anchor_count,
       ROUND((n.compute_ns + n.comm_ns + n.idle_ns) / 1000.0, 3) AS total_us,
       ROUND((n.compute_ns + n.comm_ns + n.idle_ns) / 1000.0 / n.denom, 3) AS avg_total_us,
       ROUND(n.compute_ns / 1000.0, 3) AS compute_us, ROUND(n.comm_ns / 1000.0, 3) AS comm_us,
       ROUND(n.idle_ns / 1000.0, 3) AS idle_us,
       -- the loop's share of its tree's total (the root's single occurrence)
       (SELECT CASE WHEN r.compute_ns + r.comm_ns + r.idle_ns > 0
                    THEN ROUND(1.0 * (n.compute_ns + n.comm_ns + n.idle_ns)
                               / (r.compute_ns + r.comm_ns + r.idle_ns), 6) ELSE 0.0 END
          FROM traceloom_tree_core t JOIN traceloom_position_occurrence_body r
            ON r.occurrence_n = t.first_occurrence_n
         WHERE t.tree_n = n.tree_n) AS loop_total_pct,
       NULL AS raw_json, n.node_n
FROM traceloom_v_node_stats n
WHERE n.node_kind = 3;

-- The order recovery reads the anchors in. Ours is always the device order (start, end,
-- stream, ...; docs/CONCEPTS.md); the host launch times stay evidence here.
-- @surface traceloom_structural_order | one structural token (anchor) | The order of the structural tokens: structural_idx is the anchor's place in its device's sequence, order_basis says what decided it (device: start time, then end, stream) | SELECT structural_idx, anchor_id, order_basis FROM traceloom_structural_order ORDER BY db_idx, device_id, structural_idx LIMIT 20
CREATE VIEW traceloom_structural_order AS
SELECT a.anchor_n - t.first_anchor_n + 1 AS structural_idx, a.anchor_id, 'device' AS order_basis,
       NULL AS runtime_source_path, NULL AS runtime_source_table, NULL AS runtime_source_row,
       NULL AS host_launch_start_ns, a.db_idx, a.device_id, a.anchor_n
FROM traceloom_anchor_core a
JOIN traceloom_tree_core t ON t.db_idx = a.db_idx AND t.device_id = a.device_id;

-- @surface traceloom_anchor_primary_node | one anchor | The node that owns each anchor: the atom leaf whose occurrence is the anchor (an anchor outside every tree has no row) | SELECT anchor_id, node_id, reason FROM traceloom_anchor_primary_node LIMIT 20
CREATE VIEW traceloom_anchor_primary_node AS
SELECT a.anchor_id, o.position_id AS node_id, a.db_idx, a.device_id,
       'native_report_tree' AS view_name, 'atom_leaf' AS reason, a.anchor_n, o.node_n
FROM traceloom_anchor_core a
JOIN traceloom_position_occurrence_core o ON o.occurrence_n = a.occurrence_n;

-- @surface traceloom_v_node_anchor_cost | one (node occurrence, covered anchor) | Each anchor under every node occurrence that covers it, with the anchor event's raw duration, role, symbol and label | SELECT node_id, occurrence_idx, anchor_order, anchor_symbol, anchor_dur_us FROM traceloom_v_node_anchor_cost ORDER BY anchor_dur_us DESC LIMIT 10
CREATE VIEW traceloom_v_node_anchor_cost AS
SELECT na.node_id, na.anchor_id, na.occurrence_idx, na.anchor_order,
       e.dur_us AS anchor_dur_us, e.role AS anchor_role, e.symbol AS anchor_symbol,
       e.label AS anchor_label, na.db_idx, na.device_id, na.node_n, na.occurrence_n, na.anchor_n
FROM traceloom_viz_node_anchor na
JOIN traceloom_anchor_core a ON a.anchor_n = na.anchor_n
JOIN traceloom_event e ON e.event_n = a.event_n;

-- @surface traceloom_v_node_aux_cost | one (node occurrence, covered anchor, linked auxiliary event) | The auxiliary events linked to each anchor a node occurrence covers, with their raw duration, role, symbol and label | SELECT node_id, anchor_id, aux_event_id, aux_order, aux_symbol, aux_dur_us FROM traceloom_v_node_aux_cost LIMIT 10
CREATE VIEW traceloom_v_node_aux_cost AS
SELECT na.node_id, l.anchor_id, l.aux_event_id, l.aux_order, e.dur_us AS aux_dur_us,
       e.role AS aux_role, e.symbol AS aux_symbol, e.label AS aux_label, na.db_idx,
       na.device_id, na.occurrence_idx, na.node_n, na.occurrence_n, na.anchor_n, e.event_n
FROM traceloom_viz_node_anchor na
JOIN traceloom_aux_link l ON l.anchor_n = na.anchor_n
JOIN traceloom_event e ON e.event_n = l.aux_event_n;

-- @surface traceloom_v_device_work_source_locator | one device work item | Where each device work item's raw row lives: path, table and rowid, and whether it is embedded in this database | SELECT device_work_id, source_table, source_key, resolution_status FROM traceloom_v_device_work_source_locator LIMIT 5
-- A graph launch's work has no event: its source is the input's file that has its source
-- table (the MODEL_EXECUTE task's or the launch call's, sql/views/10_events.sql).
CREATE VIEW traceloom_v_device_work_source_locator AS
SELECT w.*, COALESCE(x.source_id, d.source_id) AS source_id, d.source_path,
       t.embedded_table_name, t.source_rowid_column,
       CASE WHEN t.embedded_table_name IS NOT NULL THEN 'embedded_raw'
            WHEN d.source_id IS NOT NULL THEN 'external_raw'
            ELSE 'unresolved' END AS resolution_status
FROM traceloom_device_work w
LEFT JOIN traceloom_event_core c ON c.event_n = w.event_n
LEFT JOIN traceloom_event_shape x ON x.shape_id = c.shape_id
LEFT JOIN traceloom_raw_source_database d
  ON d.source_id = COALESCE(x.source_id,
                            (SELECT r.source_id FROM traceloom_raw_table r
                             JOIN traceloom_raw_source_database rd ON rd.source_id = r.source_id
                             WHERE r.source_table = w.source_table AND rd.db_idx = w.db_idx
                             ORDER BY r.source_id LIMIT 1))
LEFT JOIN traceloom_raw_table t
  ON t.source_id = COALESCE(x.source_id, d.source_id) AND t.source_table = w.source_table;

-- One row per operator identity: the events of one name and task type, however many
-- shapes they have. Events and graph members are counted per shape first (a few thousand
-- rows), in one grouping of both. An operator is an event with an operator identity, a
-- compute one (op_type) or a collective (comm_name), or a CUDA auxiliary row (family aux:
-- copies, fills, syncs, events, named by their task type, its label), as the reference counts
-- them: Ascend tasks without one (NOTIFY_*, MODEL_EXECUTE, an unnamed kernel, a copy task)
-- are not operators and stay in traceloom_event. A graph-body member is a task of a collected
-- body, its launch promoted (traceloom_graph_member_core) or not
-- (traceloom_graph_unpromoted_member_core), as the reference counts them.
-- @surface traceloom_operator_audit | one observed operator identity (name, task type) | Every concrete device operator (an event with a compute or collective identity) without an allowlist: events, summed raw duration, how many are exact graph-body members and how many anchors | SELECT operator_name, task_type, occurrence_count, total_duration_ns, anchor_event_count FROM traceloom_operator_audit ORDER BY total_duration_ns DESC LIMIT 20
CREATE VIEW traceloom_operator_audit AS
WITH counted AS (
  SELECT c.shape_id, 1 AS n, c.dur_ns, c.anchor_n IS NOT NULL AS anchor, 0 AS member
  FROM traceloom_event_core c
  UNION ALL
  SELECT e.shape_id, 0, 0, 0, 1
  FROM traceloom_graph_member_core m JOIN traceloom_event_core e ON e.event_n = m.event_n
  UNION ALL
  SELECT e.shape_id, 0, 0, 0, 1
  FROM traceloom_graph_unpromoted_member_core u JOIN traceloom_event_core e ON e.event_n = u.event_n),
per_shape AS (
  SELECT shape_id, sum(n) AS n, sum(dur_ns) AS dur_ns, sum(anchor) AS anchors,
         sum(member) AS members
  FROM counted GROUP BY shape_id)
SELECT COALESCE(NULLIF(s.op_type, ''), NULLIF(s.comm_name, ''), s.label) AS operator_name,
       COALESCE(s.task_type, s.kind) AS task_type, sum(p.n) AS occurrence_count,
       sum(p.dur_ns) AS total_duration_ns, sum(p.members) AS graph_body_member_count,
       sum(p.anchors) AS anchor_event_count
FROM per_shape p
JOIN traceloom_event_shape s ON s.shape_id = p.shape_id
WHERE s.task_type IS NOT 'COMMUNICATION_OP' AND s.source_table <> 'graph_replay'
  AND (NULLIF(s.op_type, '') IS NOT NULL OR NULLIF(s.comm_name, '') IS NOT NULL
       OR s.family = 'aux')
GROUP BY 1, 2;

-- @surface traceloom_symbol_normalization_policy | one row (the effective structural-symbol policy) | Which structural-symbol policy named the anchors: id, version, kind, manifest and digest | SELECT policy_id, policy_version, policy_kind, manifest_sha256 FROM traceloom_symbol_normalization_policy
CREATE VIEW traceloom_symbol_normalization_policy AS
SELECT (SELECT value FROM traceloom_metadata WHERE key = 'symbol_normalization_policy_id') AS policy_id,
       (SELECT value FROM traceloom_metadata WHERE key = 'symbol_normalization_policy_version') AS policy_version,
       'explicit_aliases_with_identity_fallback' AS policy_kind,
       (SELECT r.source_manifest FROM traceloom_symbol_normalization_rule r LIMIT 1) AS source_manifest,
       (SELECT value FROM traceloom_metadata WHERE key = 'symbol_normalization_policy_sha256') AS manifest_sha256,
       'Structural symbols: explicit aliases by rule, the observed name otherwise; the observed name and its source stay on every event' AS description;

-- The same collective at the same structural position of several inputs (ranks): every
-- communication anchor whose (slot path, occurrence, place in the occurrence, symbol)
-- occurs in two or more trees of this analysis. A single-input analysis has no rows.
-- @surface traceloom_collective_global_link | one communication anchor matched across ranks | Collectives of different inputs (ranks) at the same structural position, occurrence and place, as candidate links (no clock alignment is claimed) | SELECT candidate_collective_key, db_idx, device_id, op_type, start_ns, validation_status FROM traceloom_collective_global_link ORDER BY candidate_collective_key, db_idx LIMIT 20
CREATE VIEW traceloom_collective_global_link AS
WITH coll AS (
  SELECT a.anchor_n, a.db_idx, a.device_id, a.event_n, o.occurrence_n, o.node_n,
         o.occurrence_idx, n.local_n, s.symbol,
         (SELECT p.path FROM traceloom_node_core p WHERE p.node_n = n.parent_n) || '/' ||
           printf('N%03d', n.local_n) || '#' || o.occurrence_idx || ':' || s.symbol AS k
  FROM traceloom_anchor_core a
  JOIN traceloom_anchor_shape s ON s.shape_id = a.shape_id AND s.role = 'comm'
  JOIN traceloom_position_occurrence_core o ON o.occurrence_n = a.occurrence_n
  JOIN traceloom_node_core n ON n.node_n = o.node_n
  -- a link joins two trees: with one there is nothing to match, and no key is built (a
  -- constant test, made once before the scan)
  WHERE (SELECT count(*) FROM traceloom_tree_core) > 1),
keyed AS (
  SELECT c.*, count(*) OVER (PARTITION BY c.k) AS members,
         count(*) OVER (PARTITION BY c.k, c.db_idx, c.device_id) AS per_tree
  FROM coll c)
SELECT k.k AS candidate_collective_key, i.path AS db_name, k.db_idx, k.device_id,
       'collective-member-' || k.anchor_n AS member_id, 'collective-pair-' || k.k AS pair_id,
       printf('N%03d', k.local_n) AS local_node_id, k.occurrence_idx,
       0 AS idx_in_occurrence, k.symbol AS op_type, 'anchor-' || k.anchor_n AS anchor_id,
       'event-' || k.event_n AS event_id,
       (SELECT s.source_table FROM traceloom_event_shape s WHERE s.shape_id = e.shape_id) AS source_table,
       CAST(COALESCE((SELECT so.source_rowid_offset FROM traceloom_event_shape so WHERE so.shape_id = e.shape_id) + e.event_n, (SELECT sk.source_key FROM traceloom_event_source_key sk WHERE sk.event_n = e.event_n)) AS TEXT) AS source_key, CAST(e.correlation_id AS TEXT) AS connection_id,
       CAST(e.op_id AS TEXT) AS op_id, e.start_ns, e.start_ns + e.dur_ns AS end_ns,
       e.dur_ns / 1000.0 AS dur_us,
       CASE WHEN k.per_tree = 1 THEN 'structural_position_match' ELSE 'ambiguous_position' END AS validation_status,
       CASE WHEN k.per_tree = 1 THEN 1.0 ELSE 0.0 END AS confidence, k.anchor_n
FROM keyed k
JOIN traceloom_event_core e ON e.event_n = k.event_n
JOIN traceloom_input i ON i.db_idx = k.db_idx
WHERE k.members > k.per_tree;
