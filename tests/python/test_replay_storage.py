"""Graph replay members stored as body slots, envelope children as runs (docs/ARCHITECTURE.md,
Storage): what is stored, that the views give every row back, and that they join by key.

- A member is slot k of its launch's body: the launches of one body template share the
  slots of the first of them (traceloom_graph_slot_core), each launch keeps where its
  members come from (traceloom_graph_member_range_core), and traceloom_graph_member_core is
  the view of launches x slots. On a generated ACL graph profile (shared layer bodies) the
  slots are one row per (body template, member), many times fewer than the members.
- The member rows are checked against facts the storage does not hold: the member's event
  is a real task of the launch's device inside the launch's interval, each launch has
  member_count members numbered first_member_n + member_order, and each task belongs to one
  member (tests/python/test_replay_generated.py checks them against the ground truth).
- An envelope's children are runs of consecutive events (traceloom_graph_envelope_child_run_core).
- Every view over them joins by key: no automatic index, no full scan inside a loop.
"""
import sqlite3
import subprocess

import pytest

from test_genprofile import generate
from test_genprofile_layouts import cli_path
from test_report_plans import problems


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    out = tmp_path_factory.mktemp("replay_storage")
    generate(out, "--format", "ascend", "--graph", "--graph-layers", "shared", "--decode-steps", 6,
             "--prefill-steps", 1, "--layers", 4, "--ops", 11, "--ranks", 1, "--seed", 3)
    db = out / "analysis.db"
    subprocess.run([cli_path(), str(out), "--output", str(db)], check=True, capture_output=True,
                   timeout=120)
    con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    yield con
    con.close()


@pytest.fixture(scope="module")
def graph_analysis(cli, fixtures, tmp_path_factory):
    out = tmp_path_factory.mktemp("replay_storage_fx") / "analysis.db"
    subprocess.run([str(cli), str(fixtures / "context_gen" / "graph"), "--output", str(out)],
                   check=True, capture_output=True)
    con = sqlite3.connect("file:%s?mode=ro" % out, uri=True)
    yield con
    con.close()


def one(con, sql):
    return con.execute(sql).fetchone()[0]


def test_members_are_stored_once_per_body_template_slot(generated):
    members = one(generated, "SELECT count(*) FROM traceloom_graph_member_core")
    launches = one(generated, "SELECT count(*) FROM traceloom_graph_launch WHERE member_count > 0")
    # head, layer and tail bodies: one slot row per member of each distinct body
    slots_needed = one(generated, """
        SELECT sum(member_count) FROM (
          SELECT DISTINCT replay_body_template_id, member_count FROM traceloom_graph_launch
          WHERE member_count > 0 AND replay_body_template_id IS NOT NULL)""")
    assert one(generated, "SELECT count(*) FROM traceloom_graph_slot_core") == slots_needed
    assert one(generated, "SELECT count(*) FROM traceloom_graph_member_range_core") == launches
    assert members >= 10 * slots_needed
    # every launch fits its template's slots: no correction is stored
    assert one(generated, "SELECT count(*) FROM traceloom_graph_slot_core WHERE aggregate_n "
                          "IS NOT NULL OR contributor_order IS NOT NULL "
                          "OR scheduled_work_share_ppm IS NOT NULL") == 0


@pytest.mark.parametrize("db", ["generated", "graph_analysis"])
def test_member_rows_are_the_launches_tasks(request, db):
    con = request.getfixturevalue(db)
    assert one(con, "SELECT count(*) FROM traceloom_graph_member_core") > 0
    # per launch: member_count rows, numbered first_member_n + member_order, 0..count-1
    bad = con.execute("""
        SELECT l.launch_n FROM traceloom_graph_launch l
        LEFT JOIN traceloom_graph_member_core m ON m.launch_n = l.launch_n
        WHERE l.first_member_n IS NOT NULL
        GROUP BY l.launch_n
        HAVING count(m.member_n) <> l.member_count
            OR count(m.member_n) > 0 AND (min(m.member_order) <> 0
               OR max(m.member_order) <> l.member_count - 1
               OR sum(m.member_n - l.first_member_n <> m.member_order) > 0)""").fetchall()
    assert bad == []
    # the member's event: a real task of the launch's device, inside the launch's interval
    bad = con.execute("""
        SELECT m.member_n FROM traceloom_graph_member_core m
        JOIN traceloom_graph_launch l ON l.launch_n = m.launch_n
        LEFT JOIN traceloom_event e ON e.event_n = m.event_n
        WHERE e.event_n IS NULL OR e.device_id <> l.device_id OR e.db_idx <> l.db_idx
           OR e.start_ns < l.start_ns OR e.end_ns > l.end_ns""").fetchall()
    assert bad == []
    assert one(con, "SELECT count(*) - count(DISTINCT event_n) FROM traceloom_graph_member_core") == 0
    # the share is trunc(dur * 10^6 / the launch's task sum), worked out from the events here
    bad = con.execute("""
        SELECT m.member_n FROM traceloom_graph_member_core m
        JOIN traceloom_event_core e ON e.event_n = m.event_n
        JOIN (SELECT c.launch_n, sum(x.dur_ns) AS task_sum FROM traceloom_graph_member_core c
              JOIN traceloom_event_core x ON x.event_n = c.event_n GROUP BY c.launch_n) s
          ON s.launch_n = m.launch_n
        WHERE m.scheduled_work_share_ppm <> e.dur_ns * 1000000 / s.task_sum""").fetchall()
    assert bad == []


def test_envelope_children_are_runs_of_events(generated):
    runs = one(generated, "SELECT count(*) FROM traceloom_graph_envelope_child_run_core")
    children = one(generated, "SELECT count(*) FROM traceloom_graph_envelope_child")
    envelopes = one(generated, "SELECT count(DISTINCT graph_event_idx) FROM traceloom_graph_envelope_child")
    assert envelopes > 0 and runs < children
    # child orders number every envelope's children 1..n over all envelopes in envelope
    # order (as the reference numbers envelope rows), each envelope's a contiguous stretch,
    # each child inside its envelope
    bad = generated.execute("""
        SELECT c.graph_event_idx FROM traceloom_graph_envelope_child c
        JOIN traceloom_cuda_graph_replay g ON g.graph_event_idx = c.graph_event_idx
        JOIN traceloom_event e ON e.event_n = c.child_event_n
        GROUP BY c.graph_event_idx
        HAVING max(c.child_order) - min(c.child_order) + 1 <> count(*)
            OR min(c.child_order) <> 1 + (SELECT count(*) FROM traceloom_graph_envelope_child p
                                          WHERE p.graph_event_idx < c.graph_event_idx)
            OR sum(e.start_ns < g.start_ns OR e.end_ns > g.end_ns) > 0""").fetchall()
    assert bad == [] and one(generated, "SELECT max(child_order) FROM traceloom_graph_envelope_child") == children


VIEWS = ["traceloom_graph_member_core", "traceloom_graph_body_member",
         "traceloom_replay_cost_member", "traceloom_replay_cost_aggregate_member",
         "traceloom_v_node_graph_body_member", "traceloom_v_node_replay_cost_member",
         "traceloom_graph_envelope_child", "traceloom_cuda_graph_envelope",
         "traceloom_v_cuda_graph_envelope", "traceloom_v_replay_body_pattern_member"]
# (traceloom_v_flattened_execution_timeline reads the members too: tests/python/test_storage.py)


@pytest.mark.parametrize("view", VIEWS)
def test_views_over_slots_and_runs_join_by_key(graph_analysis, view):
    assert problems(graph_analysis, view) == []


@pytest.mark.parametrize("view", ["traceloom_graph_body_member", "traceloom_replay_cost_member"])
def test_a_launchs_members_are_a_key_range(graph_analysis, view):
    sql = "SELECT * FROM %s WHERE launch_n = 3" % view
    steps = [r[3] for r in graph_analysis.execute("EXPLAIN QUERY PLAN " + sql)]
    assert any(s.startswith("SEARCH s USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)")
               for s in steps), steps
    assert not any(s.startswith("SCAN") for s in steps), steps
    assert graph_analysis.execute(sql).fetchall()
