-- Readable views over the recovered structure (outputs.md section 4.2) and the bubble
-- statistics table derived from the bubble occurrences (section 7). Runs after the rows
-- are inserted.

-- @surface traceloom_semantic_edge | one parent-child slot between nodes | The semantic tree's edges (Repeat slots are the children of one iteration) | SELECT parent_node_id, child_node_id, edge_order FROM traceloom_semantic_edge LIMIT 20
CREATE VIEW traceloom_semantic_edge AS
SELECT parent_position_id AS parent_node_id, child_position_id AS child_node_id, tree_id, db_idx,
       device_id, view_name, 'semantic' AS tree_kind, slot_ordinal AS edge_order,
       'child' AS edge_kind, NULL AS raw_json, parent_n, child_n,
       edge_kind AS slot_kind            -- sequence | repeat_body
FROM traceloom_position_refinement;

-- @surface traceloom_viz_edge | one parent-child edge of the report tree | Edges between report nodes in slot order | SELECT parent_node_id, child_node_id, edge_order FROM traceloom_viz_edge LIMIT 20
CREATE VIEW traceloom_viz_edge AS
SELECT parent_position_id AS parent_node_id, child_position_id AS child_node_id, db_idx,
       device_id, 'native_report_tree' AS view_name, slot_ordinal AS edge_order,
       'tree' AS edge_kind, NULL AS raw_json, parent_n, child_n,
       edge_kind AS slot_kind            -- sequence | repeat_body
FROM traceloom_position_refinement;

-- The auxiliary links by their event's text id, the one text id with an index: the link table
-- stores the id as text anyway, holds one row per linked or unplaced non-anchor event (4k at a
-- million tasks, about 100 KB of index), and with it a query that reaches the links from the
-- events (`traceloom_event e JOIN traceloom_aux_link al ON al.aux_event_id = e.event_id`, as
-- the anchor-aux report does) scans the events once and searches the links, instead of
-- building an automatic index over every event (1.1M rows, about 1 s). Unique: every
-- non-anchor event is linked at most once (ext/anchor/anchors.c).
CREATE UNIQUE INDEX traceloom_aux_link_event_id ON traceloom_aux_link(aux_event_id);

-- @surface traceloom_anchor_aux_slot | one anchor with linked auxiliary events | Per-anchor summary of its linked auxiliary events (anchors without any have no row) | SELECT anchor_idx, aux_event_count, aux_dur_us FROM traceloom_anchor_aux_slot ORDER BY aux_dur_us DESC LIMIT 10
CREATE VIEW traceloom_anchor_aux_slot AS
SELECT anchor_id, db_idx, device_id, anchor_idx, step_idx AS anchor_step_idx,
       NULL AS aux_start_step_idx, NULL AS aux_end_step_idx,
       linked_aux_events AS aux_event_count, linked_aux_us AS aux_dur_us, NULL AS raw_json,
       anchor_n
FROM traceloom_anchor WHERE linked_aux_events > 0;

-- @surface traceloom_anchor_cost_breakdown | one anchor | Per-anchor cost explanation: total, self and aux overlays, graph-child time of exact replay members and the residual | SELECT anchor_idx, symbol, anchor_kind, total_us, self_us, aux_us FROM traceloom_anchor_cost_breakdown ORDER BY total_us DESC LIMIT 10
CREATE VIEW traceloom_anchor_cost_breakdown AS
-- aux_us is the auxiliary work linked to the anchor (traceloom_aux_link, the anchor's
-- linked_aux_us); total_us its packet total (compute + comm + idle, the tree's lens).
-- anchor_kind is the category of the anchor's atom node (traceloom_viz_node.category): exec,
-- collective, graph_h / graph_l / graph_t (the slot of an ACL graph composition) or
-- graph_template (any other exact graph launch).
-- Written over the core tables, shape and event joined by key once per anchor: through
-- traceloom_anchor each column was its own subquery (three into the shape alone), and the
-- report reads all of them for every anchor (741k rows at a million anchors). LEFT JOINs keep
-- an anchor whose shape, event or tree is missing, as those subqueries did. The tree is a LEFT
-- JOIN too (one index search per anchor, on a table of one row per device): a correlated
-- subquery costs a subprogram call per row, about a tenth of the report's time.
-- The times are not ROUNDed: an integer number of ns / 1000.0 is already the double nearest
-- to its 3-decimal value, which is what ROUND(.., 3) gives back after printing and reparsing
-- it (three printf calls per anchor, another fifth of the report).
-- The rows are read in anchor_idx order, so that a query ordered by it, as the report is,
-- sorts nothing: anchor_idx is the rowid of a row k of a table numbered densely from 1 with
-- at least as many rows as a tree has anchors (the occurrences: each anchor of a tree is an
-- atom occurrence of it), and for each k every tree with that many anchors gives its k-th
-- anchor by key (anchor_n = first_anchor_n + anchor_idx - 1): the anchors of equal anchor_idx
-- come in tree order, as the anchor_n order a sort keeps for ties. SQLite matches an ORDER BY
-- term to a loop's order only when the term is that loop's column, never an expression such
-- as anchor_n - first_anchor_n + 1 (anchor_n counts from 0). An anchor picked by anchor_n
-- finds its tree by its unique index and its k by key.
SELECT a.anchor_id, a.db_idx, a.device_id, k.occurrence_n AS anchor_idx,
       s.symbol,
       CASE s.role WHEN 'compute' THEN 'exec' WHEN 'comm' THEN 'collective'
            WHEN 'graph' THEN
              (SELECT CASE l.slot_role WHEN 'head' THEN 'graph_h' WHEN 'layer' THEN 'graph_l'
                                       WHEN 'tail' THEN 'graph_t' ELSE 'graph_template' END
                 FROM traceloom_graph_launch l WHERE l.anchor_n = a.anchor_n)
            ELSE s.role END AS anchor_kind,
       (a.compute_ns + a.comm_ns + a.idle_ns) / 1000.0 AS total_us,
       -- (a reconciled pair's merged anchor: its extent, by key)
       COALESCE(CASE WHEN (SELECT max(anchor_n) FROM traceloom_anchor_extent_core) IS NOT NULL THEN (SELECT x.end_ns - x.start_ns FROM traceloom_anchor_extent_core x WHERE x.anchor_n = a.anchor_n) END, e.dur_ns) / 1000.0 AS self_us,
       a.linked_aux_ns / 1000.0 AS aux_us, 0.0 AS graph_child_us, 0.0 AS residual_us,
       0 AS raw_child_task_count, NULL AS top_ops, NULL AS diagnostic_flags, a.anchor_n
-- The anchor after its tree (CROSS JOIN): never a scan of the anchors inside a loop over k.
FROM traceloom_tree_core t
CROSS JOIN traceloom_anchor_core a ON a.db_idx = t.db_idx AND a.device_id = t.device_id
-- (+: k's range is the same for every tree, so that k stays the outer loop: a range that
-- depends on the tree would put the trees outside it, and the rows out of anchor_idx order)
JOIN traceloom_position_occurrence_core k
  ON +k.occurrence_n <= t.anchor_count
 AND a.anchor_n = t.first_anchor_n + k.occurrence_n - 1
 AND k.occurrence_n = a.anchor_n - t.first_anchor_n + 1
LEFT JOIN traceloom_anchor_shape s ON s.shape_id = a.shape_id
LEFT JOIN traceloom_event_core e ON e.event_n = a.event_n
-- likelihood(): k's range is a small share of the occurrences as far as the planner knows;
-- with its default guess (1/64 of them for a closed range) it would rather read every anchor
-- and sort them than walk k (as in traceloom_v_tree_node). 0.03, not less: a query that sorts
-- anyway (ORDER BY total_us) then walks k inside the tree, not the trees inside k.
WHERE likelihood(k.occurrence_n >= 1, 0.03)
  AND likelihood(k.occurrence_n <= (SELECT max(m.anchor_count) FROM traceloom_tree_core m), 0.03);

-- @surface traceloom_position_member | one direct member of an occurrence | Direct children of each occurrence by (slot, member_order); atoms hold their terminal token in slot 0 | SELECT parent_occurrence_id, slot_ordinal, member_order, member_kind, child_occurrence_id, terminal_anchor_id FROM traceloom_position_member LIMIT 20
CREATE VIEW traceloom_position_member AS
SELECT c.parent_position_id, c.parent_occurrence_id, c.slot_ordinal, c.member_order,
       'child_occurrence' AS member_kind, c.position_id AS child_position_id,
       c.occurrence_id AS child_occurrence_id, NULL AS terminal_token_ordinal,
       NULL AS terminal_anchor_id, c.db_idx, c.device_id, c.tree_id, c.view_name,
       c.occurrence_path AS member_path, c.parent_n, c.occurrence_n AS child_n,
       NULL AS terminal_anchor_n
FROM traceloom_position_occurrence c WHERE c.parent_n IS NOT NULL
UNION ALL
SELECT o.position_id, o.occurrence_id, 0, 1, 'terminal_token', NULL, NULL,
       o.token_start_ordinal, 'anchor-' || o.anchor_first_n, o.db_idx, o.device_id, o.tree_id,
       o.view_name, o.occurrence_path || '/terminal/r1/token-' || o.token_start_ordinal, o.occurrence_n,
       NULL, o.anchor_first_n
FROM traceloom_position_occurrence o WHERE o.coverage_kind = 'self';

-- The example reads one parent occurrence's edges, the first with a role holding more than one
-- edge (a Repeat's: edge_ordinal_in_role is the iteration), by key: a GROUP BY of edge_role_id
-- builds and sorts a text id for every edge (753k at a million anchors, most of them roles of
-- one edge under the wide root: 2.4-4 s CPU) to show roles of one edge first.
-- @surface traceloom_execution_tree_edge | one concrete parent-to-child occurrence edge | Occurrence-level edges with their role (the population of edges of one slot under one parent path) | SELECT edge_role_id, edge_ordinal_in_role, parent_occurrence_id, child_occurrence_id FROM traceloom_execution_tree_edge WHERE parent_n = (SELECT parent_n FROM traceloom_execution_tree_edge WHERE edge_ordinal_in_role > 1 LIMIT 1) ORDER BY edge_order
CREATE VIEW traceloom_execution_tree_edge AS
SELECT 'edge:d' || c.db_idx || ':dev' || c.device_id || ':' || c.tree_id || ':' || p.occurrence_id || ':' || c.edge_order AS edge_id,
       'edge-role:d' || c.db_idx || ':dev' || c.device_id || ':' || c.tree_id || ':' || p.rooted_position_path || ':e' || c.slot_ordinal AS edge_role_id,
       c.edge_order,
       CASE WHEN (SELECT k.node_kind FROM traceloom_node_core k WHERE k.node_n = p.node_n) = 3
            THEN c.member_order ELSE 1 END AS edge_ordinal_in_role,
       p.position_id AS parent_position_id, p.rooted_position_path AS parent_tree_path,
       p.occurrence_id AS parent_occurrence_id, p.occurrence_idx AS parent_occurrence_idx,
       p.repeat_iteration AS parent_repeat_iteration, p.occurrence_path AS parent_occurrence_path,
       c.position_id AS child_position_id, c.occurrence_id AS child_occurrence_id,
       c.occurrence_idx AS child_occurrence_idx, c.repeat_iteration AS child_repeat_iteration,
       c.token_start_ordinal AS child_token_start_ordinal,
       c.token_end_exclusive AS child_token_end_exclusive,
       c.occurrence_path AS child_occurrence_path, c.db_idx, c.device_id, c.tree_id, c.view_name,
       p.occurrence_n AS parent_n, c.occurrence_n AS child_n
FROM traceloom_position_occurrence c
JOIN traceloom_position_occurrence p ON p.occurrence_n = c.parent_n;

-- In a tree an edge role (one slot under one parent path) is one child node: its parent's
-- occurrences are the parent occurrences, the child's are the concrete edges, and every
-- parent occurrence holds the same number of them (1, or the repeat count of a Repeat).
-- @surface traceloom_execution_tree_edge_role | one edge role | Populations of concrete edges (one slot under one parent path): only an equal edge_role_id licenses treating edges as one population | SELECT edge_role_id, parent_occurrence_count, concrete_edge_count, population_support FROM traceloom_execution_tree_edge_role LIMIT 10
CREATE VIEW traceloom_execution_tree_edge_role AS
SELECT 'edge-role:d' || c.db_idx || ':dev' || c.device_id || ':tree-db' || c.db_idx || '-dev' ||
         c.device_id || ':' || p.rooted_path || ':e' || c.slot_ordinal AS edge_role_id,
       p.node_id AS parent_position_id, p.rooted_path AS parent_tree_path,
       c.node_id AS child_position_id, p.occurrence_count AS parent_occurrence_count,
       c.occurrence_count AS concrete_edge_count,
       c.occurrence_count / p.occurrence_count AS edges_per_parent_min,
       c.occurrence_count / p.occurrence_count AS edges_per_parent_max,
       'uniform' AS population_support, c.slot_ordinal AS first_edge_order, c.db_idx,
       c.device_id, 'tree-db' || c.db_idx || '-dev' || c.device_id AS tree_id,
       'anchor_tree' AS view_name, p.node_n AS parent_node_n, c.node_n AS child_node_n
FROM traceloom_node_core c
JOIN traceloom_node_core p ON p.node_n = c.parent_n;

-- @surface traceloom_structure_bubble_occurrence | one bubble | Uncovered device time charged to the following anchor, with its structural position and the adjacent anchors (host context: the host interval between the adjacent anchors' runtime endpoints) | SELECT right_local_node_id, right_node_symbol, bubble_us, host_observation_status FROM traceloom_structure_bubble_occurrence ORDER BY bubble_us DESC LIMIT 10
-- A bubble's own rows are the right anchor and its left neighbour on the device; the rest is
-- looked up only when a column asks for it. The atom occurrence and its node are LEFT JOINs by
-- key (every published occurrence_n names an occurrence, every occurrence its node), which
-- SQLite leaves out of a query that reads none of their columns, and the window's state and
-- scope (traceloom_anchor_host_window) are read per row by key: the top bubble by bubble_us
-- reads each anchor and its neighbour, not seven rows (1.0 s on the 1M bench profile).
-- The window's endpoint calls (traceloom_anchor_host_window.left_call_n and right_call_n, the
-- anchors' host_call_n, which traceloom_anchor does not show) are read in the columns that name
-- them, by the anchor's and the call's keys, not joined: SQLite computes a row's ORDER BY key
-- before its other columns and skips those of a row that cannot enter the LIMIT's top rows, but
-- runs every join for every row. Joined (two anchor and two call searches per bubble), they
-- were 40% of the VM steps of the catalog example (ORDER BY bubble_us DESC LIMIT 10, 741k
-- bubbles); a full read searches each endpoint anchor and call once per column instead.
CREATE VIEW traceloom_structure_bubble_occurrence AS
SELECT 'bubble-anchor-' || r.anchor_n AS bubble_id, r.db_idx, r.device_id,
       'native_report_tree' AS view_name, n.node_id AS right_node_id,
       n.local_node_id AS right_local_node_id,
       COALESCE(n.path, (SELECT p.path FROM traceloom_node_core p WHERE p.node_n = n.parent_n)
                        || '/' || n.local_node_id) AS right_node_path,
       'atom' AS right_node_kind, r.symbol AS right_node_symbol,
       oc.occurrence_idx AS right_occurrence_idx,
       (SELECT p.repeat_context FROM traceloom_position_occurrence p
         WHERE p.occurrence_n = r.occurrence_n) AS repeat_context,
       n.node_id AS structural_position_id,
       l.anchor_id AS left_anchor_id, l.anchor_idx AS left_anchor_idx, l.symbol AS left_anchor_symbol,
       l.role AS left_anchor_role, l.start_ns AS left_anchor_start_ns, l.end_ns AS left_anchor_end_ns,
       r.anchor_id AS right_anchor_id, r.anchor_idx AS right_anchor_idx,
       r.symbol AS right_anchor_symbol, r.role AS right_anchor_role,
       r.start_ns AS right_anchor_start_ns, r.end_ns AS right_anchor_end_ns,
       ROUND(MAX(0, r.start_ns - l.end_ns) / 1000.0, 3) AS adjacent_anchor_gap_us,
       r.idle_us AS bubble_us, -- whole ns over 1000.0: its own ROUND(.., 3), without the printf
       r.compute_us AS transition_compute_us, r.comm_us AS transition_comm_us,
       r.total_us AS transition_total_us, r.aux_events AS transition_aux_events,
       r.aux_us AS transition_aux_us,
       CASE WHEN r.total_us > 0 THEN ROUND(r.idle_us / r.total_us, 6) ELSE 0.0 END AS bubble_fraction_of_transition,
       -- host context: the host window between the two anchors (sql/views/60_host_activity.sql)
       'anchor-host-interval-' || l.anchor_id || '-' || r.anchor_id AS host_interval_id,
       (SELECT s.provider FROM traceloom_anchor_core x
                  CROSS JOIN traceloom_runtime_call_core c ON c.call_n = x.host_call_n
                  CROSS JOIN traceloom_runtime_call_shape s ON s.shape_id = c.shape_id
                 WHERE x.anchor_n = l.anchor_n) AS provider,
       (SELECT s.clock_domain FROM traceloom_anchor_core x
                  CROSS JOIN traceloom_runtime_call_core c ON c.call_n = x.host_call_n
                  CROSS JOIN traceloom_runtime_call_shape s ON s.shape_id = c.shape_id
                 WHERE x.anchor_n = l.anchor_n) AS host_clock_domain,
       COALESCE((SELECT k.name FROM traceloom_anchor_host_window_code k
                  WHERE k.kind = 'scope'
                    AND k.code = (SELECT w.scope FROM traceloom_anchor_host_window w
                                   WHERE w.left_anchor_n = l.anchor_n)), 'provider_clock_domain')
         AS scope_policy,
       CASE WHEN (SELECT w.scope FROM traceloom_anchor_host_window w
                   WHERE w.left_anchor_n = l.anchor_n) IN (0, 1)
            THEN (SELECT s.process_id FROM traceloom_anchor_core x
                  CROSS JOIN traceloom_runtime_call_core c ON c.call_n = x.host_call_n
                  CROSS JOIN traceloom_runtime_call_shape s ON s.shape_id = c.shape_id
                 WHERE x.anchor_n = l.anchor_n) END AS process_id,
       CASE WHEN (SELECT w.scope FROM traceloom_anchor_host_window w
                   WHERE w.left_anchor_n = l.anchor_n) = 0
            THEN (SELECT s.thread_id FROM traceloom_anchor_core x
                  CROSS JOIN traceloom_runtime_call_core c ON c.call_n = x.host_call_n
                  CROSS JOIN traceloom_runtime_call_shape s ON s.shape_id = c.shape_id
                 WHERE x.anchor_n = l.anchor_n) END AS thread_id,
       COALESCE((SELECT k.name FROM traceloom_anchor_host_window_code k
                  WHERE k.kind = 'state'
                    AND k.code = (SELECT w.state FROM traceloom_anchor_host_window w
                                   WHERE w.left_anchor_n = l.anchor_n)), 'missing_endpoint')
         AS host_observation_status,
       (SELECT c.start_ns + c.dur_ns FROM traceloom_anchor_core x
                  CROSS JOIN traceloom_runtime_call_core c ON c.call_n = x.host_call_n
                 WHERE x.anchor_n = l.anchor_n) AS host_start_ns,
       (SELECT c.start_ns FROM traceloom_anchor_core x
                  CROSS JOIN traceloom_runtime_call_core c ON c.call_n = x.host_call_n
                 WHERE x.anchor_n = r.anchor_n) AS host_end_ns,
       CASE WHEN (SELECT w.state FROM traceloom_anchor_host_window w
                   WHERE w.left_anchor_n = l.anchor_n) = 0
            THEN ROUND(((SELECT c.start_ns FROM traceloom_anchor_core x
                  CROSS JOIN traceloom_runtime_call_core c ON c.call_n = x.host_call_n
                 WHERE x.anchor_n = r.anchor_n)
                        - (SELECT c.start_ns + c.dur_ns FROM traceloom_anchor_core x
                  CROSS JOIN traceloom_runtime_call_core c ON c.call_n = x.host_call_n
                 WHERE x.anchor_n = l.anchor_n)) / 1000.0, 3) END AS host_interval_us,
       'upstream_between_correlated_anchor_endpoints' AS api_association_semantics,
       r.anchor_n AS right_anchor_n, n.node_n AS right_node_n
FROM traceloom_anchor r
JOIN traceloom_anchor l ON l.anchor_n = r.anchor_n - 1 AND l.db_idx = r.db_idx AND l.device_id = r.device_id
LEFT JOIN traceloom_position_occurrence_core oc ON oc.occurrence_n = r.occurrence_n
-- (the node by its occurrence's key, not through oc: a join whose ON names oc would keep oc in
-- every query)
LEFT JOIN traceloom_node_core n
  ON n.node_n = (SELECT q.node_n FROM traceloom_position_occurrence_core q
                  WHERE q.occurrence_n = r.occurrence_n)
WHERE r.occurrence_n IS NOT NULL AND r.idle_us > 0;

-- @surface traceloom_v_tree_node | one node of the report tree, walked from the roots | The primary readable map: every structural position with depth, loop depth, kind, repeat count, costs, per-iteration averages and shares | SELECT local_node_id, label, repeat_count, occurrence_count, total_us, avg_total_us FROM traceloom_v_tree_node ORDER BY db_idx, device_id, view_name, display_order
CREATE VIEW traceloom_v_tree_node AS
-- In a tree the walk from the roots is the parent chain each node stores (node_core).
-- The tree order (db_idx, device_id, display_order) is the order the rows are read in, so
-- that a query ordered by it, as the tree map is, sorts nothing: the trees by their unique
-- (db_idx, device_id) index, and in each tree its nodes by their 1-based preorder number,
-- display_order, read as the rowid of a second node row k (node_n is dense from 1, and a
-- tree has at most as many nodes as all trees: node k exists for every preorder number),
-- whose number picks the node by key (node_n = first_node_n + display_order - 1).
-- SQLite matches an ORDER BY term to a loop's order only when the term is that loop's
-- column (the rowid of k here; view_name is a constant), never an expression such as
-- node_n - first_node_n + 1. A node picked by node_n finds its tree and then its k by key.
SELECT n.node_id, p.node_id AS parent_node_id,
       t.db_idx, t.device_id, n.view_name, n.local_node_id,
       k.node_n AS display_order,
       n.path, n.depth AS tree_depth, n.level AS depth, n.loop_depth,
       n.node_type, n.kind, n.symbol, n.label, n.category, n.repeat_label, n.repeat_count,
       n.occurrence_count, n.anchor_count, n.anchors_per_occurrence,
       n.anchors_per_occurrence AS avg_anchor,
       n.first_anchor_idx, n.last_anchor_idx, n.compute_us, n.comm_us, n.idle_us, n.total_us,
       n.avg_compute_us, n.avg_comm_us, n.avg_idle_us, n.avg_total_us,
       COALESCE(n.compute_us, 0) + COALESCE(n.comm_us, 0) AS active_us,
       ROUND((COALESCE(n.compute_us, 0) + COALESCE(n.comm_us, 0)) / n.denom, 3) AS avg_active_us,
       n.self_us, n.aux_events, n.aux_us,
       -- aux and self time over one iteration: a whole number of ns / 1000.0, its own
       -- ROUND(.., 3) (see traceloom_viz_node.avg_total_us)
       CASE WHEN n.denom = 1 THEN COALESCE(n.aux_us, 0.0)
            ELSE ROUND(COALESCE(n.aux_us, 0) / n.denom, 3) END AS avg_aux_us,
       CASE WHEN n.denom = 1 THEN COALESCE(n.self_us, 0.0)
            ELSE ROUND(COALESCE(n.self_us, 0) / n.denom, 3) END AS avg_self_us,
       ROUND(CASE WHEN COALESCE(n.total_us, 0) = 0 THEN 0.0 ELSE COALESCE(n.comm_us, 0) / n.total_us END, 6) AS comm_pct,
       ROUND(CASE WHEN COALESCE(n.total_us, 0) = 0 THEN 0.0 ELSE COALESCE(n.idle_us, 0) / n.total_us END, 6) AS idle_pct,
       n.node_n, n.parent_n
-- The denominator of traceloom_v_node_stats, from the report row's own columns: a Repeat
-- (node_kind 3, the shape's kind 'repeat') is the node with a repeat_label, tested without a
-- search of the shape or a second read of the node row. loop_depth is read from the node row
-- by key, a LEFT JOIN that SQLite leaves out of a query that does not name it (the tree map).
-- The node after its tree (CROSS JOIN): never a scan of the nodes inside a loop over k.
FROM traceloom_tree_core t
CROSS JOIN (SELECT v.*, CASE WHEN v.occurrence_count = 0 THEN 1
                             ELSE v.occurrence_count * (CASE WHEN v.repeat_label IS NOT NULL
                                                              AND v.repeat_count > 0
                                                             THEN v.repeat_count ELSE 1 END) END
                               AS denom,
                   c.loop_depth
            FROM traceloom_viz_node v
            LEFT JOIN traceloom_node_core c ON c.node_n = v.node_n) n ON n.tree_n = t.tree_n
-- likelihood(): a tree's nodes are a small share of the node rows as far as the planner
-- knows; with its default guess (1/64 of them for a closed range) it would rather scan every
-- node of the tree and sort them than walk the tree's range.
JOIN traceloom_node_core k
  ON likelihood(k.node_n >= 1, 0.01) AND likelihood(k.node_n <= t.node_count, 0.01)
 AND n.node_n = t.first_node_n + k.node_n - 1 AND k.node_n = n.node_n - t.first_node_n + 1
LEFT JOIN traceloom_node_core p ON p.node_n = n.parent_n;   -- by key, as in traceloom_viz_node

-- @surface traceloom_tree_node_occurrence | one occurrence of a report node | Per-occurrence anchors, time span and costs of every node (find outliers) | SELECT local_node_id, occurrence_idx, anchor_count, total_us, idle_us FROM traceloom_tree_node_occurrence ORDER BY total_us DESC LIMIT 10
CREATE VIEW traceloom_tree_node_occurrence AS
SELECT o.position_id AS node_id,
       (SELECT n.local_node_id FROM traceloom_node_core n WHERE n.node_n = o.node_n) AS local_node_id,
       o.db_idx, o.device_id, 'native_report_tree' AS view_name, o.occurrence_idx, o.repeat_context,
       o.token_start_ordinal + 1 AS anchor_start_idx, o.token_end_exclusive AS anchor_end_idx,
       o.token_end_exclusive - o.token_start_ordinal AS anchor_count, o.start_ns, o.end_ns,
       ROUND(o.compute_us, 3) AS compute_us, ROUND(o.comm_us, 3) AS comm_us,
       ROUND(o.idle_us, 3) AS idle_us, ROUND(o.total_us, 3) AS total_us,
       ROUND(o.self_us, 3) AS self_us, o.aux_events, ROUND(o.aux_us, 3) AS aux_us,
       o.occurrence_n, o.node_n
FROM traceloom_position_occurrence o;

-- @surface traceloom_viz_node_anchor | one (node occurrence, covered anchor) pair | The core statistics relation: each anchor's cost packet under every occurrence that covers it (self on the owning atom, descendant on ancestors) | SELECT node_id, occurrence_idx, count(*) AS anchors, round(sum(total_us), 3) AS total_us FROM traceloom_viz_node_anchor WHERE node_id = 'node-N002' GROUP BY 1, 2 LIMIT 10
CREATE VIEW traceloom_viz_node_anchor AS
SELECT o.position_id AS node_id, a.anchor_id, o.db_idx, o.device_id,
       'native_report_tree' AS view_name, o.occurrence_idx,
       a.anchor_n - o.anchor_first_n + 1 AS anchor_order, o.coverage_kind, o.repeat_context,
       a.compute_us, a.comm_us, a.idle_us, a.total_us, a.self_us, a.aux_events, a.aux_us,
       o.occurrence_n, o.node_n, a.anchor_n
FROM traceloom_position_occurrence o
JOIN traceloom_anchor a ON a.anchor_n >= o.anchor_first_n AND a.anchor_n < o.anchor_end_n;

-- @surface traceloom_tree_node_anchor | one (node occurrence, covered anchor) pair | traceloom_viz_node_anchor with the readable local node id | SELECT local_node_id, occurrence_idx, anchor_order, anchor_id, total_us FROM traceloom_tree_node_anchor LIMIT 10
CREATE VIEW traceloom_tree_node_anchor AS
SELECT na.node_id,
       (SELECT n.local_node_id FROM traceloom_node_core n WHERE n.node_n = na.node_n) AS local_node_id,
       na.anchor_id, na.db_idx, na.device_id, na.view_name,
       na.occurrence_idx, na.anchor_order, na.coverage_kind, na.repeat_context, na.compute_us,
       na.comm_us, na.idle_us, na.total_us, na.self_us, na.aux_events, na.aux_us,
       na.occurrence_n, na.node_n, na.anchor_n
FROM traceloom_viz_node_anchor na;

-- @surface traceloom_v_position | one node of the semantic tree | Nodes with their display parent, preorder, kind, symbol and costs | SELECT position_id, node_type, label, repeat_count, occurrence_count, total_us FROM traceloom_v_position ORDER BY preorder_idx LIMIT 20
CREATE VIEW traceloom_v_position AS
SELECT node_id AS position_id, tree_id, db_idx, device_id, view_name, local_node_id,
       parent_node_id AS display_parent_position_id, preorder_idx, sibling_order,
       path AS display_path, depth, display_depth, loop_depth, node_type, semantic_kind, symbol,
       label, category, repeat_count, occurrence_count, anchor_count, start_ns, end_ns,
       compute_us, comm_us, idle_us, total_us, self_us, aux_us, node_n
FROM traceloom_semantic_node;

-- @surface traceloom_v_position_occurrence | one occurrence with its node's kind | Occurrences with node type, kind, symbol and label (join traceloom_tree_node_occurrence for cost) | SELECT occurrence_id, node_type, label, repeat_iteration FROM traceloom_v_position_occurrence LIMIT 20
CREATE VIEW traceloom_v_position_occurrence AS
SELECT o.occurrence_id, o.position_id, o.parent_occurrence_id, o.db_idx, o.device_id, o.tree_id,
       o.view_name, o.occurrence_idx, o.repeat_iteration, o.token_start_ordinal,
       o.token_end_exclusive, o.rooted_position_path, o.occurrence_path,
       s.node_type, s.kind AS semantic_kind, s.symbol, s.label,
       CASE s.category WHEN 'comm' THEN 'collective'
         WHEN 'graph' THEN
           (SELECT CASE l.slot_role WHEN 'head' THEN 'graph_h' WHEN 'layer' THEN 'graph_l'
                                    WHEN 'tail' THEN 'graph_t' ELSE 'graph_template' END
              FROM traceloom_graph_launch l WHERE l.anchor_n = o.anchor_first_n)
         ELSE s.category END AS category,
       o.occurrence_n, o.node_n
FROM traceloom_position_occurrence o
JOIN traceloom_node_core n ON n.node_n = o.node_n
JOIN traceloom_node_shape s ON s.shape_id = n.shape_id;

-- @surface traceloom_v_position_member | one member with its terminal anchor and event | Members of occurrences with the terminal's event, symbol, stream and time | SELECT slot_ordinal, member_order, member_kind, child_occurrence_id, terminal_symbol, start_ns, end_ns FROM traceloom_v_position_member LIMIT 20
CREATE VIEW traceloom_v_position_member AS
-- terminal_* are the terminal event's, its role too (a replay-unit anchor has no event behind
-- it: no symbol, role or times, as the reference; the anchor's own role is traceloom_anchor's)
SELECT m.*, a.event_id, e.symbol AS terminal_symbol, e.role AS terminal_role,
       e.semantic_role AS terminal_semantic_role, e.stream_id, e.start_ns, e.end_ns, e.dur_us
FROM traceloom_position_member m
LEFT JOIN traceloom_anchor a ON a.anchor_n = m.terminal_anchor_n
LEFT JOIN traceloom_event e ON e.event_n = a.event_n;

-- @surface traceloom_v_node_children | one child of a report node | Children of each report node in edge order, with all the child's columns | SELECT parent_node_id, edge_order, local_node_id, label, total_us FROM traceloom_v_node_children LIMIT 20
CREATE VIEW traceloom_v_node_children AS
SELECT e.parent_node_id, e.child_node_id, e.edge_order, child.*
FROM traceloom_viz_edge e
JOIN traceloom_viz_node child ON child.node_n = e.child_n;

-- @surface traceloom_v_tree_edge | one concrete occurrence edge with labels | Occurrence edges with the cost projection and the child's kind, symbol and label | SELECT parent_label, edge_label, count(*) FROM traceloom_v_tree_edge GROUP BY 1, 2 LIMIT 20
CREATE VIEW traceloom_v_tree_edge AS
SELECT te.*, 'native_report_tree' AS cost_view_name,
       (SELECT s.label FROM traceloom_node_core n JOIN traceloom_node_shape s ON s.shape_id = n.shape_id
         WHERE n.node_n = p.node_n) AS parent_label,
       cs.node_type AS edge_node_type, cs.kind AS edge_semantic_kind,
       cs.symbol AS edge_symbol, cs.label AS edge_label,
       CASE cs.category WHEN 'comm' THEN 'collective'
         WHEN 'graph' THEN
           (SELECT CASE l.slot_role WHEN 'head' THEN 'graph_h' WHEN 'layer' THEN 'graph_l'
                                    WHEN 'tail' THEN 'graph_t' ELSE 'graph_template' END
              FROM traceloom_graph_launch l WHERE l.anchor_n = c.anchor_first_n)
         ELSE cs.category END AS edge_category
FROM traceloom_execution_tree_edge te
JOIN traceloom_position_occurrence_core p ON p.occurrence_n = te.parent_n
JOIN traceloom_position_occurrence_core c ON c.occurrence_n = te.child_n
JOIN traceloom_node_core cn ON cn.node_n = c.node_n
JOIN traceloom_node_shape cs ON cs.shape_id = cn.shape_id;

-- @surface traceloom_v_tree_edge_cost | one concrete occurrence edge with the child's cost | Each occurrence edge with the child occurrence's summed packets (support: missing when no packet row exists) | SELECT edge_label, child_total_us, child_cost_support FROM traceloom_v_tree_edge_cost ORDER BY child_total_us DESC LIMIT 10
CREATE VIEW traceloom_v_tree_edge_cost AS
SELECT te.*,
       CASE WHEN c.anchor_end_n > c.anchor_first_n THEN 'supported' ELSE 'missing' END AS child_cost_support,
       ROUND(c.compute_us, 3) AS child_compute_us, ROUND(c.comm_us, 3) AS child_comm_us,
       ROUND(c.idle_us, 3) AS child_uncovered_us, ROUND(c.total_us, 3) AS child_total_us,
       ROUND(c.self_us, 3) AS child_self_us, ROUND(c.aux_us, 3) AS child_aux_us
FROM traceloom_v_tree_edge te
JOIN traceloom_position_occurrence c ON c.occurrence_n = te.child_n;

-- @surface traceloom_v_tree_edge_role | one edge role with labels | Edge populations with the parent's label and the child's kind | SELECT edge_role_id, parent_label, edge_label, concrete_edge_count FROM traceloom_v_tree_edge_role LIMIT 20
CREATE VIEW traceloom_v_tree_edge_role AS
SELECT r.edge_role_id, r.db_idx, r.device_id, r.tree_id, r.view_name, r.parent_position_id,
       r.parent_tree_path, pn.label AS parent_label, r.child_position_id,
       cn.node_type AS edge_node_type, cn.kind AS edge_semantic_kind,
       cn.symbol AS edge_symbol, cn.label AS edge_label, cn.category AS edge_category,
       r.parent_occurrence_count, r.concrete_edge_count, r.edges_per_parent_min,
       r.edges_per_parent_max, r.population_support, r.first_edge_order
FROM traceloom_execution_tree_edge_role r
JOIN traceloom_viz_node pn ON pn.node_n = r.parent_node_n
JOIN traceloom_viz_node cn ON cn.node_n = r.child_node_n;

-- @surface traceloom_v_node_cost | one report node with its raw anchor and linked aux time | Report nodes with the raw anchor time and the linked aux time of the anchors they cover (cross-checks the packet costs) | SELECT local_node_id, repeat_count, total_us, sql_anchor_us, sql_aux_us FROM traceloom_v_node_cost WHERE repeat_count IS NOT NULL
CREATE VIEW traceloom_v_node_cost AS
SELECT n.*,
       -- the raw time of the anchors' own events: an anchor a reconciled pair merged into
       -- counts its event's duration here, not the pair's extent (the reference sums the
       -- anchors' events). Its occurrences' anchor ranges are searched by key, and only when
       -- some anchor was merged (the guard: once per statement). A replay-unit anchor (a
       -- promoted launch's, traceloom_graph_launch.anchor_n) has no event, so it adds nothing
       -- (the reference's node cost sums its anchor events, which leave it out): its interval
       -- is taken back off the node's self time, the launches in its occurrences' anchor
       -- ranges searched by key, and only where some launch was promoted (a second guard).
       ROUND((c.self_ns - CASE WHEN (SELECT max(anchor_n) FROM traceloom_graph_launch) IS NOT NULL
                              THEN COALESCE((SELECT SUM(e.dur_ns)
                                             FROM traceloom_position_occurrence_core o
                                             CROSS JOIN traceloom_graph_launch g
                                               ON g.anchor_n >= o.anchor_first_n
                                              AND g.anchor_n < o.anchor_first_n + c.token_len
                                             CROSS JOIN traceloom_anchor_core a ON a.anchor_n = g.anchor_n
                                             CROSS JOIN traceloom_event_core e ON e.event_n = a.event_n
                                             WHERE o.occurrence_n >= c.first_occurrence_n
                                               AND o.occurrence_n < c.first_occurrence_n + c.occurrence_count), 0)
                              ELSE 0 END
                         - CASE WHEN (SELECT max(anchor_n) FROM traceloom_anchor_extent_core) IS NOT NULL
                              THEN COALESCE((SELECT SUM(x.end_ns - x.start_ns - e.dur_ns)
                                             FROM traceloom_position_occurrence_core o
                                             CROSS JOIN traceloom_anchor_extent_core x
                                               ON x.anchor_n >= o.anchor_first_n
                                              AND x.anchor_n < o.anchor_first_n + c.token_len
                                             CROSS JOIN traceloom_anchor_core a ON a.anchor_n = x.anchor_n
                                             CROSS JOIN traceloom_event_core e ON e.event_n = a.event_n
                                             WHERE o.occurrence_n >= c.first_occurrence_n
                                               AND o.occurrence_n < c.first_occurrence_n + c.occurrence_count), 0)
                              ELSE 0 END) / 1000.0, 3) AS sql_anchor_us,
       ROUND(c.linked_aux_ns / 1000.0, 3) AS sql_aux_us
FROM traceloom_viz_node n
JOIN traceloom_v_node_stats c ON c.node_n = n.node_n;

-- A line: '  - [N001/N003] N003 Repeat x3 | Rep x3 | anchors=15 total_us=1818.751' (two spaces
-- per level, the path, the node, its type, its label, anchors covered, total cost).
-- @surface traceloom_v_semantic_tree_readable | one line of the indented tree | The recovered tree as indented text, one position per line in preorder | SELECT line FROM traceloom_v_semantic_tree_readable WHERE view_name = 'anchor_tree' ORDER BY db_idx, device_id, tree_kind, preorder_idx
CREATE VIEW traceloom_v_semantic_tree_readable AS
SELECT tree_id, db_idx, device_id, view_name, tree_kind, preorder_idx, local_node_id,
       parent_local_node_id, path, display_depth,
       printf('%s- [%s] %s %s | %s | anchors=%d total_us=%.3f',
              substr('                                                                ', 1, 2 * COALESCE(display_depth, depth, 0)),
              path, local_node_id,
              node_type || CASE WHEN node_type = 'Repeat' THEN ' x' || repeat_count ELSE '' END,
              COALESCE(label, node_type), COALESCE(anchor_count, 0), COALESCE(total_us, 0)) AS line,
       node_id, occurrence_count, avg_total_us
FROM traceloom_semantic_node;

-- @surface traceloom_v_symbol_summary | one (db_idx, device_id, structural symbol) | The kernel summary: count, total, average, min, median, p90 and max of raw anchor durations per symbol (self time, an overlay) | SELECT device_id, symbol, anchor_count, total_us, avg_us, median_us, p90_us, max_us FROM traceloom_v_symbol_summary ORDER BY total_us DESC LIMIT 20
CREATE VIEW traceloom_v_symbol_summary AS
SELECT db_idx, device_id, symbol, anchor_count, ROUND(total_ns / 1000.0, 3) AS total_us,
       ROUND(total_ns / 1000.0 / anchor_count, 3) AS avg_us, ROUND(min_ns / 1000.0, 3) AS min_us,
       ROUND(median_ns / 1000.0, 3) AS median_us, ROUND(p90_ns / 1000.0, 3) AS p90_us,
       ROUND(max_ns / 1000.0, 3) AS max_us
FROM traceloom_symbol_summary_core;

-- @surface traceloom_v_structure_bubble_occurrence | one bubble | All bubble occurrences (idle gaps charged to the following anchor) | SELECT * FROM traceloom_v_structure_bubble_occurrence ORDER BY bubble_us DESC LIMIT 10
CREATE VIEW traceloom_v_structure_bubble_occurrence AS
SELECT * FROM traceloom_structure_bubble_occurrence;

-- @surface traceloom_node_anchor_walk | one (node occurrence, covered anchor) pair (integers) | The walk node -> its occurrences -> their anchors over the storage, as key ranges and in node order: the rows of traceloom_tree_node_anchor as integers, with the node's and anchor's columns the bubble and node host views read | SELECT node_n, count(*) FROM traceloom_node_anchor_walk GROUP BY 1 LIMIT 10
-- A chain of CROSS JOINs: SQLite keeps only the table right of a CROSS JOIN after the one left
-- of it, so that the walk stays in this order inside the views that join it (a query that picks
-- nodes, by number or by text id, reads just their occurrences and anchors).
CREATE VIEW traceloom_node_anchor_walk AS
SELECT n.node_n, n.node_id, n.local_node_id, n.node_kind, n.tree_n, n.occurrence_count,
       n.token_len, o.occurrence_n, o.occurrence_idx, o.anchor_first_n, a.anchor_n,
       a.occurrence_n AS anchor_occurrence_n, a.db_idx, a.device_id, a.host_call_n, a.idle_ns
FROM traceloom_node_core n
CROSS JOIN traceloom_position_occurrence_core o
  ON o.occurrence_n >= n.first_occurrence_n
 AND o.occurrence_n < n.first_occurrence_n + n.occurrence_count
CROSS JOIN traceloom_anchor_core a
  ON a.anchor_n >= o.anchor_first_n AND a.anchor_n < o.anchor_first_n + n.token_len;

-- @surface traceloom_structure_bubble_position | one structural position with bubbles | Bubble statistics per structural position: count, host-observation coverage, total, average, min and max bubble | SELECT right_local_node_id, right_node_symbol, bubble_occurrence_count, total_bubble_us, avg_bubble_us FROM traceloom_structure_bubble_position ORDER BY total_bubble_us DESC LIMIT 10
-- The same bubbles as traceloom_structure_bubble_occurrence (an anchor with a left neighbour
-- on its device, hence a host window, and idle time), aggregated from the anchors and their
-- host windows before the position's text columns are looked up once per group. idle_us is
-- whole nanoseconds over 1000, so it is its own ROUND(idle_us, 3) (bubble_us).
-- The window's state is a CASE with a key probe that SQLite evaluates once per aggregate that
-- names it, so it is named once: a single SUM counts supported windows (state 0) in the low
-- 32 bits and nonmonotonic ones (4) in the high bits (a node has far fewer than 2^31
-- bubbles); missing endpoints (1) are counted from the endpoint flags, and the rest (state 3;
-- 2 is never derived) is what remains.
CREATE VIEW traceloom_structure_bubble_position AS
-- per atom node (an anchor's occurrence names it): the bubbles before its anchors, walked
-- node -> its occurrences -> their anchors (key ranges; an anchor's occurrence is an atom's,
-- within its range), so that a node's bubbles come together, in node order: no sort of every
-- bubble. Inlined in both arms below (NOT MATERIALIZED), filtered there by node.
WITH bubble AS NOT MATERIALIZED (
  SELECT w.node_n, w.occurrence_count = 1 AND w.token_len = 1 AS alone,
         CASE WHEN l.host_call_n IS NULL OR w.host_call_n IS NULL THEN 0
              ELSE CASE (SELECT x.state FROM traceloom_anchor_host_window_rejected x
                          WHERE x.left_anchor_n = l.anchor_n)
                   WHEN 4 THEN 4294967296 WHEN 3 THEN 0 ELSE 1 END END AS state_count,
         l.host_call_n IS NULL OR w.host_call_n IS NULL AS missing_endpoint, w.idle_ns
  FROM traceloom_node_anchor_walk w
  -- the window's left anchor: its state (traceloom_anchor_host_window) from the two
  -- endpoints and the stored rejected windows, without the window view's call lookups
  -- (which an aggregate keeps: 1.1 s over the 741k bubbles of the 1M bench profile)
  CROSS JOIN traceloom_anchor_core l
    ON l.anchor_n = w.anchor_n - 1 AND l.db_idx = w.db_idx AND l.device_id = w.device_id
  -- an atom's own anchors (an anchor's occurrence is an atom's)
  WHERE w.node_kind = 1 AND +w.anchor_occurrence_n = w.occurrence_n AND w.idle_ns > 0
)
SELECT n.db_idx, n.device_id, 'native_report_tree' AS view_name, n.node_id AS structural_position_id,
       n.node_id AS right_node_id, n.local_node_id AS right_local_node_id,
       COALESCE(n.path, (SELECT p.path FROM traceloom_node_core p WHERE p.node_n = n.parent_n)
                        || '/' || n.local_node_id) AS right_node_path,
       'atom' AS right_node_kind,
       (SELECT s.symbol FROM traceloom_node_shape s WHERE s.shape_id = n.shape_id)
         AS right_node_symbol,
       b.bubble_occurrence_count, b.state_counts & 4294967295 AS supported_host_occurrence_count,
       b.missing_endpoint_occurrence_count, b.state_counts >> 32 AS nonmonotonic_occurrence_count,
       b.bubble_occurrence_count - b.missing_endpoint_occurrence_count
         - (b.state_counts & 4294967295) - (b.state_counts >> 32)
         AS other_unsupported_occurrence_count,
       b.total_bubble_us, b.avg_bubble_us, b.min_bubble_us, b.max_bubble_us,
       ROUND(1.0 * (b.state_counts & 4294967295) / b.bubble_occurrence_count, 6)
         AS host_observation_coverage, b.node_n AS right_node_n
-- A node with one occurrence of one anchor (389k of the 501k positions of the 1M bench
-- profile) has at most one bubble: its row is that bubble's, without an aggregate (whose steps
-- and rounding were half of this view's time); the others are aggregated. A whole number of ns
-- over 1000.0 is already the double nearest to its 3-decimal value, which is what ROUND(.., 3)
-- returns after printing and parsing it again: only the average is rounded.
FROM (SELECT node_n, 1 AS bubble_occurrence_count, state_count AS state_counts,
             missing_endpoint AS missing_endpoint_occurrence_count,
             idle_ns / 1000.0 AS total_bubble_us, idle_ns / 1000.0 AS avg_bubble_us,
             idle_ns / 1000.0 AS min_bubble_us, idle_ns / 1000.0 AS max_bubble_us
      FROM bubble WHERE alone
      UNION ALL
      SELECT node_n, COUNT(*), SUM(state_count), SUM(missing_endpoint), SUM(idle_ns) / 1000.0,
             ROUND(AVG(idle_ns) / 1000.0, 3), MIN(idle_ns) / 1000.0, MAX(idle_ns) / 1000.0
      FROM bubble WHERE NOT alone GROUP BY node_n) b
-- the node's text columns as traceloom_viz_node has them, from the node storage by key (the
-- report projection would also fill every node's span and costs: four lookups per group)
CROSS JOIN traceloom_node_core n ON n.node_n = b.node_n;

-- @surface traceloom_v_structure_bubble_position | one structural position with bubbles | All bubble statistics per position | SELECT * FROM traceloom_v_structure_bubble_position ORDER BY total_bubble_us DESC LIMIT 10
CREATE VIEW traceloom_v_structure_bubble_position AS
SELECT * FROM traceloom_structure_bubble_position;

-- @surface traceloom_v_shared_definition | one shared definition (identical structures) per tree | The nodes that are one structure (every MatMul atom, every equal layer body) summed together: how often a structure occurs anywhere in the tree, and its whole-run cost | SELECT definition_local, node_type, label, node_count, occurrence_count, total_us FROM traceloom_v_shared_definition ORDER BY total_us DESC LIMIT 20
-- The sums are stored per definition (traceloom_definition_core, a few rows): only the list
-- of node ids reads every node, grouped from the node rows alone (no packet of a node with
-- one occurrence to fill in from its occurrence, anchor and event: 1.3 s at a million nodes).
CREATE VIEW traceloom_v_shared_definition AS
SELECT t.db_idx, t.device_id, d.definition_local, s.node_type, s.kind, s.symbol, s.label,
       d.node_count, g.local_node_ids, d.occurrence_count, d.anchor_count,
       ROUND(d.compute_ns / 1000.0, 3) AS compute_us,
       ROUND(d.comm_ns / 1000.0, 3) AS comm_us,
       ROUND(d.idle_ns / 1000.0, 3) AS idle_us,
       ROUND((d.compute_ns + d.comm_ns + d.idle_ns) / 1000.0, 3) AS total_us,
       ROUND(d.self_ns / 1000.0, 3) AS self_us
FROM (SELECT n.tree_n, n.definition_local, group_concat(n.local_node_id, ',') AS local_node_ids
      FROM traceloom_node_core n GROUP BY n.tree_n, n.definition_local) g
JOIN traceloom_definition_core d
  ON d.tree_n = g.tree_n AND d.definition_local = g.definition_local
JOIN traceloom_tree_core t ON t.tree_n = d.tree_n
JOIN traceloom_node_shape s ON s.shape_id = d.shape_id;
