"""Tests of tools/genprofile.py --graph: decode steps as ACL graph replays.

The launches, their members and their steps are recovered from the databases with plain
SQL (CANN_API launch calls, MODEL_EXECUTE / NOTIFY_WAIT by connectionId, body tasks by
the model streams CaptureStreamInfo lists, NOTIFY_RECORD completion) and compared with
ground_truth.json; the CLI must see the generated events and relations.
"""

import os
import subprocess

import pytest

from test_genprofile import connect, generate, one
from test_genprofile_layouts import cli_path

LAYERS, STEPS, PREFILL = 3, 5, 1


@pytest.fixture(scope="module", params=["ascend", "torchnpu"])
def graph(request, tmp_path_factory):
    out = tmp_path_factory.mktemp("graph_" + request.param)
    truth = generate(out, "--format", request.param, "--graph", "--decode-steps", STEPS, "--prefill-steps", PREFILL,
                     "--layers", LAYERS, "--ops", 11, "--ranks", 2, "--seed", 3, "--aux", 0.05, "--missing", 0.02)
    return out, truth


def companion(out, truth, rank):
    if truth["format"] == "ascend":
        return out / os.path.dirname(rank["path"]) / "host/sqlite/stream_info.db"
    return out / rank["stream_info"]


def decode(con, sql, *params):
    return con.execute(sql.replace("NAME(", "(SELECT value FROM STRING_IDS WHERE id = ("), params).fetchall()


def test_capture_streams_list_the_instances(graph):
    out, truth = graph
    g = truth["structure"]["graph"]
    assert len(g["instances"]) == LAYERS + 2 and g["launches_per_step"] == LAYERS + 2
    assert [i["role"] for i in g["instances"]] == ["head"] + ["layer"] * LAYERS + ["tail"]
    for rank in truth["ranks"]:
        si = connect(companion(out, truth, rank))
        assert [r[1] for r in si.execute("PRAGMA table_info(CaptureStreamInfo)")] == [
            "device_id", "model_id", "original_stream_id", "stream_id", "batch_id", "capture_status", "timestamp"]
        groups = {}
        for dev, model, orig, stream in si.execute(
                "SELECT device_id, model_id, original_stream_id, stream_id FROM CaptureStreamInfo"):
            assert dev == rank["device_id"]
            groups.setdefault(model, {})[str(orig)] = stream
        assert groups == {i["model_id"]: i["streams"] for i in g["instances"]}
        # A model stream belongs to one instance only.
        assert one(si, "SELECT count(*) FROM (SELECT stream_id FROM CaptureStreamInfo GROUP BY device_id, stream_id "
                       "HAVING count(DISTINCT model_id) > 1)") == 0


def test_launches_members_and_steps(graph):
    out, truth = graph
    g = truth["structure"]["graph"]
    by_model = {i["model_id"]: i for i in g["instances"]}
    for rank in truth["ranks"]:
        con = connect(out / rank["path"])
        launches = rank["graph"]["launch_list"]
        assert len(launches) == STEPS * (LAYERS + 2) == rank["graph"]["launches"]
        calls = decode(con, "SELECT connectionId, startNs FROM CANN_API WHERE NAME(name)) = ? ORDER BY startNs",
                       "aclmdlRIExecuteAsync")
        assert [c for c, _ in calls] == [l["connection_id"] for l in launches]
        syncs = [s for (s,) in decode(con, "SELECT startNs FROM CANN_API WHERE NAME(name)) = 'aclrtSynchronizeStream' "
                                           "ORDER BY startNs")]
        for launch, (conn, call_start) in zip(launches, calls):
            # The launch stream: MODEL_EXECUTE then NOTIFY_WAIT, sharing the call's connectionId.
            ctrl = decode(con, "SELECT NAME(taskType)), streamId, startNs, endNs, modelId FROM TASK "
                               "WHERE connectionId = ? ORDER BY startNs", conn)
            assert [(c[0], c[1], c[4]) for c in ctrl] == [("MODEL_EXECUTE", g["launch_stream"], launch["model_id"]),
                                                          ("NOTIFY_WAIT", g["launch_stream"], launch["model_id"])]
            assert call_start < ctrl[0][2]
            begin, end = ctrl[0][2], ctrl[1][3]
            # The body: tasks on the instance's model streams inside the launch window.
            inst = by_model[launch["model_id"]]
            streams = sorted(inst["streams"].values())
            q = ",".join("?" * len(streams))
            body = decode(con, "SELECT t.globalTaskId, NAME(t.taskType)), coalesce(NAME(c.opType)), NAME(t.taskType))), "
                               "t.streamId FROM TASK t LEFT JOIN COMPUTE_TASK_INFO c ON c.globalTaskId = t.globalTaskId "
                               "WHERE t.streamId IN (%s) AND t.startNs >= ? AND t.endNs <= ? "
                               "ORDER BY t.startNs, t.globalTaskId" % q, *streams, begin, end)
            assert body[-1][1] == "NOTIFY_RECORD" and body[-1][3] == inst["streams"][str(g["launch_stream"])]
            members = body[:-1]
            assert len(members) == launch["member_tasks"] == len(inst["members"])
            assert [m[0] for m in members] == list(range(launch["member_global_task_ids"][0],
                                                         launch["member_global_task_ids"][1] + 1))
            comm = {m[0] for m in members if m[3] == inst["streams"].get("48")}
            labels = [("hcom_allReduce_" if m[0] in comm else m[2]) for m in members]
            assert labels == inst["members"]
            # The step: decode steps are separated by the stream synchronizes.
            # Every step, eager or graph, ends with one synchronize: the step of a launch is
            # the number of synchronizes before it.
            assert launch["step"] == sum(1 for s in syncs if s < call_start)


def test_graph_counts(graph):
    out, truth = graph
    for rank in truth["ranks"]:
        con = connect(out / rank["path"])
        for table, rows in rank["tables"].items():
            assert one(con, 'SELECT count(*) FROM "%s"' % table) == rows, table
        kinds = dict(decode(con, "SELECT NAME(taskType)), count(*) FROM TASK WHERE NAME(taskType)) IN "
                                 "('MODEL_EXECUTE', 'NOTIFY_WAIT', 'NOTIFY_RECORD') GROUP BY 1"))
        n = rank["graph"]["launches"]
        assert kinds == {"MODEL_EXECUTE": n, "NOTIFY_WAIT": n, "NOTIFY_RECORD": n}
        assert rank["events"]["by_kind"]["graph_launch"] == n and rank["events"]["by_kind"]["control"] == 2 * n


def test_cli_sees_the_graph_ground_truth(graph, tmp_path):
    cli = cli_path()
    out, truth = graph
    db = tmp_path / "x.db"
    r = subprocess.run([cli, str(out), "--output", str(db)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    con = connect(db)
    want_status = "stream_info_adjacent" if truth["format"] == "ascend" else "stream_info_sibling_container"
    assert {s for (s,) in con.execute("SELECT stream_info_status FROM traceloom_input")} == {want_status}
    # reader events only: each exact replay unit adds one event of its own
    kinds = dict(con.execute("SELECT kind, count(*) FROM traceloom_event WHERE source_table NOT IN ('ACLGRAPH_REPLAY_UNIT', 'CUDA_GRAPH_REPLAY_UNIT') GROUP BY 1"))
    want = {}
    for rank in truth["ranks"]:
        for kind, n in rank["events"]["by_kind"].items():
            want[kind] = want.get(kind, 0) + n
    assert kinds == want
    states = dict(con.execute("SELECT support_state, count(*) FROM traceloom_runtime_device_relation "
                              "WHERE relation_kind = 'provider_correlation' GROUP BY 1"))
    want = {}
    for rank in truth["ranks"]:
        for state, n in rank["relation_rows"].items():
            if state != "total":
                want[state] = want.get(state, 0) + n
    assert states == want
    # every generated launch has its aclmdlRIExecuteAsync call and notify completion: one
    # supported_deterministic graph_launch relation each (inputs.md 10)
    launches = dict(con.execute("SELECT support_state, count(*) FROM traceloom_runtime_device_relation "
                                "WHERE relation_kind = 'graph_launch' GROUP BY 1"))
    assert launches == {"supported_deterministic": sum(r["graph"]["launches"] for r in truth["ranks"])}
