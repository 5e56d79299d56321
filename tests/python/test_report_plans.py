"""Every join of the report views (sql/views/6*.sql, the bubble views, traceloom_v_runtime_device)
uses a key or an index: EXPLAIN QUERY PLAN shows no automatic index and no full scan nested
inside another loop. The exceptions are named: the public API families per structural position
(an aggregate of a handful of rows) are looked up from the positions through the index SQLite
builds on that aggregate, and a runtime call's API layer and family are made once per call shape
(an aggregate of the shapes, a handful of rows) and looked up by shape the same way; the evidence
role structure looks the ancestors of an atom occurrence up in the closure of the occurrences
with children (a recursive CTE of about 34k rows at a million anchors, which no stored index can
serve) through the index SQLite builds on it.
"""
import json
import pathlib
import re
import sqlite3
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
VIEWS = [name for f in sorted((ROOT / "sql" / "views").glob("6*.sql"))
         for name in re.findall(r"CREATE VIEW (\w+)", f.read_text())] + [
    "traceloom_structure_bubble_occurrence", "traceloom_structure_bubble_position",
    "traceloom_v_runtime_device"]
AGGREGATES = {"traceloom_v_structure_bubble_host_context": ("api", "f"),
              "traceloom_v_structure_bubble_api_stats": ("api", "f"),
              "traceloom_v_structure_bubble_api_occurrence": ("f",),
              "traceloom_v_runtime_call_family": ("f",),
              "traceloom_anchor_host_api_summary": ("f",),
              "traceloom_v_structure_bubble_runtime_call": ("f",),
              "traceloom_v_evidence_role_structure": ("enc",),
              "traceloom_evidence_role_structure_rows": ("enc",)}


@pytest.fixture(scope="module")
def analysis(exact_hlt_db):
    con = sqlite3.connect(f"file:{exact_hlt_db}?mode=ro", uri=True)
    yield con
    con.close()


def plan_problems(steps, allowed=()):
    """Automatic indexes (but those on the allowed aliases) and full scans nested inside another
    loop among (parent, detail) plan steps."""
    found, loops = [], {}
    for parent, detail in steps:
        if "AUTOMATIC" in detail and not any(detail.startswith(f"SEARCH {alias} USING AUTOMATIC ")
                                             for alias in allowed):
            found.append(detail)
        if detail.startswith(("SCAN ", "SEARCH ")):
            level = loops.setdefault(parent, [])
            if detail.startswith("SCAN ") and level:
                found.append("nested " + detail)
            level.append(detail)
    return found


def walk_problems(steps):
    """plan_problems, but for the scan of the trees (one row per device) inside the walk of
    anchor_idx or around a node or anchor picked by number: the tree walk views' design."""
    return [p for p in plan_problems(steps) if p != "nested SCAN t"]


def problems(con, view):
    steps = con.execute(f"EXPLAIN QUERY PLAN SELECT * FROM {view}").fetchall()
    return plan_problems([(parent, detail) for _, parent, _, detail in steps],
                         AGGREGATES.get(view, ()))


def test_the_report_views_are_listed():
    assert len(VIEWS) > 30 and "traceloom_v_evidence_role_structure" in VIEWS


@pytest.mark.parametrize("view", VIEWS)
def test_joins_use_keys(analysis, view):
    assert problems(analysis, view) == []


def test_node_host_activity_is_driven_by_the_occurrences(analysis):
    """A node's host activity starts from the node (the small node table, whose size the
    analysis records for the planner in sqlite_stat1) and reads that node's occurrences as one
    key range, not from the calls or every occurrence."""
    steps = [r[3] for r in analysis.execute(
        "EXPLAIN QUERY PLAN SELECT * FROM traceloom_v_node_host_activity"
        " WHERE node_id = 'node-N001' AND coverage_kind = 'self'")]
    assert steps[0] == "SCAN n", steps
    assert steps[1].startswith("SEARCH o USING INTEGER PRIMARY KEY (rowid>"), steps


def test_evidence_role_structure_reads_links_and_launches_once(analysis):
    """The auxiliary link and replay arms of the structure view read each link and launch once
    (not once per occurrence covering its anchor) and reach the occurrences covering its anchor by
    key: the anchor, its atom occurrence, the atom's ancestors in the closure (which carries
    each ancestor's node number, device and occurrence index). The rows are those of the formulation over traceloom_viz_node_anchor (every covered
    anchor, then its links and launches)."""
    steps = [r[3] for r in analysis.execute(
        "EXPLAIN QUERY PLAN SELECT * FROM traceloom_v_evidence_role_structure")]
    assert "SCAN l" in steps and not any(s.startswith("SCAN o") for s in steps), steps
    for key in ("SEARCH ca USING INTEGER PRIMARY KEY (rowid=?)",
                "SEARCH atom USING INTEGER PRIMARY KEY (rowid=?)",
                "SEARCH enc USING AUTOMATIC COVERING INDEX (occurrence_n=?) LEFT-JOIN"):
        assert key in steps, (key, steps)
    got = sorted(analysis.execute(
        "SELECT decision_id, placement_kind, placement_id, node_id, occurrence_idx, coverage_kind "
        "FROM traceloom_v_evidence_role_structure "
        "WHERE placement_kind <> 'anchor'").fetchall())
    reference = sorted(analysis.execute("""
        SELECT l.aux_event_n, 'auxiliary_link',
               l.anchor_id || '/aux-' || l.aux_order, n.node_id, n.occurrence_idx, n.coverage_kind
        FROM traceloom_viz_node_anchor n
        JOIN traceloom_aux_link l ON l.anchor_n = n.anchor_n AND l.link_type = 'prelude'
        UNION ALL
        SELECT m.event_n, 'replay_unit', 'replay-unit-' || l.replay_unit_id, n.node_id,
               n.occurrence_idx, n.coverage_kind
        FROM traceloom_viz_node_anchor n
        JOIN traceloom_graph_launch l ON l.anchor_n = n.anchor_n
        JOIN traceloom_graph_launch u ON u.replay_unit_id = l.replay_unit_id
        JOIN traceloom_graph_body_member m ON m.launch_n = u.launch_n
        UNION ALL
        SELECT c.event_n, 'replay_unit', 'replay-unit-' || l.replay_unit_id, n.node_id,
               n.occurrence_idx, n.coverage_kind
        FROM traceloom_viz_node_anchor n
        JOIN traceloom_graph_launch l ON l.anchor_n = n.anchor_n
        JOIN traceloom_graph_launch u ON u.replay_unit_id = l.replay_unit_id
        JOIN traceloom_graph_launch_control c ON c.launch_n = u.launch_n
        UNION ALL
        SELECT m.event_n, 'protected_interval', p.protected_interval_id,
               n.node_id, n.occurrence_idx, n.coverage_kind
        FROM traceloom_viz_node_anchor n
        JOIN traceloom_graph_launch l ON l.anchor_n = n.anchor_n
        JOIN traceloom_graph_launch u ON u.replay_unit_id = l.replay_unit_id
        JOIN traceloom_protected_interval p ON p.replay_unit_n = l.replay_unit_id
         AND p.db_idx = l.db_idx AND p.device_id = l.device_id
        JOIN traceloom_graph_body_member m ON m.launch_n = u.launch_n
        UNION ALL
        SELECT c.event_n, 'protected_interval', p.protected_interval_id,
               n.node_id, n.occurrence_idx, n.coverage_kind
        FROM traceloom_viz_node_anchor n
        JOIN traceloom_graph_launch l ON l.anchor_n = n.anchor_n
        JOIN traceloom_graph_launch u ON u.replay_unit_id = l.replay_unit_id
        JOIN traceloom_protected_interval p ON p.replay_unit_n = l.replay_unit_id
         AND p.db_idx = l.db_idx AND p.device_id = l.device_id
        JOIN traceloom_graph_launch_control c ON c.launch_n = u.launch_n
        UNION ALL
        -- a unit's own event (its envelope's event) at each launch anchor of its unit
        SELECT g.event_n, 'replay_unit', 'replay-unit-' || l.replay_unit_id, n.node_id,
               n.occurrence_idx, n.coverage_kind
        FROM traceloom_viz_node_anchor n
        JOIN traceloom_graph_launch l ON l.anchor_n = n.anchor_n
        JOIN traceloom_cuda_graph_replay g ON g.graph_event_idx = l.replay_unit_id
         AND g.db_idx = l.db_idx AND g.device_id = l.device_id
         AND g.graph_kind IN ('aclgraph_graph_replay', 'cuda_graph_replay')
        UNION ALL
        SELECT g.event_n, 'protected_interval', p.protected_interval_id,
               n.node_id, n.occurrence_idx, n.coverage_kind
        FROM traceloom_viz_node_anchor n
        JOIN traceloom_graph_launch l ON l.anchor_n = n.anchor_n
        JOIN traceloom_protected_interval p ON p.replay_unit_n = l.replay_unit_id
         AND p.db_idx = l.db_idx AND p.device_id = l.device_id
        JOIN traceloom_cuda_graph_replay g ON g.graph_event_idx = l.replay_unit_id
         AND g.db_idx = l.db_idx AND g.device_id = l.device_id
         AND g.graph_kind IN ('aclgraph_graph_replay', 'cuda_graph_replay')
        UNION ALL
        SELECT m.event_n, 'graph_body_member', m.member_id, n.node_id,
               n.occurrence_idx, n.coverage_kind
        FROM traceloom_viz_node_anchor n
        JOIN traceloom_graph_launch l ON l.anchor_n = n.anchor_n
        JOIN traceloom_graph_body_member m ON m.launch_n = l.launch_n""").fetchall())
    kinds = {r[1] for r in got}
    assert {"auxiliary_link", "replay_unit", "protected_interval", "graph_body_member"} <= kinds, kinds
    assert got == reference


VARIANT_COST_READABLE = """
    SELECT db_idx, device_id, view_name, node_id, local_node_id, anchor_order,
           structural_symbol, observed_symbol, observed_symbol_source, rule_id, outcome,
           COUNT(*), ROUND(SUM(anchor_dur_us), 3), ROUND(AVG(anchor_dur_us), 3),
           ROUND(MIN(anchor_dur_us), 3), ROUND(MAX(anchor_dur_us), 3)
    FROM traceloom_v_symbol_normalization_placement
    WHERE coverage_kind = 'self'
    GROUP BY db_idx, device_id, view_name, node_id, local_node_id, anchor_order,
             structural_symbol, observed_symbol, observed_symbol_source, rule_id, outcome"""


def test_symbol_variant_cost_streams_the_atoms_by_node(analysis):
    """The variant cost is summed node by node over the atoms (a scan of the nodes, their
    occurrences as a key range, each occurrence's one anchor and event by key), with no sort
    before the first row, and each node's variant read from its event shape and role class by
    key: the groups and measures are those of the readable formulation over
    traceloom_v_symbol_normalization_placement."""
    steps = [r[3] for r in analysis.execute(
        "EXPLAIN QUERY PLAN SELECT * FROM traceloom_v_symbol_variant_cost")]
    assert steps[:5] == ["CO-ROUTINE node_atom", "SCAN k",
                         "SEARCH o USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)",
                         "SEARCH a USING INTEGER PRIMARY KEY (rowid=?)",
                         "SEARCH e USING INTEGER PRIMARY KEY (rowid=?)"], steps
    assert "SEARCH s USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)" in steps, steps
    assert "SEARCH c USING INTEGER PRIMARY KEY (rowid=?)" in steps, steps
    assert not any("AUTOMATIC" in s or "TEMP B-TREE" in s for s in steps), steps
    got = sorted(analysis.execute("SELECT * FROM traceloom_v_symbol_variant_cost").fetchall(),
                 key=repr)
    reference = sorted(analysis.execute(VARIANT_COST_READABLE).fetchall(), key=repr)
    assert got and got == reference
    # every anchor is counted once, at its own atom
    (anchors,) = analysis.execute("SELECT count(*) FROM traceloom_anchor").fetchone()
    assert sum(r[11] for r in got) == anchors


def _give_a_node_three_shapes(src, path, replay):
    """A copy of the analysis src at path whose first atom node of at least 3 occurrences
    (of replay-unit anchors or of eager ones) has three event shapes: occurrence 1 its own,
    2 a copy of it (same symbols), 3 another node's (other symbols). Returns the connection,
    the node (id, db_idx, device_id: a node id is unique within its tree) and its occurrence
    count."""
    con = sqlite3.connect(path)
    src.backup(con)
    node_n, first, count, own = con.execute("""
        SELECT k.node_n, k.first_occurrence_n, k.occurrence_count, e.shape_id
        FROM traceloom_node_core k
        JOIN traceloom_position_occurrence_core o ON o.occurrence_n = k.first_occurrence_n
        JOIN traceloom_anchor_core a ON a.anchor_n = o.anchor_first_n
        JOIN traceloom_event_core e ON e.event_n = a.event_n
        WHERE k.node_kind = 1 AND k.occurrence_count >= 3
          AND EXISTS (SELECT 1 FROM traceloom_graph_launch l WHERE l.anchor_n = a.anchor_n) = ?
        ORDER BY k.node_n LIMIT 1""", (replay,)).fetchone()
    (other,) = con.execute("""
        SELECT s.shape_id FROM traceloom_event_shape s
        JOIN traceloom_event_shape m ON m.shape_id = ?
        WHERE s.symbol <> m.symbol ORDER BY s.shape_id LIMIT 1""", (own,)).fetchone()
    (twin,) = con.execute("SELECT max(shape_id) + 1 FROM traceloom_event_shape").fetchone()
    con.execute("INSERT INTO traceloom_event_shape SELECT ?, source_id, source_table, kind, "
                "category, role, semantic_role, semantic_role_reason, symbol, role_class_id, "
                "label, raw_label, op_name, op_type, compute_task_type, comm_name, "
                "comm_task_type, family, task_type, context_id, model_id, graph_node_id, "
                "source_rowid_offset FROM traceloom_event_shape "
                "WHERE shape_id = ?", (twin, own))
    for occurrence_n, shape_id in ((first + 1, twin), (first + 2, other)):
        con.execute("""
            UPDATE traceloom_event_core SET shape_id = ? WHERE event_n = (
              SELECT a.event_n FROM traceloom_position_occurrence_core o
              JOIN traceloom_anchor_core a ON a.anchor_n = o.anchor_first_n
              WHERE o.occurrence_n = ?)""", (shape_id, occurrence_n))
    con.commit()
    node = con.execute("SELECT node_id, db_idx, device_id FROM traceloom_node_core "
                       "WHERE node_n = ?", (node_n,)).fetchone()
    return con, node, count


def test_symbol_variant_cost_splits_a_node_of_several_shapes(several_trees, tmp_path):
    """A node whose occurrences have several event shapes gets one row per distinct symbol
    tuple: two shapes of one tuple are summed together, a shape of another tuple apart. The
    profiles have one shape per node, so a copy gives three occurrences of an eager atom three
    shapes: its own, a copy of it (same symbols) and another node's (other symbols)."""
    con, node, count = _give_a_node_three_shapes(several_trees, tmp_path / "a.db", False)
    counts = sorted(r[0] for r in con.execute(
        "SELECT occurrence_count FROM traceloom_v_symbol_variant_cost "
        "WHERE node_id = ? AND db_idx = ? AND device_id = ?", node))
    assert counts == [1, count - 1], counts
    got = sorted(con.execute("SELECT * FROM traceloom_v_symbol_variant_cost").fetchall(),
                 key=repr)
    assert got == sorted(con.execute(VARIANT_COST_READABLE).fetchall(), key=repr)
    con.close()


def test_symbol_variant_cost_names_a_replay_node_by_its_slot(analysis, tmp_path):
    """A node of replay-unit anchors has one variant, its composition slot, whatever shapes
    its launch events have: the same surgery on exact_hlt's first repeated slot (ACLH, one per
    decode unit) leaves one row of all its occurrences."""
    con, node, count = _give_a_node_three_shapes(analysis, tmp_path / "a.db", True)
    assert count == 3
    assert con.execute(
        "SELECT structural_symbol, observed_symbol, rule_id, outcome, occurrence_count "
        "FROM traceloom_v_symbol_variant_cost WHERE node_id = ? AND db_idx = ? AND device_id = ?",
        node).fetchall() == [
            ("ACLH", "ACLH", "analysis.replay-composition-slot", "synthetic", 3)]
    got = sorted(con.execute("SELECT * FROM traceloom_v_symbol_variant_cost").fetchall(),
                 key=repr)
    assert got == sorted(con.execute(VARIANT_COST_READABLE).fetchall(), key=repr)
    con.close()


def test_evidence_role_structure_anchor_arms_read_the_cores(analysis):
    """The anchor arms read each anchor and each represented task once over the core tables and
    the occurrences covering the anchor by key (the closure of ancestors through the index SQLite
    builds on it, nothing else automatic), and give the rows of the readable formulation: every
    (covering occurrence, anchor) pair of traceloom_viz_node_anchor, for the anchor's own event
    and for each task a communication-op anchor represents, with the decision's final role."""
    steps = [r[3] for r in analysis.execute(
        "EXPLAIN QUERY PLAN SELECT * FROM traceloom_v_evidence_role_structure")]
    assert "SCAN a" in steps and "SCAN r" in steps, steps
    assert [s for s in steps if "AUTOMATIC" in s] == [
        "SEARCH enc USING AUTOMATIC COVERING INDEX (occurrence_n=?) LEFT-JOIN"], steps
    got = sorted(analysis.execute(
        "SELECT * FROM traceloom_v_evidence_role_structure WHERE placement_kind = 'anchor'"
    ).fetchall())
    reference = sorted(analysis.execute("""
        SELECT d.decision_id, d.event_id, d.final_role, 'anchor', n.anchor_id, n.node_id,
               n.occurrence_idx, n.view_name, n.coverage_kind
        FROM traceloom_viz_node_anchor n
        JOIN traceloom_anchor a ON a.anchor_n = n.anchor_n
        JOIN traceloom_evidence_role_decision d ON d.event_n = a.event_n
        UNION ALL
        SELECT d.decision_id, d.event_id, d.final_role, 'anchor', n.anchor_id, n.node_id,
               n.occurrence_idx, n.view_name, n.coverage_kind
        FROM traceloom_viz_node_anchor n
        JOIN traceloom_represented_event r ON r.anchor_n = n.anchor_n
        JOIN traceloom_evidence_role_decision d ON d.event_n = r.event_n""").fetchall())
    # (a promoted launch's anchor has no event, so no decision to place)
    (anchors,) = analysis.execute(
        "SELECT count(*) FROM traceloom_anchor WHERE event_id IS NOT NULL").fetchone()
    # each anchor is at least at its own atom and at the root's occurrence
    assert len(got) >= 2 * anchors and got == reference


@pytest.mark.parametrize("con", ["analysis", "several_trees"])
def test_symbol_normalization_placement_reads_the_cores(request, con):
    """The symbol lineage per covering occurrence walks the trees, their nodes, occurrences and
    anchors as key ranges and reads event, shape and role class by key (no automatic index);
    its rows are those of traceloom_tree_node_anchor joined to
    traceloom_anchor_symbol_normalization by anchor, over one tree or several."""
    analysis = request.getfixturevalue(con)
    steps = [r[3] for r in analysis.execute(
        "EXPLAIN QUERY PLAN SELECT * FROM traceloom_v_symbol_normalization_placement")]
    assert steps[0] == "SCAN t", steps
    for alias in "koa":
        assert f"SEARCH {alias} USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)" in steps, steps
    assert not any("AUTOMATIC" in s for s in steps), steps
    got = sorted(analysis.execute(
        "SELECT * FROM traceloom_v_symbol_normalization_placement").fetchall(), key=repr)
    reference = sorted(analysis.execute("""
        SELECT d.anchor_id, d.db_idx, d.device_id, d.anchor_idx, d.event_id, d.observed_symbol,
               d.observed_symbol_source, d.structural_symbol, d.policy_id, d.policy_version,
               d.rule_id, d.outcome, d.reason_code, d.candidate_rule_ids, d.source_path,
               d.source_table, d.source_key, na.node_id, na.local_node_id, na.view_name,
               na.occurrence_idx, na.anchor_order, na.coverage_kind, na.repeat_context,
               na.self_us
        FROM traceloom_tree_node_anchor na
        JOIN traceloom_anchor_symbol_normalization d ON d.anchor_n = na.anchor_n""").fetchall(),
        key=repr)
    assert got and got == reference
    # every anchor once at its own atom
    (anchors,) = analysis.execute("SELECT count(*) FROM traceloom_anchor").fetchone()
    assert sum(r[22] == "self" for r in got) == anchors



def test_anchor_cost_breakdown_reads_the_cores(analysis):
    """The per-anchor cost breakdown reads each anchor, its shape and its event by key (one
    search each, no automatic index, no correlated subquery for anchor_idx, no scan of the
    anchors inside another loop); its rows are those the anchor view gives: anchor_idx, symbol
    and role, packet total, self time and linked auxiliary time (unrounded, equal to the
    rounded ones)."""
    steps = [(r[1], r[3]) for r in analysis.execute(
        "EXPLAIN QUERY PLAN SELECT * FROM traceloom_anchor_cost_breakdown")]
    assert walk_problems(steps) == [], steps
    steps = [d for _, d in steps]
    assert "SEARCH a USING INTEGER PRIMARY KEY (rowid=?)" in steps, steps
    assert "SEARCH s USING INTEGER PRIMARY KEY (rowid=?) LEFT-JOIN" in steps, steps
    assert "SEARCH e USING INTEGER PRIMARY KEY (rowid=?) LEFT-JOIN" in steps, steps
    assert not any("AUTOMATIC" in s for s in steps), steps
    got = sorted(analysis.execute(
        "SELECT anchor_id, db_idx, device_id, anchor_idx, symbol, total_us, self_us, aux_us,"
        " anchor_n, anchor_kind FROM traceloom_anchor_cost_breakdown").fetchall(), key=repr)
    reference = sorted(analysis.execute("""
        SELECT anchor_id, db_idx, device_id, anchor_idx, symbol, ROUND(total_us, 3),
               ROUND(self_us, 3), ROUND(linked_aux_us, 3), anchor_n, role
        FROM traceloom_anchor""").fetchall(), key=repr)
    assert len(got) == len(reference) > 0
    kinds = {"compute": "exec", "comm": "collective"}
    for g, r in zip(got, reference):
        assert g[:9] == r[:9]
        assert g[9] == kinds.get(r[9], r[9]) or r[9] == "graph", (g, r)


def test_anchor_aux_searches_the_links_by_event_text_id(analysis):
    """The anchor-aux report (anchors, their links by anchor_id, the linked events by
    aux_event_id) scans the events once and searches the links through their unique index on
    aux_event_id, instead of an automatic index over every event."""
    sql = (ROOT.parent / "shared" / "reference" / "report-sql" / "anchor-aux.sql").read_text()
    steps = [r[3] for r in analysis.execute("EXPLAIN QUERY PLAN " + sql)]
    assert "SEARCH al USING INDEX traceloom_aux_link_event_id (aux_event_id=?)" in steps, steps
    assert not any(s.startswith("SEARCH c USING AUTOMATIC") for s in steps), steps
    # the index is unique: every non-anchor event is linked (or left unplaced) once
    assert analysis.execute(
        "SELECT count(*) = count(DISTINCT aux_event_id) FROM traceloom_aux_link").fetchone()[0]


def test_node_host_interval_reads_the_anchor_once(analysis):
    """The host interval after each anchor of a node occurrence searches no anchor row beyond the
    pair's own and the window's (no traceloom_anchor join for the anchor again or for its right
    neighbour); its rows are those of the formulation through traceloom_anchor."""
    steps = [r[3] for r in analysis.execute(
        "EXPLAIN QUERY PLAN SELECT node_id, support_state FROM traceloom_v_node_host_interval")]
    anchor_searches = [s for s in steps if s.startswith("SEARCH a USING INTEGER PRIMARY KEY (rowid=?)")]
    assert len(anchor_searches) <= 2, steps
    got = sorted(analysis.execute(
        "SELECT node_id, occurrence_idx, anchor_order, anchor_idx, right_anchor_idx,"
        " right_anchor_symbol, right_anchor_role, interval_id, support_state"
        " FROM traceloom_v_node_host_interval").fetchall(), key=repr)
    reference = sorted(analysis.execute("""
        SELECT na.node_id, na.occurrence_idx, na.anchor_order, a.anchor_idx, nx.anchor_idx,
               nx.symbol, nx.role, h.interval_id, h.support_state
        FROM traceloom_tree_node_anchor na
        JOIN traceloom_anchor a ON a.anchor_n = na.anchor_n
        JOIN traceloom_anchor_host_interval h ON h.left_anchor_n = a.anchor_n
        JOIN traceloom_anchor nx ON nx.anchor_n = a.anchor_n + 1""").fetchall(), key=repr)
    assert got and got == reference


def test_evidence_role_placement_names_its_arms_outside_the_union(analysis):
    """The placements' union holds the event (its key is the decision id), the arm's number and what differs
    per row; the outer select names the constant columns and ids. Its rows are those of the
    readable union that writes every column in every arm (below), and a constant filter on a constant column (evidence-role-member and -omissions
    filter placement_kind) gives the same rows as that union filtered."""
    reference_sql = """
        SELECT e.event_n, 0, 'normalized_event', e.event_id, NULL,
               'traceloom_event', 'supported', 'normalized_event_retained', e.event_n
        FROM traceloom_event e
        UNION ALL
        SELECT a.event_n, 1, 'anchor', a.anchor_id, NULL, 'traceloom_anchor',
               'supported', 'direct_event_anchor', a.event_n
        FROM traceloom_anchor a WHERE a.event_id IS NOT NULL
        UNION ALL
        SELECT r.event_n, 1, 'anchor', a.anchor_id, NULL, 'traceloom_anchor',
               'supported', 'represented_by_communication_anchor', r.event_n
        FROM traceloom_represented_event r JOIN traceloom_anchor a ON a.anchor_n = r.anchor_n
        UNION ALL
        SELECT l.aux_event_n, 1, 'auxiliary_link',
               l.anchor_id || '/aux-' || l.aux_order, l.anchor_id, 'traceloom_aux_link',
               'supported', 'retained_between_anchor_evidence', l.aux_event_n
        FROM traceloom_aux_link l WHERE l.link_type = 'prelude'
        UNION ALL
        SELECT m.event_n, 1, 'replay_unit', 'replay-unit-' || l.replay_unit_id, NULL,
               'traceloom_graph_launch', 'supported', 'exact_composite_membership', m.event_n
        FROM traceloom_graph_body_member m JOIN traceloom_graph_launch l ON l.launch_n = m.launch_n
        WHERE l.replay_unit_id IS NOT NULL
        UNION ALL
        SELECT c.event_n, 1, 'replay_unit', 'replay-unit-' || l.replay_unit_id, NULL,
               'traceloom_graph_launch', 'supported', 'exact_composite_membership', c.event_n
        FROM traceloom_graph_launch_control c
        JOIN traceloom_graph_launch l ON l.launch_n = c.launch_n
        WHERE l.replay_unit_id IS NOT NULL
        UNION ALL
        SELECT m.event_n, 2, 'protected_interval', p.protected_interval_id,
               p.replay_unit_id, 'traceloom_protected_interval', 'supported',
               'generic_discovery_no_cross_boundary', m.event_n
        FROM traceloom_graph_body_member m JOIN traceloom_graph_launch l ON l.launch_n = m.launch_n
        JOIN traceloom_protected_interval p ON p.replay_unit_n = l.replay_unit_id
         AND p.db_idx = l.db_idx AND p.device_id = l.device_id
        UNION ALL
        SELECT c.event_n, 2, 'protected_interval', p.protected_interval_id,
               p.replay_unit_id, 'traceloom_protected_interval', 'supported',
               'generic_discovery_no_cross_boundary', c.event_n
        FROM traceloom_graph_launch_control c
        JOIN traceloom_graph_launch l ON l.launch_n = c.launch_n
        JOIN traceloom_protected_interval p ON p.replay_unit_n = l.replay_unit_id
         AND p.db_idx = l.db_idx AND p.device_id = l.device_id
        UNION ALL
        -- a unit's own event (its envelope's) in its unit and the unit's protected interval
        SELECT g.event_n, 1, 'replay_unit', 'replay-unit-' || g.graph_event_idx, NULL,
               'traceloom_graph_launch', 'supported', 'exact_composite_membership', g.event_n
        FROM traceloom_cuda_graph_replay g
        WHERE g.graph_kind IN ('aclgraph_graph_replay', 'cuda_graph_replay')
        UNION ALL
        SELECT g.event_n, 2, 'protected_interval', p.protected_interval_id,
               p.replay_unit_id, 'traceloom_protected_interval', 'supported',
               'generic_discovery_no_cross_boundary', g.event_n
        FROM traceloom_cuda_graph_replay g
        JOIN traceloom_protected_interval p ON p.replay_unit_n = g.graph_event_idx
         AND p.db_idx = g.db_idx AND p.device_id = g.device_id
        WHERE g.graph_kind IN ('aclgraph_graph_replay', 'cuda_graph_replay')
        UNION ALL
        SELECT m.event_n, 3, 'graph_body_member', m.member_id, NULL,
               'traceloom_graph_body_member', 'supported', 'exact_graph_body_membership', m.event_n
        FROM traceloom_graph_body_member m"""
    got = sorted(analysis.execute(
        "SELECT * FROM traceloom_evidence_role_placement").fetchall(), key=repr)
    reference = sorted(analysis.execute(reference_sql).fetchall(), key=repr)
    assert got == reference
    # every arm but the represented one (exact_hlt has no communication op anchor that
    # represents tasks; the generated profiles' digests cover it) has rows here
    reasons = {r[7] for r in got}
    assert reasons == {"normalized_event_retained", "direct_event_anchor",
                       "retained_between_anchor_evidence", "exact_composite_membership",
                       "generic_discovery_no_cross_boundary", "exact_graph_body_membership"}
    for kind in ("auxiliary_link", "replay_unit"):
        filtered = sorted(analysis.execute(
            "SELECT * FROM traceloom_evidence_role_placement WHERE placement_kind = ?",
            (kind,)).fetchall(), key=repr)
        assert filtered and filtered == [r for r in reference if r[2] == kind]
    # evidence-role-event builds the placements once and reads them once for its one decision:
    # the integer decision id is exposed as +event_n, so no automatic index is built on them
    sql = (ROOT.parent / "shared" / "reference" / "report-sql" / "evidence-role-event.sql")
    if sql.exists():
        steps = [r[3] for r in analysis.execute("EXPLAIN QUERY PLAN " + sql.read_text())]
        assert steps.count("MATERIALIZE p") == 1, steps
        assert "SCAN p LEFT-JOIN" in steps, steps
        assert not any(s.startswith("SEARCH p USING AUTOMATIC") for s in steps), steps


# Row counts of the 1M-task bench profile (bench/out/ascend_reports_1000000, its sqlite_stat1):
# the fixture's own statistics describe a few rows, under which SQLite picks other plans than
# it does at scale. The host activity and bubble reports are planned here under these counts.
BENCH_ROWS = {"traceloom_anchor_core": 741604, "traceloom_node_core": 512346,
              "traceloom_position_occurrence_core": 752985,
              "traceloom_position_occurrence_body": 11380, "traceloom_event_core": 1127082,
              "traceloom_runtime_call_core": 747565,
              "traceloom_runtime_device_relation_core": 1002481,
              "traceloom_anchor_host_window_call": 6252,
              "traceloom_anchor_host_window_rejected": 1,
              # the shapes a key search or a scan is chosen by (SQLite scans a table it
              # believes has three rows rather than search it once per outer row)
              "traceloom_runtime_call_shape": 18, "traceloom_runtime_device_relation_shape": 5}
REPORT_SQL = ROOT.parent / "shared" / "reference" / "report-sql"


def with_bench_statistics(analysis_db, path):
    """A copy of analysis_db at path whose planner statistics are the 1M bench profile's,
    opened read-only (so SQLite reads them afresh)."""
    src = sqlite3.connect(f"file:{analysis_db}?mode=ro", uri=True)
    dst = sqlite3.connect(path)
    src.backup(dst)
    src.close()
    for table, n in BENCH_ROWS.items():
        for idx, stat in dst.execute("SELECT idx, stat FROM sqlite_stat1 WHERE tbl = ?",
                                     (table,)).fetchall():
            dst.execute("UPDATE sqlite_stat1 SET stat = ? WHERE tbl = ? AND idx IS ?",
                        (" ".join([str(n)] + stat.split()[1:]), table, idx))
    dst.commit()
    dst.close()
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    assert con.execute("SELECT stat FROM sqlite_stat1 WHERE tbl = 'traceloom_node_core'"
                       " AND idx IS NULL").fetchone() == ("512346",)
    return con


@pytest.fixture(scope="module")
def bench_planned(exact_hlt_db, tmp_path_factory):
    con = with_bench_statistics(exact_hlt_db,
                                tmp_path_factory.mktemp("bench_planned") / "analysis.db")
    yield con
    con.close()


@pytest.fixture(scope="module")
def text_id_planned(cli, fixtures, tmp_path_factory):
    """exact_hlt analysed with {"text_id_indexes": true}, with the bench's statistics."""
    here = tmp_path_factory.mktemp("text_id_planned")
    subprocess.run([str(cli), str(fixtures / "exact_hlt" / "mono"), "--output",
                    str(here / "indexed.db"), "--options", '{"text_id_indexes": true}'],
                   check=True, capture_output=True)
    con = with_bench_statistics(here / "indexed.db", here / "analysis.db")
    yield con
    con.close()


def plan_tree(con, sql):
    """(id, parent, detail) of EXPLAIN QUERY PLAN, and each step's chain of ancestors."""
    steps = con.execute("EXPLAIN QUERY PLAN " + sql).fetchall()
    detail = {i: d for i, _, _, d in steps}
    parent = {i: p for i, p, _, _ in steps}
    def ancestors(i):
        out = []
        while parent.get(i) in detail:
            i = parent[i]
            out.append(detail[i])
        return out
    return [(i, p, d, ancestors(i)) for i, p, _, d in steps]


def report_plan_problems(con, name, allowed=()):
    """plan_problems of a reference report query, outside the CTEs that pick its target
    (MATERIALIZE target...: other views', run once)."""
    return plan_problems([(parent, detail) for _, parent, detail, above
                          in plan_tree(con, (REPORT_SQL / (name + ".sql")).read_text())
                          if not any(a.startswith("MATERIALIZE target") for a in above)],
                         allowed)


needs_reference_sql = pytest.mark.skipif(not REPORT_SQL.is_dir(),
                                         reason="reference report queries not found")


TEXT_ID_INDEXES = ("traceloom_anchor_core_anchor_id", "traceloom_event_core_event_id")


def test_text_id_indexes_only_with_the_option(bench_planned, text_id_planned):
    """The analyze option text_id_indexes stores both text ids and indexes them (and says so
    in the recorded options); a default analysis indexes only the anchor's, on its generated
    column (16 MB at 1M: node-events' first join), not the event's (24 MB more)."""
    def indexes(con):
        return sorted(r[0] for r in con.execute(
            "SELECT name FROM sqlite_schema WHERE type = 'index' AND name IN (?, ?)",
            TEXT_ID_INDEXES))
    assert indexes(bench_planned) == ["traceloom_anchor_core_anchor_id"]
    assert indexes(text_id_planned) == sorted(TEXT_ID_INDEXES)
    def generated(con, table, column):
        return [r[6] for r in con.execute(f"PRAGMA table_xinfo({table})") if r[1] == column]
    assert generated(bench_planned, "traceloom_anchor_core", "anchor_id") == [2]  # VIRTUAL
    assert generated(text_id_planned, "traceloom_anchor_core", "anchor_id") == [0]  # stored
    (options,) = text_id_planned.execute(
        "SELECT value FROM traceloom_metadata WHERE key = 'analysis_options'").fetchone()
    assert json.loads(options)["text_id_indexes"] is True


@needs_reference_sql
def test_text_id_indexes_serve_node_events_at_scale(bench_planned, text_id_planned):
    """node-events joins a node's anchors to traceloom_anchor by anchor_id and those to
    traceloom_event by event_id. At the bench's sizes a default analysis searches the anchors
    by the index on their generated id and has SQLite build an automatic index over the
    events for the second join (1.2 s at 1M; both were automatic before the anchor's index:
    2.6 s); with the option both are searched by the stored indexes, and the rows are the
    same."""
    default = report_plan_problems(bench_planned, "node-events")
    assert not any("anchor_id" in p for p in default), default
    assert any("AUTOMATIC" in p and "event_id" in p for p in default), default
    assert "SEARCH a USING INDEX traceloom_anchor_core_anchor_id (anchor_id=?)" in [
        d for _, _, d, _ in plan_tree(bench_planned, (REPORT_SQL / "node-events.sql").read_text())]
    assert report_plan_problems(text_id_planned, "node-events") == []
    plan = " | ".join(d for _, _, d, _ in plan_tree(
        text_id_planned, (REPORT_SQL / "node-events.sql").read_text()))
    for name in TEXT_ID_INDEXES:
        assert f"USING INDEX {name} " in plan, plan
    sql = (REPORT_SQL / "node-events.sql").read_text()
    rows = text_id_planned.execute(sql).fetchall()
    assert rows and rows == bench_planned.execute(sql).fetchall()


@needs_reference_sql
@pytest.mark.parametrize("name", ["anchor-host-activity", "synchronization-actions",
                                  "runtime-device-relations", "structure-bubble-statistics",
                                  "node-host-activity"])
def test_host_and_bubble_reports_join_by_key_at_scale(bench_planned, name):
    # the small aggregates the views look up by the index SQLite builds on them (AGGREGATES)
    assert report_plan_problems(bench_planned, name, ("api", "f")) == []


def test_symbol_variant_cost_streams_at_scale(bench_planned):
    """At a million anchors the variant cost still walks the atoms node by node and sorts
    nothing: its first rows (and ORDER BY total_us LIMIT n) need no sort of every anchor. Grouped
    by node and symbol columns it sorted all 741k atom anchors before its first row."""
    for sql in ("SELECT * FROM traceloom_v_symbol_variant_cost LIMIT 100",
                "SELECT local_node_id, anchor_order, observed_symbol, occurrence_count, total_us"
                " FROM traceloom_v_symbol_variant_cost ORDER BY total_us DESC LIMIT 20"):
        steps = [d for _, _, d, _ in plan_tree(bench_planned, sql)]
        assert steps[:3] == ["CO-ROUTINE node_atom", "SCAN k",
                             "SEARCH o USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)"], steps
        assert not any("AUTOMATIC" in d or "FOR GROUP BY" in d for d in steps), steps


@needs_reference_sql
def test_node_host_activity_starts_from_the_node_at_scale(bench_planned):
    """node-host-activity picks its node by text id: the plan filters the node table and reads
    that node's occurrences and anchors as key ranges, the windows and observed calls by key.
    Through the readable node-anchor view SQLite started from every anchor (or the observed
    calls) and built automatic indexes on the node ids and on the occurrences' node."""
    steps = [(d, above) for _, _, d, above in plan_tree(
        bench_planned, (REPORT_SQL / "node-host-activity.sql").read_text())
        if not above and d.startswith(("SCAN ", "SEARCH "))]
    assert steps[0][0] == "SCAN n", steps
    assert steps[1][0] == "SEARCH o USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)", steps
    assert steps[2][0] == "SEARCH a USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)", steps
    assert "SEARCH o USING PRIMARY KEY (left_anchor_n=?)" in [d for d, _ in steps], steps


@needs_reference_sql
def test_sync_actions_test_the_event_shape_before_the_call(bench_planned):
    """synchronization-actions keeps a relation by its device event's shape (source table and
    symbol), the view's device columns, tested where the event and its shape are joined,
    which traceloom_v_runtime_device does first (SQLite codes a WHERE term at the loop that
    gives its last table): the relation's state, its call and the call's shape are searched
    for the kept relations only, and no subquery reads the event or its shape again. Through
    a subquery on the event and its shape, tested with the provider after the call's joins,
    every relation (1M at a million tasks) was joined to its state, call and call shape."""
    tree = plan_tree(bench_planned, (REPORT_SQL / "synchronization-actions.sql").read_text())
    top = [d for _, _, d, above in tree if not above]
    loops = [d.split()[1] for d in top if d.startswith(("SCAN ", "SEARCH "))]
    assert loops == ["r", "e", "es", "rs", "c", "cs"], top
    # (the graph launch's columns keep their subqueries, run for a relation without an event)
    event_shape = ["SEARCH x USING INTEGER PRIMARY KEY (rowid=?)",
                   "SEARCH s USING INTEGER PRIMARY KEY (rowid=?)"]
    for i, _, d, above in tree:
        if not above and d.startswith("CORRELATED SCALAR SUBQUERY"):
            assert [c for _, p, c, _ in tree if p == i] != event_shape, tree


# The synchronization actions worked out from the storage: the relations whose device event's
# shape is a CUDA synchronization record or an Ascend EVENT_RECORD / EVENT_WAIT task, of that
# provider (the call shape's, else the input's).
SYNC_RELATIONS = """
SELECT r.relation_n FROM traceloom_runtime_device_relation_core r
JOIN traceloom_event_core e ON e.event_n = r.event_n
JOIN traceloom_event_shape s ON s.shape_id = e.shape_id
JOIN traceloom_input i ON i.db_idx = r.db_idx
LEFT JOIN traceloom_runtime_call_core c ON c.call_n = r.call_n
LEFT JOIN traceloom_runtime_call_shape cs ON cs.shape_id = c.shape_id
WHERE COALESCE(cs.provider, i.provider) =
      CASE WHEN s.source_table = 'CUPTI_ACTIVITY_KIND_SYNCHRONIZATION' THEN 'cuda'
           WHEN s.source_table IN ('TASK', 'AscendTask')
            AND COALESCE(s.op_name, s.raw_label, s.task_type) IN ('EVENT_RECORD', 'EVENT_WAIT')
           THEN 'ascend' END
ORDER BY 1"""


@pytest.mark.parametrize("profile", ["gen/ascend_s3_l6_k8", "nsys/nsys_basic.sqlite"])
def test_sync_actions_are_the_relations_of_synchronization_records(cli, fixtures, tmp_path,
                                                                    profile):
    """traceloom_v_sync_runtime_call keeps the relations of the synchronization records of
    their provider (Ascend EVENT_RECORD / EVENT_WAIT tasks, CUDA synchronization records)."""
    out = tmp_path / "analysis.db"
    subprocess.run([str(cli), str(fixtures / profile), "--output", str(out)],
                   check=True, capture_output=True)
    con = sqlite3.connect(f"file:{out}?mode=ro", uri=True)
    got = con.execute("SELECT relation_n FROM traceloom_v_sync_runtime_call"
                      " ORDER BY 1").fetchall()
    assert got and got == con.execute(SYNC_RELATIONS).fetchall()
    con.close()


def test_runtime_device_joins_the_storage_by_key_at_scale(bench_planned):
    """traceloom_v_runtime_device reads the relation, its state, call and event and their
    shapes as LEFT JOINs by integer key, not through the relation, call and event views, whose
    text columns are one scalar subquery each (a cursor opened per evaluation): its catalog
    example (a count per provider and support state over 1M relations) read two to four
    of them per relation. The one subquery left is the input's provider, for a relation
    without a call."""
    example = bench_planned.execute(
        "SELECT example_sql FROM traceloom_analysis_surface"
        " WHERE relation_name = 'traceloom_v_runtime_device'").fetchone()[0]
    tree = plan_tree(bench_planned, example)
    top = [d for _, _, d, above in tree if not above]
    assert top[:6] == ["SCAN r"] + [f"SEARCH {a} USING INTEGER PRIMARY KEY (rowid=?) LEFT-JOIN"
                                     for a in ("e", "es", "rs", "c", "cs")], top
    searched = {d.split()[1] for _, _, d, above in tree
                if above and d.startswith(("SEARCH ", "SCAN "))}
    assert searched == {"i"}, tree
    assert plan_problems([(p, d) for _, p, d, _ in tree]) == []


def test_context_device_coverage_reads_the_cores_by_key_at_scale(bench_planned):
    """traceloom_v_context_device_coverage reads every event once and its shape, relation and
    relation state by integer key, with no correlated subquery: through traceloom_device_work
    each item looked its task type and its supported relation's call (launch_call_n: a
    subquery on the relation around one on its shape) up per evaluation, half of the catalog
    example's CPU at a million tasks. The step assignment is searched by its key. The graph
    launches, device work without an event, are a second arm (a compound view: the aggregate
    reads it as a co-routine, 1.04-1.13 -> 1.29-1.32 s CPU at a million tasks)."""
    example = bench_planned.execute(
        "SELECT example_sql FROM traceloom_analysis_surface"
        " WHERE relation_name = 'traceloom_v_context_device_coverage'").fetchone()[0]
    tree = plan_tree(bench_planned, example)
    steps = [d for _, _, d, _ in tree]
    first = steps.index("LEFT-MOST SUBQUERY")
    launches = steps.index("UNION ALL")
    assert steps[first + 1] == "SCAN e", steps
    for alias in ("s", "r", "rs"):
        assert (f"SEARCH {alias} USING INTEGER PRIMARY KEY (rowid=?) LEFT-JOIN"
                in steps[first:launches]), steps
    assert steps[launches + 1] == "SCAN g", steps
    assert steps.count("SEARCH a USING PRIMARY KEY (device_work_id=?) LEFT-JOIN") == 2, steps
    assert not any("CORRELATED" in d or "AUTOMATIC" in d for d in steps), steps


def test_device_work_reads_the_event_core_by_key_at_scale(bench_planned):
    """traceloom_device_work's event items (the compound's first arm) read the event core once
    and its shape and relation by integer key, the relation's support state tested against a
    list of the supported shapes made once: through traceloom_event every item ran six
    correlated subqueries (task type, source table, symbol columns, the supported relation's
    call and its state), most of the catalog example's CPU at a million tasks."""
    example = bench_planned.execute(
        "SELECT example_sql FROM traceloom_analysis_surface"
        " WHERE relation_name = 'traceloom_device_work'").fetchone()[0]
    tree = [(i, p, d) for i, p, d, above in plan_tree(bench_planned, example)
            if "LEFT-MOST SUBQUERY" in above]
    # The one correlated step allowed: the source key's fallback, the event's stored key by
    # integer key, which COALESCE reads only where its shape has no source_rowid_offset (a
    # Kineto shape, a replay unit's: never on this profile), sql/schema/10_events.sql.
    fallback = {i for i, _, d in tree if d.startswith("CORRELATED SCALAR SUBQUERY")
                and [c for _, q, c in tree if q == i]
                == ["SEARCH sk USING INTEGER PRIMARY KEY (rowid=?)"]}
    assert len(fallback) == 1, tree
    arm = [(p, d) for i, p, d in tree if i not in fallback and p not in fallback]
    steps = [d for _, d in arm]
    assert steps[0] == "SCAN e", steps
    for alias in ("s", "r"):
        assert f"SEARCH {alias} USING INTEGER PRIMARY KEY (rowid=?) LEFT-JOIN" in steps, steps
    assert not any("CORRELATED" in d or "AUTOMATIC" in d for d in steps), steps
    # the input (one row per profile database) is read after the event, scanned or by key
    assert plan_problems([(p, d) for p, d in arm if d != "SCAN i"]) == []


def test_device_work_example_streams_the_union_at_scale(bench_planned):
    """The catalog example joins the events to the device work with CROSS JOIN, so that SQLite
    runs the union as a co-routine read once in the outer loop; after a plain JOIN it wrote all
    of it (every column of each of 1M items) to a temporary table before the join, about a
    quarter of the example's CPU at a million tasks. Each item's event is searched by key."""
    example = bench_planned.execute(
        "SELECT example_sql FROM traceloom_analysis_surface"
        " WHERE relation_name = 'traceloom_device_work'").fetchone()[0]
    tree = plan_tree(bench_planned, example)
    top = [d for _, _, d, above in tree if not above]
    assert top[0] == "CO-ROUTINE traceloom_device_work", top
    assert not any(d.startswith("MATERIALIZE") for _, _, d, _ in tree), top
    assert top[1:3] == ["SCAN w",
                        "SEARCH c USING INTEGER PRIMARY KEY (rowid=?)"], top
    # the example's words: the same rows as the plain JOIN of the two public relations
    plain = example.replace(" CROSS JOIN ", " JOIN ")
    assert plain != example
    assert sorted(bench_planned.execute(example).fetchall()) == \
        sorted(bench_planned.execute(plain).fetchall())


def example_plan_loops(con, relation):
    """The plan tree of a relation's catalog example and its top-level loops' table aliases."""
    example = con.execute("SELECT example_sql FROM traceloom_analysis_surface"
                          " WHERE relation_name = ?", (relation,)).fetchone()[0]
    tree = plan_tree(con, example)
    loops = [d.split()[1] for _, _, d, above in tree
             if not above and d.startswith(("SCAN ", "SEARCH "))]
    return tree, loops


def test_bubble_example_joins_no_endpoint_call_at_scale(bench_planned):
    """traceloom_v_structure_bubble_occurrence's example (every column, ORDER BY bubble_us DESC
    LIMIT 10) joins per bubble only what its rows are made of (the right anchor, its left
    neighbour, the atom occurrence and node): SQLite computes the other columns only for a row
    that can enter the top ten, but runs every join for every row. The window's endpoint
    calls are read in the columns that name them; joined as traceloom_runtime_call by the
    anchors' host_call_n (an anchor and a call searched per side) they were 40% of the
    example's VM steps at a million anchors."""
    tree, loops = example_plan_loops(bench_planned, "traceloom_v_structure_bubble_occurrence")
    assert loops == ["a", "a", "oc", "n"], loops
    # the endpoint calls by key inside the columns' subqueries
    inner = [d for _, _, d, above in tree if above and d.startswith("SEARCH c ")]
    assert inner and all(d == "SEARCH c USING INTEGER PRIMARY KEY (rowid=?)" for d in inner), tree
    assert plan_problems([(p, d) for _, p, d, _ in tree]) == []


def test_node_host_interval_example_searches_no_call_at_scale(bench_planned):
    """traceloom_v_node_host_interval's example counts the windows after each atom's anchors
    per node and state: per (occurrence, anchor) pair it reads the window's two anchors (the
    state) and the anchor's row, and no runtime call. The window's scope and the interval's
    endpoint columns read the calls inside the columns that name them: as LEFT JOINs (the
    window's two call cores, the interval's two traceloom_runtime_call rows) SQLite kept them
    in the aggregate and searched four calls per pair (741k pairs at a million anchors), a
    fifth of the example's VM steps."""
    tree, loops = example_plan_loops(bench_planned, "traceloom_v_node_host_interval")
    assert loops == ["n", "o", "a", "l", "r", "a"], loops
    assert plan_problems([(p, d) for _, p, d, _ in tree]) == []


def test_launch_delay_reads_the_shapes_by_key_at_scale(bench_planned):
    """traceloom_v_launch_delay's example groups every launched event: the events are scanned
    once, their relation, its state, the call and the event's shape searched by integer key,
    and no correlated subquery is run (the state and the symbol were one each per event)."""
    example = bench_planned.execute(
        "SELECT example_sql FROM traceloom_analysis_surface"
        " WHERE relation_name = 'traceloom_v_launch_delay'").fetchone()[0]
    steps = [d for _, _, d, _ in plan_tree(bench_planned, example)]
    assert steps[0] == "SCAN e", steps
    for alias in ("r", "rs", "c", "es"):
        assert any(d.startswith(f"SEARCH {alias} USING INTEGER PRIMARY KEY (rowid=?)")
                   for d in steps), (alias, steps)
    assert not any("SUBQUERY" in d or "AUTOMATIC" in d for d in steps), steps
    assert plan_problems([(0, d) for d in steps]) == []


@needs_reference_sql
def test_bubble_positions_read_no_endpoint_calls(bench_planned):
    """The per-position bubble aggregate reads each bubble's anchor and its left neighbour and
    probes the stored rejected windows; it does not read the two endpoint calls of every
    bubble's window (lc, rc), which cost 1.1 s over the 741k bubbles of the bench profile."""
    inner = [d for _, _, d, above in plan_tree(
        bench_planned, (REPORT_SQL / "structure-bubble-statistics.sql").read_text())
        if above and above[-1] == "CO-ROUTINE b"]
    assert "SEARCH l USING INTEGER PRIMARY KEY (rowid=?)" in inner, inner
    assert not any(d.startswith(("SEARCH lc", "SEARCH rc")) for d in inner), inner


@needs_reference_sql
def test_bubble_drilldown_target_reads_the_anchor_pair(bench_planned):
    """structure-bubble-drilldown ranks every bubble by bubble_us: that pass reads each anchor
    and its left neighbour only (the occurrence, node and window are read for the chosen
    bubble); it was seven rows a bubble. The drilldown's own join of runtime calls by their
    text id (call.runtime_call_id = activity.runtime_call_id) is the one automatic index:
    no stored index serves a text id."""
    tree = plan_tree(bench_planned, (REPORT_SQL / "structure-bubble-drilldown.sql").read_text())
    ranking = [d for _, _, d, above in tree if above and above[0] == "MATERIALIZE target"]
    assert ranking == ["SCAN a", "SEARCH a USING INTEGER PRIMARY KEY (rowid=?)",
                       "USE TEMP B-TREE FOR ORDER BY"], ranking
    automatic = [d for _, _, d, _ in tree if "AUTOMATIC" in d]
    assert automatic == ["SEARCH c USING AUTOMATIC COVERING INDEX (runtime_call_id=?) LEFT-JOIN"], \
        automatic
# The tree-map and semantic-tree-readable reports (../shared/reference/report-sql), as written
# there: every node of the report tree, printed in tree order.
TREE_MAP = """select local_node_id as node, label, depth, occurrence_count as occ,
  round(avg_total_us, 3) as avg_total_us, round(avg_aux_us, 3) as avg_aux_us,
  round(total_us, 3) as total_us
from traceloom_v_tree_node
order by db_idx, device_id, view_name, display_order"""
READABLE_TREE = """SELECT line FROM traceloom_v_semantic_tree_readable
WHERE view_name = 'anchor_tree' ORDER BY db_idx, device_id, tree_kind, preorder_idx"""


@pytest.mark.parametrize("sql", [TREE_MAP, READABLE_TREE], ids=["tree-map", "readable-tree"])
def test_report_tree_reads_each_node_once_by_key(analysis, sql):
    """The report tree's readable views read each node once and the node's shape, its
    parent's path and its single occurrence or anchor by key, as joins (no correlated subquery
    per node and column, no automatic index, no other scan of the nodes); both walk the trees,
    the readable tree each tree's node rows as one key range, read once (its preorder_idx is
    the place in that range, not the node row read again by key)."""
    steps = [r[3] for r in analysis.execute("EXPLAIN QUERY PLAN " + sql)]
    scans = [s for s in steps if s.startswith("SCAN ")]
    assert scans == ["SCAN t USING INDEX sqlite_autoindex_traceloom_tree_core_1"], steps
    assert not any(s.startswith("SEARCH t ") for s in steps), steps
    if sql == READABLE_TREE:
        assert [s for s in steps if s.startswith("SEARCH c ")] == [
            "SEARCH c USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)"], steps
    assert not any("CORRELATED" in s or "AUTOMATIC" in s for s in steps), steps
    assert "SEARCH s USING INTEGER PRIMARY KEY (rowid=?) LEFT-JOIN" in steps, steps


ANCHOR_COST = """select anchor_idx, symbol, anchor_kind, total_us, self_us, aux_us, graph_child_us,
  residual_us, raw_child_task_count, top_ops, diagnostic_flags
from traceloom_anchor_cost_breakdown
order by anchor_idx"""


@pytest.mark.parametrize("sql", [TREE_MAP, ANCHOR_COST], ids=["tree-map", "anchor-cost-breakdown"])
def test_tree_and_anchor_reports_sort_nothing_at_scale(bench_planned, sql):
    """Under the bench profile's row counts the tree map and the anchor cost breakdown read
    their rows in the order they print them: the tree map walks the trees by their (db_idx,
    device_id) index and each tree's nodes by preorder number (k, a rowid range), the
    breakdown walks anchor_idx (k) and each tree's anchor at it; the nodes and anchors by key.
    Sorting every row (512k nodes, 741k anchors) was a fifth of either report's CPU."""
    steps = [(p, d) for _, p, d, _ in plan_tree(bench_planned, sql)]
    assert walk_problems(steps) == [], steps
    details = [d for _, d in steps]
    assert not any("TEMP B-TREE" in d for d in details), details
    k = "SEARCH k USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)"
    if sql == TREE_MAP:
        assert details[:3] == ["SCAN t USING INDEX sqlite_autoindex_traceloom_tree_core_1", k,
                               "SEARCH c USING INTEGER PRIMARY KEY (rowid=?)"], details
    else:
        assert details[0] == k, details
        assert "SEARCH a USING INTEGER PRIMARY KEY (rowid=?)" in details, details


@needs_reference_sql
def test_symbol_normalization_audit_sorts_within_a_tree_at_scale(bench_planned):
    """Under the bench profile's row counts the symbol-normalization audit walks the trees by
    their (db_idx, device_id) index, each tree's nodes, occurrences and anchors as key ranges,
    and sorts its rows only within a tree, node_id first (text order, which no walk gives):
    scanning the occurrences first it sorted every row on (db_idx, device_id, node_id, ...),
    two equal integers compared before the text, and read the occurrences of every Seq and
    Repeat node, which the audit's coverage_kind = 'self' drops."""
    details = [d for _, _, d, _ in plan_tree(
        bench_planned, (REPORT_SQL / "symbol-normalization-audit.sql").read_text())]
    range_ = "USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)"
    assert details[:4] == ["SCAN t USING INDEX sqlite_autoindex_traceloom_tree_core_1",
                           f"SEARCH k {range_}", f"SEARCH o {range_}",
                           f"SEARCH a {range_}"], details
    assert [d for d in details if "TEMP B-TREE" in d] == [
        "USE TEMP B-TREE FOR RIGHT PART OF ORDER BY"], details


def test_readable_tree_sorts_within_a_tree_at_scale(bench_planned):
    """Under the bench profile's row counts the readable tree walks the trees by their
    (db_idx, device_id) index and sorts only within a tree, on preorder_idx, the rows coming
    in that order: from a scan of the nodes it sorted all 512k lines on (db_idx, device_id,
    tree_kind, preorder_idx), two equal integers and a constant compared before the number."""
    details = [d for _, _, d, _ in plan_tree(bench_planned, READABLE_TREE)]
    assert details[:2] == ["SCAN t USING INDEX sqlite_autoindex_traceloom_tree_core_1",
                           "SEARCH c USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)"], details
    assert [d for d in details if "TEMP B-TREE" in d] == [
        "USE TEMP B-TREE FOR RIGHT PART OF ORDER BY"], details


def test_node_stats_reads_no_body_row_for_an_atom(exact_hlt_db, tmp_path):
    """A node's span and packet come from its stored sums, else its one occurrence's body row,
    else (an atom, which has no body row) its anchor: the view searches the body only for a
    Seq or Repeat node, so a body row planted under an atom's occurrence in a copy is not
    read, and the atom keeps its anchor's packet (a search per atom that always missed)."""
    path = tmp_path / "analysis.db"
    src = sqlite3.connect(f"file:{exact_hlt_db}?mode=ro", uri=True)
    con = sqlite3.connect(path)
    src.backup(con)
    src.close()
    node_n, first = con.execute(
        "SELECT node_n, first_occurrence_n FROM traceloom_node_core"
        " WHERE node_kind = 1 AND compute_ns IS NULL ORDER BY node_n LIMIT 1").fetchone()
    before = con.execute("SELECT start_ns, end_ns, compute_ns, self_ns FROM traceloom_v_node_stats"
                         " WHERE node_n = ?", (node_n,)).fetchone()
    assert before[2] is not None
    con.execute("INSERT INTO traceloom_position_occurrence_body VALUES"
                " (?, -1, -1, -1, -1, -1, -1, -1, -1, -1, 'planted', NULL)", (first,))
    assert con.execute("SELECT start_ns, end_ns, compute_ns, self_ns FROM traceloom_v_node_stats"
                       " WHERE node_n = ?", (node_n,)).fetchone() == before
    con.close()


@pytest.mark.parametrize("sql", [
    "SELECT * FROM traceloom_v_tree_node WHERE node_n = 17",
    "SELECT count(*) FROM traceloom_node_core x JOIN traceloom_v_tree_node v ON v.node_n = x.node_n",
    "SELECT * FROM traceloom_anchor_cost_breakdown WHERE anchor_n = 17",
    "SELECT count(*) FROM traceloom_anchor_core x"
    " JOIN traceloom_anchor_cost_breakdown b ON b.anchor_n = x.anchor_n"])
def test_tree_node_and_anchor_cost_are_found_by_key_at_scale(bench_planned, sql):
    """A node or an anchor picked by its number finds its walk position (k) by key, from the
    node's local_n or the anchor's place in its tree (no range of k); joined by number, every
    node or anchor is read once: no scan of the nodes or anchors inside another loop (only the
    trees, one row per device, are scanned there)."""
    steps = [(p, d) for _, p, d, _ in plan_tree(bench_planned, sql)]
    assert walk_problems(steps) == [], steps
    details = [d for _, d in steps]
    if "= 17" in sql:
        assert "SEARCH k USING INTEGER PRIMARY KEY (rowid=?)" in details, details
        assert not any(d.startswith("SCAN ") and d != "SCAN t" for d in details), details
    assert not any("AUTOMATIC" in d or "TEMP B-TREE" in d for d in details), details


@pytest.mark.parametrize("con", ["analysis", "several_trees"])
def test_tree_walk_orders_are_the_node_and_anchor_orders(request, con):
    """Over one or several trees the tree map's rows are every node once, in (db_idx,
    device_id, local_n) order with display_order its local_n, and the breakdown's rows every
    anchor once, in anchor_idx order (anchor_n less its tree's first_anchor_n, plus 1) and at
    equal anchor_idx in tree order, the order a sort of the anchors kept. The walk numbers k
    are occurrence and node numbers: both count densely from 1, and a tree has at most as many
    anchors as there are occurrences."""
    con = request.getfixturevalue(con)
    got = con.execute("SELECT node_n, db_idx, device_id, display_order, local_node_id"
                      " FROM traceloom_v_tree_node"
                      " ORDER BY db_idx, device_id, view_name, display_order").fetchall()
    reference = con.execute("SELECT node_n, db_idx, device_id, local_n, printf('N%03d', local_n)"
                            " FROM traceloom_node_core ORDER BY db_idx, device_id, local_n"
                            ).fetchall()
    assert len(got) > 1 and got == reference
    got = con.execute("SELECT anchor_n, db_idx, device_id, anchor_idx"
                      " FROM traceloom_anchor_cost_breakdown ORDER BY anchor_idx").fetchall()
    reference = con.execute("""
        SELECT a.anchor_n, a.db_idx, a.device_id, a.anchor_n - t.first_anchor_n + 1
        FROM traceloom_anchor_core a
        JOIN traceloom_tree_core t ON t.db_idx = a.db_idx AND t.device_id = a.device_id
        ORDER BY 4, t.tree_n""").fetchall()
    assert len(got) == con.execute("SELECT count(*) FROM traceloom_anchor_core").fetchone()[0]
    assert got == reference
    for table, key in (("traceloom_node_core", "node_n"),
                       ("traceloom_position_occurrence_core", "occurrence_n")):
        assert con.execute(f"SELECT min({key}), max({key}) = count(*) FROM {table}"
                           ).fetchone() == (1, 1), table
    assert con.execute("SELECT max(anchor_count) <= (SELECT count(*) FROM"
                       " traceloom_position_occurrence_core) FROM traceloom_tree_core"
                       ).fetchone() == (1,)


def test_report_tree_lines_and_averages_are_the_readable_formulation(analysis):
    """The per-iteration averages are the quotients of the node's summed packets by its
    iterations, rounded to 3 decimals (the denominator as the shape's kind gives it), whether
    or not the view skips the ROUND over one iteration; the readable line and the parent columns
    are those read through subqueries on the node and shape tables."""
    rows = analysis.execute("""
        SELECT v.avg_compute_us, v.avg_comm_us, v.avg_idle_us, v.avg_total_us,
               t.avg_aux_us, t.avg_self_us,
               typeof(v.avg_total_us), typeof(t.avg_aux_us), typeof(t.avg_self_us),
               ROUND(s.compute_ns / 1000.0 / d.denom, 3), ROUND(s.comm_ns / 1000.0 / d.denom, 3),
               ROUND(s.idle_ns / 1000.0 / d.denom, 3),
               ROUND((s.compute_ns + s.comm_ns + s.idle_ns) / 1000.0 / d.denom, 3),
               ROUND(COALESCE(s.aux_ns / 1000.0, 0) / d.denom, 3),
               ROUND(COALESCE(s.self_ns / 1000.0, 0) / d.denom, 3), d.denom
        FROM traceloom_viz_node v
        JOIN traceloom_v_node_stats s ON s.node_n = v.node_n
        JOIN traceloom_v_tree_node t ON t.node_n = v.node_n
        JOIN (SELECT node_n, CASE WHEN occurrence_count = 0 THEN 1
                    ELSE occurrence_count * (CASE WHEN kind = 'repeat' AND repeat_count > 0
                                                  THEN repeat_count ELSE 1 END) END AS denom
              FROM traceloom_viz_node) d ON d.node_n = v.node_n""").fetchall()
    denoms = {r[15] for r in rows}
    assert 1 in denoms and max(denoms) > 1, denoms
    for r in rows:
        assert r[0:6] == r[9:15] and r[6:9] == ("real", "real", "real"), r
    got = analysis.execute(READABLE_TREE).fetchall()
    reference = analysis.execute("""
        SELECT printf('%s- [%s] %s %s | %s | anchors=%d total_us=%.3f',
                      substr('                                                                ', 1,
                             2 * c.depth),
                      COALESCE(c.path, (SELECT p.path FROM traceloom_node_core p
                                         WHERE p.node_n = c.parent_n) || '/' || c.local_node_id),
                      c.local_node_id,
                      s.node_type || CASE WHEN s.node_type = 'Repeat' THEN ' x' || c.repeat_count ELSE '' END,
                      COALESCE(s.label, s.node_type), c.occurrence_count * c.token_len,
                      (n.compute_ns + n.comm_ns + n.idle_ns) / 1000.0)
        FROM traceloom_v_node_stats n
        JOIN traceloom_node_core c ON c.node_n = n.node_n
        JOIN traceloom_node_shape s ON s.shape_id = c.shape_id
        ORDER BY c.db_idx, c.device_id, c.local_n""").fetchall()
    assert got and got == reference
    parents = analysis.execute("""
        SELECT n.node_id, n.parent_node_id, n.parent_local_node_id, t.parent_node_id
        FROM traceloom_semantic_node n JOIN traceloom_v_tree_node t ON t.node_n = n.node_n
        ORDER BY n.node_n""").fetchall()
    reference = analysis.execute("""
        SELECT c.node_id,
               (SELECT p.node_id FROM traceloom_node_core p WHERE p.node_n = c.parent_n),
               (SELECT p.local_node_id FROM traceloom_node_core p WHERE p.node_n = c.parent_n),
               (SELECT p.node_id FROM traceloom_node_core p WHERE p.node_n = c.parent_n)
        FROM traceloom_node_core c ORDER BY c.node_n""").fetchall()
    assert parents == reference and sum(p[1] is None for p in parents) >= 1


# The shared definitions and the launch delay per node (sql/views/30_structure.sql,
# 80_steps.sql) over several trees: the context_gen fixtures (five profiles, eager and graph
# replay, whose graph launch anchors have a host call but no relation).
@pytest.fixture(scope="module")
def several_trees(cli, fixtures, tmp_path_factory):
    out = tmp_path_factory.mktemp("context_gen") / "analysis.db"
    subprocess.run([str(cli), str(fixtures / "context_gen"), "--output", str(out)],
                   check=True, capture_output=True)
    con = sqlite3.connect(f"file:{out}?mode=ro", uri=True)
    yield con
    con.close()


# traceloom_v_shared_definition as it was written before the definitions were stored: every
# node's packet (traceloom_v_node_stats) summed per definition, the text the least of its nodes'.
SHARED_DEFINITION_BY_NODES = """
SELECT n.db_idx, n.device_id, n.definition_local, MIN(s.node_type), MIN(s.kind), MIN(s.symbol),
       MIN(s.label), COUNT(*), group_concat(n.local_node_id, ','), SUM(n.occurrence_count),
       SUM(n.occurrence_count * n.token_len), ROUND(SUM(n.compute_ns) / 1000.0, 3),
       ROUND(SUM(n.comm_ns) / 1000.0, 3), ROUND(SUM(n.idle_ns) / 1000.0, 3),
       ROUND(SUM(n.compute_ns + n.comm_ns + n.idle_ns) / 1000.0, 3),
       ROUND(SUM(n.self_ns) / 1000.0, 3)
FROM traceloom_v_node_stats n JOIN traceloom_node_shape s ON s.shape_id = n.shape_id
GROUP BY n.tree_n, n.definition_local"""


@pytest.mark.parametrize("con", ["analysis", "several_trees"])
def test_shared_definitions_are_the_sums_over_their_nodes(request, con):
    """The stored per-definition sums (traceloom_definition_core) and the node ids grouped
    from the node rows give the rows of the sum over every node's filled-in packet, in the
    same order; every definition a node uses has one row."""
    con = request.getfixturevalue(con)
    got = con.execute("SELECT * FROM traceloom_v_shared_definition").fetchall()
    reference = con.execute(SHARED_DEFINITION_BY_NODES).fetchall()
    assert len(got) > 1 and got == reference
    assert sum(r[7] for r in got) == con.execute(
        "SELECT count(*) FROM traceloom_node_core").fetchone()[0]


def test_shared_definitions_fill_in_no_node_packet_at_scale(bench_planned):
    """Under the bench profile's row counts the view groups the node rows alone (their ids)
    and reads each definition's stored sums by key: no node's occurrence, anchor or event is
    searched (one of each per node with one occurrence: 1.3 s at a million anchors)."""
    steps = [r[3] for r in bench_planned.execute(
        "EXPLAIN QUERY PLAN SELECT * FROM traceloom_v_shared_definition LIMIT 100")]
    assert "SEARCH d USING PRIMARY KEY (tree_n=? AND definition_local=?)" in steps, steps
    assert not any(s.startswith(("SEARCH o ", "SEARCH a ", "SEARCH ae ")) for s in steps), steps
    assert not any("AUTOMATIC" in s for s in steps), steps


# traceloom_v_node_launch_delay as it was written before it read the anchors' endpoint calls:
# the call of the anchor's event's relation, when that relation is in a supported state.
NODE_LAUNCH_DELAY_BY_RELATIONS = """
SELECT n.node_n, n.db_idx, n.device_id, 'N' || printf('%03d', n.local_n),
       (SELECT s.label FROM traceloom_node_shape s WHERE s.shape_id = n.shape_id), count(*),
       round(avg(e.start_ns - c.start_ns) / 1000.0, 3), min(e.start_ns - c.start_ns) / 1000.0,
       max(e.start_ns - c.start_ns) / 1000.0
FROM traceloom_node_core n
JOIN traceloom_position_occurrence_core o
  ON o.occurrence_n >= n.first_occurrence_n AND o.occurrence_n < n.first_occurrence_n + n.occurrence_count
JOIN traceloom_anchor_core a
  ON a.anchor_n >= o.anchor_first_n AND a.anchor_n < o.anchor_first_n + n.token_len
JOIN traceloom_event_core e ON e.event_n = a.event_n
JOIN traceloom_runtime_device_relation_core r ON r.relation_n = e.relation_n
JOIN traceloom_runtime_call_core c ON c.call_n = r.call_n
JOIN traceloom_runtime_device_relation_shape rs ON rs.shape_id = r.shape_id
WHERE rs.support_state IN ('supported_exact', 'supported_deterministic')
GROUP BY n.node_n ORDER BY n.node_n"""


@pytest.mark.parametrize("con", ["analysis", "several_trees"])
def test_node_launch_delay_is_the_supported_relations_delay(request, con):
    """The launch delay per node, read through the anchors' endpoint calls, is the delay from
    the call of each covered anchor's supported relation; a graph launch anchor, whose endpoint
    is its launch's host call and whose derived event has no relation, counts as before: not."""
    con = request.getfixturevalue(con)
    got = con.execute("SELECT * FROM traceloom_v_node_launch_delay").fetchall()
    assert got == con.execute(NODE_LAUNCH_DELAY_BY_RELATIONS).fetchall()
    launches = con.execute(
        "SELECT count(*) FROM traceloom_anchor_core a JOIN traceloom_event_core e"
        " ON e.event_n = a.event_n WHERE a.host_call_n IS NOT NULL AND e.relation_n IS NULL"
    ).fetchone()[0]
    assert launches > 0  # graph launch anchors with a host call, which stay out
    if con is request.getfixturevalue("several_trees"):
        assert len(got) > 10


def test_node_launch_delay_searches_no_relation_at_scale(bench_planned):
    """Under the bench profile's row counts each (node, anchor) pair reads the anchor's event
    and its endpoint call by key: no relation and no relation shape (two searches a pair of the
    1.8M pairs at a million anchors); each node's label is read once, by key."""
    steps = [r[3] for r in bench_planned.execute(
        "EXPLAIN QUERY PLAN SELECT * FROM traceloom_v_node_launch_delay")]
    assert "SEARCH c USING INTEGER PRIMARY KEY (rowid=?)" in steps, steps
    assert not any(s.startswith(("SEARCH r ", "SEARCH rs ")) for s in steps), steps
    assert not any("AUTOMATIC" in s for s in steps), steps
    # the pairs are grouped by node reading integers only; each node's row and label are read
    # by key once per node, after its group (read inside the group, the generated id and the
    # label text were copied for every pair, 1.8M at a million anchors)
    tree = plan_tree(bench_planned, "SELECT * FROM traceloom_v_node_launch_delay")
    inner = [d for _, _, d, above in tree if above == ["CO-ROUTINE d"]]
    assert inner[0] == "SCAN n" and not any(d.startswith("SEARCH sh ") for d in inner), inner
    outer = [d for _, _, d, above in tree if not above]
    assert outer[1:] == ["SCAN d", "SEARCH n USING INTEGER PRIMARY KEY (rowid=?)",
                         "SEARCH sh USING INTEGER PRIMARY KEY (rowid=?) LEFT-JOIN"], outer
    assert not any("SUBQUERY" in s for s in steps), steps
def test_evidence_role_cost_coverage_groups_the_event_core_once(analysis):
    """The cost coverage reads the events once from traceloom_event_core, grouped on one integer
    key (input and event shape), and reads each shape's role class once per group: no subquery
    per event (traceloom_event's role class is one, which made the coverage 1 s CPU at a million
    events), and it gives the rows of the readable formulation, every decision grouped by its
    input, provider, policy, final role and support state."""
    plan = analysis.execute(
        "EXPLAIN QUERY PLAN SELECT * FROM traceloom_v_evidence_role_cost_coverage").fetchall()
    steps = [r[3] for r in plan]
    # The only subqueries per row are the replay units' span lookups (a search of the spans, p,
    # by start): over the few auxiliary events placed nowhere, and in `protected`, which reads
    # the events again only where a unit was promoted (its constant guard, checked once).
    correlated = {i for i, _, _, d in plan if d.startswith("CORRELATED")}
    assert correlated and all(
        d.startswith("SEARCH p USING COVERING INDEX traceloom_protected_interval_span")
        for i, parent, _, d in plan
        if parent in correlated and d.startswith(("SEARCH", "SCAN"))), plan
    # (the events: their key range from 0, a promoted launch anchor's row below it being none)
    full = "SEARCH e USING INTEGER PRIMARY KEY (rowid>?)"
    steps = ["SCAN e" if s == full else s for s in steps]
    assert steps.count("SCAN e") == 2, steps
    at = steps.index("SCAN e")
    assert steps[at - 1] == "CO-ROUTINE g" and steps[at + 1] == "USE TEMP B-TREE FOR GROUP BY", steps
    assert steps[steps.index("SCAN e", at + 1) - 1] == "MATERIALIZE protected", steps
    got = sorted(analysis.execute(
        "SELECT * FROM traceloom_v_evidence_role_cost_coverage").fetchall(), key=repr)
    reference = sorted(analysis.execute("""
        SELECT db_idx, input_provider_scope, policy_id, policy_version, final_role, support_state,
               count(*), sum(duration_ns),
               sum(CASE WHEN effective_structural_participation = 'identity'
                        THEN duration_ns ELSE 0 END),
               sum(CASE WHEN effective_structural_participation <> 'identity'
                        THEN duration_ns ELSE 0 END)
        FROM traceloom_evidence_role_decision
        GROUP BY 1, 2, 3, 4, 5, 6""").fetchall(), key=repr)
    assert got and got == reference


def test_evidence_role_structure_filters_an_occurrence_without_lookups(analysis):
    """A filter on node_id and occurrence_idx (the catalog example) reads each covering
    occurrence's node and index from the rows the walk to the occurrences has already read (the
    atom occurrence, the closure of ancestors): no subquery per row looks the occurrence or its
    node up again (two per placement and occurrence made the example 2.6 s CPU at a million
    anchors). What remains per kept row is its final role, by event key."""
    (example,) = analysis.execute(
        "SELECT example_sql FROM traceloom_analysis_surface "
        "WHERE surface_name = 'traceloom_v_evidence_role_structure'").fetchone()
    assert "node_id = " in example and "occurrence_idx = " in example, example
    plan = analysis.execute("EXPLAIN QUERY PLAN " + example).fetchall()
    subqueries = {i for i, _, _, d in plan if d.startswith("CORRELATED SCALAR SUBQUERY")}
    read = sorted(d.split()[1] for _, parent, _, d in plan
                  if parent in subqueries and d.startswith(("SEARCH", "SCAN")))
    # (p: the replay units' spans, searched by start for an event inside one, whose final role is
    # then protected_boundary; only where a unit was promoted)
    assert read == ["c", "e", "h", "p"], plan
    assert analysis.execute(example).fetchall()


def test_evidence_role_summary_groups_the_events_on_one_key(analysis, tmp_path):
    """The role summary groups the events on one sorter key (input, device and shape packed into
    one integer; 0.95 s -> 0.5 s CPU at a million events), and stays exact where a device id does
    not fit the packing (the key is then text): its rows are those of the readable grouping by
    (input, device) and the role class's columns, on devices moved past 2^16 too."""
    sorters = [r[5] for r in analysis.execute(
        "EXPLAIN SELECT * FROM traceloom_v_evidence_role_summary") if r[1] == "SorterOpen"]
    assert sorters and sorters[0].startswith("k(1,"), sorters
    copy = sqlite3.connect(tmp_path / "devices.db")
    analysis.backup(copy)
    copy.execute("UPDATE traceloom_event_core SET device_id = 65536 + device_id + event_n % 2 "
                 "WHERE event_n % 3 = 0")
    for con in (analysis, copy):
        got = sorted(con.execute("SELECT * FROM traceloom_v_evidence_role_summary").fetchall())
        # (per decision: its role class, or inside a replay unit's span the class's protected
        # twin, sql/views/20_classify.sql)
        reference = sorted(con.execute("""
            SELECT d.db_idx, d.device_id, c.source_domain, c.final_role,
                   c.effective_structural_participation, c.rule_id, c.reason_code,
                   c.cost_treatment, count(*), ROUND(SUM(d.duration_ns) / 1000.0, 3)
            FROM traceloom_evidence_role_decision d
            JOIN traceloom_evidence_role_class c ON c.class_id = d.role_class_id
            GROUP BY 1, 2, 3, 4, 5, 6, 7, 8""").fetchall())
        assert got and got == reference
    assert copy.execute("SELECT count(*) FROM traceloom_v_evidence_role_summary "
                        "WHERE device_id >= 65536").fetchone()[0] > 0
    copy.close()


def test_anchor_runtime_call_is_one_join_at_scale(bench_planned):
    """traceloom_v_anchor_runtime_call finds an exact replay anchor's graph_launch relation in
    its one join (where the anchor's event has no relation, its launch's by the anchor key),
    not as a UNION ALL arm: a compound view is read as a co-routine that computes every column of
    every anchor's row, 2.5x the CPU of the catalog example at a million tasks."""
    example = bench_planned.execute(
        "SELECT example_sql FROM traceloom_analysis_surface"
        " WHERE relation_name = 'traceloom_v_anchor_runtime_call'").fetchone()[0]
    steps = [d for _, _, d, _ in plan_tree(bench_planned, example)]
    assert not any(d.startswith(("CO-ROUTINE", "MATERIALIZE", "COMPOUND")) for d in steps), steps
    assert "MULTI-INDEX OR" in steps, steps
    assert "SEARCH l USING INDEX traceloom_graph_launch_anchor_n (anchor_n=?)" in steps, steps
    assert plan_problems([(p, d) for _, p, d, _ in plan_tree(bench_planned, example)]) == []
    # the rows: exact_hlt's replay anchors each have their launch's relation
    rows = bench_planned.execute(
        "SELECT endpoint_kind, count(*) FROM traceloom_v_anchor_runtime_call GROUP BY 1"
        " ORDER BY 1").fetchall()
    launches = bench_planned.execute(
        "SELECT count(*) FROM traceloom_graph_launch WHERE anchor_n IS NOT NULL"
        " AND relation_n IS NOT NULL").fetchone()[0]
    assert launches > 0 and ("graph_launch", launches) in rows, rows


def test_text_id_join_with_a_condition_under_a_bloom_filter(cli, fixtures, tmp_path):
    """With the option, a join on the event's text id plus any other condition on the events
    gives the rows of the same join by integer key, also where SQLite builds a Bloom filter
    on the event index (the outer loop estimated larger than the events). SQLite 3.40 reads
    an indexed generated column from the index cursor, unpositioned while the filter is
    built: with the index on the generated event_id this query returned no row."""
    path = tmp_path / "indexed.db"
    subprocess.run([str(cli), str(fixtures / "exact_hlt" / "mono"), "--output", str(path),
                    "--options", '{"text_id_indexes": true}'], check=True, capture_output=True)
    con = sqlite3.connect(path)
    con.execute("UPDATE sqlite_stat1 SET stat = '10000000' WHERE tbl = 'traceloom_anchor_core'"
                " AND idx IS NULL")
    con.commit()
    con.close()
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    by_text = ("SELECT count(*), total(a.anchor_idx) FROM traceloom_anchor a"
               " JOIN traceloom_event e ON e.event_id = a.event_id WHERE e.end_ns > e.start_ns")
    plan = " | ".join(r[3] for r in con.execute("EXPLAIN QUERY PLAN " + by_text))
    assert "BLOOM FILTER" in plan and "traceloom_event_core_event_id" in plan, plan
    # anchor_idx is anchor_n + 1 (the 1-based anchor order); a promoted launch's anchor has no
    # event (its interval row has a negative key, event_id NULL), so only the anchors
    # with an event join
    by_key = ("SELECT count(*), total(a.anchor_n + 1) FROM traceloom_anchor_core a"
              " CROSS JOIN traceloom_event_core e ON e.event_n = a.event_n"
              " WHERE e.dur_ns > 0 AND e.event_n >= 0")
    expected = con.execute(by_key).fetchone()
    assert expected[0] > 0 and con.execute(by_text).fetchone() == expected
    con.close()


def test_generated_anchor_id_index_gets_no_bloom_filter(cli, fixtures, tmp_path):
    """A default analysis indexes the anchor's generated anchor_id and writes no sqlite_stat1
    row for traceloom_anchor_core: SQLite (3.38 on) builds a Bloom filter for a loop only on a
    table with statistics, and 3.38.0-3.41.1 build it wrong on an index of a generated column
    (the index cursor read unpositioned: the join gave no row). Here a join by anchor_id from
    every event, with a condition on the anchors alone (the kind of loop a filter serves),
    gives the rows of the same join by key and its plan has no filter; the same database with
    a statistics row for the anchors (as a user's ANALYZE would write) plans one, which is why
    the row is left out."""
    path = tmp_path / "default.db"
    subprocess.run([str(cli), str(fixtures / "exact_hlt" / "mono"), "--output", str(path)],
                   check=True, capture_output=True)
    con = sqlite3.connect(path)
    assert con.execute("SELECT count(*) FROM sqlite_stat1 WHERE tbl = 'traceloom_anchor_core'"
                       ).fetchone() == (0,)
    assert con.execute("SELECT count(*) FROM sqlite_stat1 WHERE tbl = 'traceloom_event_core'"
                       ).fetchone() == (1,)
    # the events (the outer loop) estimated far more than the anchors
    con.execute("UPDATE sqlite_stat1 SET stat = '10000000' WHERE tbl = 'traceloom_event_core'")
    con.commit()
    by_text = ("SELECT count(*), total(a.anchor_n) FROM traceloom_event_core e"
               " JOIN traceloom_anchor_core a ON a.anchor_id = 'anchor-' || e.anchor_n"
               " WHERE a.compute_ns + a.comm_ns >= 0")
    by_key = ("SELECT count(*), total(a.anchor_n) FROM traceloom_event_core e"
              " JOIN traceloom_anchor_core a ON a.anchor_n = e.anchor_n"
              " WHERE a.compute_ns + a.comm_ns >= 0")
    def planned(c):
        return " | ".join(r[3] for r in c.execute("EXPLAIN QUERY PLAN " + by_text))
    ro = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    plan = planned(ro)
    assert "USING INDEX traceloom_anchor_core_anchor_id (anchor_id=?)" in plan, plan
    assert "BLOOM" not in plan, plan
    expected = ro.execute(by_key).fetchone()
    assert expected[0] > 0 and ro.execute(by_text).fetchone() == expected
    ro.close()
    con.execute("INSERT INTO sqlite_stat1(tbl, idx, stat) VALUES ('traceloom_anchor_core',"
                " NULL, '100')")
    con.commit()
    con.close()
    ro = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    assert "BLOOM FILTER ON a (anchor_id=?)" in planned(ro)
    ro.close()


def test_node_events_same_rows_with_and_without_text_id_indexes(cli, fixtures, tmp_path):
    """node-events on exact_hlt gives the same rows with and without the option (and with idle
    evidence, which indexes the generated event id), also where
    sqlite_stat1 says the anchors outnumber everything (10M rows). With the option the event
    view's filter on its core rows (+event_n >= 0: a promoted launch's interval row has a
    negative key and no event) is a term on the events alone, which makes SQLite 3.40 check a
    Bloom filter on the event_id index; on an index of the generated column that filter held
    wrong keys and node-events printed no row (unit31, bench/RESULTS.md). The rows are the
    target node's anchors that have an event, in anchor order, counted here by key."""
    sql = (REPORT_SQL / "node-events.sql").read_text()
    results, plans = {}, {}
    for name, options in (("default", "{}"), ("indexed", '{"text_id_indexes": true}'),
                          ("idle", '{"idle_evidence": {"collection_status": "complete"}}')):
        path = tmp_path / f"{name}.db"
        subprocess.run([str(cli), str(fixtures / "exact_hlt" / "mono"), "--output", str(path),
                        "--options", options], check=True, capture_output=True)
        for stat in (None, "10000000"):
            if stat:
                con = sqlite3.connect(path)
                con.execute("UPDATE sqlite_stat1 SET stat = ? WHERE tbl = 'traceloom_anchor_core'"
                            " AND idx IS NULL", (stat,))
                con.commit()
                con.close()
            con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
            results[name, stat] = con.execute(sql).fetchall()
            plans[name, stat] = " | ".join(r[3] for r in con.execute("EXPLAIN QUERY PLAN " + sql))
            if (name, stat) == ("default", None):
                # the report's node (N027 is absent here: the first node by id) and its
                # anchors with an event, by key; a launch anchor's core row is no event
                node = con.execute("SELECT min(local_node_id) FROM traceloom_tree_node_anchor"
                                   ).fetchone()[0]
                expected = con.execute(
                    "SELECT na.anchor_n + 1 FROM traceloom_tree_node_anchor na"
                    " CROSS JOIN traceloom_anchor_core a ON a.anchor_n = na.anchor_n"
                    " WHERE na.local_node_id = ? AND a.event_n >= 0"
                    " ORDER BY na.occurrence_idx, na.anchor_order", (node,)).fetchall()
                launches = con.execute(
                    "SELECT count(*) FROM traceloom_tree_node_anchor na"
                    " CROSS JOIN traceloom_anchor_core a ON a.anchor_n = na.anchor_n"
                    " WHERE na.local_node_id = ? AND a.event_n < 0", (node,)).fetchone()[0]
            con.close()
    # the case that failed: a Bloom filter on the stored event_id index
    assert any("BLOOM FILTER ON c (event_id=?)" in plans["indexed", s]
               and "traceloom_event_core_event_id" in plans["indexed", s]
               for s in (None, "10000000")), plans
    # with idle evidence the event_id index is on the generated column: no statistics for the
    # events, so no filter on it
    assert all("traceloom_event_core_event_id" in plans["idle", s]
               and "BLOOM FILTER ON c (event_id=?)" not in plans["idle", s]
               for s in (None, "10000000")), plans
    assert launches > 0 and len(expected) > 0
    # anchor_idx (the 4th column) is the anchor's 1-based order on its device's tree
    assert [(r[3],) for r in results["default", None]] == expected
    for key, rows in results.items():
        assert rows == results["default", None], key


def test_evidence_role_reports_same_rows_with_stored_structure_rows(cli, fixtures, tmp_path):
    """With the analyze option evidence_role_structure the structure view reads one stored
    table: evidence-role-event then searches it by the decision's key instead of building
    every placement's covering occurrences (the computed rows' join, which SQLite builds whole
    on the right of a LEFT JOIN: 2.1 -> 0.9 s at a million tasks). The evidence-role reports
    print the same lines through the sqlite3 shell either way, on exact_hlt (anchors,
    represented collectives, auxiliary links, replay units with repeated member rows)."""
    names = ["evidence-role-event", "evidence-role-member", "evidence-role-omissions",
             "evidence-role-issues", "evidence-role-unknown", "evidence-role-cost-coverage"]
    out, plan = {}, {}
    for name, options in (("default", "{}"), ("stored", '{"evidence_role_structure": true}')):
        path = tmp_path / f"{name}.db"
        subprocess.run([str(cli), str(fixtures / "exact_hlt" / "mono"), "--output", str(path),
                        "--options", options], check=True, capture_output=True)
        for q in names:
            with open(REPORT_SQL / f"{q}.sql") as sql:
                out[name, q] = subprocess.run(["sqlite3", "-bail", str(path)], stdin=sql,
                                              check=True, capture_output=True,
                                              text=True).stdout
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        plan[name] = " | ".join(r[3] for r in con.execute(
            "EXPLAIN QUERY PLAN " + (REPORT_SQL / "evidence-role-event.sql").read_text()))
        con.close()
    for q in names:
        assert out["stored", q] == out["default", q], q
    assert any(out["default", q].strip() for q in names)
    # the structure rows built whole by default, searched by key with the option
    assert "MATERIALIZE covered" in plan["default"], plan["default"]
    assert "MATERIALIZE covered" not in plan["stored"], plan["stored"]
    assert "SEARCH s USING PRIMARY KEY (decision_n=?)" in plan["stored"], plan["stored"]
