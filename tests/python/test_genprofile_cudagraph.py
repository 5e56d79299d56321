"""Tests of tools/genprofile.py --cuda-graph: decode steps as replays of one CUDA graph.

The launches and their members are recovered from the Nsight database with plain SQL
(cudaGraphLaunch runtime rows, KERNEL / MEMCPY rows carrying graphNodeId and the launch's
correlationId, CUDA_GRAPH_NODE_EVENTS, CUPTI_ACTIVITY_KIND_GRAPH_TRACE) and compared with
ground_truth.json; when the CLI is built, its exact replay tables must report what the
ground truth expects (recovery.md section 7.2).
"""

import filecmp
import subprocess
import sys

import pytest

from test_genprofile import GEN, connect, generate, one
from test_genprofile_layouts import cli_path

STEPS, PREFILL, LAYERS, OPS, RANKS, EAGER = 5, 1, 3, 11, 2, 2
COMMON = ("--format", "nsys", "--decode-steps", STEPS, "--prefill-steps", PREFILL, "--layers", LAYERS,
          "--ops", OPS, "--ranks", RANKS, "--seed", 5, "--cuda-graph-eager", EAGER)
LAUNCH_SQL = ("SELECT r.rowid, r.correlationId, r.start FROM CUPTI_ACTIVITY_KIND_RUNTIME r "
              "JOIN StringIds s ON s.id = r.nameId WHERE lower(s.value) LIKE '%cudagraphlaunch%' "
              "AND (r.globalTid >> 24) & 16777215 = ? ORDER BY r.start")


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    out = tmp_path_factory.mktemp("cuda_node")
    return out, generate(out, *COMMON, "--cuda-graph", "node")


@pytest.fixture(scope="module")
def graph(tmp_path_factory):
    out = tmp_path_factory.mktemp("cuda_graph")
    return out, generate(out, *COMMON, "--cuda-graph", "graph")


def pid(rank):
    return 50_000 + rank["device_id"]


def body_rows(con, corr):
    """(table, rowid, start, end, device, stream, context, node, label) of a launch's graph children."""
    return con.execute(
        "SELECT 'K', k.rowid, k.start, k.end, k.deviceId, k.streamId, k.contextId, k.graphNodeId, s.value "
        "FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.shortName "
        "WHERE k.correlationId = ?1 AND k.graphNodeId IS NOT NULL UNION ALL "
        "SELECT 'M', rowid, start, end, deviceId, streamId, contextId, graphNodeId, "
        "'copy ' || copyKind || ' ' || bytes FROM CUPTI_ACTIVITY_KIND_MEMCPY "
        "WHERE correlationId = ?1 AND graphNodeId IS NOT NULL ORDER BY 3, 4, 1, 2", (corr,)).fetchall()


def test_node_launches_and_members(node):
    out, truth = node
    con = connect(out / "profile.sqlite")
    launch_corrs = []
    for rank in truth["ranks"]:
        g = rank["cuda_graph"]
        b = g["body"]
        assert g["mode"] == "node" and g["replays"] == STEPS and len(g["launches"]) == STEPS
        # Body = head (h2d, embedding) + layers x (ops + 1 D2D copy) + tail (3 kernels, d2h).
        assert b["members"] == 2 + LAYERS * (OPS + 1) + 4
        assert b["data_move"] == 2 + LAYERS and b["communication"] == 2 * LAYERS
        assert b["compute"] + b["communication"] + b["data_move"] == b["members"]
        calls = con.execute(LAUNCH_SQL, (pid(rank),)).fetchall()
        assert [(c[0], c[1]) for c in calls] == [(l["runtime_rowid"], l["correlation_id"]) for l in g["launches"]]
        bodies, node_sets = set(), set()
        prev_end = None
        for launch in g["launches"]:
            rows = body_rows(con, launch["correlation_id"])
            assert len(rows) == b["members"] == launch["members"]
            kern = sorted(r[1] for r in rows if r[0] == "K")
            copies = sorted(r[1] for r in rows if r[0] == "M")
            lo, hi = launch["kernel_rowids"]
            assert kern == list(range(lo, hi + 1))
            lo, hi = launch["memcpy_rowids"]
            assert copies == list(range(lo, hi + 1))
            assert {r[4] for r in rows} == {rank["device_id"]} and len({r[6] for r in rows}) == 1
            assert min(r[2] for r in rows) == launch["start_ns"] and max(r[3] for r in rows) == launch["end_ns"]
            assert {r[5] for r in rows} == set(v for v in g["streams"].values() if v is not None)
            nodes = [r[7] for r in rows]
            assert len(set(nodes)) == len(nodes) and sorted(nodes) == list(range(b["node_ids"][0], b["node_ids"][1] + 1))
            node_sets.add(frozenset(nodes))
            # The body as the spec's signature sees it: per stream, labels and nodes in time order.
            bodies.add(tuple(sorted((s, tuple((r[8], r[7]) for r in rows if r[5] == s)) for s in {r[5] for r in rows})))
            if prev_end is not None:
                assert launch["start_ns"] > prev_end
            prev_end = launch["end_ns"]
            launch_corrs.append(launch["correlation_id"])
        assert len(node_sets) == 1 and len(bodies) == 1
        # Every replayed node maps to exactly one captured original.
        orig = dict(con.execute("SELECT graphNodeId, originalGraphNodeId FROM CUDA_GRAPH_NODE_EVENTS "
                                "WHERE originalGraphNodeId IS NOT NULL AND (globalTid >> 24) & 16777215 = ?",
                                (pid(rank),)))
        assert orig == {b["node_ids"][0] + j: b["original_node_ids"][0] + j for j in range(b["members"])}
        assert one(con, "SELECT count(*) FROM CUDA_GRAPH_NODE_EVENTS WHERE (globalTid >> 24) & 16777215 = ?",
                   pid(rank)) == g["node_events_rows"] == 2 * b["members"]
    assert len(launch_corrs) == len(set(launch_corrs)) == RANKS * STEPS


def test_eager_kernels_between_replays(node):
    out, truth = node
    con = connect(out / "profile.sqlite")
    for rank in truth["ranks"]:
        g = rank["cuda_graph"]
        eager = g["eager_between"]
        assert eager["kernels"] == EAGER * (STEPS - 1) == len(eager["kernel_rowids"])
        for k, rowid in enumerate(eager["kernel_rowids"]):
            start, node_id, corr, dev = con.execute(
                "SELECT start, graphNodeId, correlationId, deviceId FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE rowid = ?",
                (rowid,)).fetchone()
            assert node_id is None and dev == rank["device_id"]
            gap = k // EAGER
            assert g["launches"][gap]["end_ns"] < start < g["launches"][gap + 1]["start_ns"]
            api = one(con, "SELECT s.value FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId "
                           "WHERE r.correlationId = ?", corr)
            assert api == "cudaLaunchKernel_v7000"


def table_count(con, table, rank):
    if table in ("CUPTI_ACTIVITY_KIND_RUNTIME", "CUDA_GRAPH_NODE_EVENTS"):
        return one(con, "SELECT count(*) FROM %s WHERE (globalTid >> 24) & 16777215 = ?" % table, pid(rank))
    return one(con, "SELECT count(*) FROM %s WHERE deviceId = ?" % table, rank["device_id"])


@pytest.mark.parametrize("mode", ["node", "graph"])
def test_table_counts(node, graph, mode):
    out, truth = node if mode == "node" else graph
    con = connect(out / "profile.sqlite")
    for rank in truth["ranks"]:
        for table, rows in rank["tables"].items():
            assert table_count(con, table, rank) == rows, table
        assert rank["host_calls"]["by_api"]["cudaGraphLaunch_v10000"] == STEPS


def test_graph_level_has_envelopes_only(graph):
    out, truth = graph
    con = connect(out / "profile.sqlite")
    names = {n for (n,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert "CUDA_GRAPH_NODE_EVENTS" not in names
    for table in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY"):
        assert one(con, "SELECT count(*) FROM %s WHERE graphNodeId IS NOT NULL" % table) == 0
    for rank in truth["ranks"]:
        g = rank["cuda_graph"]
        assert g["mode"] == "graph" and g["expected"]["launches"] == 0 and g["expected"]["envelopes"] == STEPS
        calls = con.execute(LAUNCH_SQL, (pid(rank),)).fetchall()
        rows = con.execute("SELECT rowid, correlationId, start, end, graphId, graphExecId, streamId "
                           "FROM CUPTI_ACTIVITY_KIND_GRAPH_TRACE WHERE deviceId = ? ORDER BY start",
                           (rank["device_id"],)).fetchall()
        assert [c[1] for c in calls] == [r[1] for r in rows] == [l["correlation_id"] for l in g["launches"]]
        for launch, row in zip(g["launches"], rows):
            assert (row[0], row[2], row[3]) == (launch["graph_trace_rowid"], launch["start_ns"], launch["end_ns"])
            assert (row[4], row[5], row[6]) == (g["graph_id"], g["graph_exec_id"], g["streams"]["compute"])
            assert launch["kernel_rowids"] is None and launch["members"] == 0


def test_same_seed_is_byte_identical(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    for d in (a, b):
        generate(d, "--format", "nsys", "--cuda-graph", "node", "--decode-steps", 3, "--layers", 2, "--seed", 9)
    assert filecmp.cmp(a / "profile.sqlite", b / "profile.sqlite", shallow=False)
    assert filecmp.cmp(a / "ground_truth.json", b / "ground_truth.json", shallow=False)


@pytest.mark.parametrize("bad", [("--format", "ascend", "--cuda-graph", "node"),
                                 ("--format", "nsys", "--cuda-graph", "node", "--rows", 1000),
                                 ("--format", "nsys", "--cuda-graph", "other")])
def test_rejected_arguments(tmp_path, bad):
    r = subprocess.run([sys.executable, GEN, "--out", str(tmp_path), *map(str, bad)], capture_output=True, text=True)
    assert r.returncode == 2 and "cuda-graph" in r.stderr


def analyse(out, tmp_path):
    cli = cli_path()
    db = tmp_path / "x.db"
    r = subprocess.run([cli, str(out / "profile.sqlite"), "--output", str(db)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return connect(db)


def check_cli(con, truth):
    kinds = dict(con.execute("SELECT kind, count(*) FROM traceloom_event GROUP BY 1"))
    want = {}
    for rank in truth["ranks"]:
        for kind, n in rank["events"]["by_kind"].items():
            want[kind] = want.get(kind, 0) + n
        # Each promoted launch adds its synthetic launch event (the CUDAGraph anchor).
        if rank["cuda_graph"]["expected"]["exact_units"]:
            want["graph_launch"] = want.get("graph_launch", 0) + rank["cuda_graph"]["expected"]["exact_units"]
    assert kinds == want
    states = dict(con.execute("SELECT support_state, count(*) FROM traceloom_runtime_device_relation "
                              "WHERE relation_kind = 'provider_correlation' GROUP BY 1"))
    want = {}
    for rank in truth["ranks"]:
        for state, n in rank["relation_rows"].items():
            if state != "total" and n:
                want[state] = want.get(state, 0) + n
    assert states == want
    # each cudaGraphLaunch found by its correlation id is a supported_exact graph_launch
    # relation (inputs.md 10); the graph-level mode has no launch to relate
    launches = dict(con.execute("SELECT support_state, count(*) FROM traceloom_runtime_device_relation "
                                "WHERE relation_kind = 'graph_launch' GROUP BY 1"))
    n = sum(r["cuda_graph"]["expected"]["launches"] for r in truth["ranks"])
    assert launches == ({"supported_exact": n} if n else {})
    for rank in truth["ranks"]:
        g, dev = rank["cuda_graph"], rank["device_id"]
        exp = g["expected"]
        launches = con.execute("SELECT launch_id, correlation_id, reconstruction_status, replay_unit_id, start_ns, "
                               "end_ns FROM traceloom_graph_launch WHERE device_id = ? AND graph_provider = 'cuda' "
                               "ORDER BY start_ns", (dev,)).fetchall()
        assert len(launches) == exp["launches"]
        assert {l[2] for l in launches} == ({exp["launch_status"]} if exp["launches"] else set())
        assert sum(1 for l in launches if l[3] is not None) == exp["exact_units"]
        for l, t in zip(launches, g["launches"]):
            assert (int(l[1]), l[4], l[5]) == (t["correlation_id"], t["start_ns"], t["end_ns"])
        # Only promoted launches publish their members.
        assert one(con, "SELECT count(*) FROM traceloom_graph_body_member WHERE device_id = ? AND "
                        "graph_provider = 'cuda'", dev) == (exp["members"] if exp["exact_units"] else 0)
        assert one(con, "SELECT count(*) FROM traceloom_cuda_graph_replay WHERE device_id = ? AND "
                        "graph_kind = 'cuda_graph_trace'", dev) == exp["envelopes"]
        assert one(con, "SELECT count(DISTINCT replay_body_template_id) FROM traceloom_graph_launch WHERE "
                        "device_id = ? AND replay_body_template_id IS NOT NULL", dev) == exp["body_templates"]


def test_cli_reconstructs_the_node_level_replays(node, tmp_path):
    out, truth = node
    con = analyse(out, tmp_path)
    check_cli(con, truth)
    for rank in truth["ranks"]:
        g, dev = rank["cuda_graph"], rank["device_id"]
        for t in g["launches"]:
            got = con.execute("SELECT m.source_table, m.source_row_id, m.kind, m.lane_ordinal, m.task_ordinal, "
                              "m.stream_id, m.start_ns, m.graph_node_id, m.original_graph_node_id "
                              "FROM traceloom_graph_body_member m JOIN traceloom_graph_launch l "
                              "ON l.launch_id = m.launch_id WHERE l.device_id = ? AND l.correlation_id = ?",
                              (dev, str(t["correlation_id"]))).fetchall()
            want = {("CUPTI_ACTIVITY_KIND_KERNEL", r) for r in range(t["kernel_rowids"][0], t["kernel_rowids"][1] + 1)}
            want |= {("CUPTI_ACTIVITY_KIND_MEMCPY", r) for r in range(t["memcpy_rowids"][0], t["memcpy_rowids"][1] + 1)}
            assert {(m[0], m[1]) for m in got} == want
            assert sum(m[2] == "data_move" for m in got) == g["body"]["data_move"]
            assert sum(m[2] == "communication" for m in got) == g["body"]["communication"]
            # Task ordinals are the time order within each stream; one lane per stream.
            for m in got:
                assert m[4] == sum(1 for o in got if o[5] == m[5] and o[6] < m[6])
                assert m[8] - g["body"]["original_node_ids"][0] == m[7] - g["body"]["node_ids"][0]
            assert len({(m[3], m[5]) for m in got}) == g["body"]["streams"]


def test_cli_sees_graph_level_envelopes(graph, tmp_path):
    out, truth = graph
    check_cli(analyse(out, tmp_path), truth)


def test_cli_single_replay_lacks_repeat_evidence(tmp_path):
    out = tmp_path / "one"
    truth = generate(out, "--format", "nsys", "--cuda-graph", "node", "--decode-steps", 1, "--layers", 2)
    exp = truth["ranks"][0]["cuda_graph"]["expected"]
    assert exp["launch_status"] == "insufficient_repeat_evidence" and exp["exact_units"] == 0
    check_cli(analyse(out, tmp_path), truth)
