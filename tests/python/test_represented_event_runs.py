"""traceloom_represented_event is a view over runs of consecutive events
(traceloom_represented_event_run_core, written by ext/reports/placements.c): each run is a key
range of traceloom_event_core. On a generated Ascend profile whose collectives each cover
several tasks, the view gives one row per task that a communication op represents, each with
an overlapping communication-op anchor of its device, the runs are maximal and disjoint, and
the view and its lookups by anchor read keys only."""
import pathlib
import sqlite3
import subprocess

import pytest


@pytest.fixture(scope="module")
def analysis(cli, fixtures, tmp_path_factory):
    out = tmp_path_factory.mktemp("represented") / "analysis.db"
    subprocess.run([str(cli), str(fixtures / "gen" / "ascend_s3_l6_k8"), "--output", str(out)],
                   check=True, capture_output=True)
    con = sqlite3.connect(f"file:{out}?mode=ro", uri=True)
    yield con
    con.close()


def test_every_represented_task_once_with_an_overlapping_communication_op(analysis):
    rows = analysis.execute("SELECT anchor_n, event_n FROM traceloom_represented_event").fetchall()
    represented = {n for (n,) in analysis.execute(
        "SELECT event_n FROM traceloom_event "
        "WHERE semantic_role_reason = 'represented_by_communication_op'")}
    assert rows and len(rows) == len({e for _, e in rows})
    assert {e for _, e in rows} == represented
    # the anchor is a communication op on the task's device whose interval overlaps the task
    bad = analysis.execute("""
        SELECT count(*) FROM traceloom_represented_event r
        JOIN traceloom_anchor a ON a.anchor_n = r.anchor_n
        JOIN traceloom_event op ON op.event_n = a.event_n
        JOIN traceloom_event t ON t.event_n = r.event_n
        WHERE op.source_table <> 'COMMUNICATION_OP' OR op.device_id <> t.device_id
           OR op.db_idx <> t.db_idx OR op.start_ns >= t.end_ns OR op.end_ns <= t.start_ns
    """).fetchone()[0]
    assert bad == 0
    # rows come in the (anchor_n, event_n) order of the former table's key
    assert rows == sorted(rows)


def test_runs_are_maximal_disjoint_and_several_tasks_long(analysis):
    runs = analysis.execute("SELECT anchor_n, first_event_n, last_event_n "
                            "FROM traceloom_represented_event_run_core "
                            "ORDER BY anchor_n, first_event_n").fetchall()
    assert all(f <= l for _, f, l in runs)
    # a run longer than one task exists, so the expansion is exercised
    assert any(l > f for _, f, l in runs)
    for (a0, _, l0), (a1, f1, _) in zip(runs, runs[1:]):
        # two runs of one anchor are never adjacent (they would be one run)
        assert a0 != a1 or f1 > l0 + 1
    covered = [e for _, f, l in runs for e in range(f, l + 1)]
    assert len(covered) == len(set(covered))
    (n,) = analysis.execute("SELECT count(*) FROM traceloom_represented_event").fetchone()
    assert n == len(covered)


def test_the_view_reads_runs_and_events_by_key(analysis):
    def plan(sql):
        return [r[3] for r in analysis.execute("EXPLAIN QUERY PLAN " + sql)]
    whole = plan("SELECT * FROM traceloom_represented_event")
    assert whole == ["SCAN r", "SEARCH e USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)"], whole
    one = plan("SELECT event_n FROM traceloom_represented_event WHERE anchor_n = 5")
    assert one[0].startswith("SEARCH r USING PRIMARY KEY (anchor_n=?)"), one
    assert not any("AUTOMATIC" in s or s.startswith("SCAN") for s in one), one
