-- Symbol lineage per anchor (outputs.md section 2).
-- A replay-unit anchor (an exact replay's launch, traceloom_graph_launch.anchor_n) is named by
-- its composition slot (ACLH, ACLL, ACLT, ACLG, CUDAGraph), which no rule derived from an
-- observed name: outcome 'synthetic', the slot as observed and structural symbol, the built-in
-- rule 'analysis.replay-composition-slot' (as traceloom_anchor_symbol_normalization says). The
-- launch and the slot (its anchor shape's symbol) are LEFT JOINs by key, so that the slot is a
-- column read once per row (the outer select names rule_id and outcome a dozen times).
-- Each row also carries the audit columns of the rule that decided (the reference's lineage
-- columns), looked up by its id in traceloom_symbol_normalization_rule: a manifest rule's, or
-- for a built-in outcome (no rule matched, a conflict, no observed symbol, a replay slot) the
-- built-in row of precedence < 0 (ext/classify/symbols.c, tl_symbol_builtin_rules).
-- rule_description is the rule's description, in our words.

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
       r.precedence, r.provider_scope, r.source_domain, r.match_mode, r.match_expression,
       r.required_fields, r.description AS rule_description,
       l.role AS anchor_role, l.start_ns, l.end_ns, l.dur_us
FROM (
SELECT a.anchor_id, COALESCE(a.slot_symbol, c.observed_symbol) AS observed_symbol,
       a.symbol AS structural_symbol,
       CASE WHEN a.slot_symbol IS NOT NULL THEN 'analysis.replay-composition-slot'
            ELSE c.symbol_rule_id END AS rule_id,
       CASE WHEN a.slot_symbol IS NOT NULL THEN 'synthetic' ELSE c.symbol_outcome END AS outcome,
       CASE WHEN a.slot_symbol IS NULL THEN c.symbol_candidate_rule_ids END
         AS candidate_rule_ids, COALESCE(s.source_path, us.source_path) AS source_path,
       COALESCE(e.source_table, u.source_table) AS source_table,
       COALESCE(e.source_key, CASE WHEN u.event_n IS NOT NULL THEN '0' END) AS source_key,
       a.db_idx, a.device_id, a.anchor_idx, a.event_id, c.symbol_reason_code,
       e.task_type, e.op_type, e.op_name, a.role, a.start_ns, a.end_ns, a.dur_us
FROM (SELECT x.*, h.symbol AS slot_symbol, g.graph_event_n
      FROM traceloom_anchor x
      LEFT JOIN traceloom_graph_launch g ON g.anchor_n = x.anchor_n
      LEFT JOIN traceloom_anchor_core b ON b.anchor_n = g.anchor_n
      LEFT JOIN traceloom_anchor_shape h ON h.shape_id = b.shape_id) a
LEFT JOIN traceloom_event e ON e.event_n = a.event_n AND e.db_idx = a.db_idx
 AND e.device_id = a.device_id
LEFT JOIN traceloom_evidence_role_class c ON c.class_id = e.role_class_id
LEFT JOIN traceloom_raw_source_database s ON s.source_id = e.source_id
-- a replay-unit anchor has no event: its source is its unit's event (table and file) with key
-- '0', no row of that table, as traceloom_anchor_symbol_normalization has it
LEFT JOIN traceloom_event u ON a.slot_symbol IS NOT NULL AND u.event_n = a.graph_event_n
LEFT JOIN traceloom_raw_source_database us ON us.source_id = u.source_id) l
LEFT JOIN traceloom_symbol_normalization_rule r ON r.rule_id = l.rule_id;
