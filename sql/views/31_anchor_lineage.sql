-- Symbol lineage per anchor (outputs.md section 2).
-- An anchor whose symbol differs from its event's structural symbol got it from a later
-- stage (replay slot symbols): its outcome is 'synthetic'.
-- Each row also carries the audit columns of the rule that decided (the reference's lineage
-- columns): a manifest rule's from traceloom_symbol_normalization_rule, looked up by its id,
-- and for a built-in outcome (no rule matched, a conflict, no observed symbol, a replay slot)
-- the reference's words for its built-in rule (traceloom 0.1.4 lists them as rules of
-- precedence < 0; ours keeps them out of the rule table, docs/PARITY.md). rule_description is
-- the manifest rule's note, in our words.

-- the rule of a decision by its id (a handful of rules: a real index, so that no plan builds
-- one per query)
CREATE INDEX traceloom_symbol_normalization_rule_id ON traceloom_symbol_normalization_rule(rule_id);

-- @surface traceloom_v_anchor_symbol_lineage | one row per anchor | How each anchor's structural symbol was derived from the observed one: identity, normalized (with the rule) or conflict (with the tied rules), and where the row came from, with the deciding rule's audit columns and the anchor's times | SELECT anchor_id, observed_symbol, structural_symbol, rule_id, outcome, precedence, match_mode FROM traceloom_v_anchor_symbol_lineage WHERE outcome <> 'identity' LIMIT 20
CREATE VIEW traceloom_v_anchor_symbol_lineage AS
SELECT l.anchor_id, l.observed_symbol, l.structural_symbol, l.rule_id, l.outcome,
       l.candidate_rule_ids, l.source_path, l.source_table, l.source_key, l.db_idx,
       l.device_id, l.anchor_idx, l.event_id,
       CASE WHEN l.outcome = 'synthetic' THEN 'analysis.replay_composition_slot'
            WHEN l.observed_symbol IS NULL THEN 'unavailable'
            WHEN l.task_type = 'COMMUNICATION_OP' THEN 'communication.op_name'
            WHEN l.op_type IS NOT NULL THEN 'task.op_type'
            WHEN l.op_name IS NOT NULL THEN 'task.op_name'
            ELSE 'task.task_type' END AS observed_symbol_source,
       (SELECT p.policy_id FROM traceloom_symbol_normalization_rule p LIMIT 1) AS policy_id,
       (SELECT p.policy_version FROM traceloom_symbol_normalization_rule p LIMIT 1)
         AS policy_version,
       CASE l.outcome WHEN 'synthetic' THEN 'analysis_generated_structural_symbol'
                      ELSE l.symbol_reason_code END AS reason_code,
       CASE l.rule_id WHEN 'fallback.identity-preserve' THEN -1000
                      WHEN 'fallback.missing-observed-symbol' THEN -1010
                      WHEN 'fallback.rule-conflict' THEN -1020
                      WHEN 'synthetic.replay-slot' THEN -100
                      ELSE r.precedence END AS precedence,
       CASE WHEN r.rule_id IS NULL THEN 'provider-neutral' ELSE r.provider_scope END
         AS provider_scope,
       CASE WHEN l.outcome = 'synthetic' THEN 'analysis'
            WHEN r.rule_id IS NULL THEN 'selected observed symbol' ELSE r.source_domain END
         AS source_domain,
       CASE l.rule_id WHEN 'fallback.identity-preserve' THEN 'identity_fallback'
                      WHEN 'fallback.missing-observed-symbol' THEN 'typed_unsupported'
                      WHEN 'fallback.rule-conflict' THEN 'typed_conflict'
                      WHEN 'synthetic.replay-slot' THEN 'typed_synthesis'
                      ELSE r.match_mode END AS match_mode,
       CASE l.rule_id WHEN 'fallback.identity-preserve' THEN 'no explicit rule matched'
                      WHEN 'fallback.missing-observed-symbol' THEN 'no observed symbol available'
                      WHEN 'fallback.rule-conflict' THEN 'multiple equal-precedence rules matched'
                      WHEN 'synthetic.replay-slot' THEN 'committed replay composition slot'
                      ELSE r.match_expression END AS match_expression,
       CASE l.rule_id WHEN 'fallback.identity-preserve' THEN 'one observed symbol'
                      WHEN 'fallback.missing-observed-symbol' THEN 'none'
                      WHEN 'fallback.rule-conflict'
                        THEN 'one observed symbol and multiple rule matches'
                      WHEN 'synthetic.replay-slot' THEN 'recognized replay composition slot'
                      ELSE r.field END AS required_fields,
       CASE l.rule_id WHEN 'fallback.identity-preserve'
                        THEN 'No rule matched: the observed symbol is kept as structural.'
                      WHEN 'fallback.missing-observed-symbol'
                        THEN 'No observed symbol: the structural identity is unsupported.'
                      WHEN 'fallback.rule-conflict'
                        THEN 'Rules of equal precedence matched: the observed symbol is kept.'
                      WHEN 'synthetic.replay-slot'
                        THEN 'The replay composition slot the anchor stands for.'
                      ELSE r.note END AS rule_description,
       l.role AS anchor_role, l.start_ns, l.end_ns, l.dur_us
FROM (
SELECT a.anchor_id, c.observed_symbol, a.symbol AS structural_symbol,
       CASE WHEN c.class_id IS NULL OR a.symbol IS NOT c.structural_symbol
            THEN 'synthetic.replay-slot' ELSE c.symbol_rule_id END AS rule_id,
       CASE WHEN c.class_id IS NULL OR a.symbol IS NOT c.structural_symbol
            THEN 'synthetic' ELSE c.symbol_outcome END AS outcome,
       c.symbol_candidate_rule_ids AS candidate_rule_ids, s.source_path, e.source_table,
       e.source_key, a.db_idx, a.device_id, a.anchor_idx, a.event_id, c.symbol_reason_code,
       e.task_type, e.op_type, e.op_name, a.role, a.start_ns, a.end_ns, a.dur_us
FROM traceloom_anchor a
LEFT JOIN traceloom_event e ON e.event_n = a.event_n AND e.db_idx = a.db_idx
 AND e.device_id = a.device_id
LEFT JOIN traceloom_evidence_role_class c ON c.class_id = e.role_class_id
LEFT JOIN traceloom_raw_source_database s ON s.source_id = e.source_id) l
LEFT JOIN traceloom_symbol_normalization_rule r ON r.rule_id = l.rule_id;
