"""How the evidence-role queries read traceloom_v_evidence_role_structure
(sql/views/61_evidence_roles.sql).

The structure view joins a union of placements (decision id and integers, one row per
placement with an anchor) to the occurrences covering the placement's anchor: its atom
occurrence, then that occurrence's ancestors from the closure of the occurrences with children
(which carries the columns the view reads from each ancestor).
Where a query joins the view (evidence-role-unknown), SQLite builds the placements' union once
per use and indexes it on the text decision_id; the joins to the occurrences are flattened into
the query and go by key. On the right of a LEFT JOIN (evidence-role-event) SQLite flattens no
join, so it builds the (placement, occurrence) rows, still only the decision id and integers,
and indexes those. These tests check those plans (never a scan inside a loop, never a union
flattened into a join on the text id), that the outer columns are NULL on a row a LEFT JOIN did
not find (SQLite must not turn the constants and the printf of a missing row into values), and
that every column equals the readable formulation over the decision view.
"""
import pathlib
import sqlite3

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
QUERIES = ROOT.parent / "shared" / "reference" / "report-sql"


@pytest.fixture(scope="module")
def analysis(exact_hlt_db):
    con = sqlite3.connect(f"file:{exact_hlt_db}?mode=ro", uri=True)
    yield con
    con.close()


def plan(con, name):
    path = QUERIES / f"{name}.sql"
    if not path.exists():
        pytest.skip(f"{path} is not here")
    return [(r[0], r[1], r[3]) for r in con.execute("EXPLAIN QUERY PLAN " + path.read_text())]


def structure_searches(steps):
    """The steps that read the view's rows in the query (the union's own scan, which builds the
    (placement, occurrence) rows on the right of a LEFT JOIN, is not one)."""
    return [d for _, _, d in steps
            if d.startswith(("SEARCH placed ", "SEARCH covered ", "SCAN covered"))]


@pytest.mark.parametrize("query", ["evidence-role-unknown", "evidence-role-event"])
def test_queries_build_the_structure_union_once_per_use_and_search_it_by_decision(analysis,
                                                                                 query):
    steps = plan(analysis, query)
    details = [d for _, _, d in steps]
    uses = structure_searches(steps)
    # -unknown joins the view twice (its parameter and its rows), -event once
    assert len(uses) == (2 if query == "evidence-role-unknown" else 1), uses
    if query == "evidence-role-unknown":
        # the placements' union, not the (placement, occurrence) rows, is what gets indexed;
        # the occurrences covering each placement kept are then read by key
        assert all(u == "SEARCH placed USING AUTOMATIC COVERING INDEX (decision_id=?)"
                   for u in uses), uses
        for key in ("SEARCH ca USING INTEGER PRIMARY KEY (rowid=?)",
                    "SEARCH atom USING INTEGER PRIMARY KEY (rowid=?)"):
            assert details.count(key) >= 2, (key, details)
        assert "MATERIALIZE covered" not in details, details
    else:
        # the right side of a LEFT JOIN: the (placement, occurrence) rows are built once
        assert details.count("MATERIALIZE covered") == 1, details
        assert details.count("SCAN placed") == 1, details
        assert all(u.startswith("SEARCH covered USING AUTOMATIC ") and "decision_id=?" in u
                   for u in uses), uses
    # the closure of the occurrences with children is searched by occurrence, never scanned
    closure = [d for d in details if d.startswith(("SEARCH enc ", "SCAN enc"))]
    assert closure and all(c.startswith("SEARCH enc USING AUTOMATIC COVERING INDEX "
                                        "(occurrence_n=?)") for c in closure), closure


def test_a_row_a_left_join_misses_is_null_in_every_column(analysis):
    cols = [r[1] for r in analysis.execute(
        "PRAGMA table_info(traceloom_v_evidence_role_structure)")]
    rows = analysis.execute(
        "SELECT e.event_n, s.* FROM traceloom_event_core e "
        "LEFT JOIN traceloom_v_evidence_role_structure s "
        "ON s.decision_id = 'role-decision-' || e.event_n AND s.occurrence_idx < 0 "
        "WHERE e.event_n < 3").fetchall()
    assert len(rows) == 3 and len(cols) == 9
    assert all(r[1:] == (None,) * len(cols) for r in rows), rows


def test_every_column_is_that_of_the_decision_view(analysis):
    """event id, final role and node id computed outside the union are those of the decision
    and node tables for the same decision and occurrence; the anchor placements name the anchor
    whose range covers them."""
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
        "SELECT 'role-decision-' || event_n, 'anchor-' || anchor_n FROM traceloom_anchor_core "
        "UNION ALL SELECT 'role-decision-' || event_n, 'anchor-' || anchor_n "
        "FROM traceloom_represented_event"))
    anchor_rows = [r for r in got if r[3] == "anchor"]
    assert anchor_rows and all(anchor_of[r[0]] == r[4] for r in anchor_rows)
    selfs = {r[0] for r in anchor_rows if r[8] == "self"}
    assert selfs == set(anchor_of), len(selfs ^ set(anchor_of))


def test_unknown_anchors_are_filtered_before_the_structure_is_searched(analysis):
    """evidence-role-unknown keeps the decisions whose final_role is unknown_anchor: the decision
    view looks the final role up from the event, so that filter is checked as each event is
    read (the role class by key) and only those events probe the structure index, rather than
    every event probing it and the class being joined after."""
    details = [d for _, _, d in plan(analysis, "evidence-role-unknown")]
    probes = [i for i, d in enumerate(details) if d.startswith("SEARCH placed ")]
    assert len(probes) == 2, details
    for i in probes:
        scan = max(j for j in range(i) if details[j] == "SCAN c")  # the events
        between = details[scan:i]
        assert "SEARCH r USING INTEGER PRIMARY KEY (rowid=?)" in between, details[scan:i + 1]
