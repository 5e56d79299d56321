-- classify.sql: evidence roles and structural symbols through traceloom_analyze (outputs.md
-- section 2 "Evidence roles and symbols", recovery.md sections 2.1-2.7).
-- Fixtures (../shared/fixtures/ascend_sqlite): aclgraph_smoke has 10 events: MIX_AIC GatherV2
-- (1) and MatMulV2 (3), MODEL_EXECUTE (4) and 2 COMMUNICATION_OP hcclAllGather ops;
-- exact_hlt has 70: 14 MODEL_EXECUTE, 14 NOTIFY_WAIT, 14 NOTIFY_RECORD, 28 KERNEL_AIVEC.
-- Rules configs with errors live in ../tests/fixtures/rules (paths relative to the build folder).
.load ./traceloom

SELECT 'analyze aclgraph_smoke with the default rules',
  traceloom_analyze('fixtures/aclgraph_smoke/mono') LIKE 'traceloom: analysed 1 input(s)%';

SELECT 'one decision per event, its id the integer n of event-<n> (docs/PARITY.md)',
  (SELECT count(*) FROM traceloom_evidence_role_decision) = 10
  AND (SELECT count(*) FROM traceloom_evidence_role_decision d JOIN traceloom_event e
         ON e.event_id = d.event_id AND e.db_idx = d.db_idx AND e.device_id = d.device_id
       WHERE typeof(d.decision_id) = 'integer' AND d.decision_id = e.event_n
         AND d.event_id = 'event-' || d.decision_id
         AND d.source_table = e.source_table AND d.source_key = e.source_key) = 10;

SELECT 'MatMulV2 is an anchor with structural symbol MatMul',
  (SELECT count(*) FROM traceloom_evidence_role_decision
   WHERE observed_symbol = 'MatMulV2' AND structural_symbol = 'MatMul'
     AND symbol_outcome = 'canonicalized' AND symbol_rule_id = 'ascend.task.matmul-backend-variant'
     AND final_role = 'anchor' AND rule_id = 'any.anchor.blob.matmul.b362963b'
     AND reason_code = 'matched_positive_rule') = 3;

-- The candidates are the rules at the winning priority (as in the reference): a canonicalized
-- symbol lists its one rule, an identity symbol none.
SELECT 'a canonicalized symbol names its rule as its one candidate',
  (SELECT count(*) FROM traceloom_anchor_symbol_normalization
   WHERE outcome = 'canonicalized' AND candidate_rule_ids = rule_id) > 0
  AND (SELECT count(*) FROM traceloom_anchor_symbol_normalization
       WHERE (outcome = 'canonicalized' AND candidate_rule_ids IS NOT rule_id)
          OR (outcome = 'identity' AND candidate_rule_ids IS NOT NULL)) = 0;

SELECT 'traceloom_event carries the structural symbol and its role class',
  (SELECT count(*) FROM traceloom_event e JOIN traceloom_evidence_role_class c
     ON c.class_id = e.role_class_id
   WHERE e.op_type = 'MatMulV2' AND e.symbol = 'MatMul' AND e.semantic_role = 'anchor'
     AND c.op_type = 'MatMulV2' AND c.event_count = 3) = 3
  AND (SELECT count(*) FROM traceloom_event WHERE symbol IS NULL OR role_class_id IS NULL) = 0;

SELECT 'unmatched GatherV2 stays an identity-bearing unknown_anchor',
  (SELECT count(*) FROM traceloom_evidence_role_decision d JOIN traceloom_event e
     ON e.event_id = d.event_id AND e.db_idx = d.db_idx
   WHERE e.op_type = 'GatherV2' AND d.final_role = 'unknown_anchor'
     AND d.policy_role = 'unknown_anchor' AND d.rule_id = 'fallback.unknown_observation'
     AND d.reason_code = 'unmatched_observation_unknown_first'
     AND d.support_state = 'supported_unknown_first'
     AND d.effective_structural_participation = 'identity'
     AND d.symbol_outcome = 'identity' AND d.structural_symbol = 'GatherV2') = 1;

SELECT 'MODEL_EXECUTE launches are auxiliary, kept with their cost',
  (SELECT count(*) FROM traceloom_evidence_role_decision
   WHERE final_role = 'auxiliary' AND rule_id = 'ascend.aux.task.type.model.execute.85a30ce3'
     AND policy_structural_participation = 'excluded'
     AND cost_treatment = 'retained_for_attribution') = 4;

-- The system rule applies to every provider and is no rule of the task domain: the decision
-- has provider scope any and no source domain (the reference's; docs/PARITY.md).
SELECT 'communication ops are anchors by the system rule, outside the task policy',
  (SELECT count(*) FROM traceloom_evidence_role_decision
   WHERE source_table = 'COMMUNICATION_OP' AND policy_role IS NULL AND final_role = 'anchor'
     AND rule_id = 'system.communication_anchor' AND source_domain IS NULL
     AND input_provider_scope = 'any'
     AND policy_structural_participation = 'not_applicable'
     AND structural_symbol = 'AllGather') = 2
  AND (SELECT count(*) FROM traceloom_evidence_role_decision
       WHERE source_table <> 'COMMUNICATION_OP'
         AND (source_domain IS NOT 'task' OR input_provider_scope IS NOT 'ascend')) = 0;

SELECT 'no role deletes an event: every event has a decision',
  (SELECT count(*) FROM traceloom_event e WHERE NOT EXISTS (
     SELECT 1 FROM traceloom_evidence_role_decision d
     WHERE d.event_id = e.event_id AND d.db_idx = e.db_idx AND d.device_id = e.device_id)) = 0;

SELECT 'policy and rule provenance',
  (SELECT count(*) FROM traceloom_evidence_role_policy
   WHERE policy_id = 'traceloom.default.accelerator-task-projection' AND policy_version = '3'
     AND rule_count = 68 AND policy_mode = 'builtin'
     AND source_manifest = 'bundled:rules/classification.yaml'
     AND length(manifest_sha256) = 64) = 1
  -- read from the bundled YAML alone: no rules config, no stage changed
  AND (SELECT input_format || ' ' || input_sources || ' ' || (config_overrides IS NULL) || ' '
              || (effective_config_sha256 = manifest_sha256) || ' ' || (length(config_override_contract) > 0)
       FROM traceloom_evidence_role_policy) = 'yaml bundled:rules/classification.yaml 1 1 1'
  -- the manifest's 68 rules, then the 4 built-in decisions (fallback and 3 system ones)
  AND (SELECT count(*) FROM traceloom_evidence_role_rule) = 72
  AND (SELECT count(*) FROM traceloom_evidence_role_rule WHERE rule_class = 'positive_policy'
         AND source_manifest = 'bundled:rules/classification.yaml' AND source_line > 0) = 68
  AND (SELECT group_concat(rule_id || ':' || rule_class || ':' || decision_order || ':'
                           || declaration_order || ':' || role, ' ')
       FROM (SELECT * FROM traceloom_evidence_role_rule WHERE rule_class <> 'positive_policy'
             ORDER BY rule_id))
      = 'fallback.unknown_observation:fallback:69:68:unknown_anchor'
        || ' system.communication_anchor:provider_relation:0:0:anchor'
        || ' system.event_reconciliation:provider_relation:0:0:anchor'
        || ' system.protected_composite:protected_membership:0:0:protected_boundary'
  AND (SELECT sum(decided_event_count) FROM traceloom_evidence_role_rule
       WHERE rule_class = 'positive_policy') = 7
  -- the rest of the 10 events: GatherV2 (MIX_AIC, no rule) falls back, the 2 hcclAllGather ops
  -- are communication anchors; protected boundaries are counted by the views (NULL here)
  AND (SELECT group_concat(rule_id || '=' || COALESCE(decided_event_count, 'NULL'), ' ')
       FROM (SELECT * FROM traceloom_evidence_role_rule WHERE rule_class <> 'positive_policy'
             ORDER BY rule_id))
      = 'fallback.unknown_observation=1 system.communication_anchor=2'
        || ' system.event_reconciliation=0 system.protected_composite=NULL'
  -- the manifest's 9 symbol rules, then the 4 built-in outcomes below every one of them
  AND (SELECT count(*) FROM traceloom_symbol_normalization_rule WHERE precedence >= 0) = 9
  AND (SELECT group_concat(rule_id || ':' || precedence || ':' || rule_origin, ' ')
       FROM (SELECT * FROM traceloom_symbol_normalization_rule WHERE precedence < 0
             ORDER BY declaration_order))
      = 'analysis.replay-composition-slot:-100:analysis fallback.identity-preserve:-1000:analysis'
        || ' fallback.missing-observed-symbol:-1010:analysis fallback.rule-conflict:-1020:analysis'
  AND (SELECT count(*) FROM traceloom_event_reconciliation_rule
       WHERE rule_origin = 'bundled:rules/event_reconciliation.yaml') = 3
  AND (SELECT count(*) FROM traceloom_event_reconciliation_policy
       WHERE length(description) > 0) = 1
  AND (SELECT value FROM traceloom_metadata WHERE key = 'evidence_role_policy_sha256')
      = (SELECT manifest_sha256 FROM traceloom_evidence_role_policy)
  AND (SELECT count(*) FROM traceloom_metadata WHERE key = 'rules_config') = 0
  AND (SELECT json_extract(value, '$.rules.classification.policy_id') FROM traceloom_metadata
       WHERE key = 'analysis_options') = 'traceloom.default.accelerator-task-projection';

-- Every decision names a rule row: a manifest rule or a built-in decision, of the class the
-- decision reports; every symbol decision of an anchor likewise (tests/python/
-- test_parity_relations.py checks the same on the replay, reconciliation and CUDA profiles).
SELECT 'every decision''s rule_id names a rule row',
  (SELECT count(*) FROM traceloom_evidence_role_decision d
   WHERE NOT EXISTS (SELECT 1 FROM traceloom_evidence_role_rule r
                     WHERE r.rule_id = d.rule_id AND r.rule_class = d.rule_class)) = 0
  AND (SELECT count(*) FROM traceloom_v_anchor_symbol_lineage l
       WHERE NOT EXISTS (SELECT 1 FROM traceloom_symbol_normalization_rule r
                         WHERE r.rule_id = l.rule_id)) = 0;

SELECT 'symbol normalization view',
  (SELECT event_count FROM traceloom_v_symbol_normalization
   WHERE observed_symbol = 'MatMulV2' AND outcome = 'canonicalized') = 3
  -- a communication op is observed by its name (opName hcclAllGather), not its operation
  -- type hcom_allGather_ (recovery.md 2.4; the reference's choice, symbols.c)
  AND (SELECT event_count FROM traceloom_v_symbol_normalization
       WHERE observed_symbol = 'hcclAllGather' AND structural_symbol = 'AllGather'
         AND source_domain = 'communication') = 2
  AND (SELECT count(*) FROM traceloom_v_symbol_normalization
       WHERE observed_symbol = 'hcom_allGather_') = 0;

-- Each lineage row names the deciding rule's audit columns (rules/symbol_normalization.yaml:
-- allgather-alias priority 80 on any_identity, matmul-backend-variant 90 on selected; the
-- built-in identity fallback -1000) and carries its anchor's role and times.
SELECT 'symbol lineage: the deciding rule and the anchor',
  (SELECT count(*) FROM traceloom_v_anchor_symbol_lineage
   WHERE rule_id = 'collective.communication.allgather-alias' AND observed_symbol = 'hcclAllGather'
     AND observed_symbol_source = 'communication.op_name' AND structural_symbol = 'AllGather'
     AND reason_code = 'explicit_rule_match' AND precedence = 80
     AND provider_scope = 'provider-neutral' AND source_domain = 'communication'
     AND match_mode = 'contains_any_ci' AND match_expression = 'allgather|all_gather'
     AND required_fields = 'any_identity' AND anchor_role = 'comm') = 2
  AND (SELECT count(*) FROM traceloom_v_anchor_symbol_lineage
       WHERE rule_id = 'ascend.task.matmul-backend-variant' AND observed_symbol = 'MatMulV2'
         AND observed_symbol_source = 'task.op_type' AND precedence = 90
         AND provider_scope = 'ascend' AND source_domain = 'task' AND required_fields = 'selected'
         AND anchor_role = 'compute') = 3
  AND (SELECT count(*) FROM traceloom_v_anchor_symbol_lineage
       WHERE rule_id = 'fallback.identity-preserve' AND structural_symbol = 'GatherV2'
         AND precedence = -1000 AND match_mode = 'identity_fallback'
         AND rule_description IS NOT NULL) = 1
  AND (SELECT count(*) FROM traceloom_v_anchor_symbol_lineage l
       JOIN traceloom_anchor a ON a.anchor_id = l.anchor_id
       WHERE l.start_ns = a.start_ns AND l.end_ns = a.end_ns AND l.dur_us = a.dur_us
         AND l.policy_id = 'traceloom.default-structural-symbols') = 6;

SELECT 'role summary view',
  (SELECT event_count FROM traceloom_v_evidence_role_summary
   WHERE final_role = 'auxiliary' AND rule_id = 'ascend.aux.task.type.model.execute.85a30ce3') = 4
  AND (SELECT sum(event_count) FROM traceloom_v_evidence_role_summary) = 10
  AND (SELECT count(*) FROM traceloom_v_evidence_role_decision) = 10;

SELECT 'the catalog documents the role relations and their examples run',
  (SELECT count(*) FROM traceloom_analysis_surface WHERE surface_name IN (
     'traceloom_evidence_role_decision', 'traceloom_evidence_role_policy',
     'traceloom_evidence_role_rule', 'traceloom_symbol_normalization_rule',
     'traceloom_event_reconciliation_policy', 'traceloom_event_reconciliation_rule',
     'traceloom_v_evidence_role_decision', 'traceloom_v_evidence_role_summary',
     'traceloom_v_symbol_normalization', 'traceloom_evidence_role_class')) = 10;

-- ------------------------------------------------------------------ invalid configs refuse
-- Each failure names file, line and key; the analysis above stays exactly as it was.
-- expect-error: bad_wrong_type.yaml:10: classification.rules[0].priority: expected a 32-bit integer, got 'high'
SELECT traceloom_analyze('fixtures/exact_hlt/mono', '{"rules_config": "../tests/fixtures/rules/bad_wrong_type.yaml"}');

-- expect-error: bad_schema_key.yaml:3: classifcation: unknown key
SELECT traceloom_analyze('fixtures/exact_hlt/mono', '{"rules_config": "../tests/fixtures/rules/bad_schema_key.yaml"}');

-- expect-error: bad_unknown_predicate.yaml:14: classification.rules[0].match: expected exact | contains | exact_any, got 'regex'
SELECT traceloom_analyze('fixtures/exact_hlt/mono', '{"rules_config": "../tests/fixtures/rules/bad_unknown_predicate.yaml"}');

-- expect-error: bad_duplicate_rule_id.yaml:9: classification.rules[0].rule_id: expected a new rule id
SELECT traceloom_analyze('fixtures/exact_hlt/mono', '{"rules_config": "../tests/fixtures/rules/bad_duplicate_rule_id.yaml"}');

-- expect-error: rules config not found: no-such-model
SELECT traceloom_analyze('fixtures/exact_hlt/mono', '{"rules_config": "no-such-model"}');

-- expect-error: analyze option "rules_config" must be a rules file path or a bundled config name
SELECT traceloom_analyze('fixtures/exact_hlt/mono', '{"rules_config": 7}');

SELECT 'a rejected config changed nothing: the aclgraph_smoke analysis is intact',
  (SELECT count(*) FROM traceloom_evidence_role_decision) = 10
  AND (SELECT count(*) FROM traceloom_event) = 10
  AND (SELECT value FROM traceloom_metadata WHERE key = 'source_path') LIKE '%aclgraph_smoke%';

-- ------------------------------------------------------------------ exact_hlt, defaults
SELECT 'analyze exact_hlt',
  traceloom_analyze('fixtures/exact_hlt/mono') LIKE 'traceloom: analysed 1 input(s)%';

-- The policy decides the 14 launches' tasks (2 NOTIFY_* and 2 kernels each); the 12 launches of
-- the 4 promoted replay units lie inside their units' spans, so their tasks' final role is
-- protected_boundary (tests/sql/replay_acl.sql), and the 2 unpromoted tail launches' keep the
-- policy's: 4 NOTIFY_* tasks and 4 kernels.
SELECT 'NOTIFY_* control tasks are auxiliary and excluded from identity',
  (SELECT count(*) FROM traceloom_v_evidence_role_decision
   WHERE task_type IN ('NOTIFY_WAIT', 'NOTIFY_RECORD') AND policy_role = 'auxiliary'
     AND policy_structural_participation = 'excluded') = 28
  AND (SELECT count(*) FROM traceloom_v_evidence_role_decision
   WHERE task_type IN ('NOTIFY_WAIT', 'NOTIFY_RECORD') AND final_role = 'auxiliary'
     AND effective_structural_participation = 'excluded'
     -- decided by the manifest's rule for that task type (ids are the reference's, hashed)
     AND rule_id = (SELECT r.rule_id FROM traceloom_evidence_role_rule r
                     WHERE r.provider_scope = 'ascend' AND r.match_field = 'task_type'
                       AND r.match_kind = 'exact' AND r.pattern = task_type)) = 4
  AND (SELECT count(*) FROM traceloom_v_evidence_role_decision
   WHERE task_type IN ('NOTIFY_WAIT', 'NOTIFY_RECORD') AND final_role = 'protected_boundary') = 24;

-- The rule columns renamed to the reference's names (par37) keep their old names as aliases,
-- so SQL written against earlier analyses still runs: the NOTIFY_WAIT rule found by the old
-- names is the one found by the new.
SELECT 'the rule tables answer by their former column names too',
  (SELECT rule_id FROM traceloom_evidence_role_rule
    WHERE provider_scope = 'ascend' AND field = 'task_type' AND match_mode = 'exact'
      AND pattern = 'NOTIFY_WAIT')
  = (SELECT rule_id FROM traceloom_evidence_role_rule
      WHERE provider_scope = 'ascend' AND match_field = 'task_type' AND match_kind = 'exact'
        AND pattern = 'NOTIFY_WAIT')
  AND (SELECT count(*) FROM traceloom_symbol_normalization_rule
        WHERE field IS required_fields AND note IS description) > 0
  AND (SELECT count(*) FROM traceloom_symbol_normalization_rule
        WHERE field IS NOT required_fields OR note IS NOT description) = 0
  AND (SELECT count(*) FROM traceloom_event_reconciliation_rule
        WHERE source_manifest = 'bundled:rules/event_reconciliation.yaml'
          AND manifest_sha256 = rule_origin_sha256) = 3;

SELECT 'unknown KERNEL_AIVEC kernels stay unknown_anchor (unknown first)',
  (SELECT count(*) FROM traceloom_v_evidence_role_decision
   WHERE task_type = 'KERNEL_AIVEC' AND policy_role = 'unknown_anchor'
     AND structural_symbol = op_type) = 28
  AND (SELECT count(*) FROM traceloom_v_evidence_role_decision
   WHERE task_type = 'KERNEL_AIVEC' AND final_role = 'unknown_anchor'
     AND reason_code = 'unmatched_observation_unknown_first') = 4;

-- ------------------------------------------------------------------ bundled and file configs
SELECT 'analyze with the bundled deepseekv4 config',
  traceloom_analyze('fixtures/aclgraph_smoke/mono', '{"rules_config": "deepseekv4"}') LIKE 'traceloom:%';

SELECT 'bundled deepseekv4 extends the classification',
  (SELECT policy_id || ' ' || policy_version || ' ' || policy_mode || ' ' || rule_count
       FROM traceloom_evidence_role_policy)
      = 'traceloom.default.accelerator-task-projection+deepseekv4.hints 3+1 extend 69'
  AND (SELECT decision_order || ' ' || priority || ' ' || role FROM traceloom_evidence_role_rule
       WHERE rule_id = 'deepseekv4.tensormove-aux') = '1 110 auxiliary'
  AND (SELECT value FROM traceloom_metadata WHERE key = 'rules_config') = 'deepseekv4'
  AND (SELECT length(value) FROM traceloom_metadata WHERE key = 'rules_config_sha256') = 64;

SELECT 'analyze with a config file',
  traceloom_analyze('fixtures/aclgraph_smoke/mono',
                    '{"rules_config": "../tests/fixtures/rules/good_stages.yaml"}') LIKE 'traceloom:%';

SELECT 'a config file: extend, override and replace',
  (SELECT final_role || ' ' || rule_id || ' ' || cost_treatment
       FROM traceloom_v_evidence_role_decision WHERE op_type = 'GatherV2')
      = 'auxiliary test.gatherv2-aux retained_as_evidence'
  AND (SELECT count(*) FROM traceloom_event WHERE op_type = 'MatMulV2' AND symbol = 'Gemm') = 3
  AND (SELECT policy_mode FROM traceloom_event_reconciliation_policy) = 'replace'
  AND (SELECT count(*) FROM traceloom_event_reconciliation_rule) = 0
  AND (SELECT rule_origin FROM traceloom_symbol_normalization_rule
       WHERE rule_id = 'ascend.task.matmul-backend-variant') LIKE '%good_stages.yaml'
  AND (SELECT rule_origin FROM traceloom_symbol_normalization_rule
       WHERE rule_id = 'collective.communication.allreduce-alias') = 'bundled:rules/symbol_normalization.yaml'
  -- classification extended by the config: read from both files, the change named
  AND (SELECT input_sources FROM traceloom_evidence_role_policy)
      LIKE 'bundled:rules/classification.yaml,%good_stages.yaml'
  AND (SELECT config_overrides FROM traceloom_evidence_role_policy) LIKE 'extend:%good_stages.yaml'
  AND (SELECT effective_config_sha256 FROM traceloom_evidence_role_policy)
      = (SELECT value FROM traceloom_metadata WHERE key = 'rules_config_sha256');
