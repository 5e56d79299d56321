"""The core-and-shape storage seen from a plain SQLite client (no extension loaded).

The public relations traceloom_event, traceloom_runtime_call, traceloom_anchor and
traceloom_position_occurrence are one-table views whose text ids are generated columns of
their *_core tables; joins and lookups by those ids, inner or LEFT, must stay index searches,
which is what the indexes of sql/views/00_indexes.sql are for.
"""
import sqlite3
import subprocess

import pytest


@pytest.fixture(scope="module")
def analysis(cli, fixtures, tmp_path_factory):
    out = tmp_path_factory.mktemp("storage") / "analysis.db"
    subprocess.run([str(cli), str(fixtures / "exact_hlt" / "mono"), "--output", str(out)],
                   check=True, capture_output=True)
    con = sqlite3.connect("file:%s?mode=ro" % out, uri=True)
    yield con
    con.close()


def plan(con, sql):
    return " | ".join(row[3] for row in con.execute("EXPLAIN QUERY PLAN " + sql))


@pytest.mark.parametrize("sql, index", [
    ("SELECT * FROM traceloom_event WHERE event_id = 'event-5'", "traceloom_event_core_event_id"),
    ("SELECT * FROM traceloom_runtime_call WHERE runtime_call_id = 'runtime-call-3'",
     "traceloom_runtime_call_core_id"),
    ("SELECT * FROM traceloom_anchor WHERE anchor_id = 'anchor-2'", "traceloom_anchor_core_anchor_id"),
    ("SELECT * FROM traceloom_position_occurrence WHERE occurrence_id = 'node-N002-occurrence-1'",
     "traceloom_position_occurrence_id"),
    ("SELECT * FROM traceloom_position_occurrence WHERE position_id = 'node-N002'",
     "traceloom_position_occurrence_key"),
])
def test_lookup_by_text_id_is_an_index_search(analysis, sql, index):
    p = plan(analysis, sql)
    assert "USING INDEX " + index in p, p
    assert analysis.execute(sql).fetchall(), "the id exists in exact_hlt"


def test_join_on_event_id_searches_the_event_index(analysis):
    # A user's join of anchors to their events by the text id: one search per anchor.
    sql = ("SELECT a.anchor_id, e.kind FROM traceloom_anchor a "
           "JOIN traceloom_event e ON e.event_id = a.event_id")
    steps = [row[3] for row in analysis.execute("EXPLAIN QUERY PLAN " + sql)]
    # One scan (the outer anchors); the events are found through the index on event_id.
    assert sum(step.startswith("SCAN") for step in steps) == 1, steps
    assert any("USING INDEX traceloom_event_core_event_id" in step for step in steps), steps
    rows = analysis.execute(sql).fetchall()
    assert len(rows) == analysis.execute("SELECT count(*) FROM traceloom_anchor").fetchone()[0]


@pytest.mark.parametrize("sql, index", [
    ("SELECT l.aux_event_id, e.kind FROM traceloom_aux_link l "
     "LEFT JOIN traceloom_event e ON e.event_id = l.aux_event_id", "traceloom_event_core_event_id"),
    ("SELECT l.anchor_id, a.symbol FROM traceloom_aux_link l "
     "LEFT JOIN traceloom_anchor a ON a.anchor_id = l.anchor_id", "traceloom_anchor_core_anchor_id"),
    ("SELECT r.runtime_call_id, c.call_n FROM traceloom_runtime_device_relation r "
     "LEFT JOIN traceloom_runtime_call c ON c.runtime_call_id = r.runtime_call_id",
     "traceloom_runtime_call_core_id"),
    ("SELECT m.child_occurrence_id, o.rooted_position_path, o.repeat_context "
     "FROM traceloom_position_member m "
     "LEFT JOIN traceloom_position_occurrence o ON o.occurrence_id = m.child_occurrence_id",
     "traceloom_position_occurrence_id"),
])
def test_left_join_on_a_text_id_searches_its_index(analysis, sql, index):
    # The right side of a LEFT JOIN is where a view that joins, or an id that is an
    # expression, stops SQLite from using an index: it materializes the view or scans it
    # once per outer row (quadratic on millions of rows). Every public id must survive it.
    p = plan(analysis, sql)
    assert "USING INDEX " + index in p or "USING COVERING INDEX " + index in p, p
    assert "MATERIALIZE" not in p, p
    rows = analysis.execute(sql).fetchall()
    assert rows and all(r[1] is not None for r in rows if r[0] is not None), rows[:5]


def test_the_views_read_without_the_extension(analysis):
    # Every public relation answers a plain client: no function of the extension is needed.
    names = [r[0] for r in analysis.execute(
        "SELECT name FROM sqlite_schema WHERE type = 'view' AND name LIKE 'traceloom%'")]
    assert "traceloom_event" in names and "traceloom_anchor" in names
    for name in names:
        analysis.execute('SELECT * FROM "%s" LIMIT 1' % name).fetchall()


def test_tree_node_anchor_is_driven_by_the_occurrences(analysis):
    # Joined to the report nodes, SQLite drove this view from every anchor through every node
    # (their view_name equals a constant) and LIMIT 100 took 20 s on a million anchors. Without
    # statistics the plan does not depend on the data, so the small fixture shows it.
    sql = "SELECT * FROM traceloom_tree_node_anchor LIMIT 100"
    steps = [row[3] for row in analysis.execute("EXPLAIN QUERY PLAN " + sql)]
    assert steps[0] == "SCAN o", steps
    assert any(s.startswith("SEARCH a USING INTEGER PRIMARY KEY") for s in steps), steps
    rows = analysis.execute(sql).fetchall()
    assert rows and all(r[1] is not None for r in rows)
