-- Symbol lineage per anchor (outputs.md section 2).
-- An anchor whose symbol differs from its event's structural symbol got it from a later
-- stage (replay slot symbols): its outcome is 'synthetic'.

-- @surface traceloom_v_anchor_symbol_lineage | one row per anchor | How each anchor's structural symbol was derived from the observed one: identity, normalized (with the rule) or conflict (with the tied rules), and where the row came from | SELECT anchor_id, observed_symbol, structural_symbol, rule_id, outcome FROM traceloom_v_anchor_symbol_lineage WHERE outcome <> 'identity' LIMIT 20
CREATE VIEW traceloom_v_anchor_symbol_lineage AS
SELECT a.anchor_id, c.observed_symbol, a.symbol AS structural_symbol,
       CASE WHEN c.class_id IS NULL OR a.symbol IS NOT c.structural_symbol
            THEN 'synthetic.replay-slot' ELSE c.symbol_rule_id END AS rule_id,
       CASE WHEN c.class_id IS NULL OR a.symbol IS NOT c.structural_symbol
            THEN 'synthetic' ELSE c.symbol_outcome END AS outcome,
       c.symbol_candidate_rule_ids AS candidate_rule_ids, s.source_path, e.source_table,
       e.source_key, a.db_idx, a.device_id, a.anchor_idx, a.event_id
FROM traceloom_anchor a
LEFT JOIN traceloom_event e ON e.event_n = a.event_n AND e.db_idx = a.db_idx
 AND e.device_id = a.device_id
LEFT JOIN traceloom_evidence_role_class c ON c.class_id = e.role_class_id
LEFT JOIN traceloom_raw_source_database s ON s.source_id = e.source_id;
