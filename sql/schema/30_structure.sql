-- Anchors, their cost packets, and the recovered structure (outputs.md sections 2-4, 7).
--
-- What is stored, and why (docs/ARCHITECTURE.md, "Storage"): one row per anchor, per tree
-- node and per occurrence, integers only, keyed by dense integers that the C side computes
-- (anchor_n, node_n, occurrence_n); every public relation here is a view over them. Text
-- (ids, paths, labels) is formatted by the views at query time, never stored per row,
-- except the paths of occurrences with children (an atom's path is its parent's plus one
-- step). The text ids are VIRTUAL generated columns added once the rows are in
-- (sql/views/00_indexes.sql): they cost no space, and SQLite can build an automatic index
-- on one when a user's query joins by it; the shipped views join on the integers.
--
-- Trees: one per (db_idx, device_id). A node is one structural position (one place in the
-- tree: every slot of every parent is its own node with its own occurrences); nodes that
-- are identical structures share a definition (definition_local). Occurrences are numbered
-- node-major: the occurrences of a node are the contiguous range
-- [first_occurrence_n, first_occurrence_n + occurrence_count) in occurrence_idx order, and
-- the child of an occurrence in a slot is found by arithmetic (structure.h), so neither
-- needs an index.
--
-- Two projections of each tree: the semantic tree and the HPO relations use view_name
-- 'anchor_tree'; the report relations (traceloom_viz_*) use 'native_report_tree'.

-- @surface traceloom_tree_core | one tree per (db_idx, device_id) (integers) | Storage behind traceloom_semantic_tree: the ranges of anchors, nodes and occurrences each tree owns | SELECT tree_n, db_idx, device_id, node_count, anchor_count FROM traceloom_tree_core
CREATE TABLE traceloom_tree_core(
  tree_n INTEGER PRIMARY KEY,      -- 1-based, trees in (db_idx, device_id) order
  db_idx INTEGER NOT NULL,
  device_id INTEGER NOT NULL,
  node_device INTEGER,             -- device in the node ids (node-d<dev>-N007); NULL: node-N007
  macro_discovery TEXT NOT NULL,
  first_anchor_n INTEGER NOT NULL, anchor_count INTEGER NOT NULL,
  first_node_n INTEGER NOT NULL, node_count INTEGER NOT NULL,
  first_occurrence_n INTEGER NOT NULL, occurrence_count INTEGER NOT NULL,
  definition_count INTEGER NOT NULL, -- distinct structures (shared definitions)
  UNIQUE (db_idx, device_id)
);

-- @surface traceloom_semantic_tree | one tree per (db_idx, device_id) | The recovered trees: root node, discovery status, projection used for costs | SELECT tree_id, db_idx, device_id, root_node_id, macro_discovery FROM traceloom_semantic_tree
CREATE VIEW traceloom_semantic_tree AS
-- The constant columns name the projection as the reference TraceLoom does (docs/PARITY.md):
-- costs prelude-to-following-anchor ('native_aux_attribution'; 'none' when the tree links
-- no auxiliary event).
SELECT 'tree-db' || t.db_idx || '-dev' || t.device_id AS tree_id, t.db_idx, t.device_id,
       'anchor_tree' AS view_name, 'semantic' AS tree_kind,
       'native_report_tree' AS stem,
       'node-' || COALESCE('d' || t.node_device || '-', '') || 'N001' AS root_node_id,
       'compat-v1' AS schema_version, 'native_report_tree' AS semantic_projection,
       t.macro_discovery, 'native_report_tree' AS readable_macro_mode,
       CASE WHEN (SELECT o.aux_events FROM traceloom_position_occurrence_body o
                   WHERE o.occurrence_n = t.first_occurrence_n) > 0
            THEN 'native_aux_attribution' ELSE 'none' END AS auxiliary_attribution,
       t.anchor_count AS token_count, t.node_count AS position_count,
       t.occurrence_count, NULL AS raw_json, t.tree_n, t.definition_count
FROM traceloom_tree_core t;

-- traceloom_anchor is a view over integer rows (traceloom_anchor_core: position in the
-- device sequence, the event, the atom occurrence, start and the cost packet in ns) and the
-- text they share (traceloom_anchor_shape: symbol, role, label, family).
-- @surface traceloom_anchor_shape | one distinct combination of an anchor's text columns | Storage behind traceloom_anchor: symbol, role, label and family, stored once | SELECT symbol, role, label FROM traceloom_anchor_shape LIMIT 20
CREATE TABLE traceloom_anchor_shape(
  shape_id INTEGER PRIMARY KEY,
  symbol TEXT,                     -- structural symbol
  role TEXT,                       -- compute, comm, sync, graph, unknown
  label TEXT,
  family TEXT
);

-- @surface traceloom_anchor_core | one anchor (integers only) | Storage behind traceloom_anchor: position in the device sequence, its event and atom occurrence, times and cost packet in ns | SELECT device_id, count(*), sum(compute_ns) FROM traceloom_anchor_core GROUP BY device_id
CREATE TABLE traceloom_anchor_core(
  anchor_n INTEGER PRIMARY KEY,    -- n of anchor-<n>, dense over (db_idx, device_id, anchor_idx)
  db_idx INTEGER NOT NULL,         -- (anchor_idx is anchor_n - the tree's first_anchor_n + 1)
  device_id INTEGER NOT NULL,
  event_n INTEGER NOT NULL,        -- traceloom_event_core (its start_ns is the anchor's); < 0:
                                   -- a promoted graph launch's interval row, no event
  shape_id INTEGER NOT NULL,       -- traceloom_anchor_shape
  occurrence_n INTEGER,            -- its atom occurrence; NULL when it has no tree
  compute_ns INTEGER NOT NULL, comm_ns INTEGER NOT NULL, idle_ns INTEGER NOT NULL,
  aux_events INTEGER NOT NULL, aux_ns INTEGER NOT NULL,
  linked_aux_events INTEGER NOT NULL, linked_aux_ns INTEGER NOT NULL,
  host_call_n INTEGER              -- its runtime endpoint: the call of its event's supported
                                   -- relation, or its graph launch's host call; NULL: none
);

-- @surface traceloom_anchor_extent_core | one anchor a reconciled pair merged into | Storage behind traceloom_anchor: the canonical anchor of each reconciled pair of event reconciliation and its interval (the timing envelope's, which may not be its event's), sparse, read by key | SELECT anchor_n, start_ns, end_ns FROM traceloom_anchor_extent_core
-- Written by the report stage (ext/reconcile/reconcile.c); no row on a profile without a
-- reconciled pair, where the event's times stand. The views read it by key behind a guard,
-- `CASE WHEN (SELECT max(anchor_n) FROM traceloom_anchor_extent_core) IS NOT NULL THEN
-- (<search by key>) END`: the guard is not correlated, so SQLite evaluates it once per
-- statement (max() of the key is one search, no scan), and an empty table costs no search per
-- row (node-events' million anchors read with three searches each took 4-6% longer).
CREATE TABLE traceloom_anchor_extent_core(
  anchor_n INTEGER PRIMARY KEY,    -- traceloom_anchor_core
  start_ns INTEGER NOT NULL,
  end_ns INTEGER NOT NULL
);

-- @surface traceloom_anchor | one anchor (structural token) | The semantically significant device events in linear order per (db_idx, device_id), with their structural symbol and cost packet | SELECT device_id, symbol, count(*) AS n, round(sum(dur_us), 3) AS self_us FROM traceloom_anchor GROUP BY 1, 2 ORDER BY self_us DESC LIMIT 10
CREATE VIEW traceloom_anchor AS
SELECT a.anchor_id, a.db_idx, a.device_id,
       a.anchor_n - (SELECT t.first_anchor_n FROM traceloom_tree_core t
                      WHERE t.db_idx = a.db_idx AND t.device_id = a.device_id) + 1 AS anchor_idx,
       -- NULL for a promoted graph launch's anchor: no event (its unit's event stands for
       -- the launches); its interval is the row its negative event_n names
       a.event_id, NULL AS step_idx,
       (SELECT s.symbol FROM traceloom_anchor_shape s WHERE s.shape_id = a.shape_id) AS symbol,
       (SELECT s.role FROM traceloom_anchor_shape s WHERE s.shape_id = a.shape_id) AS role,
       (SELECT s.symbol FROM traceloom_anchor_shape s WHERE s.shape_id = a.shape_id) AS label,
       (SELECT s.role FROM traceloom_anchor_shape s WHERE s.shape_id = a.shape_id) AS family,
       -- a reconciled pair's canonical anchor has the envelope's interval (its extent, by key;
       -- a correlated search, not a join, so that the view stays flattened into a query)
       COALESCE(CASE WHEN (SELECT max(anchor_n) FROM traceloom_anchor_extent_core) IS NOT NULL THEN (SELECT x.start_ns FROM traceloom_anchor_extent_core x WHERE x.anchor_n = a.anchor_n) END,
                (SELECT e.start_ns FROM traceloom_event_core e WHERE e.event_n = a.event_n)) AS start_ns,
       COALESCE(CASE WHEN (SELECT max(anchor_n) FROM traceloom_anchor_extent_core) IS NOT NULL THEN (SELECT x.end_ns FROM traceloom_anchor_extent_core x WHERE x.anchor_n = a.anchor_n) END,
                (SELECT e.start_ns + e.dur_ns FROM traceloom_event_core e WHERE e.event_n = a.event_n)) AS end_ns,
       COALESCE(CASE WHEN (SELECT max(anchor_n) FROM traceloom_anchor_extent_core) IS NOT NULL THEN (SELECT x.end_ns - x.start_ns FROM traceloom_anchor_extent_core x WHERE x.anchor_n = a.anchor_n) END,
                (SELECT e.dur_ns FROM traceloom_event_core e WHERE e.event_n = a.event_n)) / 1000.0 AS dur_us,
       a.compute_ns / 1000.0 AS compute_us, a.comm_ns / 1000.0 AS comm_us,
       a.idle_ns / 1000.0 AS idle_us,
       (a.compute_ns + a.comm_ns + a.idle_ns) / 1000.0 AS total_us,
       COALESCE(CASE WHEN (SELECT max(anchor_n) FROM traceloom_anchor_extent_core) IS NOT NULL THEN (SELECT x.end_ns - x.start_ns FROM traceloom_anchor_extent_core x WHERE x.anchor_n = a.anchor_n) END,
                (SELECT e.dur_ns FROM traceloom_event_core e WHERE e.event_n = a.event_n)) / 1000.0 AS self_us,
       a.aux_events, a.aux_ns / 1000.0 AS aux_us,
       a.linked_aux_events, a.linked_aux_ns / 1000.0 AS linked_aux_us,
       (SELECT o.position_id FROM traceloom_position_occurrence_core o
         WHERE o.occurrence_n = a.occurrence_n) AS node_id,
       (SELECT o.occurrence_idx FROM traceloom_position_occurrence_core o
         WHERE o.occurrence_n = a.occurrence_n) AS occurrence_idx,
       a.anchor_n, a.event_n, a.occurrence_n,
       (SELECT s.label FROM traceloom_anchor_shape s WHERE s.shape_id = a.shape_id) AS event_label,
       (SELECT s.family FROM traceloom_anchor_shape s WHERE s.shape_id = a.shape_id) AS source_family
FROM traceloom_anchor_core a;

-- @surface traceloom_symbol_summary_core | one (db_idx, device_id, structural symbol) | Storage behind traceloom_v_symbol_summary: count, total, min, median, p90 and max anchor duration in ns, computed at publication (percentiles need each symbol's durations sorted) | SELECT symbol, anchor_count, median_ns FROM traceloom_symbol_summary_core ORDER BY total_ns DESC LIMIT 10
CREATE TABLE traceloom_symbol_summary_core(
  db_idx INTEGER NOT NULL,
  device_id INTEGER NOT NULL,
  symbol TEXT,
  anchor_count INTEGER NOT NULL,
  total_ns INTEGER NOT NULL,
  min_ns INTEGER NOT NULL,
  median_ns INTEGER NOT NULL,      -- nearest rank: the ceil(n / 2)-th shortest
  p90_ns INTEGER NOT NULL,         -- the ceil(0.9 n)-th shortest
  max_ns INTEGER NOT NULL
);

-- @surface traceloom_aux_link | one auxiliary event and the anchor that follows it | Non-anchor device work (copies, waits, small kernels) linked to the next anchor; events with no later anchor stay as retained_unplaced rows | SELECT link_type, aux_kind, count(*) FROM traceloom_aux_link GROUP BY 1, 2
CREATE TABLE traceloom_aux_link(
  anchor_id TEXT,                  -- NULL for retained_unplaced
  aux_event_id TEXT NOT NULL,
  db_idx INTEGER NOT NULL,
  device_id INTEGER NOT NULL,
  aux_order INTEGER,
  aux_step_idx INTEGER,
  link_type TEXT NOT NULL,         -- prelude, retained_unplaced
  reason TEXT,
  aux_kind TEXT,
  aux_dur_us REAL,
  raw_json TEXT,
  aux_event_n INTEGER NOT NULL,    -- aux_event_id and anchor_id as integers (event_core,
  anchor_n INTEGER                 --   anchor_core): what the views join on
);

-- @surface traceloom_node_shape | one distinct combination of a node's text columns | Storage behind the node views: node type, kind, symbol, label and category, stored once | SELECT node_type, kind, symbol, label FROM traceloom_node_shape LIMIT 20
CREATE TABLE traceloom_node_shape(
  shape_id INTEGER PRIMARY KEY,
  node_type TEXT NOT NULL,         -- Atom, Seq, Repeat
  kind TEXT NOT NULL,              -- atom, seq, repeat
  symbol TEXT,                     -- an atom's structural symbol; 'Rep xN', 'Seq' otherwise
  label TEXT,
  category TEXT                    -- an atom's anchor role; graph_unit for replay units
);

-- @surface traceloom_node_core | one tree node (integers) | Storage behind the node views: one row per structural position with its parent and slot, definition, counts, anchor range, times and summed packets in ns | SELECT node_n, local_n, parent_n, slot_ordinal, occurrence_count FROM traceloom_node_core LIMIT 20
CREATE TABLE traceloom_node_core(
  node_n INTEGER PRIMARY KEY,      -- dense over the trees in order; preorder within a tree
  tree_n INTEGER NOT NULL,         -- traceloom_tree_core
  db_idx INTEGER NOT NULL,
  device_id INTEGER NOT NULL,
  node_device INTEGER,             -- device in the node ids (node-d<dev>-N007); NULL: node-N007
  local_n INTEGER NOT NULL,        -- 7 in N007: 1-based preorder within the tree
  parent_n INTEGER,                -- node_n of the parent; NULL for the root (its local_n:
                                   -- that row's, by key; not stored again per node)
  slot_ordinal INTEGER NOT NULL,   -- slot in the parent (0 for the root)
  node_kind INTEGER NOT NULL,      -- 1 Atom, 2 Seq, 3 Repeat
  shape_id INTEGER NOT NULL,       -- traceloom_node_shape
  definition_local INTEGER NOT NULL, -- identical structures share one definition (1-based)
  repeat_count INTEGER,            -- Repeat: iterations per occurrence
  child_count INTEGER NOT NULL,    -- slots (children per occurrence, or per iteration)
  depth INTEGER NOT NULL,
  loop_depth INTEGER NOT NULL,     -- Repeat nodes from the root to this one, itself included
  occurrence_count INTEGER NOT NULL,
  first_occurrence_n INTEGER NOT NULL, -- occurrences: [first, first + occurrence_count)
  token_len INTEGER NOT NULL,      -- anchors per occurrence
  -- Span, times and summed packets over the occurrences; NULL on a node with one occurrence
  -- (most of a wide, flat root), whose values are that occurrence's (the views read them).
  first_token INTEGER,             -- anchors covered, 0-based within the tree: [first, end)
  end_token INTEGER,
  start_ns INTEGER, end_ns INTEGER,
  compute_ns INTEGER, comm_ns INTEGER, idle_ns INTEGER,
  self_ns INTEGER, aux_events INTEGER, aux_ns INTEGER,
  linked_aux_ns INTEGER,
  path TEXT,                       -- 'N001/N003' on nodes with children; NULL on atoms
  rooted_path TEXT                 -- 'node-N001/s2/node-N003' likewise (outputs.md 0.1)
);

-- @surface traceloom_definition_core | one shared definition used by a tree's nodes (integers) | Storage behind traceloom_v_shared_definition: per definition, its nodes, occurrences and anchors and their summed packets in ns, summed at publication | SELECT tree_n, definition_local, node_count, occurrence_count, compute_ns FROM traceloom_definition_core ORDER BY compute_ns DESC LIMIT 10
-- A few rows (a definition is one distinct structure: 186 at a million anchors), so that the
-- view does not fill in every node's packet (traceloom_v_node_stats) to add them up.
CREATE TABLE traceloom_definition_core(
  tree_n INTEGER NOT NULL,         -- traceloom_tree_core
  definition_local INTEGER NOT NULL, -- traceloom_node_core.definition_local
  shape_id INTEGER NOT NULL,       -- traceloom_node_shape of a node with the least label
  node_count INTEGER NOT NULL,     -- nodes of the definition
  occurrence_count INTEGER NOT NULL, -- their occurrences, and the anchors those cover
  anchor_count INTEGER NOT NULL,
  compute_ns INTEGER NOT NULL, comm_ns INTEGER NOT NULL, idle_ns INTEGER NOT NULL,
  self_ns INTEGER NOT NULL,        -- summed as traceloom_v_node_stats has them per node
  PRIMARY KEY (tree_n, definition_local)
) WITHOUT ROWID;

-- The node rows with their span, times and summed packets filled in: a node with one
-- occurrence stores none of them (its occurrence does, or, for an atom, its anchor).
-- @surface traceloom_v_node_stats | one tree node (integers, every value filled) | The node storage with span, times and summed packets in ns for every node, and the per-iteration denominator | SELECT node_n, occurrence_count, compute_ns, idle_ns FROM traceloom_v_node_stats LIMIT 20
CREATE VIEW traceloom_v_node_stats AS
SELECT c.node_n, c.tree_n, c.db_idx, c.device_id, c.node_device, c.local_n, c.parent_n,
       (SELECT p.local_n FROM traceloom_node_core p WHERE p.node_n = c.parent_n) AS parent_local_n,
       c.slot_ordinal, c.node_kind, c.shape_id, c.definition_local,
       c.repeat_count, c.child_count, c.depth, c.loop_depth, c.occurrence_count,
       c.first_occurrence_n, c.token_len,
       COALESCE(c.first_token, o.anchor_first_n - t.first_anchor_n) AS first_token,
       COALESCE(c.end_token, o.anchor_first_n - t.first_anchor_n + c.token_len) AS end_token,
       -- (an atom's anchor that a reconciled pair merged into: the pair's extent, by key)
       COALESCE(c.start_ns, ob.start_ns, CASE WHEN (SELECT max(anchor_n) FROM traceloom_anchor_extent_core) IS NOT NULL THEN (SELECT x.start_ns FROM traceloom_anchor_extent_core x
                                          WHERE x.anchor_n = a.anchor_n) END, ae.start_ns) AS start_ns,
       COALESCE(c.end_ns, ob.end_ns, CASE WHEN (SELECT max(anchor_n) FROM traceloom_anchor_extent_core) IS NOT NULL THEN (SELECT x.end_ns FROM traceloom_anchor_extent_core x
                                      WHERE x.anchor_n = a.anchor_n) END, ae.start_ns + ae.dur_ns) AS end_ns,
       COALESCE(c.compute_ns, ob.compute_ns, a.compute_ns) AS compute_ns,
       COALESCE(c.comm_ns, ob.comm_ns, a.comm_ns) AS comm_ns,
       COALESCE(c.idle_ns, ob.idle_ns, a.idle_ns) AS idle_ns,
       COALESCE(c.self_ns, ob.self_ns, CASE WHEN (SELECT max(anchor_n) FROM traceloom_anchor_extent_core) IS NOT NULL THEN (SELECT x.end_ns - x.start_ns FROM traceloom_anchor_extent_core x
                                        WHERE x.anchor_n = a.anchor_n) END, ae.dur_ns) AS self_ns,
       COALESCE(c.aux_events, ob.aux_events, a.aux_events) AS aux_events,
       COALESCE(c.aux_ns, ob.aux_ns, a.aux_ns) AS aux_ns,
       COALESCE(c.linked_aux_ns, ob.linked_aux_ns, a.linked_aux_ns) AS linked_aux_ns,
       c.path, c.rooted_path, c.node_id, c.local_node_id,
       CASE WHEN c.occurrence_count = 0 THEN 1
            ELSE c.occurrence_count * (CASE WHEN c.node_kind = 3 AND c.repeat_count > 0
                                            THEN c.repeat_count ELSE 1 END) END AS denom
FROM traceloom_node_core c
-- A LEFT JOIN although every node has its tree: by its key, and read only for the token span,
-- so that SQLite leaves it out of a query that names neither first_token nor end_token (the
-- report tree, the readable tree: one search per node less).
LEFT JOIN traceloom_tree_core t ON t.tree_n = c.tree_n
-- (the span and packet of a node not stored with its sums, which has one occurrence: its
-- body row's, or its anchor's for an atom; joined by key, as the report tree reads it)
-- The condition is inside the key: SQLite searches the right table of a LEFT JOIN before it
-- tests an ON term on the left one, and a NULL key is no search at all. So a node with stored
-- sums (112k of 512k at a million anchors) reads no occurrence, body or anchor, and an atom
-- (which has no body row) no body: about 740k b-tree searches less over every node.
LEFT JOIN traceloom_position_occurrence_core o
  ON o.occurrence_n = CASE WHEN c.compute_ns IS NULL THEN c.first_occurrence_n END
LEFT JOIN traceloom_position_occurrence_body ob
  ON ob.occurrence_n = CASE WHEN c.compute_ns IS NULL AND c.node_kind <> 1
                            THEN c.first_occurrence_n END
LEFT JOIN traceloom_anchor_core a
  ON a.anchor_n = CASE WHEN c.compute_ns IS NULL AND ob.compute_ns IS NULL
                       THEN o.anchor_first_n END
LEFT JOIN traceloom_event_core ae ON ae.event_n = a.event_n;

-- @surface traceloom_viz_node | one node of the report tree | The report projection of each structural position: kind, repeat count, occurrences, anchors, costs and per-iteration averages | SELECT local_node_id, node_type, label, repeat_label, occurrence_count, total_us, avg_total_us FROM traceloom_viz_node ORDER BY db_idx, device_id, local_node_id LIMIT 20
CREATE VIEW traceloom_viz_node AS
SELECT n.node_id, n.db_idx, n.device_id, 'native_report_tree' AS view_name, n.local_node_id,
       COALESCE(n.path, p.path || '/' || n.local_node_id) AS path,
       s.node_type, s.kind, s.symbol, s.label,
       CASE s.category WHEN 'comm' THEN 'collective'
         WHEN 'graph' THEN
           (SELECT CASE l.slot_role WHEN 'head' THEN 'graph_h' WHEN 'layer' THEN 'graph_l'
                                    WHEN 'tail' THEN 'graph_t' ELSE 'graph_template' END
              FROM traceloom_position_occurrence_core o
              JOIN traceloom_graph_launch l ON l.anchor_n = o.anchor_first_n
             WHERE o.occurrence_n = n.first_occurrence_n)
         ELSE s.category END AS category,
       n.depth, n.depth AS level,
       CASE WHEN n.node_kind = 3 THEN 'Rep x' || n.repeat_count END AS repeat_label,
       n.repeat_count, n.occurrence_count, n.occurrence_count * n.token_len AS anchor_count,
       n.token_len AS anchors_per_occurrence, n.first_token + 1 AS first_anchor_idx,
       n.end_token AS last_anchor_idx,
       n.compute_ns / 1000.0 AS compute_us, n.comm_ns / 1000.0 AS comm_us,
       n.idle_ns / 1000.0 AS idle_us, (n.compute_ns + n.comm_ns + n.idle_ns) / 1000.0 AS total_us,
       -- Per iteration, to 3 decimals. Over one iteration (most nodes: an atom that occurs
       -- once) the value is a whole number of ns / 1000.0, already the double nearest to its
       -- 3-decimal value, which ROUND(.., 3) gives back after printing and reparsing it: the
       -- CASE skips that printf per node and column (tests/python/test_report_plans.py).
       CASE WHEN n.denom = 1 THEN n.compute_ns / 1000.0
            ELSE ROUND(n.compute_ns / 1000.0 / n.denom, 3) END AS avg_compute_us,
       CASE WHEN n.denom = 1 THEN n.comm_ns / 1000.0
            ELSE ROUND(n.comm_ns / 1000.0 / n.denom, 3) END AS avg_comm_us,
       CASE WHEN n.denom = 1 THEN n.idle_ns / 1000.0
            ELSE ROUND(n.idle_ns / 1000.0 / n.denom, 3) END AS avg_idle_us,
       CASE WHEN n.denom = 1 THEN (n.compute_ns + n.comm_ns + n.idle_ns) / 1000.0
            ELSE ROUND((n.compute_ns + n.comm_ns + n.idle_ns) / 1000.0 / n.denom, 3) END
         AS avg_total_us,
       n.self_ns / 1000.0 AS self_us, n.aux_events, n.aux_ns / 1000.0 AS aux_us, NULL AS raw_json,
       n.node_n, n.parent_n, n.tree_n, n.start_ns, n.end_ns
FROM traceloom_v_node_stats n
-- The shape's text and the parent's path as joins by key, not a scalar subquery per column
-- (each a subprogram that opens and closes its cursor per row: a fifth of the readable
-- tree's time over 512k nodes). LEFT JOINs, on keys every node has, so that SQLite leaves
-- out the ones a query does not read.
LEFT JOIN traceloom_node_shape s ON s.shape_id = n.shape_id
LEFT JOIN traceloom_node_core p ON p.node_n = n.parent_n;

-- @surface traceloom_semantic_node | one node of the semantic tree | Structural positions in display (preorder) order, with parent, slot, loop depth, costs and per-iteration averages | SELECT local_node_id, node_type, label, repeat_count, occurrence_count, total_us FROM traceloom_semantic_node ORDER BY db_idx, device_id, preorder_idx LIMIT 20
-- The trees first, by their unique (db_idx, device_id) index, and each tree's nodes as a key
-- range in preorder: a query ordered by db_idx, device_id and preorder_idx (the readable
-- tree) sorts only within a tree, on the integer preorder_idx, rows that come in that order
-- ("TEMP B-TREE FOR RIGHT PART OF ORDER BY"; no walk gives preorder_idx as a column: it
-- counts from 0). preorder_idx is the node's place in its tree's node range, so the node row
-- is read again (c, by key) only for sibling_order and loop_depth: a LEFT JOIN on a key every
-- node has, which SQLite leaves out of a query that names neither.
CREATE VIEW traceloom_semantic_node AS
SELECT v.node_id, 'tree-db' || t.db_idx || '-dev' || t.device_id AS tree_id, t.db_idx,
       t.device_id, 'anchor_tree' AS view_name, 'semantic' AS tree_kind, v.local_node_id,
       p.node_id AS parent_node_id, p.local_node_id AS parent_local_node_id,
       v.node_n - t.first_node_n AS preorder_idx, c.slot_ordinal AS sibling_order, v.path, v.depth,
       v.depth AS display_depth, c.loop_depth, v.node_type, v.kind AS semantic_kind, v.symbol,
       v.label, v.category, v.repeat_count, v.occurrence_count, v.anchor_count,
       v.first_anchor_idx, v.last_anchor_idx, v.start_ns, v.end_ns, v.compute_us, v.comm_us,
       v.idle_us, v.total_us, v.avg_compute_us, v.avg_comm_us, v.avg_idle_us, v.avg_total_us,
       v.self_us, v.aux_events AS aux_event_count, v.aux_us, 0 AS hidden_aux_event_count,
       0.0 AS hidden_aux_us, NULL AS raw_json, v.node_n, v.parent_n, v.tree_n
FROM traceloom_tree_core t
CROSS JOIN traceloom_viz_node v ON v.node_n >= t.first_node_n
 AND v.node_n < t.first_node_n + t.node_count
LEFT JOIN traceloom_node_core c ON c.node_n = v.node_n
LEFT JOIN traceloom_node_core p ON p.node_n = v.parent_n;   -- by key, as in traceloom_viz_node

-- @surface traceloom_position_refinement | one (parent position, slot) | Which node fills each slot of a node (Seq: ordered children; Repeat: the children of one iteration) | SELECT parent_position_id, slot_ordinal, child_position_id FROM traceloom_position_refinement LIMIT 20
CREATE VIEW traceloom_position_refinement AS
SELECT (SELECT p.node_id FROM traceloom_node_core p WHERE p.node_n = c.parent_n) AS parent_position_id,
       c.slot_ordinal, c.node_id AS child_position_id, c.db_idx, c.device_id,
       'tree-db' || c.db_idx || '-dev' || c.device_id AS tree_id, 'anchor_tree' AS view_name,
       CASE WHEN (SELECT p.node_kind FROM traceloom_node_core p WHERE p.node_n = c.parent_n) = 3
            THEN 'repeat_body' ELSE 'sequence' END AS edge_kind,
       c.parent_n, c.node_n AS child_n
FROM traceloom_node_core c WHERE c.parent_n IS NOT NULL;

-- traceloom_position_occurrence is a view over integer rows, one per occurrence
-- (traceloom_position_occurrence_core), node-major. An atom's costs and times are its
-- anchor's; an occurrence with children stores its summed packet, span and paths in a second
-- table (traceloom_position_occurrence_body) by the same key: nearly every occurrence is an
-- atom (741k of 753k at 1M tasks), and SQLite writes a serial-type byte for every column of
-- every row, NULL included, so eleven columns NULL on every atom cost 11 bytes a row (8 MB).
-- @surface traceloom_position_occurrence_core | one occurrence (integers) | Storage behind traceloom_position_occurrence: node, index, parent, iteration and anchors covered (the times, costs and paths of occurrences with children: traceloom_position_occurrence_body) | SELECT node_n, count(*) FROM traceloom_position_occurrence_core GROUP BY 1 LIMIT 20
CREATE TABLE traceloom_position_occurrence_core(
  occurrence_n INTEGER PRIMARY KEY,   -- node-major (see above)
  node_n INTEGER NOT NULL,            -- traceloom_node_core
  node_local INTEGER NOT NULL,        -- the node's local_n, and its device in the ids
  node_device INTEGER,                --   (for the generated occurrence_id)
  occurrence_idx INTEGER NOT NULL,    -- 1-based per node, in time order
  parent_n INTEGER,                   -- occurrence_n of the parent occurrence; NULL for the root
  member_order INTEGER NOT NULL,      -- 1 under a Seq, the iteration under a Repeat, 0 root
  anchor_first_n INTEGER NOT NULL     -- anchors covered: [anchor_first_n, + node token_len)
);

-- @surface traceloom_position_occurrence_body | one occurrence with children (a Seq or Repeat occurrence) | Storage behind traceloom_position_occurrence: the span, summed packet in ns and paths of each occurrence that is not an atom (an atom's are its anchor's) | SELECT b.occurrence_n, o.node_n, b.start_ns, b.end_ns, b.compute_ns FROM traceloom_position_occurrence_body b JOIN traceloom_position_occurrence_core o USING (occurrence_n) LIMIT 20
CREATE TABLE traceloom_position_occurrence_body(
  occurrence_n INTEGER PRIMARY KEY,   -- traceloom_position_occurrence_core (no row: an atom)
  start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL,
  compute_ns INTEGER NOT NULL, comm_ns INTEGER NOT NULL, idle_ns INTEGER NOT NULL,
  self_ns INTEGER NOT NULL, aux_events INTEGER NOT NULL, aux_ns INTEGER NOT NULL,
  linked_aux_ns INTEGER NOT NULL,
  occurrence_path TEXT NOT NULL,
  repeat_context TEXT                 -- NULL when no repeat encloses it
);

-- @surface traceloom_position_occurrence | one occurrence of a position | Every measured realization of every node, with its token span, repeat iteration, paths and summed costs | SELECT occurrence_id, repeat_iteration, token_start_ordinal, token_end_exclusive FROM traceloom_position_occurrence LIMIT 20
CREATE VIEW traceloom_position_occurrence AS
SELECT o.occurrence_id, n.node_id AS position_id,
       (SELECT p.occurrence_id FROM traceloom_position_occurrence_core p
         WHERE p.occurrence_n = o.parent_n) AS parent_occurrence_id,
       n.db_idx, n.device_id, 'tree-db' || n.db_idx || '-dev' || n.device_id AS tree_id,
       'anchor_tree' AS view_name, o.occurrence_idx,
       -- the iteration of the nearest enclosing Repeat (0 outside every repeat): this
       -- occurrence's own under a Repeat, else the last of its repeat context
       CASE WHEN (SELECT p.node_kind FROM traceloom_node_core p WHERE p.node_n = n.parent_n) = 3
            THEN o.member_order
            ELSE COALESCE(CAST(substr(CASE WHEN n.node_kind = 1 THEN (SELECT p.repeat_context FROM traceloom_position_occurrence_body p WHERE p.occurrence_n = o.parent_n) ELSE (SELECT p.repeat_context FROM traceloom_position_occurrence_body p WHERE p.occurrence_n = o.occurrence_n) END,
                                      length(rtrim(CASE WHEN n.node_kind = 1 THEN (SELECT p.repeat_context FROM traceloom_position_occurrence_body p WHERE p.occurrence_n = o.parent_n) ELSE (SELECT p.repeat_context FROM traceloom_position_occurrence_body p WHERE p.occurrence_n = o.occurrence_n) END, '0123456789')) + 1) AS INTEGER), 0)
       END AS repeat_iteration,
       o.anchor_first_n - (SELECT t.first_anchor_n FROM traceloom_tree_core t
                            WHERE t.tree_n = n.tree_n) AS token_start_ordinal,
       o.anchor_first_n + n.token_len - (SELECT t.first_anchor_n FROM traceloom_tree_core t
                                          WHERE t.tree_n = n.tree_n) AS token_end_exclusive,
       COALESCE(n.rooted_path,
                (SELECT p.rooted_path FROM traceloom_node_core p WHERE p.node_n = n.parent_n)
                || '/s' || n.slot_ordinal || '/' || n.node_id) AS rooted_position_path,
       CASE WHEN n.node_kind <> 1 THEN
              (SELECT p.occurrence_path FROM traceloom_position_occurrence_body p
                WHERE p.occurrence_n = o.occurrence_n)
            ELSE (SELECT p.occurrence_path FROM traceloom_position_occurrence_body p WHERE p.occurrence_n = o.parent_n) ||
                 '/s' || n.slot_ordinal || '/r' || o.member_order || '/' || o.occurrence_id
       END AS occurrence_path,
       (SELECT p.position_id FROM traceloom_position_occurrence_core p
         WHERE p.occurrence_n = o.parent_n) AS parent_position_id,
       n.slot_ordinal, o.member_order,
       CASE WHEN o.parent_n IS NULL THEN NULL
            ELSE (o.member_order - 1) *
                 (SELECT p.child_count FROM traceloom_node_core p WHERE p.node_n = n.parent_n)
                 + n.slot_ordinal END AS edge_order,
       CASE WHEN n.node_kind = 1 THEN 'self' ELSE 'body' END AS coverage_kind,
       -- 'N003#2/N014#1': iteration 2 of N003, in it iteration 1 of N014 (stored as
       -- 'N003:2,N014:1' on occurrences with children, and built here for atoms)
       replace(replace(
       CASE WHEN n.node_kind <> 1 OR o.parent_n IS NULL THEN
              (SELECT p.repeat_context FROM traceloom_position_occurrence_body p
                WHERE p.occurrence_n = o.occurrence_n)
            WHEN (SELECT p.node_kind FROM traceloom_node_core p WHERE p.node_n = n.parent_n) <> 3 THEN
              (SELECT p.repeat_context FROM traceloom_position_occurrence_body p
                WHERE p.occurrence_n = o.parent_n)
            ELSE COALESCE((SELECT p.repeat_context FROM traceloom_position_occurrence_body p
                            WHERE p.occurrence_n = o.parent_n) || ',', '') ||
                 printf('N%03d', (SELECT p.local_n FROM traceloom_node_core p
                                  WHERE p.node_n = n.parent_n)) || ':' || o.member_order END,
       ':', '#'), ',', '/') AS repeat_context,
       o.anchor_first_n, o.anchor_first_n + n.token_len AS anchor_end_n,
       -- an occurrence with children: its body row's; an atom: its anchor's (and the anchor's
       -- event's), each read only when the column is. Not LEFT JOINs: SQLite 3.40 leaves no
       -- LEFT JOIN out of an aggregate, nor an anchor join whose event join reads it, so every
       -- GROUP BY over occurrences or edges (traceloom_execution_tree_edge: two occurrences a
       -- row) would probe the anchor and its event per row, reading none of their columns.
       CASE WHEN n.node_kind <> 1 THEN (SELECT p.start_ns FROM traceloom_position_occurrence_body p
                                         WHERE p.occurrence_n = o.occurrence_n)
            -- (a reconciled pair's merged anchor: its extent, by key)
            ELSE COALESCE(CASE WHEN (SELECT max(anchor_n) FROM traceloom_anchor_extent_core) IS NOT NULL THEN (SELECT x.start_ns FROM traceloom_anchor_extent_core x WHERE x.anchor_n = o.anchor_first_n) END,
                          (SELECT ae.start_ns FROM traceloom_anchor_core a JOIN traceloom_event_core ae ON ae.event_n = a.event_n
                  WHERE a.anchor_n = o.anchor_first_n)) END AS start_ns,
       CASE WHEN n.node_kind <> 1 THEN (SELECT p.end_ns FROM traceloom_position_occurrence_body p
                                         WHERE p.occurrence_n = o.occurrence_n)
            ELSE COALESCE(CASE WHEN (SELECT max(anchor_n) FROM traceloom_anchor_extent_core) IS NOT NULL THEN (SELECT x.end_ns FROM traceloom_anchor_extent_core x WHERE x.anchor_n = o.anchor_first_n) END,
                          (SELECT ae.start_ns + ae.dur_ns FROM traceloom_anchor_core a JOIN traceloom_event_core ae ON ae.event_n = a.event_n
                  WHERE a.anchor_n = o.anchor_first_n)) END AS end_ns,
       CASE WHEN n.node_kind <> 1 THEN (SELECT p.compute_ns FROM traceloom_position_occurrence_body p
                                         WHERE p.occurrence_n = o.occurrence_n)
            ELSE (SELECT a.compute_ns FROM traceloom_anchor_core a WHERE a.anchor_n = o.anchor_first_n) END / 1000.0 AS compute_us,
       CASE WHEN n.node_kind <> 1 THEN (SELECT p.comm_ns FROM traceloom_position_occurrence_body p
                                         WHERE p.occurrence_n = o.occurrence_n)
            ELSE (SELECT a.comm_ns FROM traceloom_anchor_core a WHERE a.anchor_n = o.anchor_first_n) END / 1000.0 AS comm_us,
       CASE WHEN n.node_kind <> 1 THEN (SELECT p.idle_ns FROM traceloom_position_occurrence_body p
                                         WHERE p.occurrence_n = o.occurrence_n)
            ELSE (SELECT a.idle_ns FROM traceloom_anchor_core a WHERE a.anchor_n = o.anchor_first_n) END / 1000.0 AS idle_us,
       CASE WHEN n.node_kind <> 1 THEN (SELECT p.compute_ns + p.comm_ns + p.idle_ns FROM traceloom_position_occurrence_body p
                                         WHERE p.occurrence_n = o.occurrence_n)
            ELSE (SELECT a.compute_ns + a.comm_ns + a.idle_ns FROM traceloom_anchor_core a
                  WHERE a.anchor_n = o.anchor_first_n) END / 1000.0 AS total_us,
       CASE WHEN n.node_kind <> 1 THEN (SELECT p.self_ns FROM traceloom_position_occurrence_body p
                                         WHERE p.occurrence_n = o.occurrence_n)
            ELSE COALESCE(CASE WHEN (SELECT max(anchor_n) FROM traceloom_anchor_extent_core) IS NOT NULL THEN (SELECT x.end_ns - x.start_ns FROM traceloom_anchor_extent_core x WHERE x.anchor_n = o.anchor_first_n) END,
                          (SELECT ae.dur_ns FROM traceloom_anchor_core a JOIN traceloom_event_core ae ON ae.event_n = a.event_n
                  WHERE a.anchor_n = o.anchor_first_n)) END / 1000.0 AS self_us,
       CASE WHEN n.node_kind <> 1 THEN (SELECT p.aux_events FROM traceloom_position_occurrence_body p
                                         WHERE p.occurrence_n = o.occurrence_n)
            ELSE (SELECT a.aux_events FROM traceloom_anchor_core a WHERE a.anchor_n = o.anchor_first_n) END AS aux_events,
       CASE WHEN n.node_kind <> 1 THEN (SELECT p.aux_ns FROM traceloom_position_occurrence_body p
                                         WHERE p.occurrence_n = o.occurrence_n)
            ELSE (SELECT a.aux_ns FROM traceloom_anchor_core a WHERE a.anchor_n = o.anchor_first_n) END / 1000.0 AS aux_us,
       CASE WHEN n.node_kind <> 1 THEN (SELECT p.linked_aux_ns FROM traceloom_position_occurrence_body p
                                         WHERE p.occurrence_n = o.occurrence_n)
            ELSE (SELECT a.linked_aux_ns FROM traceloom_anchor_core a WHERE a.anchor_n = o.anchor_first_n) END / 1000.0 AS linked_aux_us,
       o.occurrence_n, o.parent_n, o.node_n
-- A node's occurrences are one range of occurrence_n (node-major): the range lets a query that
-- picks nodes (by node_n, or node_id on the small node table) read just their occurrences.
FROM traceloom_position_occurrence_core o
JOIN traceloom_node_core n ON n.node_n = o.node_n AND o.occurrence_n >= n.first_occurrence_n
 AND o.occurrence_n < n.first_occurrence_n + n.occurrence_count;
