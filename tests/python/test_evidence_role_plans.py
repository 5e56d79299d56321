"""How the evidence-role queries read the decision, placement and structure views
(sql/views/20_classify.sql, sql/views/61_evidence_roles.sql).

A decision's id is its event's integer key (event_n, docs/PARITY.md), so every join of a
placement or a structure row to its decision is a primary-key search of the event core. The
decision view reads the event's shape and role class as joined tables (not correlated
subqueries, which reopen their cursors on every row), so a filter on final_role is checked
by key as each placement's event is found, before its covering occurrences are expanded.
The placement and structure views expose the decision id as +event_n: on the right of a LEFT
JOIN (evidence-role-event), where SQLite flattens no join and no union, each is built once and
read once for the query's one decision, never indexed automatically (an automatic index on a
2.8M-row union costs more than reading it). The structure rows built there hold the event, the
placement kind, the anchor and the covering occurrence's node and index: an atom's as integers
(its node id is formatted for the rows a query keeps), an ancestor's node id as the text the
closure of the occurrences with children formatted once for every placement under it.
These tests check those plans, that the outer columns are NULL on a row a LEFT JOIN did not
find (SQLite must not turn the constants and lookups of a missing row into values), and that
every column equals the readable formulation over the decision and node views.
"""
import pathlib
import shutil
import sqlite3

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
QUERIES = ROOT.parent / "shared" / "reference" / "report-sql"


@pytest.fixture(scope="module")
def analysis(exact_hlt_db):
    con = sqlite3.connect(f"file:{exact_hlt_db}?mode=ro", uri=True)
    yield con
    con.close()


# Rows of the tables the evidence-role queries join, on the million-task bench profile
# (bench/out/ascend_reports_1000000: what the analysis writes to sqlite_stat1 there). The
# planner reads nothing else of the data, so the fixture's analysis with these sizes is planned
# as the bench's is: a plan that goes wrong only at scale goes wrong here too.
MILLION_ROWS = {
    "traceloom_event_core": 1127082, "traceloom_anchor_core": 741604,
    "traceloom_represented_event_run_core": 127169, "traceloom_position_occurrence_core": 752985,
    "traceloom_position_occurrence_body": 11380,
    "traceloom_node_core": 512346, "traceloom_event_shape": 20,
    "traceloom_evidence_role_class": 19, "traceloom_evidence_role_rule": 73,
    "traceloom_aux_link": 3975, "traceloom_tree_core": 2,
}


@pytest.fixture(scope="module")
def at_a_million(exact_hlt_db, tmp_path_factory):
    path = tmp_path_factory.mktemp("million_stats") / "analysis.db"
    shutil.copyfile(exact_hlt_db, path)
    con = sqlite3.connect(path)
    for table, rows in MILLION_ROWS.items():
        con.execute("DELETE FROM sqlite_stat1 WHERE tbl = ?", (table,))
        con.execute("INSERT INTO sqlite_stat1(tbl, idx, stat) VALUES (?, NULL, ?)",
                    (table, str(rows)))
    con.commit()
    con.close()
    # sqlite_stat1 is read when a connection opens
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    yield con
    con.close()


def plan(con, name):
    path = QUERIES / f"{name}.sql"
    if not path.exists():
        pytest.skip(f"{path} is not here")
    return [(r[0], r[1], r[3]) for r in con.execute("EXPLAIN QUERY PLAN " + path.read_text())]


def role_before_expansion(steps):
    """Each use of the placements looks the role class up (the final_role filter) before it
    searches the closure of ancestors."""
    uses = {p for _, p, d in steps if d == "SCAN placed"}
    assert len(uses) == 2, steps
    for parent in uses:
        level = [d for _, p, d in steps if p == parent]
        role = max(i for i, d in enumerate(level)
                   if d == "SEARCH c USING INTEGER PRIMARY KEY (rowid=?)")
        enc = level.index("SEARCH enc USING AUTOMATIC COVERING INDEX (occurrence_n=?) LEFT-JOIN")
        assert role < enc, level


def automatic(details):
    """Automatic indexes other than the closure of the occurrences with children (about 34k
    rows at a million anchors, searched by occurrence)."""
    return [d for d in details if "AUTOMATIC" in d
            and d != "SEARCH enc USING AUTOMATIC COVERING INDEX (occurrence_n=?) LEFT-JOIN"]


def test_unknown_reads_placements_once_per_use_and_their_decisions_by_key(analysis):
    details = [d for _, _, d in plan(analysis, "evidence-role-unknown")]
    # its parameter and its rows each read the placements' union once (a co-routine or one
    # materialization), never the (placement, occurrence) rows as a whole
    assert details.count("SCAN placed") == 2, details
    assert "MATERIALIZE covered" not in details, details
    assert automatic(details) == [], details
    # each placement's decision: the event by its integer key, its role class by key
    for key in ("SEARCH e USING INTEGER PRIMARY KEY (rowid=?)",
                "SEARCH c USING INTEGER PRIMARY KEY (rowid=?)"):
        assert details.count(key) >= 2, (key, details)
    # the event's shape by key, or (where the planner finds it cheaper, as on this small
    # profile) as the outer loop over the few shapes whose class passes the filter, each
    # reading the placements once: the shape is joined on +e.shape_id, so no plan can search
    # the events by shape through an index built for the query
    shapes = [d for d in details if d.startswith(("SEARCH h ", "SCAN h"))]
    assert len(shapes) == 2 and set(shapes) <= {"SEARCH h USING INTEGER PRIMARY KEY (rowid=?)",
                                                "SCAN h"}, shapes
    # the closure of the occurrences with children is searched by occurrence, never scanned
    closure = [d for d in details if d.startswith(("SEARCH enc ", "SCAN enc"))]
    assert len(closure) == 2 and all(c.startswith("SEARCH enc USING AUTOMATIC COVERING INDEX "
                                                  "(occurrence_n=?)") for c in closure), closure


def test_unknown_checks_the_role_before_expanding_the_occurrences(analysis):
    """Each use looks the role class up (the final_role filter) before it searches the closure
    of ancestors: only the placements of unknown anchors are expanded to their occurrences."""
    role_before_expansion(plan(analysis, "evidence-role-unknown"))


def test_represented_tasks_are_read_as_one_range_per_run(analysis, at_a_million):
    """The structure view expands each run of represented tasks over the event key between its
    first and last task (both bounds: one bound alone would read every later event per run),
    on the fixture and with a million tasks' statistics."""
    for con in (analysis, at_a_million):
        details = [d for _, _, d in plan(con, "evidence-role-unknown")]
        runs = [d for d in details if d.startswith(("SEARCH re ", "SCAN re"))]
        assert runs == ["SEARCH re USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)"] * 2, runs


def test_unknown_at_a_million_tasks_reads_the_placements_before_the_shapes(at_a_million):
    """With the planner statistics of the million-task profile, each use reads the placements
    once as its outer loop and each placement's event, shape and role class by key. SQLite
    estimates a range over the event key at 1/64 of the events unless told otherwise; the
    structure view tells it that a run of represented tasks holds a few (likelihood), or it
    would take the placements for billions of rows and scan them once per event shape whose
    class passes the filter (4.7 s at a million tasks instead of about 1.6 s)."""
    steps = plan(at_a_million, "evidence-role-unknown")
    details = [d for _, _, d in steps]
    assert "SCAN h" not in details, details
    assert details.count("SEARCH h USING INTEGER PRIMARY KEY (rowid=?)") == 2, details
    assert details.count("SCAN placed") == 2, details
    assert "MATERIALIZE covered" not in details and automatic(details) == [], details
    for parent in {p for _, p, d in steps if d == "SCAN placed"}:
        loops = [d for _, p, d in steps if p == parent and d.startswith(("SCAN ", "SEARCH "))]
        assert loops[0] == "SCAN placed" or loops[:2] == ["SCAN q", "SCAN placed"], loops
    role_before_expansion(steps)


def test_event_builds_placements_and_structure_once_and_reads_them_once(analysis):
    details = [d for _, _, d in plan(analysis, "evidence-role-event")]
    # the right side of a LEFT JOIN: each union is built once and scanned for the one decision
    assert details.count("MATERIALIZE p") == 1, details
    assert details.count("MATERIALIZE covered") == 1, details
    assert "SCAN p LEFT-JOIN" in details and "SCAN covered LEFT-JOIN" in details, details
    assert automatic(details) == [], details
    # the parameter reads the events and their shape, not the role class it does not use
    param = details[:details.index("MATERIALIZE p")]
    # (every event: the key range from 0, a launch anchor's row below it being no event)
    assert ("SCAN e" in param or "SEARCH e USING INTEGER PRIMARY KEY (rowid>?)" in param) \
        and not any(d.startswith("SEARCH c ") for d in param), param


def test_decision_ids_are_event_keys(analysis):
    rows = analysis.execute(
        "SELECT count(*), sum(typeof(decision_id) = 'integer'),"
        " sum(event_id = 'event-' || decision_id) FROM traceloom_evidence_role_decision"
    ).fetchone()
    assert rows[0] > 0 and rows == (rows[0],) * 3, rows
    for view in ("traceloom_evidence_role_placement", "traceloom_v_evidence_role_placement",
                 "traceloom_v_evidence_role_structure", "traceloom_evidence_role_issue"):
        bad = analysis.execute(
            f"SELECT count(*) FROM {view} v WHERE typeof(v.decision_id) <> 'integer'"
            " OR NOT EXISTS (SELECT 1 FROM traceloom_event_core e"
            "                WHERE e.event_n = v.decision_id)").fetchone()[0]
        assert bad == 0, view


def test_a_row_a_left_join_misses_is_null_in_every_column(analysis):
    cols = [r[1] for r in analysis.execute(
        "PRAGMA table_info(traceloom_v_evidence_role_structure)")]
    rows = analysis.execute(
        "SELECT e.event_n, s.* FROM traceloom_event_core e "
        "LEFT JOIN traceloom_v_evidence_role_structure s "
        "ON s.decision_id = e.event_n AND s.occurrence_idx < 0 "
        "WHERE e.event_n BETWEEN 0 AND 2").fetchall()
    assert len(rows) == 3 and len(cols) == 9
    assert all(r[1:] == (None,) * len(cols) for r in rows), rows
    # and a row it finds has every column
    found = analysis.execute(
        "SELECT s.* FROM traceloom_anchor_core a "
        "LEFT JOIN traceloom_v_evidence_role_structure s ON s.decision_id = a.event_n "
        "WHERE a.anchor_n = (SELECT min(anchor_n) FROM traceloom_anchor_core WHERE event_n >= 0)"
    ).fetchall()
    assert found and all(None not in r for r in found), found


def test_every_column_is_that_of_the_decision_view(analysis):
    """event id, final role, node id and occurrence index computed outside the union are those
    of the decision and occurrence tables for the same decision and occurrence; the anchor
    placements name the anchor whose range covers them."""
    got = sorted(analysis.execute(
        "SELECT decision_id, event_id, final_role, placement_kind, placement_id, node_id, "
        "occurrence_idx, view_name, coverage_kind FROM traceloom_v_evidence_role_structure"
    ).fetchall(), key=repr)
    assert {r[3] for r in got} >= {"anchor", "auxiliary_link", "replay_unit"}, {r[3] for r in got}
    decisions = dict(analysis.execute(
        "SELECT decision_id, event_id || '|' || final_role FROM traceloom_evidence_role_decision"))
    assert all(decisions[r[0]] == f"{r[1]}|{r[2]}" for r in got)
    nodes = {(n, i) for n, i in analysis.execute(
        "SELECT position_id, occurrence_idx FROM traceloom_position_occurrence_core")}
    assert all((r[5], r[6]) in nodes for r in got)
    assert {r[7] for r in got} == {"native_report_tree"}
    # an anchor placement is the anchor of its event, or the communication op anchor that
    # represents it, and it sits at its own atom's occurrence ('self')
    anchor_of = dict(analysis.execute(
        "SELECT event_n, 'anchor-' || anchor_n FROM traceloom_anchor_core WHERE event_n >= 0 "
        "UNION ALL SELECT event_n, 'anchor-' || anchor_n FROM traceloom_represented_event"))
    anchor_rows = [r for r in got if r[3] == "anchor"]
    assert anchor_rows and all(anchor_of[r[0]] == r[4] for r in anchor_rows)
    selfs = {r[0] for r in anchor_rows if r[8] == "self"}
    assert selfs == set(anchor_of), len(selfs ^ set(anchor_of))
    # 'self' is the anchor's atom occurrence, 'body' an occurrence of a node with children
    kinds = dict(analysis.execute(
        "SELECT o.position_id || '#' || o.occurrence_idx, k.node_kind"
        " FROM traceloom_position_occurrence_core o"
        " JOIN traceloom_node_core k ON k.node_n = o.node_n"))
    assert all((kinds[f"{r[5]}#{r[6]}"] == 1) == (r[8] == "self") for r in got)


def test_an_ancestor_node_id_is_formatted_once_per_closure_row(exact_hlt_db):
    """The structure view's example (what sits at one node occurrence) compares every
    (placement, occurrence) row's node id. An atom's node id is formatted for its own row; an
    ancestor's once, in the closure of the occurrences with children, and every placement under
    it reads that text: reading every row's node id formats it once per 'self' row and once per
    (occurrence with children, ancestor) pair of the closure, not once per row (at a million
    anchors a printf per 'body' row was about a quarter of the example's work)."""
    con = sqlite3.connect(f"file:{exact_hlt_db}?mode=ro", uri=True)
    try:
        parent, kind = {}, {}
        for occ, par, node_kind in con.execute(
                "SELECT o.occurrence_n, o.parent_n, k.node_kind"
                " FROM traceloom_position_occurrence_core o"
                " JOIN traceloom_node_core k ON k.node_n = o.node_n"):
            parent[occ], kind[occ] = par, node_kind

        def chain(occ):
            n = 0
            while occ is not None:
                n, occ = n + 1, parent[occ]
            return n
        closure = sum(chain(o) for o, k in kind.items() if k != 1)
        calls = []

        def printf(fmt, *args):  # the view's only format: 'node-%sN%03d'
            calls.append(fmt)
            return fmt % args
        con.create_function("printf", -1, printf, deterministic=True)
        rows = con.execute("SELECT node_id, coverage_kind"
                           " FROM traceloom_v_evidence_role_structure").fetchall()
        selfs = sum(1 for _, c in rows if c == "self")
        # the fixture has more body rows than closure pairs, so the count tells the two apart
        assert 0 < closure < len(rows) - selfs, (closure, len(rows), selfs)
        assert len(calls) == selfs + closure, (len(calls), selfs, closure, len(rows))
        assert set(calls) == {"node-%sN%03d"}
    finally:
        con.close()
