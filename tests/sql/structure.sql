-- Structure recovery on generated transformer-like profiles with known ground truth
-- (tools/genprofile.py, materialized under fixtures/gen/), and the structural invariants
-- on every kind of input. Expected repeat counts come from each profile's ground_truth.json.

-- Ascend, 5 decode steps x 3 layers x 6 operators per layer (a tensor-parallel all-reduce per layer).
SELECT 'analyze ascend_s5_l3_k6', traceloom_analyze('fixtures/gen/ascend_s5_l3_k6') LIKE '%1 tree(s)%';
-- include: structure_invariants.inc
SELECT 'ascend_s5_l3_k6: Repeat xS over Repeat xL over the layer body of K anchors',
  (SELECT count(*) FROM traceloom_position_refinement r
     JOIN traceloom_semantic_node outer_ ON outer_.node_id = r.parent_position_id AND outer_.tree_id = r.tree_id
     JOIN traceloom_semantic_node inner_ ON inner_.node_id = r.child_position_id AND inner_.tree_id = r.tree_id
    WHERE outer_.node_type = 'Repeat' AND inner_.node_type = 'Repeat'
      AND outer_.repeat_count = json_extract(readfile('fixtures/gen/ascend_s5_l3_k6/ground_truth.json'), '$.params.decode_steps')
      AND inner_.repeat_count = json_extract(readfile('fixtures/gen/ascend_s5_l3_k6/ground_truth.json'), '$.params.layers')
      AND (SELECT count(*) FROM traceloom_position_refinement b WHERE b.parent_position_id = inner_.node_id AND b.tree_id = inner_.tree_id)
          = json_extract(readfile('fixtures/gen/ascend_s5_l3_k6/ground_truth.json'), '$.params.ops')) = 1;
SELECT 'ascend_s5_l3_k6: the layer repeat occurs once per decode step',
  (SELECT occurrence_count FROM traceloom_v_tree_node WHERE kind = 'repeat' AND loop_depth = 2) = 5;
SELECT 'ascend_s5_l3_k6: one layer body per (step, layer): S x L iterations',
  (SELECT count(DISTINCT m.parent_occurrence_id || '/' || m.member_order) FROM traceloom_position_member m
     JOIN traceloom_semantic_node n ON n.node_id = m.parent_position_id AND n.tree_id = m.tree_id
    WHERE n.node_type = 'Repeat' AND n.loop_depth = 2) = 15;
SELECT 'ascend_s5_l3_k6: the all-reduce is a communication atom in the layer body',
  (SELECT count(*) FROM traceloom_v_tree_node WHERE kind = 'atom' AND category = 'collective'
     AND symbol = 'AllReduce' AND loop_depth = 2) = 1;
SELECT 'ascend_s5_l3_k6: repeat averages are per iteration',
  (SELECT abs(avg_total_us - round(total_us / (occurrence_count * repeat_count), 3)) < 0.0011
   FROM traceloom_v_tree_node WHERE kind = 'repeat' AND loop_depth = 2);
SELECT 'ascend_s5_l3_k6: loop tree report lists both repeats',
  traceloom_loop_tree() LIKE '%Rep x5%Rep x3%';

SELECT 'analyze ascend_s8_l4_k5', traceloom_analyze('fixtures/gen/ascend_s8_l4_k5') LIKE '%1 tree(s)%';
-- include: structure_invariants.inc
SELECT 'ascend_s8_l4_k5: Repeat x8 over Repeat x4 over 5 slots',
  (SELECT count(*) FROM traceloom_position_refinement r
     JOIN traceloom_semantic_node o ON o.node_id = r.parent_position_id AND o.tree_id = r.tree_id
     JOIN traceloom_semantic_node i ON i.node_id = r.child_position_id AND i.tree_id = r.tree_id
    WHERE o.repeat_count = 8 AND i.repeat_count = 4
      AND (SELECT count(*) FROM traceloom_position_refinement b WHERE b.parent_position_id = i.node_id) = 5) = 1;
SELECT 'ascend_s8_l4_k5: each layer-body atom names its (step, layer) iteration: 8 x 4 contexts of 5 atoms',
  (SELECT count(*) FROM (SELECT repeat_context, count(*) AS k FROM traceloom_position_occurrence
                          WHERE coverage_kind = 'self' AND repeat_context LIKE 'N%#%/N%#%' GROUP BY 1)
    WHERE k = 5) = 32
  AND (SELECT count(DISTINCT substr(repeat_context, 1, instr(repeat_context, '/') - 1))
         FROM traceloom_position_occurrence WHERE coverage_kind = 'self' AND repeat_context LIKE '%/%') = 8;
SELECT 'ascend_s8_l4_k5: a node is one structural position: all its occurrences share its rooted path',
  (SELECT count(*) FROM (SELECT position_id FROM traceloom_position_occurrence
                          GROUP BY position_id HAVING count(DISTINCT rooted_position_path) <> 1)) = 0
  AND (SELECT count(*) FROM traceloom_semantic_node n
        JOIN traceloom_position_occurrence o ON o.position_id = n.node_id AND o.occurrence_idx = 1
       WHERE o.rooted_position_path NOT LIKE '%' || n.node_id
          OR length(o.rooted_position_path) - length(replace(o.rooted_position_path, '/s', ''))
             <> 2 * n.depth) = 0;
SELECT 'ascend_s8_l4_k5: atoms under a parent store no path (their parent''s plus one step)',
  (SELECT count(*) FROM traceloom_position_occurrence_core o
     JOIN traceloom_node_core n ON n.node_n = o.node_n
     LEFT JOIN traceloom_position_occurrence_body b ON b.occurrence_n = o.occurrence_n
    WHERE n.node_kind = 1 AND o.parent_n IS NOT NULL AND b.occurrence_n IS NULL) = 216
  AND (SELECT count(*) FROM traceloom_position_occurrence_body b
         JOIN traceloom_position_occurrence_core o ON o.occurrence_n = b.occurrence_n
         JOIN traceloom_node_core n ON n.node_n = o.node_n WHERE n.node_kind = 1) = 0;

SELECT 'analyze ascend_s3_l6_k8', traceloom_analyze('fixtures/gen/ascend_s3_l6_k8') LIKE '%1 tree(s)%';
-- include: structure_invariants.inc
SELECT 'ascend_s3_l6_k8: Repeat x3 over Repeat x6 over 8 slots',
  (SELECT count(*) FROM traceloom_position_refinement r
     JOIN traceloom_semantic_node o ON o.node_id = r.parent_position_id AND o.tree_id = r.tree_id
     JOIN traceloom_semantic_node i ON i.node_id = r.child_position_id AND i.tree_id = r.tree_id
    WHERE o.repeat_count = 3 AND i.repeat_count = 6
      AND (SELECT count(*) FROM traceloom_position_refinement b WHERE b.parent_position_id = i.node_id) = 8) = 1;

-- Nsight Systems exports of the same model shape.
SELECT 'analyze nsys_s5_l3_k6', traceloom_analyze('fixtures/gen/nsys_s5_l3_k6') LIKE '%(cuda_nsys_sqlite)%1 tree(s)%';
-- include: structure_invariants.inc
SELECT 'nsys_s5_l3_k6: Repeat x5 over Repeat x3 over 6 slots',
  (SELECT count(*) FROM traceloom_position_refinement r
     JOIN traceloom_semantic_node o ON o.node_id = r.parent_position_id AND o.tree_id = r.tree_id
     JOIN traceloom_semantic_node i ON i.node_id = r.child_position_id AND i.tree_id = r.tree_id
    WHERE o.repeat_count = 5 AND i.repeat_count = 3
      AND (SELECT count(*) FROM traceloom_position_refinement b WHERE b.parent_position_id = i.node_id) = 6) = 1;

SELECT 'analyze nsys_s4_l5_k7', traceloom_analyze('fixtures/gen/nsys_s4_l5_k7') LIKE '%1 tree(s)%';
-- include: structure_invariants.inc
SELECT 'nsys_s4_l5_k7: Repeat x4 over Repeat x5 whose iterations hold 7 anchors',
  (SELECT count(*) FROM traceloom_position_refinement r
     JOIN traceloom_semantic_node o ON o.node_id = r.parent_position_id AND o.tree_id = r.tree_id
     JOIN traceloom_semantic_node i ON i.node_id = r.child_position_id AND i.tree_id = r.tree_id
     JOIN traceloom_viz_node v ON v.node_id = i.node_id AND v.db_idx = i.db_idx AND v.device_id = i.device_id
    WHERE o.repeat_count = 4 AND i.repeat_count = 5 AND v.anchors_per_occurrence = 5 * 7) = 1;

-- The invariants hold on the real-schema fixtures too.
SELECT 'analyze exact_hlt', traceloom_analyze('fixtures/exact_hlt/mono') LIKE '%1 tree(s)%';
-- include: structure_invariants.inc
SELECT 'analyze exact_hlt split', traceloom_analyze('fixtures/exact_hlt/split') LIKE '%1 tree(s)%';
-- include: structure_invariants.inc
SELECT 'analyze two ranks', traceloom_analyze('fixtures/two_ranks') LIKE '%2 tree(s)%';
-- include: structure_invariants.inc
SELECT 'two ranks: one tree per (db_idx, device)', (SELECT count(*) FROM traceloom_semantic_tree) = 2;
SELECT 'analyze minimal_smoke', traceloom_analyze('fixtures/minimal_smoke/mono') LIKE '%1 tree(s)%';
-- include: structure_invariants.inc
SELECT 'minimal: the compute task and the comm op are the anchors; the linked comm task is not',
  (SELECT group_concat(symbol, ',') FROM (SELECT symbol FROM traceloom_anchor ORDER BY anchor_idx)) = 'MatMul,AllReduce';
SELECT 'minimal: represented comm task is aux',
  (SELECT semantic_role || ':' || semantic_role_reason FROM traceloom_event WHERE event_id = 'event-1') = 'aux:represented_by_communication_op';
-- Its policy rule is the collective anchor rule (its name comm_task_hccl_allreduce contains
-- allreduce), but the op represents it, so the system rule decides it (the reference's
-- decision; ext/classify/classify.h, tl_classification_represent), and the policy rule
-- decided no event.
SELECT 'minimal: the represented comm task is decided by system.communication_anchor',
  (SELECT policy_role || ':' || final_role || ':' || policy_structural_participation || ':'
          || effective_structural_participation || ':' || support_state || ':' || reason_code
          || ':' || rule_id
     FROM traceloom_evidence_role_decision WHERE event_id = 'event-1')
  = 'anchor:anchor:identity:identity:supported:represented_by_communication_anchor:system.communication_anchor'
  AND (SELECT decided_event_count FROM traceloom_evidence_role_rule
        WHERE rule_id = 'any.anchor.blob.allreduce.2167e26c') = 0
  AND (SELECT sum(event_count) FROM traceloom_evidence_role_class) = 3;
-- The cost example of outputs.md 3.1 on real rows: MatMul [100,160), comm op [165,215).
SELECT 'minimal: the comm op pays the 5 ns gap as idle and its own 50 ns as comm',
  (SELECT comm_us = 0.05 AND idle_us = 0.005 AND total_us = 0.055 FROM traceloom_anchor WHERE anchor_idx = 2);
SELECT 'minimal: the linked comm task [170,210) lies inside the op, not in its window [160,165)',
  (SELECT aux_events = 0 AND aux_us = 0.0 FROM traceloom_anchor WHERE anchor_idx = 2);
SELECT 'nsys basic', traceloom_analyze('fixtures/nsys/nsys_basic.sqlite') LIKE '%1 tree(s)%';
-- include: structure_invariants.inc
SELECT 'hygon', traceloom_analyze('fixtures/hygon/hipprof.db') LIKE '%tree(s)%';
-- include: structure_invariants.inc
