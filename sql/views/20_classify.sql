-- Evidence-role decisions and symbol lineage (outputs.md section 2 "Evidence roles and
-- symbols"). Decisions are made per distinct identity (traceloom_evidence_role_class); these
-- views give them back per event through traceloom_event.role_class_id.

-- Whether an event lies inside a promoted replay unit's span (a protected interval of its
-- device that starts at or before it and ends at or after it): such an event is a protected
-- boundary, whatever its role class says. The one spelling of that test: the decisions, the
-- summary of roles, the structure rows' final role and the cost coverage read it as a column
-- of this view in place of the event core, which SQLite flattens into their query (a single
-- table), so the test is the same expression on the same row, evaluated only where read. It
-- looks the interval up by its span index: intervals starting within the longest interval's
-- length before the event's end. The constant guard skips every search on a profile without a
-- promoted unit.
-- @surface traceloom_event_protected_span | one row per event (the event core) | Each event with whether it lies inside a promoted replay unit's protected interval, which makes it a protected boundary whatever its role class | SELECT in_protected_span, count(*) FROM traceloom_event_protected_span GROUP BY 1
CREATE VIEW traceloom_event_protected_span AS
SELECT e.*, CASE WHEN (SELECT max(rowid) FROM traceloom_protected_interval) IS NOT NULL
       THEN EXISTS (SELECT 1 FROM traceloom_protected_interval p
                    WHERE p.db_idx = e.db_idx AND p.device_id = e.device_id
                      AND p.start_ns <= e.start_ns
                      AND p.start_ns >= e.start_ns + e.dur_ns - (SELECT
                          max(q.end_ns - q.start_ns) FROM traceloom_protected_interval q)
                      AND p.end_ns >= e.start_ns + e.dur_ns)
       ELSE 0 END AS in_protected_span
FROM traceloom_event_core e;

-- The example counts the events per role class first (an integer: a class has one final role
-- and rule), then per role and rule: a grouping on the two texts sorts every event's (a
-- million at a million kernels: 2.1 s CPU against 1.25).
-- @surface traceloom_evidence_role_decision | one row per event | The evidence role of every observation: the policy's role and rule, the final role, whether it takes part in structure, and its observed and structural symbols | SELECT final_role, rule_id, sum(events) AS events FROM (SELECT final_role, rule_id, count(*) AS events FROM traceloom_evidence_role_decision GROUP BY role_class_id) GROUP BY 1, 2 ORDER BY events DESC
-- Rule columns (class, priority, required fields, treatments) come from the effective rule;
-- the fallback and the system decisions are the built-in rows of traceloom_evidence_role_rule
-- (rule_class fallback, provider_relation, protected_membership: priority 0, the policy's
-- fallback treatments); a decision's declaration_order is its manifest rule's, 0 for those.
-- The decision view looks each class's rule up by id (a few dozen rules: a real index, so that
-- no plan builds one per query).
-- decision_id is the event's integer key (event_n; the reference writes role-decision-<n>,
-- docs/PARITY.md): the placement, issue and structure views carry the same integer, so every
-- join of theirs to a decision is a primary-key search. The event's shape and role class are
-- joined tables, not correlated subqueries (those reopen their cursors on every row, a walk of
-- every cursor the statement has open): a filter on final_role is then a key lookup checked as
-- each event is found, and the inner join to the shape lets SQLite check it before it expands
-- a placement to its occurrences (evidence-role-unknown). The shape is joined on +e.shape_id,
-- so no plan builds an index on the events by shape; the role class is a LEFT JOIN (every
-- event has one), which SQLite drops where no column of it is read (evidence-role-event's
-- parameter sorts every decision by time). event_id is +e.event_id: a query that looks one
-- event up by its text id scans the events once rather than indexing all of them.
CREATE INDEX traceloom_evidence_role_rule_id ON traceloom_evidence_role_rule(rule_id);
-- Protected boundaries (the reference's system.protected_composite): every event wholly inside
-- a promoted replay unit's span on its device (start >= the span's start, end <= its end,
-- traceloom_protected_interval), the unit's own event included, members or not, whatever its
-- role class said. Each role class has a protected twin, class_id -2 - class_id (and the unit
-- events, which no rule decides, the twin -1 of no class), its role protected_boundary, rule
-- system.protected_composite, participation atomic_boundary, its other columns (policy role
-- and participation, provider scope, symbols) the class's; an event's decision reads its
-- class or, inside a span, the twin. Twins exist only where a replay unit was promoted (the
-- INSERT's guard), one per class; a twin's event_count is 0 and the class's stays the events
-- the rules decided with it (which of them lie inside a span the decisions say: counting them
-- here read every event once more, +0.9 s CPU on a 1M-task replay analysis).
-- The decision picks the twin by key, so final_role stays a column of the class: a filter on it
-- is checked at the class's key lookup, as before (evidence-role-unknown). The span lookup is
-- guarded by max(rowid) of the spans (read once per statement: no search of the spans on a
-- profile without replay units) and reads the spans starting between the event's end less the
-- longest span and its start (a few, by the index on start_ns). The same lookup is spelled out
-- in the summary below and in the cost coverage and structure views (61_evidence_roles.sql):
-- each reads the event's columns from the row it already has; a shared view of it, read by
-- key, searched the event core a second time per event (tried: the plan tests that count the
-- reads of the event core fail), and SQLite has no expression to name.
CREATE INDEX traceloom_protected_interval_span
  ON traceloom_protected_interval(start_ns, end_ns, db_idx, device_id);
-- Each interval cites its evidence as the reference does: the registry's number of the input's
-- replay-unit table (a few rows each, by the registry's index on source_table).
UPDATE traceloom_protected_interval
SET evidence_source_ref_id = (
  SELECT r.source_ref_id FROM traceloom_source_ref r
  WHERE r.source_table IN ('ACLGRAPH_REPLAY_UNIT', 'CUDA_GRAPH_REPLAY_UNIT')
    AND r.db_idx = traceloom_protected_interval.db_idx);
INSERT INTO traceloom_evidence_role_class(class_id, source_domain, provider_scope, kind, task_type,
  op_name, op_type, compute_task_type, comm_name, raw_label, policy_role, final_role,
  policy_structural_participation, effective_structural_participation, support_state,
  reason_code, rule_id, policy_id, cost_treatment, observed_symbol, structural_symbol,
  symbol_outcome, symbol_reason_code, symbol_rule_id, symbol_candidate_rule_ids, event_count)
SELECT CASE WHEN c.class_id IS NULL THEN -1 ELSE -2 - c.class_id END,
       COALESCE(c.source_domain, 'replay_unit'), COALESCE(c.provider_scope, 'any'),
       COALESCE(c.kind, 'replay_unit'), c.task_type, c.op_name, c.op_type, c.compute_task_type,
       c.comm_name, c.raw_label, c.policy_role, 'protected_boundary',
       COALESCE(c.policy_structural_participation, 'not_applicable'), 'atomic_boundary',
       'supported', 'provider_composite_membership', 'system.protected_composite',
       COALESCE(c.policy_id, (SELECT p.policy_id FROM traceloom_evidence_role_policy p)),
       'retained_for_attribution', c.observed_symbol, c.structural_symbol,
       COALESCE(c.symbol_outcome, 'identity'), COALESCE(c.symbol_reason_code, 'analysis_event'),
       COALESCE(c.symbol_rule_id, 'none'), c.symbol_candidate_rule_ids, 0
FROM (SELECT NULL AS class_id UNION ALL SELECT class_id FROM traceloom_evidence_role_class) k
LEFT JOIN traceloom_evidence_role_class c ON c.class_id = k.class_id
WHERE EXISTS (SELECT 1 FROM traceloom_protected_interval);
CREATE VIEW traceloom_evidence_role_decision AS
SELECT e.event_n AS decision_id, +e.event_id AS event_id, e.db_idx,
       e.device_id, c.policy_role,
       c.final_role,
       c.policy_structural_participation,
       c.effective_structural_participation,
       -- auxiliary work with no later anchor on its device is retained but placed nowhere
       CASE WHEN c.final_role IN ('auxiliary', 'transparent') AND EXISTS (
              SELECT 1 FROM traceloom_aux_link l
               WHERE l.aux_event_n = e.event_n AND l.link_type = 'retained_unplaced')
            THEN 'retained_unplaced' ELSE c.support_state END AS support_state,
       CASE WHEN c.final_role IN ('auxiliary', 'transparent') AND EXISTS (
              SELECT 1 FROM traceloom_aux_link l
               WHERE l.aux_event_n = e.event_n AND l.link_type = 'retained_unplaced')
            THEN 'omitted_event_without_auxiliary_link' ELSE c.reason_code END AS reason_code,
       c.rule_id, h.source_table, CAST(COALESCE(h.source_rowid_offset + e.event_n, (SELECT sk.source_key FROM traceloom_event_source_key sk WHERE sk.event_n = e.event_n)) AS TEXT) AS source_key,
       -- the domain of the classification rule that decided: a communication op is decided by
       -- no manifest rule (system.communication_anchor) and has none, as in the reference (its
       -- symbol domain, communication, stays in traceloom_evidence_role_class)
       h.source_id, CASE WHEN c.source_domain = 'task' THEN 'task' END AS source_domain,
       c.provider_scope,
       c.cost_treatment,
       COALESCE(c.policy_id, (SELECT p.policy_id FROM traceloom_evidence_role_policy p)) AS policy_id,
       c.observed_symbol, c.structural_symbol, c.symbol_outcome,
       c.symbol_reason_code, c.symbol_rule_id, c.symbol_candidate_rule_ids,
       c.class_id AS role_class_id, e.task_id,
       -- the source registry's number of the event's table (traceloom_source_ref, by key)
       (SELECT r.source_ref_id FROM traceloom_source_ref r
        WHERE r.source_table = h.source_table AND r.db_idx = e.db_idx
          AND (r.source_id = h.source_id OR r.source_id IS NULL)) AS source_ref_id,
       c.provider_scope AS input_provider_scope,
       (SELECT p.policy_version FROM traceloom_evidence_role_policy p) AS policy_version,
       (SELECT p.manifest_sha256 FROM traceloom_evidence_role_policy p) AS manifest_sha256,
       CASE WHEN c.class_id < 0 THEN 'protected_membership'
            WHEN c.rule_id LIKE 'fallback.%' THEN 'fallback'
            WHEN c.rule_id LIKE 'system.%' THEN 'provider_relation'
            ELSE 'positive_policy' END AS rule_class,
       c.rule_id NOT LIKE 'fallback.%' AS matched_rule,
       COALESCE((SELECT r.priority FROM traceloom_evidence_role_rule r WHERE r.rule_id = c.rule_id), 0)
         AS priority,
       COALESCE((SELECT r.declaration_order FROM traceloom_evidence_role_rule r
                 WHERE r.rule_id = c.rule_id AND r.rule_class = 'positive_policy'), 0)
         AS declaration_order,
       CASE WHEN c.source_domain IN ('communication', 'replay_unit')
            THEN 'provider_scope,source_domain'
            ELSE 'blob,operator,provider_scope,source_domain,task_type' END AS available_fields,
       CASE WHEN c.class_id < 0 THEN 'replay_unit_membership'
            WHEN c.rule_id = 'system.event_reconciliation' THEN 'event_reconciliation_membership'
            WHEN c.rule_id LIKE 'system.%' THEN 'communication_membership'
            ELSE COALESCE((SELECT r.required_fields FROM traceloom_evidence_role_rule r
                           WHERE r.rule_id = c.rule_id), '') END AS required_fields,
       '' AS missing_required_fields, '' AS missing_capability_rule_ids,
       COALESCE((SELECT r.context_treatment FROM traceloom_evidence_role_rule r
                 WHERE r.rule_id = c.rule_id),
                (SELECT p.fallback_context_treatment FROM traceloom_evidence_role_policy p),
                'retained') AS context_treatment,
       COALESCE((SELECT r.provenance_treatment FROM traceloom_evidence_role_rule r
                 WHERE r.rule_id = c.rule_id),
                (SELECT p.fallback_provenance_treatment FROM traceloom_evidence_role_policy p),
                'retained') AS provenance_treatment,
       e.start_ns, e.start_ns + e.dur_ns AS end_ns, e.dur_ns AS duration_ns, e.event_n
FROM traceloom_event_protected_span e
JOIN traceloom_event_shape h ON h.shape_id = +e.shape_id
-- (the class, or inside a promoted replay unit's span its protected twin)
LEFT JOIN traceloom_evidence_role_class c ON c.class_id = CASE
  WHEN e.in_protected_span
  THEN -2 - COALESCE(h.role_class_id, -1) ELSE h.role_class_id END
-- the events (a promoted launch anchor's row, event_n < 0, is none: traceloom_event) the
-- policy decides, and a replay unit's event, which no rule decides (no role class): it is the
-- protected boundary of its own span (the twin -1)
WHERE e.event_n >= 0
  AND (h.role_class_id IS NOT NULL
       OR h.source_table IN ('ACLGRAPH_REPLAY_UNIT', 'CUDA_GRAPH_REPLAY_UNIT'));

-- @surface traceloom_v_evidence_role_decision | one row per event | Each observation's role decision next to its timing, names and source file: what the policy decided, by which rule, and the symbol it carries | SELECT event_id, task_type, op_type, final_role, rule_id, structural_symbol FROM traceloom_v_evidence_role_decision ORDER BY db_idx, device_id, start_ns LIMIT 20
CREATE VIEW traceloom_v_evidence_role_decision AS
SELECT d.*, e.stream_id, e.dur_us, e.kind, e.symbol, e.label, e.raw_label, e.task_type,
       e.op_name, e.op_type, e.compute_task_type, e.comm_name, 0 AS source_ordinal,
       'primary' AS source_role,
       (SELECT r.source_path FROM traceloom_raw_source_database r WHERE r.source_id = d.source_id)
         AS source_path,
       -- the source row's locator as the reference writes it: no raw row is copied (the row
       -- itself is traceloom_v_event_source_locator's)
       json_object('source_ref_id', d.source_ref_id,
                   'source_path', (SELECT r.source_path FROM traceloom_raw_source_database r
                                   WHERE r.source_id = d.source_id)) AS source_raw_json
FROM traceloom_evidence_role_decision d
JOIN traceloom_event e ON e.event_n = d.event_n;

-- @surface traceloom_v_evidence_role_summary | one row per (db_idx, device_id, final role, rule) | How many events (and how much raw device time) each rule kept as anchors or set aside as auxiliary or transparent evidence | SELECT device_id, final_role, rule_id, event_count, total_us FROM traceloom_v_evidence_role_summary ORDER BY event_count DESC
CREATE VIEW traceloom_v_evidence_role_summary AS
-- counted per event shape first (integers: the count and the exact nanosecond sum), then per
-- role class, whose text is read once per shape. The grouping sorts every event; its key is one
-- integer where it can be (a 16-bit input index, a device id in [0, 2^16) and a 32-bit shape id
-- packed), else the three as text (never equal to an integer key), so each group is one
-- (input, device, shape) and its bare columns are that group's: a sorter key of one value
-- sorts in about half the time of three columns (0.5 s against 0.95 s CPU at a million events).
-- The events inside a promoted replay unit's span (the decisions' span lookup) move from their
-- class to protected_boundary: a negative and a positive part per (input, device, shape), read
-- only where a unit was promoted (the constant guard, checked once before the scan); a unit's
-- own event (no role class) is counted there too.
SELECT g.db_idx, g.device_id, COALESCE(c.source_domain, 'replay_unit') AS source_domain,
       CASE WHEN g.protected THEN 'protected_boundary' ELSE c.final_role END AS final_role,
       CASE WHEN g.protected THEN 'atomic_boundary' ELSE c.effective_structural_participation END
         AS effective_structural_participation,
       CASE WHEN g.protected THEN 'system.protected_composite' ELSE c.rule_id END AS rule_id,
       CASE WHEN g.protected THEN 'provider_composite_membership' ELSE c.reason_code END
         AS reason_code,
       CASE WHEN g.protected THEN 'retained_for_attribution' ELSE c.cost_treatment END
         AS cost_treatment,
       SUM(g.n) AS event_count, ROUND(SUM(g.dur_ns) / 1000.0, 3) AS total_us
FROM (SELECT e.db_idx, e.device_id, e.shape_id, 0 AS protected, count(*) AS n,
             SUM(e.dur_ns) AS dur_ns
      FROM traceloom_event_core e
      WHERE e.event_n >= 0
      GROUP BY CASE WHEN e.device_id BETWEEN 0 AND 65535
                    THEN e.db_idx << 48 | e.device_id << 32 | e.shape_id
                    ELSE e.db_idx || ':' || e.device_id || ':' || e.shape_id END
      UNION ALL
      SELECT e.db_idx, e.device_id, e.shape_id, x.protected,
             CASE WHEN x.protected THEN count(*) ELSE -count(*) END,
             CASE WHEN x.protected THEN SUM(e.dur_ns) ELSE -SUM(e.dur_ns) END
      FROM traceloom_event_protected_span e
      CROSS JOIN (SELECT 0 AS protected UNION ALL SELECT 1) x
      WHERE (SELECT max(rowid) FROM traceloom_protected_interval) IS NOT NULL
        AND e.event_n >= 0 AND e.in_protected_span
      GROUP BY e.db_idx, e.device_id, e.shape_id, x.protected) g
CROSS JOIN traceloom_event_shape s ON s.shape_id = g.shape_id
LEFT JOIN traceloom_evidence_role_class c ON c.class_id = s.role_class_id
WHERE c.class_id IS NOT NULL OR g.protected
GROUP BY g.db_idx, g.device_id, 3, 4, 5, 6, 7, 8
HAVING SUM(g.n) > 0;

-- @surface traceloom_v_symbol_normalization | one row per (db_idx, device_id, observed symbol, structural symbol) | Which observed names were folded into which structural symbols, by which rule, and conflicts between equal-precedence rules | SELECT observed_symbol, structural_symbol, outcome, rule_id, event_count FROM traceloom_v_symbol_normalization WHERE outcome <> 'identity'
CREATE VIEW traceloom_v_symbol_normalization AS
-- counted per event shape first, then per role class (read once per shape)
SELECT g.db_idx, g.device_id, c.source_domain, c.observed_symbol, c.structural_symbol,
       c.symbol_outcome AS outcome, c.symbol_reason_code AS reason_code,
       c.symbol_rule_id AS rule_id, c.symbol_candidate_rule_ids AS candidate_rule_ids,
       SUM(g.n) AS event_count
-- (grouped on one packed integer key where it can be, as traceloom_v_evidence_role_summary)
FROM (SELECT e.db_idx, e.device_id, e.shape_id, count(*) AS n
      FROM traceloom_event_core e
      WHERE e.event_n >= 0
      GROUP BY CASE WHEN e.device_id BETWEEN 0 AND 65535
                    THEN e.db_idx << 48 | e.device_id << 32 | e.shape_id
                    ELSE e.db_idx || ':' || e.device_id || ':' || e.shape_id END) g
CROSS JOIN traceloom_event_shape s ON s.shape_id = g.shape_id
CROSS JOIN traceloom_evidence_role_class c ON c.class_id = s.role_class_id
GROUP BY g.db_idx, g.device_id, c.source_domain, c.observed_symbol, c.structural_symbol,
         c.symbol_outcome, c.symbol_reason_code, c.symbol_rule_id, c.symbol_candidate_rule_ids;
