-- Anchors, their cost packets, and the recovered structure (outputs.md sections 2-4, 7).
--
-- Only anchors, positions and occurrences are stored; the relations with a row per
-- (occurrence x anchor), per member or per edge are views over them (sql/views), so the
-- database stays proportional to the trace.
--
-- Two projections of one tree per (db_idx, device_id): the semantic tree and the HPO
-- relations use view_name 'anchor_tree'; the report relations (traceloom_viz_*) use
-- view_name 'native_report_tree'. Positions are node definitions (node-N001 ...), an
-- occurrence is one measured realization, a member is a direct child of an occurrence.

-- traceloom_anchor is a view over integer rows (traceloom_anchor_core: ids, times and the
-- cost packet in ns) and the text they share (traceloom_anchor_shape: symbol, role, label,
-- family, owning node), as for events (sql/schema/10_events.sql).
-- @surface traceloom_anchor_shape | one distinct combination of an anchor's text columns | Storage behind traceloom_anchor: symbol, role, label, family and owning atom position, stored once | SELECT symbol, role, node_id FROM traceloom_anchor_shape LIMIT 20
CREATE TABLE traceloom_anchor_shape(
  shape_id INTEGER PRIMARY KEY,
  symbol TEXT,                     -- structural symbol
  role TEXT,                       -- compute, comm, sync, graph, unknown
  label TEXT,
  family TEXT,
  node_id TEXT                     -- the atom position that owns the anchor
);

-- @surface traceloom_anchor_core | one anchor (integers only) | Storage behind traceloom_anchor: position in the device sequence, its event, times and cost packet in ns | SELECT device_id, count(*), sum(compute_ns) FROM traceloom_anchor_core GROUP BY device_id
CREATE TABLE traceloom_anchor_core(
  anchor_n INTEGER PRIMARY KEY,    -- n of anchor-<n>, dense over (db_idx, device_id, anchor_idx)
  db_idx INTEGER NOT NULL,
  device_id INTEGER NOT NULL,
  anchor_idx INTEGER NOT NULL,     -- 1-based per (db_idx, device_id)
  event_n INTEGER NOT NULL,        -- traceloom_event_core
  shape_id INTEGER NOT NULL,       -- traceloom_anchor_shape
  start_ns INTEGER NOT NULL,
  end_ns INTEGER NOT NULL,
  compute_ns INTEGER NOT NULL, comm_ns INTEGER NOT NULL, idle_ns INTEGER NOT NULL,
  self_ns INTEGER NOT NULL, aux_events INTEGER NOT NULL, aux_ns INTEGER NOT NULL,
  linked_aux_events INTEGER NOT NULL, linked_aux_ns INTEGER NOT NULL,
  occurrence_idx INTEGER           -- occurrence of the owning atom position
);

-- @surface traceloom_anchor | one anchor (structural token) | The semantically significant device events in linear order per (db_idx, device_id), with their structural symbol and cost packet | SELECT device_id, symbol, count(*) AS n, round(sum(dur_us), 3) AS self_us FROM traceloom_anchor GROUP BY 1, 2 ORDER BY self_us DESC LIMIT 10
CREATE VIEW traceloom_anchor AS
SELECT a.anchor_id, a.db_idx, a.device_id, a.anchor_idx, a.event_id, NULL AS step_idx,
       (SELECT s.symbol FROM traceloom_anchor_shape s WHERE s.shape_id = a.shape_id) AS symbol,
       (SELECT s.role FROM traceloom_anchor_shape s WHERE s.shape_id = a.shape_id) AS role,
       (SELECT s.label FROM traceloom_anchor_shape s WHERE s.shape_id = a.shape_id) AS label,
       (SELECT s.family FROM traceloom_anchor_shape s WHERE s.shape_id = a.shape_id) AS family,
       a.start_ns, a.end_ns, (a.end_ns - a.start_ns) / 1000.0 AS dur_us,
       a.compute_ns / 1000.0 AS compute_us, a.comm_ns / 1000.0 AS comm_us,
       a.idle_ns / 1000.0 AS idle_us,
       (a.compute_ns + a.comm_ns + a.idle_ns) / 1000.0 AS total_us,
       a.self_ns / 1000.0 AS self_us, a.aux_events, a.aux_ns / 1000.0 AS aux_us,
       a.linked_aux_events, a.linked_aux_ns / 1000.0 AS linked_aux_us,
       (SELECT s.node_id FROM traceloom_anchor_shape s WHERE s.shape_id = a.shape_id) AS node_id,
       a.occurrence_idx, a.anchor_n, a.event_n
FROM traceloom_anchor_core a;

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
  raw_json TEXT
);

-- @surface traceloom_semantic_tree | one tree per (db_idx, device_id) | The recovered trees: root node, discovery status, projection used for costs | SELECT tree_id, db_idx, device_id, root_node_id, macro_discovery FROM traceloom_semantic_tree
CREATE TABLE traceloom_semantic_tree(
  tree_id TEXT NOT NULL,
  db_idx INTEGER NOT NULL,
  device_id INTEGER NOT NULL,
  view_name TEXT NOT NULL,
  tree_kind TEXT NOT NULL,
  stem TEXT,
  root_node_id TEXT,
  schema_version TEXT,
  semantic_projection TEXT,
  macro_discovery TEXT,
  readable_macro_mode TEXT,
  auxiliary_attribution TEXT,
  token_count INTEGER,
  position_count INTEGER,
  occurrence_count INTEGER,
  raw_json TEXT
);

-- @surface traceloom_semantic_node | one position (node definition) | Positions of the semantic tree in display (preorder) order, with costs and per-iteration averages | SELECT local_node_id, node_type, label, repeat_count, occurrence_count, total_us FROM traceloom_semantic_node ORDER BY db_idx, device_id, preorder_idx LIMIT 20
CREATE TABLE traceloom_semantic_node(
  node_id TEXT NOT NULL,
  tree_id TEXT NOT NULL,
  db_idx INTEGER NOT NULL,
  device_id INTEGER NOT NULL,
  view_name TEXT NOT NULL,
  tree_kind TEXT NOT NULL,
  local_node_id TEXT NOT NULL,
  parent_node_id TEXT,
  parent_local_node_id TEXT,
  preorder_idx INTEGER NOT NULL,
  sibling_order INTEGER,
  path TEXT,
  depth INTEGER,
  display_depth INTEGER,
  loop_depth INTEGER,
  node_type TEXT,
  semantic_kind TEXT,
  symbol TEXT,
  label TEXT,
  category TEXT,
  repeat_count INTEGER,
  occurrence_count INTEGER,
  anchor_count INTEGER,
  first_anchor_idx INTEGER,
  last_anchor_idx INTEGER,
  start_ns INTEGER,
  end_ns INTEGER,
  compute_us REAL, comm_us REAL, idle_us REAL, total_us REAL,
  avg_compute_us REAL, avg_comm_us REAL, avg_idle_us REAL, avg_total_us REAL,
  self_us REAL,
  aux_event_count INTEGER,
  aux_us REAL,
  hidden_aux_event_count INTEGER,
  hidden_aux_us REAL,
  raw_json TEXT
);

CREATE INDEX traceloom_semantic_node_id ON traceloom_semantic_node(node_id, tree_id, db_idx);

-- @surface traceloom_viz_node | one position of the report tree | The report projection of each position: kind, repeat count, occurrences, anchors, costs and per-iteration averages | SELECT local_node_id, node_type, label, repeat_label, occurrence_count, total_us, avg_total_us FROM traceloom_viz_node ORDER BY local_node_id LIMIT 20
CREATE TABLE traceloom_viz_node(
  node_id TEXT NOT NULL,
  db_idx INTEGER NOT NULL,
  device_id INTEGER NOT NULL,
  view_name TEXT NOT NULL,
  local_node_id TEXT NOT NULL,
  path TEXT,
  node_type TEXT,
  kind TEXT,
  symbol TEXT,
  label TEXT,
  category TEXT,
  depth INTEGER,
  level INTEGER,
  repeat_label TEXT,
  repeat_count INTEGER,
  occurrence_count INTEGER,
  anchor_count INTEGER,
  anchors_per_occurrence INTEGER,
  first_anchor_idx INTEGER,
  last_anchor_idx INTEGER,
  compute_us REAL, comm_us REAL, idle_us REAL, total_us REAL,
  avg_compute_us REAL, avg_comm_us REAL, avg_idle_us REAL, avg_total_us REAL,
  self_us REAL,
  aux_events INTEGER,
  aux_us REAL,
  raw_json TEXT
);

CREATE INDEX traceloom_viz_node_id ON traceloom_viz_node(node_id, db_idx, device_id);

-- @surface traceloom_position_refinement | one (parent position, slot) | Which position fills each slot of a position (Seq: ordered children; Repeat: the children of one iteration) | SELECT parent_position_id, slot_ordinal, child_position_id FROM traceloom_position_refinement LIMIT 20
CREATE TABLE traceloom_position_refinement(
  parent_position_id TEXT NOT NULL,
  slot_ordinal INTEGER NOT NULL,
  child_position_id TEXT NOT NULL,
  db_idx INTEGER NOT NULL,
  device_id INTEGER NOT NULL,
  tree_id TEXT NOT NULL,
  view_name TEXT NOT NULL,
  edge_kind TEXT NOT NULL          -- sequence (Seq slot) or repeat_body (Repeat slot)
);
-- Its unique key (db_idx, tree_id, parent_position_id, slot_ordinal) and indexes are built
-- after the rows are in (sql/views/00_indexes.sql). traceloom_semantic_edge and
-- traceloom_viz_edge are views over it (sql/views/30_structure.sql): one row per slot, stored once.

-- traceloom_position_occurrence is a view over integer rows, one per occurrence
-- (traceloom_position_occurrence_core). Its text ids are computed from integers; its paths
-- and repeat context are stored only on occurrences with children (at most a few per
-- anchor group's repeat): an atom's are its parent's plus one step, computed in the view.
-- Atoms are as many as anchors, so this keeps the largest relation at ~80 bytes a row.
-- @surface traceloom_position_occurrence_core | one occurrence (integers, and paths of occurrences with children) | Storage behind traceloom_position_occurrence: position and parent numbers, token span, anchors covered, times and summed packets in ns | SELECT position_local, count(*), sum(self_ns) FROM traceloom_position_occurrence_core GROUP BY 1 LIMIT 20
CREATE TABLE traceloom_position_occurrence_core(
  occurrence_n INTEGER PRIMARY KEY,   -- 1-based publication order (parents before children)
  db_idx INTEGER NOT NULL,
  device_id INTEGER NOT NULL,
  node_device INTEGER,                -- device in the node ids (node-d<dev>-N007), NULL for node-N007
  position_local INTEGER NOT NULL,    -- 7 in N007
  occurrence_idx INTEGER NOT NULL,
  parent_n INTEGER,                   -- occurrence_n of the parent; NULL for the root
  parent_local INTEGER,               -- the parent's position_local
  parent_occurrence_idx INTEGER,
  is_atom INTEGER NOT NULL,           -- 1: coverage self (one anchor), 0: descendant
  repeat_iteration INTEGER,           -- member_order when the parent is a Repeat
  token_start_ordinal INTEGER NOT NULL,
  token_end_exclusive INTEGER NOT NULL,
  slot_ordinal INTEGER NOT NULL,      -- slot in the parent position (0 for the root)
  member_order INTEGER NOT NULL,      -- 1 under a Seq, the iteration under a Repeat
  edge_order INTEGER,                 -- ordinal among the parent occurrence's children
  anchor_first_n INTEGER NOT NULL,    -- covered anchors: anchor_n in [first, end)
  anchor_end_n INTEGER NOT NULL,
  start_ns INTEGER, end_ns INTEGER,
  compute_ns INTEGER NOT NULL, comm_ns INTEGER NOT NULL, idle_ns INTEGER NOT NULL,
  self_ns INTEGER NOT NULL, aux_events INTEGER NOT NULL, aux_ns INTEGER NOT NULL,
  linked_aux_ns INTEGER NOT NULL,
  rooted_position_path TEXT,          -- NULL on an atom with a parent (computed in the view)
  occurrence_path TEXT,               -- likewise
  repeat_context TEXT                 -- likewise; NULL elsewhere when no repeat encloses it
);
-- Its text ids (position_id, occurrence_id, parent_position_id, parent_occurrence_id,
-- tree_id) are generated columns added, with their indexes, once the rows are in
-- (sql/views/00_indexes.sql): the view below passes them through as plain columns.

-- @surface traceloom_position_occurrence | one occurrence of a position | Every measured realization of every position, with its token span, repeat iteration and paths | SELECT occurrence_id, repeat_iteration, token_start_ordinal, token_end_exclusive FROM traceloom_position_occurrence LIMIT 20
CREATE VIEW traceloom_position_occurrence AS
SELECT o.occurrence_id, o.position_id, o.parent_occurrence_id, o.db_idx, o.device_id, o.tree_id,
       'anchor_tree' AS view_name, o.occurrence_idx, o.repeat_iteration, o.token_start_ordinal,
       o.token_end_exclusive,
       COALESCE(o.rooted_position_path,
                (SELECT p.rooted_position_path FROM traceloom_position_occurrence_core p
                  WHERE p.occurrence_n = o.parent_n) || '/s' || o.slot_ordinal || '/' ||
                o.position_id) AS rooted_position_path,
       COALESCE(o.occurrence_path,
                (SELECT p.occurrence_path FROM traceloom_position_occurrence_core p
                  WHERE p.occurrence_n = o.parent_n) || '/s' || o.slot_ordinal || '/r' ||
                o.member_order || '/' || o.occurrence_id) AS occurrence_path,
       o.parent_position_id, o.slot_ordinal, o.member_order, o.edge_order,
       CASE WHEN o.is_atom THEN 'self' ELSE 'descendant' END AS coverage_kind,
       CASE WHEN o.occurrence_path IS NOT NULL THEN o.repeat_context
            WHEN o.repeat_iteration IS NULL THEN
              (SELECT p.repeat_context FROM traceloom_position_occurrence_core p
                WHERE p.occurrence_n = o.parent_n)
            ELSE COALESCE((SELECT p.repeat_context FROM traceloom_position_occurrence_core p
                            WHERE p.occurrence_n = o.parent_n) || ',', '') ||
                 printf('N%03d', o.parent_local) || ':' || o.member_order END AS repeat_context,
       o.anchor_first_n, o.anchor_end_n, o.start_ns, o.end_ns,
       o.compute_ns / 1000.0 AS compute_us, o.comm_ns / 1000.0 AS comm_us,
       o.idle_ns / 1000.0 AS idle_us, (o.compute_ns + o.comm_ns + o.idle_ns) / 1000.0 AS total_us,
       o.self_ns / 1000.0 AS self_us, o.aux_events, o.aux_ns / 1000.0 AS aux_us,
       o.linked_aux_ns / 1000.0 AS linked_aux_us, o.occurrence_n, o.parent_n
FROM traceloom_position_occurrence_core o;

