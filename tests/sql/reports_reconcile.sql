-- Event reconciliation acts on the anchors (recovery.md 2.5, tests/fixtures/reports/reconcile.sql):
-- a reconciled pair is one anchor, the canonical event's with the envelope's interval, and its
-- other members are never anchors, aux links or cost. The fixture's 11 observations: rows 1-2
-- a reconciled KERNEL_MIX_AIV envelope [1000,1100) and detail [1000,1099); row 3 a lone
-- envelope; rows 4-6 ambiguous; rows 7-8 a conflict; row 9 a MatmulAllReduce task [4000,4500)
-- with which the MC2 op 1 [4100,4300) is reconciled; op 2 [6000,6100) independent.
SELECT 'analyze', traceloom_analyze('fixtures/reports/reconcile') LIKE '%anchors%';
-- 11 observations less the two folded members (envelope row 1, MC2 op 1)
SELECT 'events', (SELECT count(*) FROM traceloom_event) = 11;
SELECT 'anchors', (SELECT count(*) FROM traceloom_anchor) = 9;
SELECT 'envelope is no anchor', NOT EXISTS (SELECT 1 FROM traceloom_anchor a
  JOIN traceloom_event e ON e.event_n = a.event_n WHERE e.source_table = 'TASK' AND e.source_key = '1');
SELECT 'MC2 op is no anchor', NOT EXISTS (SELECT 1 FROM traceloom_anchor a
  JOIN traceloom_event e ON e.event_n = a.event_n
  WHERE e.source_table = 'COMMUNICATION_OP' AND e.source_key = '1');
-- the detail's anchor has the envelope's interval, and costs it
SELECT 'merged anchor interval', (SELECT a.start_ns || ',' || a.end_ns || ',' || a.dur_us || ',' || a.self_us
  FROM traceloom_anchor a JOIN traceloom_event e ON e.event_n = a.event_n
  WHERE e.source_table = 'TASK' AND e.source_key = '2') = '1000,1100,0.1,0.1';
SELECT 'merged anchor symbol', (SELECT a.symbol FROM traceloom_anchor a
  JOIN traceloom_event e ON e.event_n = a.event_n
  WHERE e.source_table = 'TASK' AND e.source_key = '2') = 'Add';
SELECT 'detail event keeps its own end', (SELECT end_ns FROM traceloom_event
  WHERE source_table = 'TASK' AND source_key = '2') = 1099;
SELECT 'merged anchor compute', (SELECT a.compute_us FROM traceloom_anchor a WHERE a.anchor_idx = 1) = 0.1;
-- the task the MC2 op folds into keeps its own interval
SELECT 'task anchor interval', (SELECT a.start_ns || ',' || a.end_ns FROM traceloom_anchor a
  JOIN traceloom_event e ON e.event_n = a.event_n
  WHERE e.source_table = 'TASK' AND e.source_key = '9') = '4000,4500';
-- the independent op stays a communication anchor; no comm time but its own
SELECT 'independent op anchor', (SELECT count(*) FROM traceloom_anchor WHERE role = 'comm') = 1;
SELECT 'comm time', (SELECT sum(comm_us) FROM traceloom_anchor) = 0.1;
-- one extent row per merged anchor (both reconciled decisions)
SELECT 'extents', (SELECT count(*) FROM traceloom_anchor_extent_core) = 2;
-- members are never aux links
SELECT 'no aux link', NOT EXISTS (SELECT 1 FROM traceloom_aux_link l
  JOIN traceloom_event e ON e.event_n = l.aux_event_n
  WHERE (e.source_table = 'TASK' AND e.source_key = '1')
     OR (e.source_table = 'COMMUNICATION_OP' AND e.source_key = '1'));
SELECT 'no aux cost', (SELECT sum(aux_events) FROM traceloom_anchor) = 0;
-- the members' decisions: the system rule, the canonical anchor stands for them
SELECT 'member decisions', (SELECT group_concat(d.rule_id || '/' || d.final_role || '/' || d.reason_code
  || '/' || d.required_fields, ';') FROM traceloom_evidence_role_decision d
  WHERE d.source_key = '1') =
  'system.event_reconciliation/anchor/represented_by_reconciled_canonical_anchor/event_reconciliation_membership;'
  || 'system.event_reconciliation/anchor/represented_by_reconciled_canonical_anchor/event_reconciliation_membership';
SELECT 'detail decision is its own', (SELECT d.rule_id FROM traceloom_evidence_role_decision d
  WHERE d.source_table = 'TASK' AND d.source_key = '2') = 'fallback.unknown_observation';
-- placements: every member of a reconciled pair is a reconciliation member owned by the
-- canonical anchor; the canonical event's own anchor comes second
SELECT 'reconciliation members', (SELECT count(*) FROM traceloom_evidence_role_placement
  WHERE placement_kind = 'reconciliation_member') = 4;
SELECT 'member owners', NOT EXISTS (SELECT 1 FROM traceloom_evidence_role_placement p
  JOIN traceloom_event_reconciliation_decision d ON p.placement_id = d.decision_id
  WHERE p.placement_kind = 'reconciliation_member' AND p.owner_id IS NOT d.canonical_anchor_id);
SELECT 'member reasons', (SELECT group_concat(reason_code, ',') FROM (SELECT p.reason_code
  FROM traceloom_evidence_role_placement p WHERE p.placement_kind = 'reconciliation_member'
  ORDER BY p.reason_code)) = 'provider_detail_for_canonical_anchor,semantic_detail_for_canonical_anchor,'
  || 'semantic_detail_for_canonical_anchor,timing_envelope_for_canonical_anchor';
SELECT 'canonical anchor second', (SELECT group_concat(p.placement_order, ',') FROM
  traceloom_evidence_role_placement p WHERE p.placement_kind = 'anchor' AND p.event_n IN
  (SELECT canonical_event_n FROM traceloom_event_reconciliation_decision_core WHERE status = 0)) = '2,2';
SELECT 'folded members unplaced as anchors', NOT EXISTS (SELECT 1 FROM traceloom_evidence_role_placement p
  JOIN traceloom_event e ON e.event_n = p.event_n
  WHERE p.placement_kind = 'anchor' AND e.source_key = '1');
-- the decision names the merged anchor, with the envelope's end
SELECT 'canonical anchor', (SELECT group_concat(v.canonical_anchor_end_ns, ',') FROM
  (SELECT DISTINCT decision_id, canonical_anchor_end_ns FROM traceloom_v_event_reconciliation
    WHERE status = 'reconciled' ORDER BY decision_id) v) = '1100,4500';
-- the tree's atom of the merged anchor has the merged interval
SELECT 'atom interval', (SELECT o.end_ns || ',' || o.self_us FROM traceloom_position_occurrence o
  WHERE o.anchor_first_n = (SELECT anchor_n FROM traceloom_anchor WHERE anchor_idx = 1)
    AND o.anchor_end_n = o.anchor_first_n + 1 LIMIT 1) = '1100,0.1';
