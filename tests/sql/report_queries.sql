-- Users' existing report SQL keeps working: queries of the shape the reference
-- implementation publishes (tree map, node occurrences, node events, repeat overview,
-- repeat children, node cost breakdown, anchor aux, anchor cost breakdown, readable tree),
-- using exactly the relation and column names of outputs.md, must run and return rows.
SELECT 'analyze', traceloom_analyze('fixtures/gen/ascend_s6_l4_k6_aux') LIKE '%1 tree(s)%';

SELECT 'tree map', (SELECT count(*) FROM (
  SELECT local_node_id AS node, label, depth, occurrence_count AS occ, round(avg_total_us, 3),
         round(avg_aux_us, 3), round(total_us, 3)
  FROM traceloom_v_tree_node ORDER BY db_idx, device_id, view_name, display_order)) > 0;

SELECT 'node occurrences', (SELECT count(*) FROM (
  SELECT local_node_id AS node, occurrence_idx, repeat_context, anchor_start_idx, anchor_end_idx,
         anchor_count, start_ns, end_ns, round(total_us, 3), round(compute_us, 3),
         round(comm_us, 3), round(idle_us, 3), round(aux_us, 3)
  FROM traceloom_tree_node_occurrence
  WHERE local_node_id = (SELECT local_node_id FROM traceloom_tree_node_occurrence
                         ORDER BY db_idx, device_id, view_name, local_node_id LIMIT 1)
  ORDER BY occurrence_idx)) > 0;

SELECT 'node events', (SELECT count(*) FROM (
  SELECT na.local_node_id AS node, na.occurrence_idx, na.anchor_order, a.anchor_idx,
         a.symbol AS anchor_symbol, a.label AS anchor_label, e.source_table, e.source_key,
         e.stream_id, e.start_ns, e.end_ns, round(e.dur_us, 3), e.role, e.semantic_role
  FROM traceloom_tree_node_anchor na
  JOIN traceloom_anchor a ON a.anchor_id = na.anchor_id
  JOIN traceloom_event e ON e.event_id = a.event_id
  WHERE na.local_node_id = 'N003'
  ORDER BY na.occurrence_idx, na.anchor_order)) > 0;

SELECT 'repeat overview', (SELECT count(*) FROM (
  SELECT local_node_id, level, kind, node_type, repeat_count, occurrence_count, anchor_count,
         round(total_us, 3), round(avg_total_us, 3), round(sql_anchor_us, 3), round(sql_aux_us, 3)
  FROM traceloom_v_node_cost WHERE repeat_count IS NOT NULL ORDER BY total_us DESC)) > 0;

SELECT 'repeat children', (SELECT count(*) FROM (
  WITH parent AS (SELECT node_id FROM traceloom_viz_node WHERE repeat_count IS NOT NULL
                  ORDER BY total_us DESC LIMIT 1)
  SELECT child.local_node_id, child.level, child.kind, child.node_type, child.repeat_count,
         child.occurrence_count, child.anchor_count, round(child.total_us, 3), round(child.avg_total_us, 3)
  FROM traceloom_v_node_children child JOIN parent ON parent.node_id = child.parent_node_id
  ORDER BY child.edge_order)) > 0;

SELECT 'node cost breakdown', (SELECT count(*) FROM (
  SELECT local_node_id AS node, depth, loop_depth, kind, label, repeat_count, occurrence_count,
         round(total_us, 3), round(avg_total_us, 3), round(avg_compute_us, 3),
         round(avg_comm_us, 3), round(avg_idle_us, 3), round(avg_self_us, 3), round(avg_aux_us, 3),
         round(100.0 * compute_us / nullif(total_us, 0), 2), round(100.0 * comm_us / nullif(total_us, 0), 2),
         round(100.0 * idle_us / nullif(total_us, 0), 2), round(100.0 * self_us / nullif(total_us, 0), 2),
         round(100.0 * aux_us / nullif(total_us, 0), 2)
  FROM traceloom_v_tree_node WHERE kind = 'repeat'
  ORDER BY db_idx, device_id, view_name, display_order)) > 0;

SELECT 'anchor aux', (SELECT count(*) FROM (
  SELECT a.anchor_idx, a.symbol, a.role, count(al.aux_event_id) AS aux_events,
         round(sum(e.dur_us), 3) AS aux_us, min(al.aux_step_idx), max(al.aux_step_idx)
  FROM traceloom_anchor a
  JOIN traceloom_aux_link al ON al.anchor_id = a.anchor_id
  JOIN traceloom_event e ON e.event_id = al.aux_event_id
  GROUP BY a.anchor_id ORDER BY aux_events DESC, aux_us DESC)) > 0;

SELECT 'anchor cost breakdown', (SELECT count(*) FROM (
  SELECT anchor_idx, symbol, anchor_kind, total_us, self_us, aux_us, graph_child_us, residual_us,
         raw_child_task_count, top_ops, diagnostic_flags
  FROM traceloom_anchor_cost_breakdown ORDER BY anchor_idx)) > 0;

SELECT 'readable semantic tree', (SELECT count(*) FROM (
  SELECT line FROM traceloom_v_semantic_tree_readable WHERE view_name = 'anchor_tree'
  ORDER BY db_idx, device_id, tree_kind, preorder_idx)) > 0;

-- Ascend: the generator's occasional Cast/TransData/ZerosLike kernels match no auxiliary
-- rule, so the default policy keeps them as unknown_anchor tokens (unfamiliar work is never
-- dropped as noise); the copies and communication tasks of every step are auxiliary.
SELECT 'ascend: unfamiliar small kernels stay unknown anchors',
  (SELECT count(*) FROM traceloom_event WHERE op_type IN ('Cast', 'TransData', 'ZerosLike')
      AND semantic_role = 'anchor' AND semantic_role_reason = 'unmatched_observation_unknown_first') > 0;
-- ... and each such anchor's role is the kind of work it is (a kernel: compute), as the
-- reference has it: that no rule matched is the decision's final_role, not the anchor role.
SELECT 'ascend: an unknown anchor kernel is a compute anchor',
  (SELECT count(*) FROM traceloom_anchor a JOIN traceloom_evidence_role_decision d
      ON d.event_id = a.event_id
    WHERE d.final_role = 'unknown_anchor') > 0
  AND NOT EXISTS (SELECT 1 FROM traceloom_anchor a JOIN traceloom_evidence_role_decision d
      ON d.event_id = a.event_id
    WHERE d.final_role = 'unknown_anchor' AND (a.role <> 'compute' OR a.family <> 'compute'));
SELECT 'ascend: copies are auxiliary and linked to the following anchor',
  (SELECT count(*) FROM traceloom_aux_link l JOIN traceloom_event e ON e.event_id = l.aux_event_id
    WHERE l.link_type = 'prelude' AND e.kind = 'data_move') > 0;

-- Nsight: the same model with auxiliary kernels (elementwise, fill, copy: CUDA_KERNEL_AUX by
-- the lifted-label rule, auxiliary by the default policy) recovers the full nesting.
SELECT 'analyze nsys aux', traceloom_analyze('fixtures/gen/nsys_s6_l4_k6_aux') LIKE '%1 tree(s)%';
-- include: structure_invariants.inc
SELECT 'nsys aux: auxiliary kernels are linked, not anchors',
  (SELECT count(*) FROM traceloom_aux_link l JOIN traceloom_event e ON e.event_id = l.aux_event_id
    WHERE l.link_type = 'prelude' AND e.task_type = 'CUDA_KERNEL_AUX') > 0;
SELECT 'nsys aux: Repeat x6 over Repeat x4 survives the auxiliary kernels',
  (SELECT count(*) FROM traceloom_position_refinement r
     JOIN traceloom_semantic_node o ON o.node_id = r.parent_position_id AND o.tree_id = r.tree_id
     JOIN traceloom_semantic_node i ON i.node_id = r.child_position_id AND i.tree_id = r.tree_id
    WHERE o.repeat_count = 6 AND i.repeat_count = 4) = 1;
