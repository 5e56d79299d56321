"""The lean storage seen from a plain SQLite client (no extension loaded).

Every fact is stored once, in integer-keyed *_core tables; the public relations are views.
The rules (docs/ARCHITECTURE.md, Storage) and what checks them here:
- lookups and joins by the integer keys (event_n, call_n, anchor_n, node_n, occurrence_n,
  launch_n, member_n) are primary-key searches;
- the text ids are VIRTUAL generated columns with no index: a user's join on one gets an
  automatic index (built once for the query), never a scan of the table per outer row;
- the shipped views join on the integers: no view needs an automatic index on a stored table
  (the reviewed exceptions below are on small aggregates of the scheduler context).
"""
import re
import sqlite3
import subprocess

import pytest


@pytest.fixture(scope="module")
def analysis(exact_hlt_db):
    con = sqlite3.connect(f"file:{exact_hlt_db}?mode=ro", uri=True)
    yield con
    con.close()


@pytest.fixture(scope="module")
def context_analysis(cli, fixtures, tmp_path_factory):
    """An analysis with scheduler context and ACL graph replays: every view has rows to plan."""
    graph = fixtures / "context_gen" / "graph"
    out = tmp_path_factory.mktemp("storage_ctx") / "analysis.db"
    args = [str(cli), str(graph), "--output", str(out)]
    for f in sorted((graph / "context").glob("*.jsonl")):
        args += ["--context", str(f)]
    subprocess.run(args, check=True, capture_output=True)
    con = sqlite3.connect("file:%s?mode=ro" % out, uri=True)
    yield con
    con.close()


def plan(con, sql):
    return [row[3] for row in con.execute("EXPLAIN QUERY PLAN " + sql)]


@pytest.mark.parametrize("sql", [
    "SELECT * FROM traceloom_event WHERE event_n = 5",
    "SELECT * FROM traceloom_runtime_call WHERE call_n = 3",
    "SELECT * FROM traceloom_anchor WHERE anchor_n = 2",
    "SELECT * FROM traceloom_position_occurrence WHERE occurrence_n = 2",
    "SELECT * FROM traceloom_viz_node WHERE node_n = 2",
])
def test_lookup_by_integer_key_is_a_primary_key_search(analysis, sql):
    steps = plan(analysis, sql)
    assert "USING INTEGER PRIMARY KEY" in steps[0], steps
    assert not any(s.startswith("SCAN") for s in steps), steps
    assert analysis.execute(sql).fetchall(), "the key exists in exact_hlt"


# Columns kept off the per-row core tables because they are NULL or repeated on most rows (an
# atom occurrence's span, packet and paths: traceloom_position_occurrence_body; an event's
# context, model and graph node ids: traceloom_event_shape) come back by key, a primary-key
# search (for an occurrence only when it has children), in every view that reads them: a scan
# or an automatic index would make a view of a million rows quadratic.
@pytest.mark.parametrize("sql", [
    "SELECT start_ns, end_ns, compute_us, self_us, occurrence_path, repeat_context, "
    "repeat_iteration FROM traceloom_position_occurrence",
    "SELECT start_ns, end_ns, compute_ns, self_ns, linked_aux_ns FROM traceloom_v_node_stats",
    "SELECT auxiliary_attribution FROM traceloom_semantic_tree",
    "SELECT loop_total_pct FROM traceloom_loop_node",
    "SELECT context_id, model_id, graph_node_id FROM traceloom_event",
])
def test_columns_kept_off_the_core_rows_are_read_by_key(analysis, sql):
    steps = plan(analysis, sql)
    reads = [s for s in steps if s.startswith(("SCAN", "SEARCH"))]
    # one scan of a stored table (the others read a view's or a subquery's co-routine); the
    # events' is their key range from 0 (a promoted launch anchor's row, below it, is no event)
    scans = [s for s in reads if (s.startswith("SCAN") and
             not s.startswith(("SCAN (subquery", "SCAN traceloom_"))) or
             s == "SEARCH c USING INTEGER PRIMARY KEY (rowid>?)"]
    assert len(scans) == 1, steps
    # (the guard of a merged anchor's extent, max() of its key once per statement, is a search
    # for the table's last row: sql/schema/30_structure.sql, traceloom_anchor_extent_core)
    assert all("USING INTEGER PRIMARY KEY" in s or s == "SEARCH traceloom_anchor_extent_core"
               for s in reads if s.startswith("SEARCH")), steps


def test_occurrence_body_holds_exactly_the_occurrences_with_children(analysis):
    # an atom's values are its anchor's (and its event's): no body row; every other
    # occurrence has one, whose stored values the view shows
    rows = analysis.execute(
        "SELECT n.node_kind = 1, b.occurrence_n IS NULL, v.start_ns = b.start_ns, "
        "v.compute_us = b.compute_ns / 1000.0, v.occurrence_path = b.occurrence_path "
        "FROM traceloom_position_occurrence_core o "
        "JOIN traceloom_node_core n ON n.node_n = o.node_n "
        "JOIN traceloom_position_occurrence v ON v.occurrence_n = o.occurrence_n "
        "LEFT JOIN traceloom_position_occurrence_body b ON b.occurrence_n = o.occurrence_n"
    ).fetchall()
    atoms = [r for r in rows if r[0]]
    others = [r for r in rows if not r[0]]
    assert atoms and others
    assert all(r[1] for r in atoms), "an atom has a body row"
    assert all(r[1:] == (0, 1, 1, 1) for r in others), others[:5]


def opened_tables(con, sql):
    """The stored tables (and indexes) a statement opens, by name: its OpenRead root pages."""
    roots = dict(con.execute("SELECT rootpage, name FROM sqlite_schema WHERE rootpage > 0"))
    return {roots.get(r[3]) for r in con.execute("EXPLAIN " + sql) if r[1] == "OpenRead" and r[4] == 0}


# An atom occurrence's packet and span are its anchor's (and its event's), read per column by
# key: SQLite 3.40 leaves no LEFT JOIN out of an aggregate (nor an anchor join that an event
# join reads), so a GROUP BY over occurrences or edges that reads none of those columns would
# still probe the anchor and its event per occurrence (753k edges at a million anchors, two
# occurrences each). The columns themselves still come back (the body test above; every row
# of these views: tools/analysis_digest.py).
@pytest.mark.parametrize("sql", [
    "SELECT edge_role_id, count(*) FROM traceloom_execution_tree_edge GROUP BY 1",
    "SELECT parent_label, edge_label, count(*) FROM traceloom_v_tree_edge GROUP BY 1, 2",
    "SELECT coverage_kind, count(*) FROM traceloom_position_occurrence GROUP BY 1",
])
def test_aggregates_over_occurrences_read_no_anchor(analysis, sql):
    opened = opened_tables(analysis, sql)
    assert "traceloom_position_occurrence_core" in opened, opened
    assert not opened & {"traceloom_anchor_core", "traceloom_event_core"}, opened
    assert analysis.execute(sql).fetchall()
    # the atom's columns, where read, are still its anchor's
    assert {"traceloom_anchor_core", "traceloom_event_core"} <= opened_tables(
        analysis, "SELECT coverage_kind, sum(compute_us), max(end_ns) "
                  "FROM traceloom_position_occurrence GROUP BY 1")


@pytest.mark.parametrize("sql, expected", [
    ("SELECT event_n FROM traceloom_event WHERE event_id = 'event-5'", 5),
    ("SELECT call_n FROM traceloom_runtime_call WHERE runtime_call_id = 'runtime-call-3'", 3),
    ("SELECT anchor_n FROM traceloom_anchor WHERE anchor_id = 'anchor-2'", 2),
    ("SELECT occurrence_idx FROM traceloom_position_occurrence "
     "WHERE occurrence_id = 'node-N002-occurrence-1'", 1),
])
def test_lookup_by_text_id_answers(analysis, sql, expected):
    # A text id is computed from its integer, so a lookup by it finds the same row.
    assert analysis.execute(sql).fetchall() == [(expected,)]


def test_node_and_occurrence_ids_are_the_padded_format(analysis):
    """The node and occurrence ids concatenate the local number from N100 on when they name no
    device, and printf() it otherwise (sql/views/00_indexes.sql): on every side of 100, with
    and without a device in the id, each is the text of the one format, 'node-%sN%03d' ('N%03d', and
    '-occurrence-%d' after it). The fixture's trees are small, so a copy of its rows is
    renumbered across the boundary (1 to several thousand) with a device on every other row."""
    con = sqlite3.connect(":memory:")
    try:
        analysis.backup(con)
        con.execute("UPDATE traceloom_node_core SET local_n = node_n * node_n * 7 - 6,"
                    " node_device = CASE WHEN node_n % 2 = 0 THEN node_n % 5 END")
        con.execute("UPDATE traceloom_position_occurrence_core"
                    " SET node_local = occurrence_n * occurrence_n * 7 - 6,"
                    " node_device = CASE WHEN occurrence_n % 2 = 0 THEN occurrence_n % 5 END")
        nodes = con.execute(
            "SELECT local_n, local_node_id, printf('N%03d', local_n), node_id,"
            " printf('node-%sN%03d', COALESCE('d' || node_device || '-', ''), local_n)"
            " FROM traceloom_node_core").fetchall()
        occurrences = con.execute(
            "SELECT node_local, position_id,"
            " printf('node-%sN%03d', COALESCE('d' || node_device || '-', ''), node_local),"
            " occurrence_id,"
            " printf('node-%sN%03d-occurrence-%d', COALESCE('d' || node_device || '-', ''),"
            "        node_local, occurrence_idx)"
            " FROM traceloom_position_occurrence_core").fetchall()
    finally:
        con.close()
    for rows in (nodes, occurrences):
        locals_ = [r[0] for r in rows]
        assert min(locals_) < 10 and any(10 <= n < 100 for n in locals_) and max(locals_) >= 1000
        assert any(r[0] >= 100 and "-d" in r[3] for r in rows)
        assert any(r[0] >= 100 and "-d" not in r[3] for r in rows)
        assert [(r[1], r[3]) for r in rows] == [(r[2], r[4]) for r in rows]


@pytest.mark.parametrize("sql, column", [
    ("SELECT a.anchor_id, e.kind FROM traceloom_anchor a "
     "JOIN traceloom_event e ON e.event_id = a.event_id", "event_id"),
    ("SELECT l.aux_event_id, e.kind FROM traceloom_aux_link l "
     "LEFT JOIN traceloom_event e ON e.event_id = l.aux_event_id", "event_id"),
    ("SELECT l.anchor_id, a.symbol FROM traceloom_aux_link l "
     "LEFT JOIN traceloom_anchor a ON a.anchor_id = l.anchor_id", "anchor_id"),
    ("SELECT r.runtime_call_id, c.call_n FROM traceloom_runtime_device_relation r "
     "LEFT JOIN traceloom_runtime_call c ON c.runtime_call_id = r.runtime_call_id",
     "runtime_call_id"),
    ("SELECT m.child_occurrence_id, o.rooted_position_path, o.repeat_context "
     "FROM traceloom_position_member m "
     "LEFT JOIN traceloom_position_occurrence o ON o.occurrence_id = m.child_occurrence_id",
     "occurrence_id"),
])
def test_join_on_a_text_id_gets_an_automatic_index(analysis, sql, column):
    # The right side of a join (LEFT joins included) is found through an index on the id
    # column: the anchor's own (traceloom_anchor_core_anchor_id, on its generated column) or an
    # automatic one built once per query; never a scan of the right side per outer row, which
    # is quadratic on millions of rows (an id that is a plain expression in a flattened view
    # would be one).
    steps = plan(analysis, sql)
    index = ("USING INDEX traceloom_anchor_core_anchor_id (anchor_id=?)" if column == "anchor_id"
             else "AUTOMATIC")
    assert any(s.startswith("SEARCH") and index in s and "(%s=?)" % column in s
               for s in steps), steps
    rows = analysis.execute(sql).fetchall()
    assert rows and all(r[1] is not None for r in rows if r[0] is not None), rows[:5]
    (n,) = analysis.execute("SELECT count(*) FROM (%s)" % sql).fetchone()
    assert n == len(rows)


# Automatic indexes the shipped views may use: on small aggregates of the scheduler context
# (per execution or step), never on a stored table of events, calls, relations, anchors,
# nodes, occurrences or members. (view, alias) pairs, reviewed.
ALLOWED_AUTOMATIC = {
    ("traceloom_v_execution_context", "m"),
    ("traceloom_v_context_coverage", "m"), ("traceloom_v_context_coverage", "rc"),
    ("traceloom_v_context_coverage", "dw"),
    ("traceloom_v_scheduler_step_context", "m"), ("traceloom_v_scheduler_step_context", "x"),
    ("traceloom_v_scheduler_step_shape", "m"), ("traceloom_v_scheduler_step_shape", "x"),
    ("traceloom_v_scheduler_step_shape", "r"),
    ("traceloom_v_scheduler_step_device_cost", "m"), ("traceloom_v_scheduler_step_device_cost", "x"),
    ("traceloom_v_scheduler_step_device_cost", "r"), ("traceloom_v_scheduler_step_device_cost", "a"),
    # the per-(position, API family) aggregate of the bubble context, joined to its positions
    ("traceloom_v_structure_bubble_host_context", "api"),
    ("traceloom_v_structure_bubble_api_stats", "api"),
    # a runtime call's API layer and family, made once per call shape (a handful of rows)
    ("traceloom_v_runtime_call_family", "f"), ("traceloom_anchor_host_api_summary", "f"),
    ("traceloom_v_structure_bubble_runtime_call", "f"),
    ("traceloom_v_structure_bubble_api_occurrence", "f"),
    ("traceloom_v_structure_bubble_host_context", "f"),
    ("traceloom_v_structure_bubble_api_stats", "f"),
    # per-device and per-interval aggregates of the exact replay partition (a few rows)
    ("traceloom_v_exact_replay_partition_status", "a"),
    ("traceloom_v_exact_replay_partition", "a"), ("traceloom_v_exact_replay_partition", "st"),
    ("traceloom_v_exact_replay_partition", "p"),
    # the closure of the occurrences with children (a recursive CTE, ~34k rows at 1M anchors):
    # each atom occurrence's ancestors, looked up by its parent
    ("traceloom_v_evidence_role_structure", "enc"),
    ("traceloom_evidence_role_structure_rows", "enc"),
}


def test_shipped_views_need_no_automatic_index_on_stored_tables(context_analysis):
    views = [r[0] for r in context_analysis.execute(
        "SELECT name FROM sqlite_schema WHERE type = 'view' AND name LIKE 'traceloom%' "
        "ORDER BY name")]
    assert "traceloom_v_context_device_work" in views and "traceloom_v_node_graph_body_member" in views
    bad = []
    for v in views:
        for step in plan(context_analysis, 'SELECT * FROM "%s"' % v):
            m = re.match(r"SEARCH (\S+) USING AUTOMATIC", step)
            if m and (v, m.group(1)) not in ALLOWED_AUTOMATIC:
                bad.append((v, step))
    assert not bad, bad


def test_the_views_read_without_the_extension(analysis):
    # Every public relation answers a plain client: no function of the extension is needed.
    names = [r[0] for r in analysis.execute(
        "SELECT name FROM sqlite_schema WHERE type = 'view' AND name LIKE 'traceloom%'")]
    assert "traceloom_event" in names and "traceloom_anchor" in names
    for name in names:
        analysis.execute('SELECT * FROM "%s" LIMIT 1' % name).fetchall()


def test_tree_node_anchor_is_driven_by_the_occurrences(analysis):
    # Joined to the report nodes, SQLite drove this view from every anchor through every node
    # and LIMIT 100 took 20 s on a million anchors. With the table sizes the analysis records
    # in sqlite_stat1 the plan walks the nodes, each node's occurrences as one key range and
    # each occurrence's anchors as another.
    sql = "SELECT * FROM traceloom_tree_node_anchor LIMIT 100"
    steps = plan(analysis, sql)
    assert steps[0] == "SCAN n", steps
    assert steps[1].startswith("SEARCH o USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)"), steps
    assert any(s.startswith("SEARCH a USING INTEGER PRIMARY KEY") for s in steps), steps
    rows = analysis.execute(sql).fetchall()
    assert rows and all(r[1] is not None for r in rows)


def test_flattened_timeline_orders_keys_before_the_wide_columns(context_analysis):
    # Every anchor's wide columns used to be built (and materialized) before the window sort:
    # > 5 s for the first rows on a million anchors. The items are now ordered on integer keys
    # and the view's own loop looks each output row up by key.
    con = context_analysis
    sql = "SELECT * FROM traceloom_v_flattened_execution_timeline"
    steps = plan(con, sql)
    assert not any("AUTOMATIC" in s for s in steps), steps
    assert not any(s.startswith("MATERIALIZE anchor") for s in steps), steps
    outer = [s for s in steps if not s.startswith(("CO-ROUTINE", "MATERIALIZE"))]
    # after the ordered keys (o) and the one-row device status, every step is a key search
    i = steps.index("SCAN o")
    for s in steps[i + 1:]:
        if s.startswith("SCAN"):
            assert s in ("SCAN summary",), steps
    assert outer
    rows = con.execute("SELECT db_idx, device_id, timeline_order, item_kind, member_n "
                       "FROM traceloom_v_flattened_execution_timeline").fetchall()
    assert any(r[3] == "position_member" for r in rows), "context_gen/graph expands launches"
    per_device = {}
    for db, dev, order, _, _ in rows:
        per_device.setdefault((db, dev), []).append(order)
    for orders in per_device.values():
        assert sorted(orders) == list(range(len(orders)))


@pytest.fixture(scope="module")
def plain_analyses(cli, fixtures, tmp_path_factory):
    """Analyses of generated profiles without replay regions (ties of start times included)."""
    cons = []
    for name in ("ascend_s6_l4_k6_aux", "nsys_s6_l4_k6_aux"):
        out = tmp_path_factory.mktemp("storage_plain") / (name + ".db")
        subprocess.run([str(cli), str(fixtures / "gen" / name), "--output", str(out)],
                       check=True, capture_output=True)
        cons.append(sqlite3.connect("file:%s?mode=ro" % out, uri=True))
    yield cons
    for con in cons:
        con.close()


def test_flattened_timeline_without_regions_is_anchor_order(plain_analyses):
    # A device without supported replay regions expands nothing: its timeline is its anchors
    # in anchor order, read without the window's sort (2-3 s for a million anchors). That
    # order must be the one the sort gives: (start, end, anchor_idx), checked here from the
    # anchors' own times.
    checked = 0
    for con in plain_analyses:
        states = dict(((r[0], r[1]), r[2]) for r in con.execute(
            "SELECT db_idx, device_id, support_state FROM traceloom_v_replay_region_annotation_status"))
        rows = con.execute("SELECT db_idx, device_id, timeline_order, mainline_anchor_idx, "
                           "start_ns, end_ns, item_kind "
                           "FROM traceloom_v_flattened_execution_timeline").fetchall()
        per_device = {}
        for r in rows:
            per_device.setdefault((r[0], r[1]), []).append(r)
        for dev, items in per_device.items():
            if states[dev] == "supported":
                continue
            assert all(r[6] == "mainline_anchor" for r in items)
            by_time = sorted(items, key=lambda r: (r[4], r[5], r[3]))
            assert [r[2] for r in by_time] == list(range(len(items)))
            assert all(r[2] == r[3] - 1 for r in items)
            checked += 1
    assert checked


def test_host_window_compares_call_shapes_by_key(context_analysis):
    # State and scope read the call cores; shape text is looked up only for two calls of
    # different shapes. Same codes as the rule written over the readable call view.
    con = context_analysis
    steps = plan(con, "SELECT * FROM traceloom_anchor_host_window")
    assert not any("AUTOMATIC" in s for s in steps), steps
    assert sum(s.startswith("SCAN") for s in steps) == 1, steps
    reference = con.execute("""
        SELECT l.anchor_n,
               CASE WHEN l.host_call_n IS NULL OR r.host_call_n IS NULL THEN 1
                    WHEN lc.db_idx <> rc.db_idx OR lc.provider IS NOT rc.provider
                      OR lc.clock_domain IS NOT rc.clock_domain THEN 3
                    WHEN lc.end_ns > rc.start_ns THEN 4 ELSE 0 END,
               CASE WHEN l.host_call_n IS NULL OR r.host_call_n IS NULL THEN 2
                    WHEN lc.thread_id IS NOT NULL AND lc.thread_id = rc.thread_id
                     AND (lc.process_id = rc.process_id
                          OR (lc.process_id IS NULL AND rc.process_id IS NULL)) THEN 0
                    WHEN lc.process_id = rc.process_id THEN 1 ELSE 2 END
        FROM traceloom_anchor_core l
        JOIN traceloom_anchor_core r ON r.anchor_n = l.anchor_n + 1 AND r.db_idx = l.db_idx
         AND r.device_id = l.device_id
        LEFT JOIN traceloom_runtime_call lc ON lc.call_n = l.host_call_n
        LEFT JOIN traceloom_runtime_call rc ON rc.call_n = r.host_call_n
        ORDER BY 1""").fetchall()
    got = con.execute("SELECT left_anchor_n, state, scope FROM traceloom_anchor_host_window "
                      "ORDER BY 1").fetchall()
    assert got and got == reference


def test_bubble_position_streams_in_node_order(context_analysis):
    # Grouped from the nodes through their occurrence and anchor key ranges: no sort of every
    # bubble (temp B-tree), no automatic index, so the first positions come at once.
    con = context_analysis
    for view in ("traceloom_structure_bubble_position", "traceloom_v_structure_bubble_host_context"):
        steps = plan(con, "SELECT * FROM %s" % view)
        # (the host context's per-position API families are a small aggregate, indexed once,
        # and so are the API families per call shape)
        assert not any("AUTOMATIC" in s and not s.startswith(("SEARCH api ", "SEARCH f "))
                       for s in steps), \
            (view, steps)
        # (traceloom_node_anchor_walk: nodes n, occurrences o, anchors a)
        assert "SEARCH o USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)" in steps, steps
        assert "SEARCH a USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)" in steps, steps
    steps = plan(con, "SELECT * FROM traceloom_structure_bubble_position")
    assert not any("TEMP B-TREE" in s for s in steps), steps
    # every bubble (an anchor with idle time and a left neighbour on its device) is counted once
    total = con.execute("SELECT sum(bubble_occurrence_count), round(sum(total_bubble_us), 3) "
                        "FROM traceloom_structure_bubble_position").fetchone()
    expect = con.execute("""
        SELECT count(*), round(sum(r.idle_ns) / 1000.0, 3) FROM traceloom_anchor_core r
        JOIN traceloom_anchor_core l ON l.anchor_n = r.anchor_n - 1 AND l.db_idx = r.db_idx
         AND l.device_id = r.device_id
        WHERE r.idle_ns > 0""").fetchone()
    assert total[0] and total[0] == expect[0]
    assert abs(total[1] - expect[1]) < 0.01


@pytest.mark.parametrize("profile", ["kineto/gpu_basic.pt.trace.json", "context_gen/graph"])
def test_bubble_position_state_counts(cli, fixtures, tmp_path, profile):
    # The view counts supported (state 0) and nonmonotonic (4) windows in one packed SUM and
    # derives the missing-endpoint and other counts: each must equal a plain count per state
    # of the host windows before the bubbles of the position's atom. The Kineto profile has
    # nonmonotonic windows (its launches overlap the previous kernel's), so the high half of
    # the packed sum is exercised.
    out = tmp_path / "analysis.db"
    subprocess.run([str(cli), str(fixtures / profile), "--output", str(out)],
                   check=True, capture_output=True)
    con = sqlite3.connect("file:%s?mode=ro" % out, uri=True)
    got = con.execute("""
        SELECT right_node_n, bubble_occurrence_count, supported_host_occurrence_count,
               missing_endpoint_occurrence_count, nonmonotonic_occurrence_count,
               other_unsupported_occurrence_count, host_observation_coverage
        FROM traceloom_structure_bubble_position ORDER BY 1""").fetchall()
    expect = con.execute("""
        SELECT oc.node_n, count(*), sum(w.state = 0), sum(w.state = 1), sum(w.state = 4),
               sum(w.state IN (2, 3)), round(1.0 * sum(w.state = 0) / count(*), 6)
        FROM traceloom_anchor_core r
        JOIN traceloom_anchor_host_window w ON w.left_anchor_n = r.anchor_n - 1
        JOIN traceloom_position_occurrence_core oc ON oc.occurrence_n = r.occurrence_n
        WHERE r.idle_ns > 0 GROUP BY oc.node_n ORDER BY 1""").fetchall()
    con.close()
    assert got and got == expect
    if profile.startswith("kineto"):
        assert sum(row[4] for row in got) > 0


@pytest.mark.parametrize("view,columns,source", [
    # (the roles per decision: its role class, or inside a promoted replay unit's span the
    # class's protected twin, sql/views/20_classify.sql; the symbols per event)
    ("traceloom_v_evidence_role_summary",
     "c.source_domain, c.final_role, c.effective_structural_participation, c.rule_id, "
     "c.reason_code, c.cost_treatment",
     "traceloom_evidence_role_decision e JOIN traceloom_evidence_role_class c "
     "ON c.class_id = e.role_class_id"),
    ("traceloom_v_symbol_normalization",
     "c.source_domain, c.observed_symbol, c.structural_symbol, c.symbol_outcome, "
     "c.symbol_reason_code, c.symbol_rule_id, c.symbol_candidate_rule_ids",
     "traceloom_event e JOIN traceloom_evidence_role_class c ON c.class_id = e.role_class_id"),
])
def test_role_summaries_count_events_by_shape_first(context_analysis, view, columns, source):
    # Counted on the event core per (db, device, shape): the role class and its text are read
    # once per shape, not per event through the readable event view (2.3 s on a million events).
    con = context_analysis
    rows = con.execute("EXPLAIN QUERY PLAN SELECT * FROM %s" % view).fetchall()
    steps = [r[3] for r in rows]
    # (every event: the key range from 0, a promoted launch anchor's row below it being none)
    assert "SCAN e" in steps or "SEARCH e USING INTEGER PRIMARY KEY (rowid>?)" in steps, steps
    assert "SEARCH s USING INTEGER PRIMARY KEY (rowid=?)" in steps, steps
    assert any(s.startswith("SEARCH c USING INTEGER PRIMARY KEY (rowid=?)") for s in steps), steps
    assert not any("AUTOMATIC" in s for s in steps), steps
    # the only subqueries: the summary's replay-unit span lookups (the spans by their index),
    # in the part that reads the events again only where a unit was promoted
    subqueries = {r[0] for r in rows if "SCALAR SUBQUERY" in r[3]}
    assert all(r[3].startswith(("SEARCH p ", "SEARCH q ", "SEARCH traceloom_protected_interval"))
               for r in rows if r[1] in subqueries and r[3].startswith(("SEARCH", "SCAN"))), steps
    # the same groups and counts as the rule written over the readable decision or event view
    reference = sorted(con.execute(
        "SELECT e.db_idx, e.device_id, %s, count(*) FROM %s "
        "GROUP BY e.db_idx, e.device_id, %s" % (columns, source, columns)).fetchall(), key=repr)
    n = len(reference[0])
    got = sorted((r[:n] for r in con.execute("SELECT * FROM %s" % view)), key=repr)
    assert got and got == reference


def test_runtime_call_family_is_made_once_per_call_shape(context_analysis):
    # The name tests run over the call shapes (a handful of rows), grouped before the join;
    # each call takes its shape's layer and family by the shape's key (4.1 s on a million calls
    # when they ran per call).
    con = context_analysis
    steps = plan(con, "SELECT api_layer, api_family, count(*) FROM traceloom_v_runtime_call_family "
                      "GROUP BY 1, 2")
    assert "MATERIALIZE f" in steps and "SCAN s" in steps, steps
    assert "SEARCH f USING AUTOMATIC COVERING INDEX (shape_id=?)" in steps, steps
    rows = con.execute("SELECT api_name, api_layer, api_family, call_n "
                       "FROM traceloom_v_runtime_call_family").fetchall()
    (calls,) = con.execute("SELECT count(*) FROM traceloom_runtime_call").fetchone()
    assert len(rows) == calls and len({r[3] for r in rows}) == calls
    by_name = {}
    for name, layer, family, _ in rows:
        by_name.setdefault(name, set()).add((layer, family))
    # one answer per API name, whatever the call's shape
    assert all(len(v) == 1 for v in by_name.values()), by_name
    known = {"aclmdlRIExecuteAsync": ("public", "graph_launch"),
             "aclrtSynchronizeStream": ("public", "synchronize"),
             "aclrtMemcpyAsync": ("public", "memory"),
             "aclnnMm": ("public", "other")}
    seen = {n: by_name[n].pop() for n in known if n in by_name}
    assert len(seen) == len(known), sorted(by_name)
    assert all(seen[n] == known[n] for n in seen), seen
