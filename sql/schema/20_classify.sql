-- Evidence roles, structural symbols and the rule policies behind them
-- (outputs.md section 2 "Evidence roles and symbols", recovery.md sections 2.1-2.5).
-- Written by tl_publish_classification (ext/classify/classify.c); where a replay unit was
-- promoted, sql/views/20_classify.sql adds each class's protected twin (class_id -2 - class_id,
-- -1 for the unit events: final_role protected_boundary, event_count 0; the decisions say
-- which events inside a unit's span read a twin).

-- @surface traceloom_evidence_role_class | one row per distinct decision (label and provider) | The evidence-role and symbol decision for each distinct observation identity: classification works per identity, and traceloom_event.role_class_id points every event at its row | SELECT final_role, rule_id, structural_symbol, event_count FROM traceloom_evidence_role_class ORDER BY event_count DESC
CREATE TABLE traceloom_evidence_role_class(
  class_id INTEGER PRIMARY KEY,               -- traceloom_event.role_class_id (< 0: a protected twin)
  source_domain TEXT NOT NULL,                -- task, communication (replay_unit: the unit events' twin)
  provider_scope TEXT NOT NULL,               -- ascend, cuda, hygon, any
  kind TEXT NOT NULL,                         -- the identity the decision is about:
  task_type TEXT,                             --   kind and name fields shared by its events
  op_name TEXT,
  op_type TEXT,
  compute_task_type TEXT,
  comm_name TEXT,
  raw_label TEXT,
  policy_role TEXT,                           -- anchor, auxiliary, transparent, unknown_anchor; NULL when the policy does not apply (communication ops)
  final_role TEXT NOT NULL,
  policy_structural_participation TEXT NOT NULL, -- identity, excluded, not_applicable
  effective_structural_participation TEXT NOT NULL,
  support_state TEXT NOT NULL,
  reason_code TEXT NOT NULL,                  -- matched_positive_rule, unmatched_observation_unknown_first, represented_by_communication_anchor
  rule_id TEXT NOT NULL,                      -- a policy rule, fallback.unknown_observation or system.communication_anchor
  policy_id TEXT,
  cost_treatment TEXT NOT NULL,               -- retained_for_attribution, retained_as_evidence
  observed_symbol TEXT,                       -- the selected identity field, NULL when none
  structural_symbol TEXT,
  symbol_outcome TEXT NOT NULL,               -- identity, canonicalized (recovery.md), conflict, unsupported
  symbol_reason_code TEXT NOT NULL,
  symbol_rule_id TEXT NOT NULL,
  symbol_candidate_rule_ids TEXT,             -- the rules at the winning priority, '|'-joined:
                                              -- a canonicalized symbol's one rule, a conflict's
                                              -- tied rules; NULL for identity
  event_count INTEGER NOT NULL
);

-- @surface traceloom_evidence_role_policy | one row (the effective classification policy) | Which evidence-role policy decided the roles: id, version, manifest SHA-256, how a rules config changed it, and its fallbacks | SELECT policy_id, policy_version, policy_mode, manifest_sha256, rule_count FROM traceloom_evidence_role_policy
CREATE TABLE traceloom_evidence_role_policy(
  policy_id TEXT NOT NULL,
  policy_version TEXT NOT NULL,
  manifest_schema TEXT,
  manifest_sha256 TEXT NOT NULL,
  policy_mode TEXT NOT NULL,                  -- builtin, env, extend, override, replace
  source_manifest TEXT NOT NULL,
  provider_scopes TEXT,
  fallback_identity_role TEXT,
  fallback_cost_treatment TEXT,
  fallback_context_treatment TEXT,
  fallback_provenance_treatment TEXT,
  missing_evidence_behavior TEXT,
  rule_count INTEGER NOT NULL,                -- the manifest's rules (the built-in rows not counted)
  -- the configuration audit: the format and files the policy was read from (the base manifest
  -- first, then any extension), the digest of the effective configuration (the rules config
  -- when one was given, else the policy's), the stage change a rules config or --extend-* flag
  -- applied (NULL for the bundled or environment manifest as read) and how such changes compose
  input_format TEXT NOT NULL,                 -- yaml
  input_sources TEXT NOT NULL,                -- comma-separated
  effective_config_sha256 TEXT NOT NULL,
  config_overrides TEXT,                      -- '<mode>:<file>', NULL when none
  config_override_contract TEXT NOT NULL
);

-- @surface traceloom_evidence_role_rule | one row per classification rule and built-in decision | The effective classification rules in decision order (priority, then declaration), where each came from and how many events each decided, and the built-in decisions every decision's rule_id may name (rule_class other than positive_policy) | SELECT decision_order, rule_id, rule_class, role, match_field, match_kind, pattern, decided_event_count FROM traceloom_evidence_role_rule ORDER BY decision_order
-- A manifest rule is rule_class positive_policy. The built-in decisions (ext/classify/classify.c,
-- tl_class_builtin_rules) follow: fallback.unknown_observation (a task no rule matched; tried
-- after every manifest rule: decision_order n + 1, declaration_order n) and the system
-- decisions by membership, made before any rule is tried (decision_order and declaration_order
-- 0): system.communication_anchor, system.event_reconciliation and system.protected_composite
-- (every event inside a promoted replay unit's span, decided by the views: its
-- decided_event_count is NULL, traceloom_v_evidence_role_summary counts those events). A
-- built-in row has priority 0, source_line 0 and no manifest (source_manifest NULL).
CREATE TABLE traceloom_evidence_role_rule(
  policy_id TEXT NOT NULL,
  policy_version TEXT NOT NULL,
  rule_id TEXT NOT NULL,
  rule_class TEXT NOT NULL,                   -- positive_policy (a manifest rule), fallback,
                                              -- provider_relation, protected_membership
  decision_order INTEGER NOT NULL,            -- 1-based position in which rules are tried
  priority INTEGER NOT NULL,
  declaration_order INTEGER NOT NULL,
  provider_scope TEXT NOT NULL,
  source_domain TEXT NOT NULL,                -- task; system for a decision by membership
  match_field TEXT NOT NULL,                  -- task_type, blob, operator; none, membership
  match_kind TEXT NOT NULL,                   -- exact, contains, exact_any; fallback, typed
  pattern TEXT NOT NULL,                      -- '' for a built-in decision
  role TEXT NOT NULL,
  required_fields TEXT NOT NULL,
  structural_participation TEXT NOT NULL,
  cost_treatment TEXT NOT NULL,
  context_treatment TEXT NOT NULL,
  provenance_treatment TEXT NOT NULL,
  missing_evidence_behavior TEXT NOT NULL,
  concrete_identity_behavior TEXT NOT NULL,
  note TEXT,
  source_manifest TEXT,                       -- the file (or bundled:rules/...) the rule came
  manifest_sha256 TEXT,                       -- from, and its digest; NULL for a built-in
  source_line INTEGER NOT NULL,               -- the rule's line in that file; 0 for a built-in
  decided_event_count INTEGER,                -- NULL for system.protected_composite (above)
  -- the names these two columns had before they took the reference's, kept for users' SQL
  field TEXT GENERATED ALWAYS AS (match_field) VIRTUAL,
  match_mode TEXT GENERATED ALWAYS AS (match_kind) VIRTUAL
);

-- @surface traceloom_symbol_normalization_rule | one row per symbol-normalization rule and built-in outcome | The effective structural-symbol rules: match mode, pattern, the symbol they give and their precedence, with manifest and origin, then the built-in outcomes (precedence < 0) every symbol decision's rule_id may name | SELECT rule_id, source_domain, match_mode, match_expression, structural_symbol, precedence FROM traceloom_symbol_normalization_rule ORDER BY precedence DESC, declaration_order
-- The built-in outcomes (ext/classify/symbols.c, tl_symbol_builtin_rules) come after the
-- manifest's rules: analysis.replay-composition-slot (a replay-unit anchor named by its slot),
-- fallback.identity-preserve (no rule matched), fallback.missing-observed-symbol and
-- fallback.rule-conflict; their origin is 'analysis' (no file: rule_origin_sha256 NULL, line 0)
-- and match_expression, structural_symbol and required_fields say in short what each takes
-- and gives.
CREATE TABLE traceloom_symbol_normalization_rule(
  policy_id TEXT NOT NULL,
  policy_version TEXT NOT NULL,
  rule_id TEXT NOT NULL,
  provider_scope TEXT NOT NULL,               -- ascend, cuda, hygon, provider-neutral
  match_mode TEXT NOT NULL,
  match_expression TEXT NOT NULL,
  structural_symbol TEXT NOT NULL,
  precedence INTEGER NOT NULL,                -- the rule's priority
  source_manifest TEXT NOT NULL,              -- the effective policy's manifest
  manifest_sha256 TEXT NOT NULL,              -- the effective policy's digest
  rule_origin TEXT NOT NULL,                  -- the file the rule itself came from
  rule_origin_sha256 TEXT,
  source_line INTEGER NOT NULL,
  source_domain TEXT NOT NULL,                -- task, communication
  required_fields TEXT NOT NULL,              -- the field a manifest rule reads (any_identity,
                                              -- selected, op_name, ...)
  description TEXT,                           -- the rule's note, in our words
  declaration_order INTEGER NOT NULL,
  -- the names these two columns had before they took the reference's, kept for users' SQL
  field TEXT GENERATED ALWAYS AS (required_fields) VIRTUAL,
  note TEXT GENERATED ALWAYS AS (description) VIRTUAL
);

-- @surface traceloom_event_reconciliation_policy | one row (the effective reconciliation policy) | Which event-reconciliation policy applies to duplicate observations of one device action | SELECT policy_id, policy_version, policy_mode, manifest_sha256, description FROM traceloom_event_reconciliation_policy
CREATE TABLE traceloom_event_reconciliation_policy(
  policy_id TEXT NOT NULL,
  policy_version TEXT NOT NULL,
  manifest_schema TEXT,
  manifest_sha256 TEXT NOT NULL,
  policy_mode TEXT NOT NULL,
  source_manifest TEXT NOT NULL,
  unmatched_behavior TEXT,
  rule_count INTEGER NOT NULL,
  description TEXT                            -- the manifest's metadata.description
);

-- @surface traceloom_event_reconciliation_rule | one row per reconciliation rule | The effective event-reconciliation rules (duplicate envelope/detail pairs, fused MC2 communication records) | SELECT rule_id, source_domain, task_type, task_op_type, min_contained_fraction FROM traceloom_event_reconciliation_rule
CREATE TABLE traceloom_event_reconciliation_rule(
  policy_id TEXT NOT NULL,
  policy_version TEXT NOT NULL,
  rule_id TEXT NOT NULL,
  priority INTEGER NOT NULL,
  provider_scope TEXT NOT NULL,
  source_domain TEXT NOT NULL,                -- task, task+communication_op
  task_type TEXT,
  generic_context_id INTEGER NOT NULL,        -- -1 = not applicable (the MC2 rule)
  concrete_context_id INTEGER NOT NULL,
  min_contained_fraction TEXT NOT NULL,       -- as written, e.g. 0.99
  task_op_type TEXT,
  communication_op_name_prefix TEXT,
  identity_policy TEXT NOT NULL,
  note TEXT,
  rule_origin TEXT NOT NULL,                  -- the file the rule came from, and its digest
  rule_origin_sha256 TEXT NOT NULL,
  source_line INTEGER NOT NULL,
  -- the names these two columns had before they took the reference's, kept for users' SQL
  source_manifest TEXT GENERATED ALWAYS AS (rule_origin) VIRTUAL,
  manifest_sha256 TEXT GENERATED ALWAYS AS (rule_origin_sha256) VIRTUAL
);
