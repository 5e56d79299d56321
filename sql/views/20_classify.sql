-- Evidence-role decisions and symbol lineage (outputs.md section 2 "Evidence roles and
-- symbols"). Decisions are made per distinct identity (traceloom_evidence_role_class); these
-- views give them back per event through traceloom_event.role_class_id.

-- @surface traceloom_evidence_role_decision | one row per event | The evidence role of every observation: the policy's role and rule, the final role, whether it takes part in structure, and its observed and structural symbols | SELECT final_role, rule_id, count(*) AS events FROM traceloom_evidence_role_decision GROUP BY final_role, rule_id ORDER BY events DESC
CREATE VIEW traceloom_evidence_role_decision AS
SELECT 'role-decision-' || substr(e.event_id, 7) AS decision_id, e.event_id, e.db_idx,
       e.device_id, c.policy_role, c.final_role, c.policy_structural_participation,
       c.effective_structural_participation, c.support_state, c.reason_code, c.rule_id,
       e.source_table, e.source_key, e.source_id, c.source_domain, c.provider_scope,
       c.cost_treatment, c.policy_id, c.observed_symbol, c.structural_symbol, c.symbol_outcome,
       c.symbol_reason_code, c.symbol_rule_id, c.symbol_candidate_rule_ids,
       c.class_id AS role_class_id
FROM traceloom_event e
JOIN traceloom_evidence_role_class c ON c.class_id = e.role_class_id;

-- @surface traceloom_v_evidence_role_decision | one row per event | Each observation's role decision next to its timing and names: what the policy decided, by which rule, and the symbol it carries | SELECT event_id, task_type, op_type, final_role, rule_id, structural_symbol FROM traceloom_v_evidence_role_decision ORDER BY db_idx, device_id, start_ns LIMIT 20
CREATE VIEW traceloom_v_evidence_role_decision AS
SELECT 'role-decision-' || substr(e.event_id, 7) AS decision_id, e.event_id, e.db_idx,
       e.device_id, c.policy_role, c.final_role, c.policy_structural_participation,
       c.effective_structural_participation, c.support_state, c.reason_code, c.rule_id,
       e.source_table, e.source_key, e.source_id, c.source_domain, c.provider_scope,
       c.cost_treatment, c.policy_id, c.observed_symbol, c.structural_symbol, c.symbol_outcome,
       c.symbol_reason_code, c.symbol_rule_id, c.symbol_candidate_rule_ids,
       c.class_id AS role_class_id, e.stream_id, e.start_ns, e.end_ns, e.dur_us, e.kind, e.label,
       e.task_type, e.op_name, e.op_type, e.compute_task_type, e.comm_name
FROM traceloom_event e
JOIN traceloom_evidence_role_class c ON c.class_id = e.role_class_id;

-- @surface traceloom_v_evidence_role_summary | one row per (db_idx, device_id, final role, rule) | How many events (and how much raw device time) each rule kept as anchors or set aside as auxiliary or transparent evidence | SELECT device_id, final_role, rule_id, event_count, total_us FROM traceloom_v_evidence_role_summary ORDER BY event_count DESC
CREATE VIEW traceloom_v_evidence_role_summary AS
SELECT e.db_idx, e.device_id, c.source_domain, c.final_role, c.effective_structural_participation,
       c.rule_id, c.reason_code, c.cost_treatment, count(*) AS event_count,
       ROUND(SUM(e.dur_us), 3) AS total_us
FROM traceloom_event e
JOIN traceloom_evidence_role_class c ON c.class_id = e.role_class_id
GROUP BY e.db_idx, e.device_id, c.source_domain, c.final_role,
         c.effective_structural_participation, c.rule_id, c.reason_code, c.cost_treatment;

-- @surface traceloom_v_symbol_normalization | one row per (db_idx, device_id, observed symbol, structural symbol) | Which observed names were folded into which structural symbols, by which rule, and conflicts between equal-precedence rules | SELECT observed_symbol, structural_symbol, outcome, rule_id, event_count FROM traceloom_v_symbol_normalization WHERE outcome <> 'identity'
CREATE VIEW traceloom_v_symbol_normalization AS
SELECT e.db_idx, e.device_id, c.source_domain, c.observed_symbol, c.structural_symbol,
       c.symbol_outcome AS outcome, c.symbol_reason_code AS reason_code,
       c.symbol_rule_id AS rule_id, c.symbol_candidate_rule_ids AS candidate_rule_ids,
       count(*) AS event_count
FROM traceloom_event e
JOIN traceloom_evidence_role_class c ON c.class_id = e.role_class_id
GROUP BY e.db_idx, e.device_id, c.source_domain, c.observed_symbol, c.structural_symbol,
         c.symbol_outcome, c.symbol_reason_code, c.symbol_rule_id, c.symbol_candidate_rule_ids;
