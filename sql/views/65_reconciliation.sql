-- Event reconciliation (docs/REPORTS.md "Event reconciliation"): duplicate observations of one
-- device action decided by the event-reconciliation rules (ext/reconcile/reconcile.c). Sparse:
-- only observations some rule names appear; everything else is independent.

-- @surface traceloom_event_reconciliation_decision | one reconciliation decision | Each group of observations a rule names, with its status (reconciled, independent, ambiguous, conflict), reason, canonical and envelope events, the canonical anchor and the charged interval | SELECT status, reason_code, count(*) FROM traceloom_event_reconciliation_decision GROUP BY 1, 2
CREATE VIEW traceloom_event_reconciliation_decision AS
SELECT 'reconciliation-decision-' || d.decision_n AS decision_id, d.db_idx,
       (SELECT p.policy_id FROM traceloom_event_reconciliation_policy p) AS policy_id,
       (SELECT p.policy_version FROM traceloom_event_reconciliation_policy p) AS policy_version,
       d.rule_id,
       CASE d.status WHEN 0 THEN 'reconciled' WHEN 1 THEN 'independent' WHEN 2 THEN 'ambiguous'
                     ELSE 'conflict' END AS status,
       CASE d.reason WHEN 0 THEN 'non_unique_or_incompatible_candidates'
                     WHEN 1 THEN 'missing_timing_envelope_peer'
                     WHEN 2 THEN 'missing_semantic_detail_peer'
                     WHEN 3 THEN 'insufficient_interval_containment'
                     WHEN 4 THEN 'protected_replay_membership_mismatch'
                     WHEN 5 THEN 'unique_identity_pair_with_contained_detail'
                     WHEN 6 THEN 'missing_containing_task_peer'
                     WHEN 7 THEN 'non_unique_containment_candidates'
                     ELSE 'unique_provider_observation_with_containing_task' END AS reason_code,
       c.event_id AS canonical_event_id, v.event_id AS envelope_event_id,
       CASE WHEN d.canonical_anchor_n IS NOT NULL THEN 'anchor-' || d.canonical_anchor_n END
         AS canonical_anchor_id,
       v.start_ns AS canonical_start_ns, v.end_ns AS canonical_end_ns,
       d.contained_ppm / 1000000.0 AS contained_fraction, d.member_count, d.decision_n,
       d.canonical_anchor_n
FROM traceloom_event_reconciliation_decision_core d
LEFT JOIN traceloom_event c ON c.event_n = d.canonical_event_n
LEFT JOIN traceloom_event v ON v.event_n = d.envelope_event_n;

-- @surface traceloom_event_reconciliation_member | one observation of a reconciliation decision | The observations of each decision with their role (timing_envelope, semantic_detail, provider_detail, independent_candidate, conflicting_candidate), what each contributes (timing, symbol, cost) and their raw ids and source row | SELECT member_role, contributes_timing, contributes_symbol, contributes_cost, count(*) FROM traceloom_event_reconciliation_member GROUP BY 1, 2, 3, 4
CREATE VIEW traceloom_event_reconciliation_member AS
SELECT 'reconciliation-decision-' || m.decision_n AS decision_id, m.member_order, e.db_idx,
       e.event_id,
       CASE WHEN e.task_type = 'COMMUNICATION_OP' THEN 'communication_op' ELSE 'task' END
         AS source_domain,
       e.task_id, CASE WHEN e.task_type = 'COMMUNICATION_OP' THEN e.op_id END AS communication_op_id,
       (SELECT r.source_path FROM traceloom_raw_source_database r WHERE r.source_id = e.source_id)
         AS source_path,
       e.source_table, e.source_key, e.device_id, e.stream_id, e.task_id AS raw_task_id,
       e.global_task_id AS raw_global_task_id, e.correlation_id AS raw_connection_id,
       e.context_id AS raw_context_id,
       CASE m.member_role WHEN 0 THEN 'timing_envelope' WHEN 1 THEN 'semantic_detail'
                          WHEN 2 THEN 'provider_detail' WHEN 3 THEN 'independent_candidate'
                          ELSE 'conflicting_candidate' END AS member_role,
       m.contributes_timing, m.contributes_symbol, m.contributes_cost,
       1 AS retained_as_normalized_evidence, m.decision_n, m.event_n
FROM traceloom_event_reconciliation_member_core m
JOIN traceloom_event e ON e.event_n = m.event_n;

-- @surface traceloom_v_event_reconciliation | one observation of a reconciliation decision, with its decision | The audit surface: each member next to its decision, its own symbol and duration and the canonical anchor's | SELECT decision_id, status, member_role, observed_symbol, canonical_symbol FROM traceloom_v_event_reconciliation ORDER BY db_idx, decision_id, member_order
CREATE VIEW traceloom_v_event_reconciliation AS
SELECT m.*, d.policy_id, d.policy_version, d.rule_id, d.status, d.reason_code,
       d.canonical_event_id, d.envelope_event_id, d.canonical_anchor_id, d.canonical_start_ns,
       d.canonical_end_ns, d.contained_fraction,
       -- the member's own (observed) name: a communication op's name, a task's observed symbol
       CASE WHEN e.kind = 'communication' THEN COALESCE(e.comm_name, e.symbol)
            ELSE COALESCE((SELECT c.observed_symbol FROM traceloom_evidence_role_class c
                           WHERE c.class_id = e.role_class_id), e.symbol) END AS observed_symbol,
       e.start_ns AS observed_start_ns, e.end_ns AS observed_end_ns, e.dur_us AS observed_dur_us,
       a.symbol AS canonical_symbol, a.start_ns AS canonical_anchor_start_ns,
       a.end_ns AS canonical_anchor_end_ns, a.dur_us AS canonical_anchor_dur_us
FROM traceloom_event_reconciliation_member m
JOIN traceloom_event_reconciliation_decision d ON d.decision_n = m.decision_n
LEFT JOIN traceloom_event e ON e.event_n = m.event_n
LEFT JOIN traceloom_anchor a ON a.anchor_n = d.canonical_anchor_n;
