-- Evidence roles placed in the structure, their issues and the device time each role covers,
-- and the structural-symbol lineage of every anchor placement (docs/REPORTS.md "Evidence
-- roles"). Every observation is placed at least as a normalized event; what else holds it is
-- a relation already published (anchors, auxiliary links, exact replays).

-- Auxiliary links by their event: the placement of one observation and the retained_unplaced
-- state of its decision look links up by aux_event_n.
CREATE INDEX traceloom_aux_link_event ON traceloom_aux_link(aux_event_n);
-- ... and by their anchor (a node's auxiliary costs, sql/views/70_parity.sql).
CREATE INDEX traceloom_aux_link_anchor ON traceloom_aux_link(anchor_n);
-- Launches by their replay unit, control events by their launch, protected intervals by their
-- replay unit: the placement and structure views go from a launch to the events of its unit (a
-- launch by its number is the primary key; by its anchor, traceloom_graph_launch_anchor_n of
-- sql/views/70_parity.sql). A launch's replay_unit_id is the unit's integer; a protected
-- interval names its unit as text (replay-unit-<n>, as the reference) and by that integer
-- (replay_unit_n), which the joins use.
CREATE INDEX traceloom_graph_launch_unit ON traceloom_graph_launch(replay_unit_id);
CREATE INDEX traceloom_graph_launch_control_launch ON traceloom_graph_launch_control(launch_n);
CREATE INDEX traceloom_protected_interval_unit ON traceloom_protected_interval(replay_unit_n);

-- @surface traceloom_evidence_role_placement | one place where an observation landed | Each decision's placements in order: 0 the normalized event, then the anchor it is or is represented by (a communication task folds into its communication-op anchor), the auxiliary link to its following anchor, the exact replay unit and protected interval that own it, the exact graph body member it is | SELECT placement_kind, reason_code, count(*) FROM traceloom_evidence_role_placement GROUP BY 1, 2
-- decision_id is the event's integer key (event_n; the reference's text role-decision-<n>,
-- docs/PARITY.md), so a join to the decisions is a primary-key search of the event core. The
-- arms are a union, which SQLite builds whole on the right of a LEFT JOIN (evidence-role-event)
-- and wherever a join cannot flatten it (its arms' column affinities differ): 2.25M rows at a
-- million events, the normalized-event arm alone one per event. decision_id is exposed as
-- +event_n, so SQLite reads that build once for the one decision of evidence-role-event
-- rather than indexing it (an automatic index on 2.25M rows costs more than the read). The
-- union holds only the event, the arm's number and what differs per row (an anchor number, an
-- aux order, the stored text ids of links and intervals, a replay unit's number); the outer select,
-- which SQLite flattens into the query, turns the arm into the constant columns and the ids
-- for the rows the query keeps. A constant filter on a constant column
-- (placement_kind = 'auxiliary_link') is still pushed into every arm, which it then skips.
-- Arms: 0 normalized event, 1 direct anchor, 2 represented by a communication anchor,
-- 3 auxiliary link, 4 and 5 replay unit (body member or the unit's own event, launch
-- control), 6 and 7 protected interval (the same), 8 graph body member.
CREATE VIEW traceloom_evidence_role_placement AS
SELECT +p.event_n AS decision_id,
       -- a reconciled pair's canonical anchor comes after its reconciliation membership
       CASE WHEN p.arm = 0 THEN 0 WHEN p.arm IN (6, 7) THEN 2 WHEN p.arm = 8 THEN 3
            WHEN p.arm = 1 AND p.ref_text IS NOT NULL THEN 2 ELSE 1 END
         AS placement_order,
       CASE p.arm WHEN 0 THEN 'normalized_event' WHEN 1 THEN 'anchor' WHEN 2 THEN 'anchor'
                  WHEN 3 THEN 'auxiliary_link' WHEN 4 THEN 'replay_unit'
                  WHEN 5 THEN 'replay_unit' WHEN 6 THEN 'protected_interval'
                  WHEN 7 THEN 'protected_interval' WHEN 9 THEN 'reconciliation_member'
                  ELSE 'graph_body_member' END
         AS placement_kind,
       CASE p.arm WHEN 0 THEN 'event-' || p.event_n WHEN 1 THEN 'anchor-' || p.ref_n
                  WHEN 2 THEN 'anchor-' || p.ref_n WHEN 3 THEN p.ref_text || '/aux-' || p.ref_n
                  WHEN 9 THEN 'reconciliation-decision-' || p.ref_n
                  WHEN 4 THEN 'replay-unit-' || p.ref_n WHEN 5 THEN 'replay-unit-' || p.ref_n
                  ELSE p.ref_text END AS placement_id,
       p.owner_id,
       CASE p.arm WHEN 0 THEN 'traceloom_event' WHEN 1 THEN 'traceloom_anchor'
                  WHEN 2 THEN 'traceloom_anchor' WHEN 3 THEN 'traceloom_aux_link'
                  WHEN 4 THEN 'traceloom_graph_launch' WHEN 5 THEN 'traceloom_graph_launch'
                  WHEN 6 THEN 'traceloom_protected_interval'
                  WHEN 7 THEN 'traceloom_protected_interval'
                  WHEN 9 THEN 'traceloom_event_reconciliation_member'
                  ELSE 'traceloom_graph_body_member' END AS relation_name,
       'supported' AS support_state,
       CASE p.arm WHEN 0 THEN 'normalized_event_retained' WHEN 1 THEN 'direct_event_anchor'
                  WHEN 2 THEN 'represented_by_communication_anchor'
                  WHEN 3 THEN 'retained_between_anchor_evidence'
                  WHEN 4 THEN 'exact_composite_membership'
                  WHEN 5 THEN 'exact_composite_membership'
                  WHEN 6 THEN 'generic_discovery_no_cross_boundary'
                  WHEN 7 THEN 'generic_discovery_no_cross_boundary'
                  WHEN 9 THEN CASE p.ref_text WHEN 0 THEN 'timing_envelope_for_canonical_anchor'
                                              WHEN 1 THEN 'semantic_detail_for_canonical_anchor'
                                              ELSE 'provider_detail_for_canonical_anchor' END
                  ELSE 'exact_graph_body_membership' END AS reason_code,
       p.event_n
FROM (
SELECT e.event_n, 0 AS arm, NULL AS ref_n,
       NULL AS ref_text, NULL AS owner_id
FROM traceloom_event_core e
WHERE e.event_n >= 0
UNION ALL
SELECT a.event_n, 1, a.anchor_n,
       CASE WHEN (SELECT max(anchor_n) FROM traceloom_anchor_extent_core) IS NOT NULL THEN (SELECT 1 FROM traceloom_anchor_extent_core x WHERE x.anchor_n = a.anchor_n) END, NULL
FROM traceloom_anchor_core a
-- (an event's: a promoted launch anchor, event_n < 0, has none to place)
WHERE a.event_n >= 0
UNION ALL
SELECT r.event_n, 2, a.anchor_n, NULL, NULL
FROM traceloom_represented_event r
JOIN traceloom_anchor_core a ON a.anchor_n = r.anchor_n
UNION ALL
SELECT l.aux_event_n, 3, l.aux_order, l.anchor_id,
       l.anchor_id
FROM traceloom_aux_link l
WHERE l.link_type = 'prelude'
UNION ALL
SELECT m.event_n, 4, l.replay_unit_id, NULL, NULL
FROM traceloom_graph_body_member m
JOIN traceloom_graph_launch l ON l.launch_n = m.launch_n
WHERE l.replay_unit_id IS NOT NULL
UNION ALL
SELECT c.event_n, 5, l.replay_unit_id, NULL, NULL
FROM traceloom_graph_launch_control c
JOIN traceloom_graph_launch l ON l.launch_n = c.launch_n
WHERE l.replay_unit_id IS NOT NULL
UNION ALL
SELECT m.event_n, 6, NULL, p.protected_interval_id,
       p.replay_unit_id
FROM traceloom_graph_body_member m
JOIN traceloom_graph_launch l ON l.launch_n = m.launch_n
JOIN traceloom_protected_interval p ON p.replay_unit_n = l.replay_unit_id
 AND p.db_idx = l.db_idx AND p.device_id = l.device_id
UNION ALL
SELECT c.event_n, 7, NULL, p.protected_interval_id,
       p.replay_unit_id
FROM traceloom_graph_launch_control c
JOIN traceloom_graph_launch l ON l.launch_n = c.launch_n
JOIN traceloom_protected_interval p ON p.replay_unit_n = l.replay_unit_id
 AND p.db_idx = l.db_idx AND p.device_id = l.device_id
UNION ALL
-- a promoted unit's own event is a member of its unit and of the unit's protected interval
-- (as the reference places it), as the unit's envelope names it (graph_event_idx: the unit)
SELECT g.event_n, 4, g.graph_event_idx, NULL, NULL
FROM traceloom_cuda_graph_replay_core g
WHERE g.graph_kind IN ('aclgraph_graph_replay', 'cuda_graph_replay')
UNION ALL
SELECT g.event_n, 6, NULL, p.protected_interval_id,
       p.replay_unit_id
FROM traceloom_cuda_graph_replay_core g
JOIN traceloom_protected_interval p ON p.replay_unit_n = g.graph_event_idx
 AND p.db_idx = g.db_idx AND p.device_id = g.device_id
WHERE g.graph_kind IN ('aclgraph_graph_replay', 'cuda_graph_replay')
UNION ALL
SELECT m.event_n, 8, NULL, m.member_id, NULL
FROM traceloom_graph_body_member m
UNION ALL
-- the members of a reconciled pair, owned by its canonical anchor (ref_text: the member role)
SELECT m.event_n, 9, m.decision_n, m.member_role, 'anchor-' || d.canonical_anchor_n
FROM traceloom_event_reconciliation_member_core m
JOIN traceloom_event_reconciliation_decision_core d ON d.decision_n = m.decision_n
WHERE d.status = 0 AND d.canonical_anchor_n IS NOT NULL) p;

-- @surface traceloom_v_evidence_role_placement | one place where an observation landed, with its decision | Placements next to the decision that produced them: event, role, policy, rule, support, retained duration and source row | SELECT event_id, placement_order, placement_kind, placement_id, owner_id, final_role, rule_id, duration_ns FROM traceloom_v_evidence_role_placement WHERE event_n = 0 ORDER BY placement_order
-- The example looks one observation up (SQLite pushes event_n = 0 into each arm of the union);
-- counts over all placements are traceloom_evidence_role_placement's example: grouping the
-- placements joined to their decisions sorts 2.3M rows at a million events (3 s).
CREATE VIEW traceloom_v_evidence_role_placement AS
SELECT d.db_idx, d.device_id, d.decision_id, d.event_id, d.input_provider_scope, d.policy_id,
       d.rule_id, d.rule_class, d.policy_role, d.final_role,
       d.support_state AS decision_support_state, d.reason_code AS decision_reason_code,
       d.duration_ns, p.placement_order, p.placement_kind, p.placement_id, p.owner_id,
       p.relation_name, p.support_state AS placement_support_state,
       p.reason_code AS placement_reason_code, d.source_table, d.source_key, d.start_ns, d.event_n
FROM traceloom_evidence_role_placement p
JOIN traceloom_evidence_role_decision d ON d.event_n = p.event_n;

-- @surface traceloom_evidence_role_issue | one issue found while placing an observation | Observations retained but placed nowhere in the structure (omitted_event_without_auxiliary_link: auxiliary work with no later anchor on its device) | SELECT code, support_state, count(*) FROM traceloom_evidence_role_issue GROUP BY 1, 2
CREATE VIEW traceloom_evidence_role_issue AS
SELECT 'role-issue-' || (ROW_NUMBER() OVER (ORDER BY l.aux_event_n) - 1)
         AS issue_id,
       l.aux_event_n AS decision_id,
       'omitted_event_without_auxiliary_link' AS code, 'retained_unplaced' AS support_state,
       l.aux_event_id AS related_ids
FROM traceloom_aux_link l
WHERE l.link_type = 'retained_unplaced';

-- @surface traceloom_v_evidence_role_structure | one (decision, placement, node occurrence) | Where each placed observation sits in the tree: the node occurrences covering its anchor, the anchor its auxiliary link feeds, its launch anchor (replay units, protected intervals, graph body members) | SELECT event_id, placement_kind, placement_id, final_role, coverage_kind FROM traceloom_v_evidence_role_structure WHERE node_id = 'node-N002' AND occurrence_idx = 1 ORDER BY event_id
-- Where a placement sits: the occurrences covering its anchor are the anchor's atom occurrence
-- (traceloom_anchor_core.occurrence_n, carried by each arm of `placed`) and that occurrence's
-- ancestors (parent_n up to the root), so every step from a placement to its occurrences is a
-- key. The ancestors come from `enclosing`, the closure of the occurrences with children (Seq
-- and Repeat: about 11k occurrences and 34k rows at a million anchors, built in about 0.05 s
-- per use): for each such occurrence a row with no ancestor, which stands for the atom
-- occurrence below it, then the occurrence itself and each of its ancestors, each row carrying
-- what the view shows of its occurrence (its node id, formatted here once per closure row, and
-- its occurrence index; next_n is the occurrence the next step reads). An atom with no parent
-- (a tree of one anchor) finds no closure row and the LEFT JOIN keeps it alone.
-- Finding the occurrences that cover an anchor by their anchor ranges instead would read every
-- occurrence before it.
-- decision_id is the event's integer key, exposed as +event_n. Where the view is joined to the
-- decisions (evidence-role-unknown), SQLite reads the placements' union once per use (a
-- co-routine, or one build when it is not the outer loop), finds each placement's decision by
-- the event's primary key and its role class by key, and expands to the occurrences only the
-- placements the query keeps (the union's arms' column affinities differ, so it is never
-- flattened into that join: flattened, SQLite orders each arm's lookups worse). On the right of
-- a LEFT JOIN (evidence-role-event), where SQLite flattens no join, `covered` is what SQLite
-- builds whole (2.8M rows): it holds the event, the placement kind as a number, the anchor or
-- the stored text id, the occurrence index and either the ancestor's node id (the closure's
-- text) or, on the atom's own row, the atom's node device and number (no 'self' flag: an atom's
-- row is the one with no ancestor node id), and the unary plus keeps SQLite from indexing it
-- (read once per placement of the query's one decision). The outer select, which SQLite
-- flattens into the query, computes for the rows kept the kind, the event and placement ids,
-- an atom's node id (the printf of traceloom_node_core.node_id), the coverage (self: an atom
-- occurrence) and the final role by event key (event -> shape -> role class, as
-- traceloom_evidence_role_decision reads it). The covering occurrence's columns come with the
-- atom and closure rows already read, not from a subquery per row: a filter on node_id and
-- occurrence_idx (the example) is then a comparison per placement and occurrence, with a
-- printf only on the atom's own row (2.8M rows at a million anchors, 1.1M of them atoms: the
-- printf per ancestor row was about a quarter of the example's work; 2.6 s CPU with two
-- correlated lookups of the occurrence per row, 1.6 s with a printf per row, about 1.2 s now).
-- Kinds: 1 anchor, 2 auxiliary link, 3 replay unit, 4 protected interval, 5 graph body member.
-- The represented tasks are read from their runs here, not through traceloom_represented_event:
-- without a hint SQLite takes a range over the event key for 1/64 of the events (17k tasks per
-- run at a million tasks: the placements then look like billions of rows, and the query joined
-- to the decisions scans them once per event shape whose class passes its role filter: 4.7 s
-- for evidence-role-unknown). The run's two bounds stay plain, so SQLite searches the events
-- between both at any size, and a third condition, true on every row of the range, carries the
-- likelihood that brings the estimate back to a few tasks per run (0.0002 of 1/64 of 1.1M
-- events: about 3.5, the bench profile's run length is 3); the placements are then read once
-- as the outer loop and each one's event, shape and role class found by key (about 1.6 s).
-- The example (what sits at one node occurrence) walks every placement to its occurrences and
-- keeps that one's: reaching the occurrence first and its anchors by their range would serve
-- it by key, but then the decisions' role filter of evidence-role-unknown is checked per
-- (placement, occurrence) pair rather than per placement (measured: 4 s for that query).
-- The view is split in two: traceloom_evidence_role_structure_rows, the rows in integers and
-- stored text ids (the join that builds them), and traceloom_v_evidence_role_structure, the
-- columns read from them. With the analyze option evidence_role_structure the rows are stored
-- once (sql/options/evidence_role_structure_1_table.sql) and the rows view reads that table:
-- then the structure view is one table, which SQLite flattens also on the right of a LEFT JOIN
-- and searches by decision (evidence-role-event 0.9 s instead of 2.1 at a million tasks).
-- @surface traceloom_evidence_role_structure_rows | one (decision, placement, covering occurrence) | The rows of traceloom_v_evidence_role_structure before naming: the decision (event_n), the placement kind as a number and its anchor number or text id, the covering occurrence's node (device and number; the formatted id for an ancestor) and occurrence index; computed, or with the analyze option evidence_role_structure read from traceloom_evidence_role_structure_core | SELECT kind, count(*) FROM traceloom_evidence_role_structure_rows WHERE decision_n < 1000 GROUP BY 1
CREATE VIEW traceloom_evidence_role_structure_rows AS
WITH RECURSIVE enclosing(occurrence_n, node_device, node_local, node_id, occurrence_idx, next_n) AS (
  SELECT o.occurrence_n, NULL, NULL, NULL, NULL, o.occurrence_n
  FROM traceloom_node_core k
  CROSS JOIN traceloom_position_occurrence_core o
    ON o.occurrence_n >= k.first_occurrence_n
   AND o.occurrence_n < k.first_occurrence_n + k.occurrence_count
  WHERE k.node_kind <> 1
  UNION ALL
  SELECT up.occurrence_n, a.node_device, a.node_local,
         printf('node-%sN%03d', COALESCE('d' || a.node_device || '-', ''), a.node_local),
         a.occurrence_idx, a.parent_n
  FROM enclosing up
  CROSS JOIN traceloom_position_occurrence_core a ON a.occurrence_n = up.next_n
)
SELECT +covered.event_n AS decision_n, covered.kind, covered.ref, covered.ancestor_node_id,
       covered.node_device, covered.node_local, covered.occurrence_idx
FROM (
SELECT placed.event_n, placed.kind, placed.ref, enc.node_id AS ancestor_node_id,
       CASE WHEN enc.node_id IS NULL THEN atom.node_device ELSE enc.node_device END AS node_device,
       COALESCE(enc.node_local, atom.node_local) AS node_local,
       COALESCE(enc.occurrence_idx, atom.occurrence_idx) AS occurrence_idx
FROM (
SELECT a.event_n, 1 AS kind, a.anchor_n AS ref, a.occurrence_n AS atom_n
FROM traceloom_anchor_core a
WHERE a.event_n >= 0
UNION ALL
SELECT re.event_n, 1, r.anchor_n, ca.occurrence_n
FROM traceloom_represented_event_run_core r
CROSS JOIN traceloom_anchor_core ca ON ca.anchor_n = r.anchor_n
CROSS JOIN traceloom_event_core re ON re.event_n >= r.first_event_n
 AND re.event_n <= r.last_event_n AND likelihood(re.event_n - r.first_event_n >= 0, 0.0002)
UNION ALL
SELECT l.aux_event_n, 2, l.anchor_id || '/aux-' || l.aux_order, ca.occurrence_n
FROM traceloom_aux_link l
CROSS JOIN traceloom_anchor_core ca ON ca.anchor_n = l.anchor_n
WHERE l.link_type = 'prelude'
UNION ALL
SELECT m.event_n, 3, 'replay-unit-' || l.replay_unit_id, ca.occurrence_n
FROM traceloom_graph_launch l
CROSS JOIN traceloom_anchor_core ca ON ca.anchor_n = l.anchor_n
CROSS JOIN traceloom_graph_launch u ON u.replay_unit_id = l.replay_unit_id
CROSS JOIN traceloom_graph_body_member m ON m.launch_n = u.launch_n
WHERE l.anchor_n IS NOT NULL
UNION ALL
SELECT g.event_n, 3, 'replay-unit-' || l.replay_unit_id, ca.occurrence_n
FROM traceloom_graph_launch l
CROSS JOIN traceloom_anchor_core ca ON ca.anchor_n = l.anchor_n
CROSS JOIN traceloom_graph_launch u ON u.replay_unit_id = l.replay_unit_id
CROSS JOIN traceloom_graph_launch_control g ON g.launch_n = u.launch_n
WHERE l.anchor_n IS NOT NULL
UNION ALL
SELECT m.event_n, 4, p.protected_interval_id, ca.occurrence_n
FROM traceloom_graph_launch l
CROSS JOIN traceloom_anchor_core ca ON ca.anchor_n = l.anchor_n
CROSS JOIN traceloom_graph_launch u ON u.replay_unit_id = l.replay_unit_id
CROSS JOIN traceloom_protected_interval p ON p.replay_unit_n = l.replay_unit_id
 AND p.db_idx = l.db_idx AND p.device_id = l.device_id
CROSS JOIN traceloom_graph_body_member m ON m.launch_n = u.launch_n
WHERE l.anchor_n IS NOT NULL
UNION ALL
SELECT g.event_n, 4, p.protected_interval_id, ca.occurrence_n
FROM traceloom_graph_launch l
CROSS JOIN traceloom_anchor_core ca ON ca.anchor_n = l.anchor_n
CROSS JOIN traceloom_graph_launch u ON u.replay_unit_id = l.replay_unit_id
CROSS JOIN traceloom_protected_interval p ON p.replay_unit_n = l.replay_unit_id
 AND p.db_idx = l.db_idx AND p.device_id = l.device_id
CROSS JOIN traceloom_graph_launch_control g ON g.launch_n = u.launch_n
WHERE l.anchor_n IS NOT NULL
UNION ALL
-- a promoted unit's own event (placed in its unit and protected interval), at the unit's
-- launch anchors
SELECT g.event_n, 3, 'replay-unit-' || l.replay_unit_id, ca.occurrence_n
FROM traceloom_graph_launch l
CROSS JOIN traceloom_anchor_core ca ON ca.anchor_n = l.anchor_n
CROSS JOIN traceloom_cuda_graph_replay_core g ON g.graph_event_idx = l.replay_unit_id
 AND g.db_idx = l.db_idx AND g.device_id = l.device_id
 AND g.graph_kind IN ('aclgraph_graph_replay', 'cuda_graph_replay')
WHERE l.anchor_n IS NOT NULL
UNION ALL
SELECT g.event_n, 4, p.protected_interval_id, ca.occurrence_n
FROM traceloom_graph_launch l
CROSS JOIN traceloom_anchor_core ca ON ca.anchor_n = l.anchor_n
CROSS JOIN traceloom_protected_interval p ON p.replay_unit_n = l.replay_unit_id
 AND p.db_idx = l.db_idx AND p.device_id = l.device_id
CROSS JOIN traceloom_cuda_graph_replay_core g ON g.graph_event_idx = l.replay_unit_id
 AND g.db_idx = l.db_idx AND g.device_id = l.device_id
 AND g.graph_kind IN ('aclgraph_graph_replay', 'cuda_graph_replay')
WHERE l.anchor_n IS NOT NULL
UNION ALL
SELECT m.event_n, 5, m.member_id, ca.occurrence_n
FROM traceloom_graph_launch l
CROSS JOIN traceloom_anchor_core ca ON ca.anchor_n = l.anchor_n
CROSS JOIN traceloom_graph_body_member m ON m.launch_n = l.launch_n
WHERE l.anchor_n IS NOT NULL) placed
CROSS JOIN traceloom_position_occurrence_core atom ON atom.occurrence_n = placed.atom_n
LEFT JOIN enclosing enc ON enc.occurrence_n = atom.parent_n) covered;

CREATE VIEW traceloom_v_evidence_role_structure AS
SELECT r.decision_n AS decision_id, 'event-' || r.decision_n AS event_id,
       -- (protected_boundary inside a promoted replay unit's span: the decision's span lookup)
       (SELECT CASE WHEN e.in_protected_span
                    THEN 'protected_boundary' ELSE c.final_role END
        FROM traceloom_event_protected_span e
        CROSS JOIN traceloom_event_shape h ON h.shape_id = e.shape_id
        -- (a replay unit's own event has no class: its span makes it a protected boundary)
        LEFT JOIN traceloom_evidence_role_class c ON c.class_id = h.role_class_id
        WHERE e.event_n = r.decision_n) AS final_role,
       CASE r.kind WHEN 1 THEN 'anchor' WHEN 2 THEN 'auxiliary_link' WHEN 3 THEN 'replay_unit'
            WHEN 4 THEN 'protected_interval' ELSE 'graph_body_member' END AS placement_kind,
       CASE WHEN r.kind = 1 THEN 'anchor-' || r.ref ELSE r.ref END AS placement_id,
       COALESCE(r.ancestor_node_id, printf('node-%sN%03d',
                COALESCE('d' || r.node_device || '-', ''), r.node_local)) AS node_id,
       r.occurrence_idx,
       'native_report_tree' AS view_name,
       CASE WHEN r.ancestor_node_id IS NULL THEN 'self' ELSE 'body' END AS coverage_kind
FROM traceloom_evidence_role_structure_rows r;

-- @surface traceloom_v_evidence_role_cost_coverage | one (db, provider, policy, final role, support state) | How much retained device time each role holds, split into time that takes part in structural identity and time that does not; no observation's cost is ever dropped | SELECT final_role, event_count, retained_duration_ns, identity_duration_ns, non_identity_duration_ns FROM traceloom_v_evidence_role_cost_coverage
-- Summed per role class first (a handful of rows); the auxiliary events retained but placed
-- nowhere then move from their class's support state to retained_unplaced (a negative and a
-- positive part, so that no aggregate is joined to another), as the decisions say.
-- The events inside a promoted replay unit's span move the same way from their class to
-- protected_boundary (supported, not identity-bearing; a unit's own event, no class, too).
-- The events are counted over the core table by (input, event shape), the shape's role class
-- read once per shape: the grouping sorts every event, and a sorter key of one integer
-- (db_idx << 32 | shape_id: a 16-bit input index and a 32-bit shape id, so no two groups share
-- a key) sorts in about half the time of two columns (0.46 s against 0.8 s CPU at a million
-- events), where the events' role class through traceloom_event (a correlated subquery per
-- event) took 1 s.
CREATE VIEW traceloom_v_evidence_role_cost_coverage AS
WITH unplaced AS (
  SELECT e.db_idx, h.role_class_id AS class_id, COUNT(*) AS events,
         SUM(e.dur_ns) AS duration_ns
  FROM traceloom_aux_link l
  CROSS JOIN traceloom_event_protected_span e ON e.event_n = l.aux_event_n
  CROSS JOIN traceloom_event_shape h ON h.shape_id = e.shape_id
  CROSS JOIN traceloom_evidence_role_class c ON c.class_id = h.role_class_id
  WHERE l.link_type = 'retained_unplaced' AND c.final_role IN ('auxiliary', 'transparent')
    AND NOT e.in_protected_span
  GROUP BY e.db_idx, h.role_class_id
), protected AS (
  -- the events inside a promoted replay unit's span (the decisions' span lookup): read only
  -- where a unit was promoted (the constant guard, checked once before the scan)
  SELECT e.db_idx, h.role_class_id AS class_id, COUNT(*) AS events, SUM(e.dur_ns) AS duration_ns
  FROM traceloom_event_protected_span e
  CROSS JOIN traceloom_event_shape h ON h.shape_id = e.shape_id
  WHERE (SELECT max(rowid) FROM traceloom_protected_interval) IS NOT NULL
    AND e.event_n >= 0 AND e.in_protected_span
  GROUP BY 1, 2
), part AS (
  SELECT g.k >> 32 AS db_idx, h.role_class_id AS class_id, 0 AS protected,
         NULL AS support_state, SUM(g.n) AS events, SUM(g.dur_ns) AS duration_ns
  FROM (SELECT e.db_idx << 32 | e.shape_id AS k, COUNT(*) AS n, SUM(e.dur_ns) AS dur_ns
        FROM traceloom_event_core e WHERE e.event_n >= 0 GROUP BY 1) g
  CROSS JOIN traceloom_event_shape h ON h.shape_id = g.k & 4294967295
  GROUP BY 1, 2
  UNION ALL
  SELECT db_idx, class_id, 0, NULL, -events, -duration_ns FROM unplaced
  UNION ALL
  SELECT db_idx, class_id, 0, 'retained_unplaced', events, duration_ns FROM unplaced
  UNION ALL
  SELECT db_idx, class_id, 0, NULL, -events, -duration_ns FROM protected
  UNION ALL
  SELECT db_idx, class_id, 1, NULL, events, duration_ns FROM protected
), total AS (
  SELECT t.db_idx, t.class_id, t.protected,
         CASE WHEN t.protected THEN 'supported'
              ELSE COALESCE(t.support_state, c.support_state) END AS support_state,
         SUM(t.events) AS events, SUM(t.duration_ns) AS duration_ns
  FROM part t
  LEFT JOIN traceloom_evidence_role_class c ON c.class_id = t.class_id
  WHERE c.class_id IS NOT NULL OR t.protected
  GROUP BY 1, 2, 3, 4
)
SELECT t.db_idx, COALESCE(c.provider_scope, 'any') AS input_provider_scope,
       COALESCE(c.policy_id, (SELECT p.policy_id FROM traceloom_evidence_role_policy p))
         AS policy_id,
       (SELECT p.policy_version FROM traceloom_evidence_role_policy p) AS policy_version,
       CASE WHEN t.protected THEN 'protected_boundary' ELSE c.final_role END AS final_role,
       t.support_state, SUM(t.events) AS event_count,
       SUM(t.duration_ns) AS retained_duration_ns,
       SUM(CASE WHEN NOT t.protected AND c.effective_structural_participation = 'identity'
                THEN t.duration_ns ELSE 0 END) AS identity_duration_ns,
       SUM(CASE WHEN t.protected OR c.effective_structural_participation <> 'identity'
                THEN t.duration_ns ELSE 0 END) AS non_identity_duration_ns
FROM total t
LEFT JOIN traceloom_evidence_role_class c ON c.class_id = t.class_id
WHERE t.events > 0
GROUP BY t.db_idx, 2, 3, 4, 5, t.support_state;

-- @surface traceloom_anchor_symbol_normalization | one anchor | How each anchor's structural symbol was derived from its observed one: source, policy, rule, outcome (identity, normalized, conflict) and reason | SELECT outcome, rule_id, count(*) FROM traceloom_anchor_symbol_normalization GROUP BY 1, 2
-- A replay-unit anchor (an exact replay's launch, traceloom_graph_launch.anchor_n) is named by
-- its composition slot (ACLH, ACLL, ACLT, ACLG, CUDAGraph: its anchor symbol, recovery.md
-- section 3), which no rule derived from an observed name: outcome 'synthetic' (section 2.4),
-- the slot as observed and structural symbol, the built-in rule
-- 'analysis.replay-composition-slot' (the reference's id), whatever its launch row's own
-- decision says. Read from the core tables, as traceloom_v_symbol_normalization_placement is
-- (the anchor, its event row, shape and role class by key), every anchor once: the launch and
-- the slot (the anchor shape's symbol) are LEFT JOINs by key, so that the slot is a column read
-- once per row (one search of an empty index per anchor on a profile without a promoted
-- launch), and an anchor keeps its row whatever its event row is (a launch anchor's is no
-- event of traceloom_event's).
CREATE VIEW traceloom_anchor_symbol_normalization AS
SELECT a.anchor_id, a.db_idx, a.device_id,
       a.anchor_n - (SELECT t.first_anchor_n FROM traceloom_tree_core t
                      WHERE t.db_idx = a.db_idx AND t.device_id = a.device_id) + 1 AS anchor_idx,
       a.event_id,
       (SELECT r.source_path FROM traceloom_raw_source_database r
         WHERE r.source_id = COALESCE(us.source_id, s.source_id)) AS source_path,
       -- (a promoted launch's anchor has no event of its own: its row, event_n < 0, is the
       -- launch's interval, and its event_id is NULL. Its source is its replay unit's event,
       -- traceloom_graph_launch.graph_event_n: that event's table (ACLGRAPH_REPLAY_UNIT /
       -- CUDA_GRAPH_REPLAY_UNIT) and file, and key '0', no row of that table (a unit's event
       -- is keyed from 1), as the reference names every replay-unit anchor's source)
       CASE WHEN e.event_n >= 0 THEN s.source_table ELSE us.source_table END AS source_table,
       CASE WHEN e.event_n >= 0 THEN CAST(COALESCE(s.source_rowid_offset + e.event_n, (SELECT sk.source_key FROM traceloom_event_source_key sk WHERE sk.event_n = e.event_n)) AS TEXT)
            WHEN us.source_table IS NOT NULL THEN '0' END AS source_key,
       COALESCE(h.symbol, c.observed_symbol) AS observed_symbol,
       CASE WHEN h.symbol IS NOT NULL THEN 'analysis.replay_composition_slot'
            WHEN c.observed_symbol IS NULL THEN 'unavailable'
            WHEN c.source_domain = 'communication' THEN 'communication.op_name'
            WHEN s.op_type IS NOT NULL THEN 'task.op_type'
            WHEN s.op_name IS NOT NULL THEN 'task.op_name'
            ELSE 'task.task_type' END AS observed_symbol_source,
       COALESCE(h.symbol, c.structural_symbol) AS structural_symbol,
       (SELECT r.policy_id FROM traceloom_symbol_normalization_rule r LIMIT 1) AS policy_id,
       (SELECT r.policy_version FROM traceloom_symbol_normalization_rule r LIMIT 1) AS policy_version,
       CASE WHEN h.symbol IS NOT NULL THEN 'analysis.replay-composition-slot'
            ELSE c.symbol_rule_id END AS rule_id,
       CASE WHEN h.symbol IS NULL THEN c.symbol_candidate_rule_ids END AS candidate_rule_ids,
       CASE WHEN h.symbol IS NOT NULL THEN 'synthetic' ELSE c.symbol_outcome END AS outcome,
       CASE WHEN h.symbol IS NOT NULL THEN 'analysis_generated_structural_symbol'
            ELSE c.symbol_reason_code END AS reason_code, a.anchor_n
FROM traceloom_anchor_core a
LEFT JOIN traceloom_event_core e ON e.event_n = a.event_n
LEFT JOIN traceloom_event_shape s ON s.shape_id = e.shape_id
LEFT JOIN traceloom_evidence_role_class c ON c.class_id = s.role_class_id
LEFT JOIN traceloom_graph_launch g ON g.anchor_n = a.anchor_n
LEFT JOIN traceloom_anchor_shape h ON g.launch_n IS NOT NULL AND h.shape_id = a.shape_id
LEFT JOIN traceloom_event_core ue ON ue.event_n = g.graph_event_n
LEFT JOIN traceloom_event_shape us ON us.shape_id = ue.shape_id;

-- @surface traceloom_v_symbol_normalization_placement | one (anchor, node occurrence covering it) | The symbol lineage of each anchor at every recovered position covering it: observed symbol, structural symbol, rule and outcome next to node, occurrence and anchor order (equal structural symbols alone never make positions correspond) | SELECT local_node_id, anchor_order, observed_symbol, structural_symbol, outcome FROM traceloom_v_symbol_normalization_placement WHERE coverage_kind = 'self' LIMIT 20
-- Read from the core tables (tree, its nodes and each node's occurrences and covered anchors by
-- key range, event, shape, role class by key), the columns of
-- traceloom_anchor_symbol_normalization written out as it reads them (the decision and event
-- views look each column up through a subquery of their own, and the audit reads every atom's
-- anchor: 741k rows at a million anchors).
-- The trees come first, by their unique (db_idx, device_id) index, and db_idx and device_id are
-- the tree's: a query ordered by db_idx, device_id, node_id, ... (the audit) then sorts only
-- within a tree, on node_id first ("TEMP B-TREE FOR RIGHT PART OF ORDER BY"), which SQLite
-- compares as text at once instead of two equal integers and then the text; and the coverage
-- kind is known at the node, so that the audit's 'self' skips the occurrences of the Seq and
-- Repeat nodes unread. No walk gives node_id's order without a sort: it is text order
-- ('N1000' < 'N999'), which only an index on the text (11.4 MB at a million anchors) holds.
-- A replay-unit anchor's columns are its composition slot's, as in
-- traceloom_anchor_symbol_normalization: the slot is its anchor shape's symbol, looked up by key
-- behind the guard (no search per anchor on a profile without a promoted launch), and the outer
-- select, which SQLite flattens, picks it or the role class's column.
CREATE VIEW traceloom_v_symbol_normalization_placement AS
SELECT w.anchor_id, w.db_idx, w.device_id, w.anchor_idx, w.event_id,
       COALESCE(w.slot_symbol, w.observed_symbol) AS observed_symbol,
       CASE WHEN w.slot_symbol IS NOT NULL THEN 'analysis.replay_composition_slot'
            ELSE w.observed_symbol_source END AS observed_symbol_source,
       COALESCE(w.slot_symbol, w.structural_symbol) AS structural_symbol,
       w.policy_id, w.policy_version,
       CASE WHEN w.slot_symbol IS NOT NULL THEN 'analysis.replay-composition-slot'
            ELSE w.rule_id END AS rule_id,
       CASE WHEN w.slot_symbol IS NOT NULL THEN 'synthetic' ELSE w.outcome END AS outcome,
       CASE WHEN w.slot_symbol IS NOT NULL THEN 'analysis_generated_structural_symbol'
            ELSE w.reason_code END AS reason_code,
       CASE WHEN w.slot_symbol IS NULL THEN w.candidate_rule_ids END AS candidate_rule_ids,
       w.source_path, w.source_table, w.source_key, w.node_id, w.local_node_id, w.view_name,
       w.occurrence_idx, w.anchor_order, w.coverage_kind, w.repeat_context, w.anchor_dur_us
FROM (
SELECT a.anchor_id, t.db_idx, t.device_id, a.anchor_n - t.first_anchor_n + 1 AS anchor_idx,
       a.event_id, c.observed_symbol,
       CASE WHEN c.observed_symbol IS NULL THEN 'unavailable'
            WHEN c.source_domain = 'communication' THEN 'communication.op_name'
            WHEN s.op_type IS NOT NULL THEN 'task.op_type'
            WHEN s.op_name IS NOT NULL THEN 'task.op_name'
            ELSE 'task.task_type' END AS observed_symbol_source,
       c.structural_symbol,
       (SELECT r.policy_id FROM traceloom_symbol_normalization_rule r LIMIT 1) AS policy_id,
       (SELECT r.policy_version FROM traceloom_symbol_normalization_rule r LIMIT 1) AS policy_version,
       c.symbol_rule_id AS rule_id, c.symbol_outcome AS outcome,
       c.symbol_reason_code AS reason_code, c.symbol_candidate_rule_ids AS candidate_rule_ids,
       CASE WHEN (SELECT max(g.anchor_n) FROM traceloom_graph_launch g) IS NOT NULL
            THEN (SELECT h.symbol FROM traceloom_graph_launch g
                  CROSS JOIN traceloom_anchor_shape h ON h.shape_id = a.shape_id
                  WHERE g.anchor_n = a.anchor_n LIMIT 1) END AS slot_symbol,
       -- (a promoted launch's anchor, event_n < 0, has no event: its source is its replay
       -- unit's event, by key, as in traceloom_anchor_symbol_normalization; looked up only
       -- for such an anchor, so no search at all on a profile without one)
       (SELECT r.source_path FROM traceloom_raw_source_database r
         WHERE r.source_id = CASE WHEN e.event_n >= 0 THEN s.source_id
                                  ELSE (SELECT us.source_id FROM traceloom_graph_launch g
                                        CROSS JOIN traceloom_event_core ue ON ue.event_n = g.graph_event_n
                                        CROSS JOIN traceloom_event_shape us ON us.shape_id = ue.shape_id
                                        WHERE g.anchor_n = a.anchor_n) END) AS source_path,
       CASE WHEN e.event_n >= 0 THEN s.source_table
            ELSE (SELECT us.source_table FROM traceloom_graph_launch g
                  CROSS JOIN traceloom_event_core ue ON ue.event_n = g.graph_event_n
                  CROSS JOIN traceloom_event_shape us ON us.shape_id = ue.shape_id
                  WHERE g.anchor_n = a.anchor_n) END AS source_table,
       CASE WHEN e.event_n >= 0 THEN CAST(COALESCE(s.source_rowid_offset + e.event_n, (SELECT sk.source_key FROM traceloom_event_source_key sk WHERE sk.event_n = e.event_n)) AS TEXT)
            ELSE (SELECT '0' FROM traceloom_graph_launch g
                  WHERE g.anchor_n = a.anchor_n AND g.graph_event_n IS NOT NULL) END
         AS source_key,
       k.node_id, k.local_node_id, 'native_report_tree' AS view_name, o.occurrence_idx,
       a.anchor_n - o.anchor_first_n + 1 AS anchor_order,
       CASE WHEN k.node_kind = 1 THEN 'self' ELSE 'body' END AS coverage_kind,
       (SELECT p.repeat_context FROM traceloom_position_occurrence p
         WHERE p.occurrence_n = o.occurrence_n) AS repeat_context,
       COALESCE(CASE WHEN (SELECT max(anchor_n) FROM traceloom_anchor_extent_core) IS NOT NULL THEN (SELECT x.end_ns - x.start_ns FROM traceloom_anchor_extent_core x
                  WHERE x.anchor_n = a.anchor_n) END, e.dur_ns) / 1000.0 AS anchor_dur_us
FROM traceloom_tree_core t
CROSS JOIN traceloom_node_core k ON k.node_n >= t.first_node_n
 AND k.node_n < t.first_node_n + t.node_count
CROSS JOIN traceloom_position_occurrence_core o ON o.occurrence_n >= k.first_occurrence_n
 AND o.occurrence_n < k.first_occurrence_n + k.occurrence_count
CROSS JOIN traceloom_anchor_core a ON a.anchor_n >= o.anchor_first_n
 AND a.anchor_n < o.anchor_first_n + k.token_len
CROSS JOIN traceloom_event_core e ON e.event_n = a.event_n
CROSS JOIN traceloom_event_shape s ON s.shape_id = e.shape_id
CROSS JOIN traceloom_evidence_role_class c ON c.class_id = s.role_class_id) w;

-- @surface traceloom_v_symbol_variant_cost | one (recovered position, anchor order, observed lowering) | Aggregated cost of each concrete observed symbol at one recovered position: count, total, average, min and max raw anchor time | SELECT local_node_id, anchor_order, observed_symbol, occurrence_count, total_us FROM traceloom_v_symbol_variant_cost ORDER BY total_us DESC LIMIT 20
-- Streamed node by node, with no sort before the first row: the atoms are scanned in node order
-- and each atom's occurrences (a key range) summed through their one anchor each (an atom covers
-- one anchor, so anchor_order is 1). A node whose anchors all share one event shape has one
-- variant, read by key from the shape and its role class; that is every node of the generated
-- profiles. A node with several shapes gives one row per distinct symbol tuple (at its first
-- shape, in shape order), its measures summed again over that node's few occurrences. The
-- observed symbol source is the CASE of traceloom_anchor_symbol_normalization.
-- A node of replay-unit anchors (traceloom_graph_launch.anchor_n) has one variant, its
-- composition slot (outcome 'synthetic', as in traceloom_anchor_symbol_normalization), whatever
-- its launch events' shapes: a node's anchors are all replay-unit anchors or none (a unit's
-- anchors lie inside its ReplayUnit Seq), so its first occurrence's anchor decides, once per
-- node and behind the guard (no search on a profile without a promoted launch).
CREATE VIEW traceloom_v_symbol_variant_cost AS
WITH shape_symbol_columns AS NOT MATERIALIZED (
  SELECT s.shape_id, c.structural_symbol, c.observed_symbol,
         CASE WHEN c.observed_symbol IS NULL THEN 'unavailable'
              WHEN c.source_domain = 'communication' THEN 'communication.op_name'
              WHEN s.op_type IS NOT NULL THEN 'task.op_type'
              WHEN s.op_name IS NOT NULL THEN 'task.op_name'
              ELSE 'task.task_type' END AS observed_symbol_source,
         c.symbol_rule_id AS rule_id, c.symbol_outcome AS outcome
  FROM traceloom_event_shape s
  CROSS JOIN traceloom_evidence_role_class c ON c.class_id = s.role_class_id),
-- the variant's columns as one comparable value (only nodes with several shapes compare it)
shape_symbol AS NOT MATERIALIZED (
  SELECT t.*, json_array(t.structural_symbol, t.observed_symbol, t.observed_symbol_source,
                         t.rule_id, t.outcome) AS variant
  FROM shape_symbol_columns t),
atom_anchor AS NOT MATERIALIZED (
  SELECT o.occurrence_n,
         COALESCE(CASE WHEN (SELECT max(anchor_n) FROM traceloom_anchor_extent_core) IS NOT NULL THEN (SELECT x.end_ns - x.start_ns FROM traceloom_anchor_extent_core x
                    WHERE x.anchor_n = a.anchor_n) END, e.dur_ns) AS dur_ns, m.*
  FROM traceloom_position_occurrence_core o
  CROSS JOIN traceloom_anchor_core a ON a.anchor_n = o.anchor_first_n
  CROSS JOIN traceloom_event_core e ON e.event_n = a.event_n
  CROSS JOIN shape_symbol m ON m.shape_id = e.shape_id),
node_atom AS NOT MATERIALIZED (
  -- (a reconciled pair's merged anchor: its extent, by key)
  SELECT k.node_n, count(*) AS occurrence_count,
         SUM(COALESCE(CASE WHEN (SELECT max(anchor_n) FROM traceloom_anchor_extent_core) IS NOT NULL THEN (SELECT x.end_ns - x.start_ns FROM traceloom_anchor_extent_core x WHERE x.anchor_n = a.anchor_n) END, e.dur_ns) / 1000.0) AS total_us,
         MIN(COALESCE(CASE WHEN (SELECT max(anchor_n) FROM traceloom_anchor_extent_core) IS NOT NULL THEN (SELECT x.end_ns - x.start_ns FROM traceloom_anchor_extent_core x WHERE x.anchor_n = a.anchor_n) END, e.dur_ns)) AS min_ns,
         MAX(COALESCE(CASE WHEN (SELECT max(anchor_n) FROM traceloom_anchor_extent_core) IS NOT NULL THEN (SELECT x.end_ns - x.start_ns FROM traceloom_anchor_extent_core x WHERE x.anchor_n = a.anchor_n) END, e.dur_ns)) AS max_ns,
         MIN(e.shape_id) AS first_shape_id, MAX(e.shape_id) AS last_shape_id,
         CASE WHEN (SELECT max(l.anchor_n) FROM traceloom_graph_launch l) IS NOT NULL
              THEN (SELECT h.symbol FROM traceloom_position_occurrence_core f
                    CROSS JOIN traceloom_graph_launch l ON l.anchor_n = f.anchor_first_n
                    CROSS JOIN traceloom_anchor_core b ON b.anchor_n = l.anchor_n
                    CROSS JOIN traceloom_anchor_shape h ON h.shape_id = b.shape_id
                    WHERE f.occurrence_n = k.first_occurrence_n LIMIT 1) END AS slot_symbol
  FROM traceloom_node_core k
  CROSS JOIN traceloom_position_occurrence_core o ON o.occurrence_n >= k.first_occurrence_n
   AND o.occurrence_n < k.first_occurrence_n + k.occurrence_count
  CROSS JOIN traceloom_anchor_core a ON a.anchor_n = o.anchor_first_n
  CROSS JOIN traceloom_event_core e ON e.event_n = a.event_n
  WHERE k.node_kind = 1
  GROUP BY k.node_n),
variant AS NOT MATERIALIZED (
  SELECT n.db_idx, n.device_id, n.node_id, n.local_node_id,
         COALESCE(g.slot_symbol, v.structural_symbol) AS structural_symbol,
         COALESCE(g.slot_symbol, v.observed_symbol) AS observed_symbol,
         CASE WHEN g.slot_symbol IS NOT NULL THEN 'analysis.replay_composition_slot'
              ELSE v.observed_symbol_source END AS observed_symbol_source,
         CASE WHEN g.slot_symbol IS NOT NULL THEN 'analysis.replay-composition-slot'
              ELSE v.rule_id END AS rule_id,
         CASE WHEN g.slot_symbol IS NOT NULL THEN 'synthetic' ELSE v.outcome END AS outcome,
         CASE WHEN g.first_shape_id = g.last_shape_id OR g.slot_symbol IS NOT NULL THEN g.occurrence_count
              ELSE (SELECT count(*) FROM atom_anchor m
                     WHERE m.occurrence_n >= n.first_occurrence_n
                       AND m.occurrence_n < n.first_occurrence_n + n.occurrence_count
                       AND m.variant IS v.variant) END
           AS occurrence_count,
         CASE WHEN g.first_shape_id = g.last_shape_id OR g.slot_symbol IS NOT NULL THEN g.total_us
              ELSE (SELECT SUM(m.dur_ns / 1000.0) FROM atom_anchor m
                     WHERE m.occurrence_n >= n.first_occurrence_n
                       AND m.occurrence_n < n.first_occurrence_n + n.occurrence_count
                       AND m.variant IS v.variant) END AS total_us,
         CASE WHEN g.first_shape_id = g.last_shape_id OR g.slot_symbol IS NOT NULL THEN g.min_ns
              ELSE (SELECT MIN(m.dur_ns) FROM atom_anchor m
                     WHERE m.occurrence_n >= n.first_occurrence_n
                       AND m.occurrence_n < n.first_occurrence_n + n.occurrence_count
                       AND m.variant IS v.variant) END AS min_ns,
         CASE WHEN g.first_shape_id = g.last_shape_id OR g.slot_symbol IS NOT NULL THEN g.max_ns
              ELSE (SELECT MAX(m.dur_ns) FROM atom_anchor m
                     WHERE m.occurrence_n >= n.first_occurrence_n
                       AND m.occurrence_n < n.first_occurrence_n + n.occurrence_count
                       AND m.variant IS v.variant) END AS max_ns
  FROM node_atom g
  CROSS JOIN traceloom_node_core n ON n.node_n = g.node_n
  CROSS JOIN shape_symbol v ON v.shape_id >= g.first_shape_id AND v.shape_id <= g.last_shape_id
  WHERE g.first_shape_id = g.last_shape_id
     OR (g.slot_symbol IS NOT NULL AND v.shape_id = g.first_shape_id)
     OR (g.slot_symbol IS NULL AND EXISTS (SELECT 1 FROM atom_anchor m
                  WHERE m.occurrence_n >= n.first_occurrence_n
                    AND m.occurrence_n < n.first_occurrence_n + n.occurrence_count
                    AND m.shape_id = v.shape_id)
         AND NOT EXISTS (SELECT 1 FROM atom_anchor m
                  WHERE m.occurrence_n >= n.first_occurrence_n
                    AND m.occurrence_n < n.first_occurrence_n + n.occurrence_count
                    AND m.shape_id < v.shape_id AND m.variant IS v.variant)))
SELECT db_idx, device_id, 'native_report_tree' AS view_name, node_id, local_node_id,
       1 AS anchor_order, structural_symbol, observed_symbol, observed_symbol_source, rule_id,
       outcome, occurrence_count, ROUND(total_us, 3) AS total_us,
       ROUND(total_us / occurrence_count, 3) AS avg_us, ROUND(min_ns / 1000.0, 3) AS min_us,
       ROUND(max_ns / 1000.0, 3) AS max_us
FROM variant;
