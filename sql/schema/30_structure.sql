-- Anchors, their cost packets, and the recovered structure (outputs.md sections 2-4, 7).
--
-- Two projections of one tree per (db_idx, device_id): the semantic tree and the HPO
-- relations use view_name 'anchor_tree'; the report relations (traceloom_viz_*) use
-- view_name 'native_report_tree'. Positions are node definitions (node-N001 ...), an
-- occurrence is one measured realization, a member is a direct child of an occurrence.

-- @surface traceloom_anchor | one anchor (structural token) | The semantically significant device events in linear order per (db_idx, device_id), with their structural symbol and cost packet | SELECT device_id, symbol, count(*) AS n, round(sum(dur_us), 3) AS self_us FROM traceloom_anchor GROUP BY 1, 2 ORDER BY self_us DESC LIMIT 10
CREATE TABLE traceloom_anchor(
  anchor_id TEXT NOT NULL,         -- anchor-<n>, dense over (db_idx, device_id, anchor_idx)
  db_idx INTEGER NOT NULL,
  device_id INTEGER NOT NULL,
  anchor_idx INTEGER NOT NULL,     -- 1-based per (db_idx, device_id)
  event_id TEXT NOT NULL,
  step_idx INTEGER,
  symbol TEXT,                     -- structural symbol
  role TEXT,                       -- compute, comm, sync, graph, unknown
  label TEXT,
  family TEXT,
  start_ns INTEGER NOT NULL,
  end_ns INTEGER NOT NULL,
  dur_us REAL NOT NULL,
  compute_us REAL, comm_us REAL, idle_us REAL, total_us REAL, self_us REAL,
  aux_events INTEGER, aux_us REAL
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
  raw_json TEXT
);

-- @surface traceloom_anchor_aux_slot | one anchor | Per-anchor summary of its linked auxiliary events | SELECT anchor_idx, aux_event_count, aux_dur_us FROM traceloom_anchor_aux_slot WHERE aux_event_count > 0 LIMIT 10
CREATE TABLE traceloom_anchor_aux_slot(
  anchor_id TEXT NOT NULL,
  db_idx INTEGER NOT NULL,
  device_id INTEGER NOT NULL,
  anchor_idx INTEGER NOT NULL,
  anchor_step_idx INTEGER,
  aux_start_step_idx INTEGER,
  aux_end_step_idx INTEGER,
  aux_event_count INTEGER,
  aux_dur_us REAL,
  raw_json TEXT
);

-- @surface traceloom_anchor_cost_breakdown | one anchor | Per-anchor cost explanation: total, self and aux overlays, graph-child time of exact replay members and the residual | SELECT anchor_idx, symbol, anchor_kind, total_us, self_us, aux_us FROM traceloom_anchor_cost_breakdown ORDER BY total_us DESC LIMIT 10
CREATE TABLE traceloom_anchor_cost_breakdown(
  anchor_id TEXT NOT NULL,
  db_idx INTEGER NOT NULL,
  device_id INTEGER NOT NULL,
  anchor_idx INTEGER NOT NULL,
  symbol TEXT,
  anchor_kind TEXT,
  total_us REAL,
  self_us REAL,
  aux_us REAL,
  graph_child_us REAL,
  residual_us REAL,
  raw_child_task_count INTEGER,
  top_ops TEXT,
  diagnostic_flags TEXT
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

-- @surface traceloom_semantic_edge | one parent-child slot between positions | The semantic tree's edges (Repeat slots are the children of one iteration) | SELECT parent_node_id, child_node_id, edge_order FROM traceloom_semantic_edge LIMIT 20
CREATE TABLE traceloom_semantic_edge(
  parent_node_id TEXT NOT NULL,
  child_node_id TEXT NOT NULL,
  tree_id TEXT NOT NULL,
  db_idx INTEGER NOT NULL,
  device_id INTEGER NOT NULL,
  view_name TEXT NOT NULL,
  tree_kind TEXT NOT NULL,
  edge_order INTEGER NOT NULL,
  edge_kind TEXT,
  raw_json TEXT
);

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

-- @surface traceloom_viz_edge | one parent-child edge of the report tree | Edges between report positions in slot order | SELECT parent_node_id, child_node_id, edge_order FROM traceloom_viz_edge LIMIT 20
CREATE TABLE traceloom_viz_edge(
  parent_node_id TEXT NOT NULL,
  child_node_id TEXT NOT NULL,
  db_idx INTEGER NOT NULL,
  device_id INTEGER NOT NULL,
  view_name TEXT NOT NULL,
  edge_order INTEGER NOT NULL,
  edge_kind TEXT,
  raw_json TEXT
);

-- @surface traceloom_viz_node_anchor | one (node occurrence, covered anchor) pair | The core statistics relation: each anchor's cost packet under every occurrence that covers it (self on the owning atom, descendant on ancestors) | SELECT node_id, occurrence_idx, count(*) AS anchors, round(sum(total_us), 3) AS total_us FROM traceloom_viz_node_anchor GROUP BY 1, 2 LIMIT 10
CREATE TABLE traceloom_viz_node_anchor(
  node_id TEXT NOT NULL,
  anchor_id TEXT NOT NULL,
  db_idx INTEGER NOT NULL,
  device_id INTEGER NOT NULL,
  view_name TEXT NOT NULL,
  occurrence_idx INTEGER NOT NULL,
  anchor_order INTEGER NOT NULL,
  coverage_kind TEXT NOT NULL,     -- self, descendant
  repeat_context TEXT,
  compute_us REAL, comm_us REAL, idle_us REAL, total_us REAL, self_us REAL,
  aux_events INTEGER,
  aux_us REAL
);
CREATE INDEX traceloom_viz_node_anchor_node ON traceloom_viz_node_anchor(node_id, db_idx, device_id, occurrence_idx);

-- @surface traceloom_position_refinement | one (parent position, slot) | Which position fills each slot of a position (Seq: ordered children; Repeat: the children of one iteration) | SELECT parent_position_id, slot_ordinal, child_position_id FROM traceloom_position_refinement LIMIT 20
CREATE TABLE traceloom_position_refinement(
  parent_position_id TEXT NOT NULL,
  slot_ordinal INTEGER NOT NULL,
  child_position_id TEXT NOT NULL,
  db_idx INTEGER NOT NULL,
  device_id INTEGER NOT NULL,
  tree_id TEXT NOT NULL,
  view_name TEXT NOT NULL,
  UNIQUE(db_idx, tree_id, parent_position_id, slot_ordinal)
);

-- @surface traceloom_position_occurrence | one occurrence of a position | Every measured realization of every position, with its token span, repeat iteration and paths | SELECT occurrence_id, repeat_iteration, token_start_ordinal, token_end_exclusive FROM traceloom_position_occurrence LIMIT 20
CREATE TABLE traceloom_position_occurrence(
  occurrence_id TEXT NOT NULL,
  position_id TEXT NOT NULL,
  parent_occurrence_id TEXT,
  db_idx INTEGER NOT NULL,
  device_id INTEGER NOT NULL,
  tree_id TEXT NOT NULL,
  view_name TEXT NOT NULL,
  occurrence_idx INTEGER NOT NULL,
  repeat_iteration INTEGER,
  token_start_ordinal INTEGER NOT NULL,
  token_end_exclusive INTEGER NOT NULL,
  rooted_position_path TEXT NOT NULL,
  occurrence_path TEXT NOT NULL,
  UNIQUE(db_idx, tree_id, occurrence_id)
);
CREATE INDEX traceloom_position_occurrence_pos ON traceloom_position_occurrence(db_idx, tree_id, position_id, occurrence_idx);

-- @surface traceloom_position_member | one direct member of an occurrence | Direct children of each occurrence by (slot, member_order); atoms hold their terminal token in slot 0 | SELECT parent_occurrence_id, slot_ordinal, member_order, member_kind, child_occurrence_id, terminal_anchor_id FROM traceloom_position_member LIMIT 20
CREATE TABLE traceloom_position_member(
  parent_position_id TEXT NOT NULL,
  parent_occurrence_id TEXT NOT NULL,
  slot_ordinal INTEGER NOT NULL,
  member_order INTEGER NOT NULL,
  member_kind TEXT NOT NULL,       -- child_occurrence, terminal_token
  child_position_id TEXT,
  child_occurrence_id TEXT,
  terminal_token_ordinal INTEGER,
  terminal_anchor_id TEXT,
  db_idx INTEGER NOT NULL,
  device_id INTEGER NOT NULL,
  tree_id TEXT NOT NULL,
  view_name TEXT NOT NULL,
  member_path TEXT NOT NULL,
  UNIQUE(db_idx, tree_id, parent_occurrence_id, slot_ordinal, member_order)
);

-- @surface traceloom_execution_tree_edge | one concrete parent-to-child occurrence edge | Occurrence-level edges with their role (the population of edges of one slot under one parent path) | SELECT edge_role_id, count(*) FROM traceloom_execution_tree_edge GROUP BY 1 LIMIT 10
CREATE TABLE traceloom_execution_tree_edge(
  edge_id TEXT NOT NULL,
  edge_role_id TEXT NOT NULL,
  edge_order INTEGER NOT NULL,
  edge_ordinal_in_role INTEGER NOT NULL,
  parent_position_id TEXT NOT NULL,
  parent_tree_path TEXT NOT NULL,
  parent_occurrence_id TEXT NOT NULL,
  parent_occurrence_idx INTEGER NOT NULL,
  parent_repeat_iteration INTEGER,
  parent_occurrence_path TEXT NOT NULL,
  child_position_id TEXT NOT NULL,
  child_occurrence_id TEXT NOT NULL,
  child_occurrence_idx INTEGER NOT NULL,
  child_repeat_iteration INTEGER,
  child_token_start_ordinal INTEGER NOT NULL,
  child_token_end_exclusive INTEGER NOT NULL,
  child_occurrence_path TEXT NOT NULL,
  db_idx INTEGER NOT NULL,
  device_id INTEGER NOT NULL,
  tree_id TEXT NOT NULL,
  view_name TEXT NOT NULL
);

-- @surface traceloom_structure_bubble_occurrence | one idle gap before an anchor (a bubble) | Uncovered device time charged to the following anchor, with its structural position and the adjacent anchors | SELECT right_local_node_id, right_node_symbol, bubble_us, host_observation_status FROM traceloom_structure_bubble_occurrence ORDER BY bubble_us DESC LIMIT 10
CREATE TABLE traceloom_structure_bubble_occurrence(
  bubble_id TEXT NOT NULL,
  db_idx INTEGER NOT NULL,
  device_id INTEGER NOT NULL,
  view_name TEXT NOT NULL,
  right_node_id TEXT,
  right_local_node_id TEXT,
  right_node_path TEXT,
  right_node_kind TEXT,
  right_node_symbol TEXT,
  right_occurrence_idx INTEGER,
  repeat_context TEXT,
  structural_position_id TEXT,
  left_anchor_id TEXT, left_anchor_idx INTEGER, left_anchor_symbol TEXT, left_anchor_role TEXT,
  left_anchor_start_ns INTEGER, left_anchor_end_ns INTEGER,
  right_anchor_id TEXT, right_anchor_idx INTEGER, right_anchor_symbol TEXT, right_anchor_role TEXT,
  right_anchor_start_ns INTEGER, right_anchor_end_ns INTEGER,
  adjacent_anchor_gap_us REAL,
  bubble_us REAL,
  transition_compute_us REAL, transition_comm_us REAL, transition_total_us REAL,
  transition_aux_events INTEGER, transition_aux_us REAL,
  bubble_fraction_of_transition REAL,
  host_interval_id TEXT, provider TEXT, host_clock_domain TEXT, scope_policy TEXT,
  host_observation_status TEXT,
  host_start_ns INTEGER, host_end_ns INTEGER, host_interval_us REAL,
  api_association_semantics TEXT
);
