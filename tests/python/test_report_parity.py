"""Report columns converged on the reference TraceLoom 0.1.4 (docs/PARITY.md).

Each test asserts the value the reference gives on a fixture, worked out from the fixture's
rows, for a column that once differed and now agrees (tools/parity.py compares it on every
parity profile; this keeps it without the reference installed).
"""
import sqlite3
import subprocess

import pytest


@pytest.fixture(scope="module")
def hlt(cli, fixtures, tmp_path_factory):
    db = tmp_path_factory.mktemp("report_parity") / "hlt.db"
    subprocess.run([str(cli), str(fixtures / "exact_hlt/mono"), "--output", str(db)],
                   check=True, capture_output=True, text=True)
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    yield con
    con.close()


def test_idx_in_occurrence_is_zero_based(hlt):
    # exact_hlt (../shared/fixtures/ascend_sqlite/exact_hlt/msprof.sql): four replay units of
    # three ACL graph launches each (ACLH, ACLL, ACLT; modelIds 10-12 then 7-9 ...), every
    # launch's body two member tasks (taskType 30 on two streams at the same time). The tree:
    # the first unit, then a repeat of the three others. idx_in_occurrence is the launch
    # anchor's 0-based place in the occurrence (anchor_order its 1-based one), as in the
    # reference's traceloom_v_node_graph_body_member.
    rows = hlt.execute(
        "SELECT n.label, g.coverage_kind, g.occurrence_idx, g.idx_in_occurrence, g.anchor_order, "
        "       count(*) "
        "FROM traceloom_v_node_graph_body_member g "
        "JOIN traceloom_viz_node n ON n.node_id = g.node_id "
        "GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4").fetchall()
    root = [r for r in rows if r[0] == "Seq"]
    # the root's occurrence holds the 12 launch anchors first, each with its 2 members
    assert [(r[3], r[4], r[5]) for r in root] == [(i, i + 1, 2) for i in range(12)]
    # each of the three decode units (occurrences 1-3 of the repeated unit): ACLH, ACLL, ACLT
    unit = [r for r in rows if r[0] == "ReplayUnit T2"]
    assert [(r[2], r[3], r[4]) for r in unit] == [(k, i, i + 1) for k in (1, 2, 3) for i in range(3)]
    # under an atom, its own launch is the first and only anchor
    assert {(r[3], r[4]) for r in rows if r[1] == "self"} == {(0, 1)}


def test_contributor_order_is_zero_based(hlt):
    # exact_hlt: the prefill unit (ACL graphs at 100, 200, 300 ns) has its own bodies, one
    # launch each; the three decode units (launches at 400/700/1000 for the head, 500/800/1100
    # for the layer, 600/900/1200 for the tail) share theirs, so each decode slot's aggregate
    # has three contributors, its members at 416, 716, 1016 (head) ... in time order. The
    # reference numbers them 0, 1, 2 (replay-cost-explain prints it), a prefill member 0.
    rows = hlt.execute(
        "SELECT a.identity, a.slot_role, m.start_ns, am.contributor_order "
        "FROM traceloom_replay_cost_aggregate_member am "
        "JOIN traceloom_replay_cost_aggregate a USING (aggregate_id) "
        "JOIN traceloom_graph_body_member m ON m.member_id = am.member_id").fetchall()
    order = {(ident, role, start): k for ident, role, start, k in rows}
    assert [order[("HeadOp", "head", s)] for s in (416, 716, 1016)] == [0, 1, 2]
    assert [order[("TailOp", "tail", s)] for s in (616, 916, 1216)] == [0, 1, 2]
    assert order[("PrefillHeadOp", "head", 116)] == 0
    assert min(k for *_, k in rows) == 0 and len(rows) == 24
