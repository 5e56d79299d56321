-- Readable views over the evidence-role decisions and symbol lineage
-- (outputs.md section 2 "Evidence roles and symbols"). Plain SQL over traceloom_event and
-- traceloom_evidence_role_decision; they need no other stage.

-- @surface traceloom_v_evidence_role_decision | one row per event | Each observation's role decision next to its timing and names: what the policy decided, by which rule, and the symbol it carries | SELECT event_id, task_type, op_type, final_role, rule_id, structural_symbol FROM traceloom_v_evidence_role_decision ORDER BY db_idx, device_id, start_ns LIMIT 20
CREATE VIEW traceloom_v_evidence_role_decision AS
SELECT d.*, e.stream_id, e.start_ns, e.end_ns, e.dur_us, e.kind, e.label, e.task_type, e.op_name,
       e.op_type, e.compute_task_type, e.comm_name
FROM traceloom_evidence_role_decision d
JOIN traceloom_event e ON e.event_id = d.event_id AND e.db_idx = d.db_idx
 AND e.device_id = d.device_id;

-- @surface traceloom_v_evidence_role_summary | one row per (db_idx, device_id, final role, rule) | How many events (and how much raw device time) each rule kept as anchors or set aside as auxiliary or transparent evidence | SELECT device_id, final_role, rule_id, event_count, total_us FROM traceloom_v_evidence_role_summary ORDER BY event_count DESC
CREATE VIEW traceloom_v_evidence_role_summary AS
SELECT d.db_idx, d.device_id, d.source_domain, d.final_role, d.effective_structural_participation,
       d.rule_id, d.reason_code, d.cost_treatment, count(*) AS event_count,
       ROUND(SUM(e.dur_us), 3) AS total_us
FROM traceloom_evidence_role_decision d
JOIN traceloom_event e ON e.event_id = d.event_id AND e.db_idx = d.db_idx
 AND e.device_id = d.device_id
GROUP BY d.db_idx, d.device_id, d.source_domain, d.final_role,
         d.effective_structural_participation, d.rule_id, d.reason_code, d.cost_treatment;

-- @surface traceloom_v_symbol_normalization | one row per (db_idx, device_id, observed symbol, structural symbol) | Which observed names were folded into which structural symbols, by which rule, and conflicts between equal-precedence rules | SELECT observed_symbol, structural_symbol, outcome, rule_id, event_count FROM traceloom_v_symbol_normalization WHERE outcome <> 'identity'
CREATE VIEW traceloom_v_symbol_normalization AS
SELECT db_idx, device_id, source_domain, observed_symbol, structural_symbol,
       symbol_outcome AS outcome, symbol_reason_code AS reason_code, symbol_rule_id AS rule_id,
       symbol_candidate_rule_ids AS candidate_rule_ids, count(*) AS event_count
FROM traceloom_evidence_role_decision
GROUP BY db_idx, device_id, source_domain, observed_symbol, structural_symbol, symbol_outcome,
         symbol_reason_code, symbol_rule_id, symbol_candidate_rule_ids;
