"""Exact ACL graph replay reconstruction checked member by member against generated ground truth.

tools/genprofile.py --graph writes decode steps as ACL graph replays and lists, per rank, every
launch with its connectionId, its step and the globalTaskId range of its body tasks. The
analysis (the CLI) must promote every launch, give it exactly those body tasks, and make one
replay unit per decode step whose launches are that step's launches, in order.
"""

import collections
import os
import sqlite3
import subprocess

import pytest

from test_genprofile import generate
from test_genprofile_layouts import cli_path

STEPS, LAYERS = 6, 4


@pytest.fixture(scope="module", params=["shared", "per-layer"])
def analysed(request, tmp_path_factory):
    out = tmp_path_factory.mktemp("replay_" + request.param.replace("-", "_"))
    truth = generate(out, "--format", "ascend", "--graph", "--graph-layers", request.param,
                     "--decode-steps", STEPS, "--prefill-steps", 1, "--layers", LAYERS, "--ops", 11,
                     "--ranks", 2, "--seed", 11, "--aux", 0.05)
    db = out / "analysis.db"
    subprocess.run([cli_path(), str(out), "--output", str(db)], check=True, capture_output=True,
                   timeout=120)
    con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    yield request.param, truth, con
    con.close()


def launches_of(truth):
    return [(r, l) for r, rank in enumerate(truth["ranks"]) for l in rank["graph"]["launch_list"]]


def test_every_launch_is_promoted_with_its_exact_members(analysed):
    _, truth, con = analysed
    expected = launches_of(truth)
    assert len(expected) == 2 * STEPS * (LAYERS + 2)
    for rank, l in expected:
        row = con.execute(
            "SELECT launch_id, reconstruction_status, match_policy, association_policy, member_count "
            "FROM traceloom_graph_launch WHERE db_idx = ? AND correlation_id = ?",
            (rank, str(l["connection_id"]))).fetchall()
        assert len(row) == 1, (rank, l["connection_id"])
        launch_id, status, match, assoc, n = row[0]
        assert (status, match, assoc) == ("exact_replay_member", "notify_completion_adjacent", "record_model_id")
        assert n == l["member_tasks"]
        lo, hi = l["member_global_task_ids"]
        # the members are the launch's tasks by globalTaskId; raw_task_id is each one's taskId
        got = sorted(r[0] for r in con.execute(
            "SELECT e.global_task_id FROM traceloom_graph_body_member m "
            "JOIN traceloom_event e ON e.event_id = m.event_id WHERE m.launch_id = ?", (launch_id,)))
        assert got == list(range(lo, hi + 1)), launch_id
        assert con.execute(
            "SELECT count(*) FROM traceloom_graph_body_member m JOIN traceloom_event e "
            "ON e.event_id = m.event_id WHERE m.launch_id = ? AND m.raw_task_id = e.task_id",
            (launch_id,)).fetchone()[0] == n, launch_id


def test_one_replay_unit_per_decode_step(analysed):
    _, truth, con = analysed
    for rank, r in enumerate(truth["ranks"]):
        by_step = {}
        for l in r["graph"]["launch_list"]:
            by_step.setdefault(l["step"], []).append(str(l["connection_id"]))
        units = {}
        for unit, corr in con.execute(
                "SELECT replay_unit_id, correlation_id FROM traceloom_graph_launch WHERE db_idx = ? "
                "ORDER BY graph_launch_occurrence_id", (rank,)):
            units.setdefault(unit, []).append(corr)
        assert sorted(units.values()) == sorted(by_step.values())


def test_shape_and_tree(analysed):
    _, truth, con = analysed
    shapes = {r[0] for r in con.execute("SELECT DISTINCT shape_policy FROM traceloom_aclgraph_reconstruction_region")}
    statuses = {r[0] for r in con.execute("SELECT DISTINCT status FROM traceloom_aclgraph_reconstruction_region")}
    assert statuses == {"recognized_complete_pattern"}
    # Both modes replay head, one layer body per model layer, tail (the generator's roles):
    # shared captures the layer once; per-layer captures one instance per layer, whose middle
    # slots still run one layer body, so they are layers too (ACLH, Rep xN ACLL, ACLT).
    assert shapes == {"head_repeated_layer_tail"}
    first_step = min(l["step"] for l in truth["ranks"][0]["graph"]["launch_list"])
    truth_roles = [l["role"] for l in truth["ranks"][0]["graph"]["launch_list"] if l["step"] == first_step]
    roles = [r[0] for r in con.execute(
        "SELECT slot_role FROM traceloom_graph_launch WHERE db_idx = 0 AND replay_unit_id = 0 "
        "ORDER BY member_order")]
    assert roles == truth_roles
    assert truth_roles == ["head"] + ["layer"] * LAYERS + ["tail"]
    # role_collapsed aggregates: every layer slot of every replay on the position's stream,
    # per rank (recovery.md 7.3 keys them by stream): shared replays one layer graph, captured
    # on one stream, for every layer (STEPS x LAYERS contributors); per-layer captures each
    # layer's graph on a stream of its own (genprofile_graph.py: an instance's main stream), so
    # a layer's positions gather that layer's STEPS replays, LAYERS times as many aggregates.
    mode = analysed[0]
    counts = collections.Counter(r[0] for r in con.execute(
        "SELECT member_occurrence_count FROM traceloom_replay_cost_aggregate WHERE slot_role = 'layer'"))
    per_layer_positions = sum(1 for _ in con.execute(
        "SELECT DISTINCT db_idx, stream_id, task_ordinal FROM traceloom_replay_cost_aggregate "
        "WHERE slot_role = 'layer'"))
    if mode == "shared":
        assert set(counts) == {STEPS * LAYERS}
    else:
        assert set(counts) == {STEPS}
        # each layer's streams (its compute and communication lanes) are its own
        lanes = con.execute(
            "SELECT count(DISTINCT stream_id) FROM traceloom_replay_cost_member "
            "WHERE slot_role = 'layer' GROUP BY launch_id LIMIT 1").fetchone()[0]
        streams = {r[0] for r in con.execute(
            "SELECT count(DISTINCT stream_id) FROM traceloom_replay_cost_aggregate "
            "WHERE slot_role = 'layer' GROUP BY db_idx")}
        assert streams == {LAYERS * lanes}
    assert sum(counts.values()) == per_layer_positions
    # The unit's layers fold inside its ReplayUnit Seq: one Repeat of ACLL per device.
    layer_reps = con.execute(
        "SELECT count(*) FROM traceloom_viz_node c JOIN traceloom_viz_node p "
        "ON p.db_idx = c.db_idx AND p.device_id = c.device_id AND c.path LIKE p.path || '/%' "
        "AND c.depth = p.depth + 1 WHERE p.category = 'graph_unit' AND c.node_type = 'Repeat' "
        "AND c.repeat_count = ?", (LAYERS,)).fetchone()[0]
    assert layer_reps == 2
    # All decode steps have one body: the tree folds them into one Repeat per device.
    reps = con.execute("SELECT db_idx, repeat_count FROM traceloom_v_position WHERE node_type = 'Repeat' "
                       "AND label LIKE 'Rep x%' AND repeat_count = ?", (STEPS,)).fetchall()
    assert sorted(r[0] for r in reps) == [0, 1]
    # Members are owned: none of them is an anchor, and total member count matches.
    total = sum(l["member_tasks"] for _, l in launches_of(truth))
    assert con.execute("SELECT count(*) FROM traceloom_graph_body_member").fetchone()[0] == total
    assert con.execute("SELECT count(*) FROM traceloom_graph_body_member m JOIN traceloom_anchor a "
                       "ON a.event_id = m.event_id AND a.db_idx = m.db_idx").fetchone()[0] == 0


def test_cost_lenses_are_separate(analysed):
    _, _, con = analysed
    bad = con.execute("SELECT count(*) FROM traceloom_replay_cost_launch WHERE NOT "
                      "(busy_union_ns <= task_sum_ns AND busy_union_ns <= envelope_ns AND "
                      "compute_ns + communication_ns + data_move_ns = task_sum_ns)").fetchone()[0]
    assert bad == 0
    n = con.execute("SELECT count(*) FROM traceloom_replay_cost_launch").fetchone()[0]
    assert n == 2 * STEPS * (LAYERS + 2)
