"""The relations added for parity with the reference TraceLoom (docs/PARITY.md), checked on
real-schema fixtures and generated profiles against values worked out from their inputs.

- replay body patterns: a CUDA graph replaying one decode step (head, L layers, tail) is
  recovered as a Seq of the head's operators, one Repeat xL over one layer's members and the
  tail's, with the positions' scheduled-work shares from the members' durations;
- the loop, structural-order, primary-node, operator-audit and timeline read-outs of the
  exact_hlt fixture (14 ACL graph launches of 2 tasks each, 12 promoted in 4 units);
- collectives linked across two ranks that ran in lockstep;
- the projection catalog: every recipe's example runs with its parameters bound and
  returns its coordinate columns, and every recipe reads a relation that exists.
"""
import sqlite3
import subprocess

import pytest

from test_genprofile import generate


def analyse(cli, profile, out):
    subprocess.run([str(cli), str(profile), "--output", str(out)], check=True, capture_output=True)
    return sqlite3.connect("file:%s?mode=ro" % out, uri=True)


@pytest.fixture(scope="module")
def hlt(cli, fixtures, tmp_path_factory):
    return analyse(cli, fixtures / "exact_hlt" / "mono", tmp_path_factory.mktemp("hlt") / "a.db")


@pytest.fixture(scope="module")
def cuda_graph(cli, tmp_path_factory):
    d = tmp_path_factory.mktemp("cg")
    truth = generate(d / "p", "--format", "nsys", "--prefill-steps", 1, "--decode-steps", 4,
                     "--layers", 3, "--ops", 5, "--noise", 0, "--missing", 0, "--seed", 7,
                     "--cuda-graph", "node")
    return analyse(cli, d / "p" / "profile.sqlite", d / "a.db"), truth


def test_cuda_graph_body_is_head_repeat_of_layers_tail(cuda_graph):
    con, truth = cuda_graph
    phase = truth["structure"]["phases"][0]
    layers = truth["structure"]["layers"]
    body = truth["ranks"][0]["cuda_graph"]["body"]
    head, tail = len(phase["head"]), len(phase["tail"])
    per_layer, rest = divmod(body["members"] - head - tail, layers)
    assert rest == 0 and per_layer > 0
    (domains,) = con.execute("SELECT count(*) FROM traceloom_replay_body_pattern_domain "
                             "WHERE support_status = 'supported'").fetchone()
    assert domains == 1   # one graph, one stream lane
    assert con.execute("SELECT position_count, pattern_definition_count, pattern_occurrence_count "
                       "FROM traceloom_replay_body_pattern_domain").fetchone() == (
        body["members"], 1 + head + 1 + per_layer + tail, 1 + head + 1 + layers * per_layer + tail)
    kinds = [r[0] for r in con.execute(
        "SELECT node_kind FROM traceloom_replay_body_pattern_definition "
        "WHERE parent_pattern_n = (SELECT min(pattern_n) FROM traceloom_replay_body_pattern_definition) "
        "ORDER BY slot_ordinal")]
    assert kinds == ["atom"] * head + ["repeat"] + ["atom"] * tail
    assert con.execute("SELECT repeat_count, occurrence_count, positions_per_occurrence "
                       "FROM traceloom_replay_body_pattern_definition WHERE node_kind = 'repeat'"
                       ).fetchone() == (layers, 1, layers * per_layer)
    # every layer slot occurs once per layer, iterations 1..L, spans of one position
    rows = con.execute("SELECT o.repeat_iteration, o.position_start, o.position_count "
                       "FROM traceloom_replay_body_pattern_occurrence o "
                       "JOIN traceloom_replay_body_pattern_definition f ON f.pattern_n = o.pattern_n "
                       "JOIN traceloom_replay_body_pattern_definition p ON p.pattern_n = f.parent_pattern_n "
                       "WHERE p.node_kind = 'repeat' ORDER BY o.position_start").fetchall()
    assert [r[0] for r in rows] == [i // per_layer + 1 for i in range(layers * per_layer)]
    assert [r[1] for r in rows] == list(range(head, head + layers * per_layer))
    assert {r[2] for r in rows} == {1}


def test_scheduled_work_share_is_member_time_over_launch_task_sums(cuda_graph):
    # Worked out from the members themselves: a position's share is its members' summed
    # duration over the summed task-sums (all members' durations) of their launches.
    con, truth = cuda_graph
    launches = truth["ranks"][0]["cuda_graph"]["launches"]
    got = con.execute(
        "SELECT p.position_ordinal, p.scheduled_work_share_ppm, sum(e.dur_ns), "
        "  (SELECT sum(e2.dur_ns) FROM traceloom_graph_member_core m2 "
        "     JOIN traceloom_event_core e2 ON e2.event_n = m2.event_n) "
        "FROM traceloom_replay_body_position p "
        "JOIN traceloom_graph_member_core m ON m.aggregate_n = p.aggregate_n "
        "JOIN traceloom_event_core e ON e.event_n = m.event_n GROUP BY p.position_n").fetchall()
    assert len(got) == truth["ranks"][0]["cuda_graph"]["body"]["members"]
    for ordinal, ppm, member_ns, all_ns in got:
        assert ppm == member_ns * 1_000_000 // all_ns, ordinal
    # all launches replay the whole body: the shares add up to one (floor per position)
    total = sum(r[1] for r in got)
    assert 1_000_000 - len(got) < total <= 1_000_000
    assert len(launches) == 4


def test_exact_hlt_loops_order_and_primary_nodes(hlt):
    # One loop: the three decode compositions (ACLH, ACLL, ACLT) replayed 3 times.
    assert hlt.execute("SELECT loop_rank, repeat_label, repeat_count, occurrence_count, anchor_count "
                       "FROM traceloom_loop_node").fetchall() == [(1, "Rep x3", 3, 1, 9)]
    # 16 anchors: 12 launch anchors and the 4 tasks of the 2 unpromoted launches, in order.
    assert hlt.execute("SELECT count(*), min(structural_idx), max(structural_idx), "
                       "count(DISTINCT order_basis) FROM traceloom_structural_order").fetchone() == (16, 1, 16, 1)
    assert hlt.execute("SELECT count(*), count(DISTINCT anchor_id) FROM traceloom_anchor_primary_node p "
                       "JOIN traceloom_viz_node n ON n.node_id = p.node_id WHERE n.node_type = 'Atom'"
                       ).fetchone() == (16, 16)


def test_exact_hlt_operator_audit(hlt):
    # Every launch's body is (its op, AuxGraphOp): 14 AuxGraphOp tasks, each a member of its
    # launch's collected body: 12 of promoted launches, 2 of the two trailing launches, which
    # are not promoted, so their tasks are also anchors of their own.
    assert hlt.execute("SELECT occurrence_count, total_duration_ns, graph_body_member_count, "
                       "anchor_event_count FROM traceloom_operator_audit "
                       "WHERE operator_name = 'AuxGraphOp'").fetchone() == (14, 14, 14, 2)
    # The trailing launches' bodies are (HeadOp, AuxGraphOp) and (LayerOp, AuxGraphOp): their
    # 4 tasks are stored apart from the promoted members, which the graph-body relations list
    # (12 launches x 2).
    assert hlt.execute("""
        SELECT l.reconstruction_status, e.op_type, count(*)
        FROM traceloom_graph_unpromoted_member_core u
        JOIN traceloom_graph_launch l ON l.launch_n = u.launch_n
        JOIN traceloom_event e ON e.event_n = u.event_n
        WHERE l.anchor_id IS NULL GROUP BY 1, 2 ORDER BY 2""").fetchall() == [
            ("not_promoted", "AuxGraphOp", 2), ("not_promoted", "HeadOp", 1),
            ("not_promoted", "LayerOp", 1)]
    assert hlt.execute("SELECT count(*) FROM traceloom_graph_body_member").fetchone() == (24,)
    assert hlt.execute("SELECT operator_name, graph_body_member_count, anchor_event_count "
                       "FROM traceloom_operator_audit WHERE operator_name IN ('HeadOp', 'LayerOp') "
                       "ORDER BY 1").fetchall() == [("HeadOp", 4, 1), ("LayerOp", 4, 1)]


SLOT_DECISION = ("analysis.replay_composition_slot", "analysis.replay-composition-slot",
                 "synthetic", "analysis_generated_structural_symbol")


def test_exact_hlt_replay_anchors_are_named_by_their_slot(hlt):
    # 4 exact replay units of (head, layer, tail) launches: 12 launch anchors, each named by its
    # composition slot (recovery.md 3) with the built-in outcome 'synthetic' (2.4), in every
    # symbol view; the 4 tasks of the unpromoted launches keep their rule decisions.
    slots = [(sym, sym) + SLOT_DECISION + (4,) for sym in ("ACLH", "ACLL", "ACLT")]
    assert hlt.execute("""
        SELECT structural_symbol, observed_symbol, observed_symbol_source, rule_id, outcome,
               reason_code, count(*)
        FROM traceloom_anchor_symbol_normalization WHERE outcome = 'synthetic'
        GROUP BY 1, 2, 3, 4, 5, 6 ORDER BY 1""").fetchall() == slots
    # exactly the promoted launches' anchors, with no candidate rules
    assert hlt.execute("""
        SELECT count(*), count(l.launch_n), count(d.candidate_rule_ids)
        FROM traceloom_anchor_symbol_normalization d
        LEFT JOIN traceloom_graph_launch l ON l.anchor_n = d.anchor_n
        WHERE d.outcome = 'synthetic'""").fetchone() == (12, 12, 0)
    assert hlt.execute("""
        SELECT count(*) FROM traceloom_anchor_symbol_normalization d
        JOIN traceloom_graph_launch l ON l.anchor_n = d.anchor_n
        WHERE d.outcome <> 'synthetic'""").fetchone() == (0,)
    assert hlt.execute("""
        SELECT structural_symbol, observed_symbol, observed_symbol_source, rule_id, outcome,
               reason_code, count(*)
        FROM traceloom_v_symbol_normalization_placement
        WHERE outcome = 'synthetic' AND coverage_kind = 'self'
        GROUP BY 1, 2, 3, 4, 5, 6 ORDER BY 1""").fetchall() == slots
    assert hlt.execute("""
        SELECT structural_symbol, observed_symbol, observed_symbol_source, rule_id, outcome,
               reason_code, precedence, match_mode, count(*)
        FROM traceloom_v_anchor_symbol_lineage WHERE outcome = 'synthetic'
        GROUP BY 1, 2, 3, 4, 5, 6 ORDER BY 1""").fetchall() == [
            s[:6] + (-100, "typed_synthesis", 4) for s in slots]
    assert hlt.execute("""
        SELECT structural_symbol, observed_symbol, observed_symbol_source, rule_id, outcome,
               sum(occurrence_count)
        FROM traceloom_v_symbol_variant_cost WHERE outcome = 'synthetic'
        GROUP BY 1, 2, 3, 4, 5 ORDER BY 1""").fetchall() == [s[:5] + (4,) for s in slots]


def test_replay_anchor_symbol_source_is_its_unit(hlt):
    # A launch anchor has no event: the source of its symbol decision is its replay unit's
    # event, the unit's table ACLGRAPH_REPLAY_UNIT with key 0 (no row of it: the 4 unit events
    # are keyed 1..4) in the one raw database of the monolithic profile, as TraceLoom 0.1.4
    # names it; in every symbol view alike, the event itself still absent.
    (path,) = hlt.execute("SELECT source_path FROM traceloom_raw_source_database "
                          "WHERE source_path LIKE '%msprof_0.db'").fetchone()
    for view, where in (("traceloom_anchor_symbol_normalization", ""),
                        ("traceloom_v_symbol_normalization_placement", " AND coverage_kind = 'self'"),
                        ("traceloom_v_anchor_symbol_lineage", "")):
        assert hlt.execute(f"""
            SELECT source_table, source_key, source_path, count(event_id), count(*) FROM {view}
            WHERE outcome = 'synthetic'{where} GROUP BY 1, 2, 3""").fetchall() == [
                ("ACLGRAPH_REPLAY_UNIT", "0", path, 0, 12)], view
    assert hlt.execute("SELECT group_concat(source_key) FROM traceloom_event "
                       "WHERE source_table = 'ACLGRAPH_REPLAY_UNIT'").fetchone() == ("1,2,3,4",)


def test_cuda_graph_replay_anchors_are_named_by_their_slot(cuda_graph):
    # A CUDA graph launch's anchor is the slot CUDAGraph (recovery.md 3), one per promoted launch.
    con, _ = cuda_graph
    (launches,) = con.execute("SELECT count(*) FROM traceloom_graph_launch "
                              "WHERE anchor_n IS NOT NULL").fetchone()
    assert launches > 0
    assert con.execute("""
        SELECT structural_symbol, observed_symbol, observed_symbol_source, rule_id, outcome,
               reason_code, count(*)
        FROM traceloom_anchor_symbol_normalization d
        JOIN traceloom_graph_launch l ON l.anchor_n = d.anchor_n
        GROUP BY 1, 2, 3, 4, 5, 6""").fetchall() == [("CUDAGraph", "CUDAGraph") + SLOT_DECISION
                                                       + (launches,)]
    assert con.execute("SELECT count(*) FROM traceloom_anchor_symbol_normalization "
                       "WHERE outcome = 'synthetic'").fetchone() == (launches,)
    # their source: the replay unit's table, key 0, as on Ascend
    assert con.execute("SELECT DISTINCT source_table, source_key FROM "
                       "traceloom_anchor_symbol_normalization WHERE outcome = 'synthetic'"
                       ).fetchall() == [("CUDA_GRAPH_REPLAY_UNIT", "0")]


def test_exact_hlt_timelines(hlt):
    # 4 replay units of 3 launch anchors each are exact regions; the 4 eager anchors are not.
    assert hlt.execute("SELECT support_state, replay_region_count FROM "
                       "traceloom_v_replay_region_annotation_status").fetchall() == [("supported", 4)]
    assert hlt.execute("SELECT replay_region_state, count(*) FROM traceloom_v_annotated_anchor_timeline "
                       "GROUP BY 1 ORDER BY 1").fetchall() == [("inside_exact_replay", 12),
                                                              ("outside_exact_replay", 4)]
    # Flattened: each of the 12 launch anchors replaced by its 2 members, the 4 others kept.
    rows = hlt.execute("SELECT item_kind, timeline_order, start_ns FROM "
                       "traceloom_v_flattened_execution_timeline ORDER BY timeline_order").fetchall()
    kinds = [r[0] for r in rows]
    assert kinds.count("position_member") == 24 and kinds.count("mainline_anchor") == 4
    assert [r[1] for r in rows] == list(range(28))
    assert [r[2] for r in rows] == sorted(r[2] for r in rows)


def test_collectives_are_linked_across_ranks(cli, tmp_path):
    # no auxiliary, noise or missing rows: both ranks recover the same tree
    truth = generate(tmp_path / "p", "--format", "ascend", "--cluster", "--ranks", 2,
                     "--decode-steps", 2, "--layers", 2, "--seed", 3, "--aux", 0, "--noise", 0,
                     "--missing", 0)
    con = analyse(cli, tmp_path / "p", tmp_path / "a.db")
    (comm,) = con.execute("SELECT count(*) FROM traceloom_anchor WHERE role = 'comm'").fetchone()
    assert comm > 0 and truth["structure"]["layers"] == 2
    # ranks in lockstep: every collective of one rank has its twin at the same place
    assert con.execute("SELECT count(*) FROM traceloom_collective_global_link").fetchone() == (comm,)
    assert con.execute("SELECT count(*) FROM (SELECT candidate_collective_key FROM "
                       "traceloom_collective_global_link GROUP BY 1 HAVING count(DISTINCT db_idx) = 2 "
                       "AND count(*) = 2)").fetchone() == (comm // 2,)


def test_every_projection_recipe_runs_and_returns_its_coordinates(hlt):
    names = {r[0] for r in hlt.execute("SELECT name FROM sqlite_schema")}
    recipes = hlt.execute("SELECT projection_name, relation_name, example_sql FROM "
                          "traceloom_projection_recipe ORDER BY display_order").fetchall()
    assert len(recipes) >= 30
    for name, relation, sql in recipes:
        assert relation in names, name
        params = {}
        for pname, nullable, rel, col in hlt.execute(
                "SELECT parameter_name, is_nullable, selection_relation, selection_column FROM "
                "traceloom_projection_parameter WHERE projection_name = ?", (name,)):
            row = hlt.execute(f'SELECT "{col}" FROM "{rel}" WHERE "{col}" IS NOT NULL LIMIT 1').fetchone()
            params[pname] = None if nullable or row is None else row[0]
        cur = hlt.execute(sql, params)
        cols = {d[0] for d in cur.description}
        want = {r[0] for r in hlt.execute("SELECT result_column FROM traceloom_projection_coordinate "
                                          "WHERE projection_name = ?", (name,))}
        assert want <= cols, (name, want - cols)
        cur.fetchall()
    # continuations only between recipes that exist, filling required parameters
    assert hlt.execute("SELECT count(*) FROM traceloom_v_projection_continuation c "
                       "LEFT JOIN traceloom_projection_recipe r ON r.projection_name = c.target_projection "
                       "WHERE r.projection_name IS NULL").fetchone() == (0,)
    # scope_catalog returns two structural node ids (node_id, parent_node_id): either fills
    # the node_id of scope_occurrences
    assert hlt.execute("SELECT group_concat(source_column, ',') FROM (SELECT source_column FROM "
                       "traceloom_v_projection_continuation WHERE source_projection = 'scope_catalog' "
                       "AND target_projection = 'scope_occurrences' AND target_parameter = 'node_id' "
                       "ORDER BY 1)").fetchone() == ("node_id,parent_node_id",)


# Every decision names a rule row (docs/PARITY.md: the built-in decisions are rules of their
# own classes): a replay profile (protected boundaries: exact_hlt's 4 promoted units), the
# reconciliation fixture (2 reconciled duplicates, one communication op), an Nsight CUDA graph
# replay, the Hygon profile and a PyTorch CPU-only trace (the CPU operator rules).
RULE_PROFILES = ["exact_hlt/mono", "reports/reconcile", "nsys/nsys_graph.sqlite",
                 "hygon/hipprof.db", "kineto/cpu_only.pt.trace.json"]


@pytest.mark.parametrize("profile", RULE_PROFILES)
def test_every_decision_names_a_rule_row(cli, fixtures, tmp_path, profile):
    con = analyse(cli, fixtures / profile, tmp_path / "a.db")
    # a decision's rule is a row of the same class: a manifest rule (positive_policy) or one
    # of the built-in decisions
    orphans = con.execute(
        "SELECT DISTINCT d.rule_id, d.rule_class FROM traceloom_evidence_role_decision d "
        "WHERE NOT EXISTS (SELECT 1 FROM traceloom_evidence_role_rule r "
        "WHERE r.rule_id = d.rule_id AND r.rule_class = d.rule_class)").fetchall()
    assert orphans == []
    assert con.execute("SELECT count(*) FROM traceloom_evidence_role_decision").fetchone()[0] > 0
    # every anchor's symbol rule, the built-in outcomes (precedence < 0) included
    orphans = con.execute(
        "SELECT DISTINCT l.rule_id FROM traceloom_v_anchor_symbol_lineage l "
        "WHERE NOT EXISTS (SELECT 1 FROM traceloom_symbol_normalization_rule r "
        "WHERE r.rule_id = l.rule_id)").fetchall()
    assert orphans == []
    # and the rule's audit columns are the row's: precedence and match mode by id
    assert con.execute(
        "SELECT count(*) FROM traceloom_v_anchor_symbol_lineage l "
        "JOIN traceloom_symbol_normalization_rule r ON r.rule_id = l.rule_id "
        "WHERE l.precedence IS NOT r.precedence OR l.match_mode IS NOT r.match_mode").fetchone() == (0,)
    # each built-in counts the events whose role class names it: the fallback, the
    # communication anchors and the reconciled duplicates (the classes' own counts; protected
    # boundaries are decided per event by the views and left NULL)
    for rule_id, count in con.execute(
            "SELECT rule_id, decided_event_count FROM traceloom_evidence_role_rule "
            "WHERE rule_class <> 'positive_policy'"):
        if rule_id == "system.protected_composite":
            assert count is None
            continue
        (by_class,) = con.execute("SELECT COALESCE(sum(event_count), 0) FROM "
                                  "traceloom_evidence_role_class WHERE class_id >= 0 AND "
                                  "rule_id = ?", (rule_id,)).fetchone()
        assert count == by_class, rule_id


def test_builtin_decisions_on_known_inputs(cli, fixtures, tmp_path):
    # reports/reconcile (tests/sql/reports_reconcile.sql): the KERNEL_MIX_AIV envelope of row
    # 1 is represented by its detail's anchor and the MC2 op 1 by its MatmulAllReduce task's,
    # two events of system.event_reconciliation; op 2 stays an independent communication anchor
    con = analyse(cli, fixtures / "reports" / "reconcile", tmp_path / "r.db")
    rows = dict(con.execute("SELECT rule_id, decided_event_count FROM traceloom_evidence_role_rule "
                            "WHERE rule_id LIKE 'system.%'"))
    assert rows["system.event_reconciliation"] == 2
    assert rows["system.communication_anchor"] == 1
    # exact_hlt: every decision inside a promoted unit names the protected-composite rule row
    con = analyse(cli, fixtures / "exact_hlt" / "mono", tmp_path / "h.db")
    assert con.execute(
        "SELECT r.role, r.structural_participation, r.required_fields FROM "
        "traceloom_evidence_role_decision d JOIN traceloom_evidence_role_rule r ON r.rule_id = d.rule_id "
        "WHERE d.final_role = 'protected_boundary' GROUP BY 1, 2, 3").fetchall() == [
        ("protected_boundary", "atomic_boundary", "replay_unit_membership")]
