"""Tests of tools/genprofile.py --context: scheduler-context JSONL and execution markers.

The files are checked against the wire format of context-observer.md section 2 (compact,
ASCII, one object per line, session first, summary last, modes 0600/0700), and the markers
against the profile itself: each marker is a PYTORCH_API row on the thread of its rank's
CANN_API calls whose interval holds exactly the host calls of its step (launch calls of the
step's graph launches from ground_truth.json in --graph mode).
"""

import json
import os
import stat
import subprocess
import sys

import pytest

from test_genprofile import GEN, connect, generate, one

MARKER = "traceloom.execution."


def read_jsonl(path):
    raw = open(path, "rb").read()
    assert raw.endswith(b"\n")
    lines = raw.split(b"\n")[:-1]
    out = []
    for line in lines:
        assert len(line) <= 1 << 20
        text = line.decode("ascii")   # ensure_ascii
        rec = json.loads(text)
        assert json.dumps(rec, ensure_ascii=True, separators=(",", ":")) == text
        out.append(rec)
    return out


@pytest.fixture(scope="module")
def graph(tmp_path_factory):
    out = tmp_path_factory.mktemp("ctx_graph")
    truth = generate(out, "--format", "ascend", "--graph", "--prefill-steps", 2, "--decode-steps", 5,
                     "--layers", 3, "--ops", 6, "--ranks", 2, "--seed", 21, "--aux", 0.05, "--missing", 0,
                     "--context", out / "ctx", "--context-queue")
    return out, truth


def test_files_follow_the_wire_format(graph):
    out, truth = graph
    ctx = truth["context"]
    d = out / "ctx"
    assert stat.S_IMODE(os.stat(d).st_mode) == 0o700
    names = sorted(os.listdir(d))
    assert names == sorted([ctx["scheduler_id"] + ".jsonl"] + [w + ".jsonl" for w in ctx["workers"]])
    steps = 2 + 5
    for name in names:
        assert stat.S_IMODE(os.stat(d / name).st_mode) == 0o600
        recs = read_jsonl(d / name)
        producer = name[:-6]
        assert {r["producer_id"] for r in recs} == {producer}
        assert {r["run_id"] for r in recs} == {ctx["run_id"]}
        assert {r["schema"] for r in recs} == {"traceloom.scheduler.v1"}
        assert recs[0]["type"] == "session" and recs[-1]["type"] == "summary"
        assert recs[-1]["written_records"] == len(recs) - 2 == steps
        assert recs[-1]["dropped_records"] == 0
        if producer == ctx["scheduler_id"]:
            assert recs[0]["metadata"]["association_contract"] == "scheduler_output_field"
            body = recs[1:-1]
            assert [r["ordinal"] for r in body] == list(range(steps))
            assert [r["step_id"] for r in body] == [s["step_id"] for s in ctx["steps"]]
            for r in body:
                assert r["total_scheduled_tokens"] == sum(q["scheduled_tokens"] for q in r["requests"])
                assert r["cache"]["observation_phase"] == "after_schedule"
                assert r["finished_request_ids"] == sorted(r["finished_request_ids"])
        else:
            rank = ctx["workers"].index(producer)
            assert recs[0]["metadata"] == {"runtime": "vllm", "role": "worker"}
            for s, r in enumerate(recs[1:-1]):
                assert r["type"] == "execution" and r["worker_rank"] == rank
                assert r["step_id"] == ctx["steps"][s]["step_id"]
                assert r["marker"] == MARKER + r["execution_id"]
                assert r["marker_state"] == "emitted" and r["status"] == "returned"


def markers(con):
    return con.execute("SELECT s.value, p.startNs, p.endNs, p.globalTid FROM PYTORCH_API p "
                       "JOIN STRING_IDS s ON s.id = p.name WHERE s.value LIKE 'traceloom.execution.%' "
                       "ORDER BY p.startNs").fetchall()


def test_markers_hold_exactly_their_steps_calls(graph):
    out, truth = graph
    ctx = truth["context"]
    for rank in truth["ranks"]:
        con = connect(out / rank["path"])
        ms = markers(con)
        want = [MARKER + e["execution_id"] for e in ctx["executions"] if e["rank"] == rank["rank"]]
        assert [m[0] for m in ms] == want   # one marker per step, in step order
        gtid = one(con, "SELECT DISTINCT globalTid FROM PYTORCH_API WHERE type = 50001")
        # every host call lies in exactly one marker, or in the dequeue of exactly one pair
        deq = con.execute("SELECT p.startNs, p.endNs, p.globalTid, c.connectionId FROM PYTORCH_API p "
                          "JOIN CONNECTION_IDS c ON c.id = p.connectionId JOIN STRING_IDS s ON s.id = p.name "
                          "WHERE p.type = 50002 AND s.value LIKE 'Dequeue@%'").fetchall()
        calls = con.execute("SELECT startNs, endNs, globalTid, connectionId FROM CANN_API").fetchall()
        owner = {}
        for start, end, tid, conn in calls:
            scopes = [k for k, m in enumerate(ms) if tid == m[3] and m[1] <= start <= m[2] and end <= m[2]]
            scopes += [k for k, d in enumerate(deq) if tid == d[2] and d[0] <= start and end <= d[1]]
            assert len(scopes) == 1, (start, tid, scopes)
            owner[conn] = scopes[0]
        assert len(deq) == 3   # steps 1, 3, 5
        for k, d in enumerate(deq):
            assert d[3] == 70_000_000 + (2 * k + 1)
        # the launch calls of each graph launch sit in their step's scope
        for launch in rank["graph"]["launch_list"]:
            s = launch["step"]
            if s % 2 == 0:
                assert owner[launch["connection_id"]] == s
        assert all(m[3] == gtid for m in ms)


def test_queue_rows_bridge_odd_steps(graph):
    out, truth = graph
    con = connect(out / truth["ranks"][0]["path"])
    ms = markers(con)
    rows = con.execute("SELECT s.value, p.startNs, p.endNs, p.globalTid, c.connectionId FROM PYTORCH_API p "
                       "JOIN CONNECTION_IDS c ON c.id = p.connectionId JOIN STRING_IDS s ON s.id = p.name "
                       "WHERE p.type = 50002 ORDER BY c.connectionId, s.value DESC").fetchall()
    assert len(rows) == 6
    for k in range(3):
        enq, deq = rows[2 * k], rows[2 * k + 1]
        assert enq[0].startswith("Enqueue@") and deq[0].startswith("Dequeue@")
        m = ms[2 * k + 1]
        assert enq[3] == m[3] and m[1] <= enq[1] and enq[2] <= m[2]   # inside the marker, same thread
        assert deq[3] != m[3] and deq[3] >> 32 == m[3] >> 32          # another thread, same process
        assert enq[1] <= deq[1]


def test_same_arguments_same_bytes(tmp_path):
    args = ["--format", "ascend", "--graph", "--prefill-steps", 1, "--decode-steps", 2, "--layers", 2, "--ops", 3,
            "--seed", 4, "--context-queue"]
    a, b = tmp_path / "a", tmp_path / "b"
    generate(a, *args, "--context", a / "ctx")
    generate(b, *args, "--context", b / "ctx")
    names = sorted(os.listdir(a / "ctx"))
    assert names == sorted(os.listdir(b / "ctx"))
    for n in names:
        assert (a / "ctx" / n).read_bytes() == (b / "ctx" / n).read_bytes()
    assert (a / "PROF_0/msprof_0.db").read_bytes() == (b / "PROF_0/msprof_0.db").read_bytes()


def test_scheduler_only_writes_no_worker_and_no_marker(tmp_path):
    truth = generate(tmp_path, "--format", "torchnpu", "--prefill-steps", 1, "--decode-steps", 3, "--layers", 2,
                     "--ops", 3, "--seed", 4, "--context", tmp_path / "ctx", "--context-mode", "scheduler_only")
    ctx = truth["context"]
    assert os.listdir(tmp_path / "ctx") == [ctx["scheduler_id"] + ".jsonl"]
    recs = read_jsonl(tmp_path / "ctx" / (ctx["scheduler_id"] + ".jsonl"))
    assert recs[0]["metadata"]["association_contract"] == "scheduler_only"
    assert [r["type"] for r in recs] == ["session"] + ["step"] * 4 + ["summary"]
    con = connect(tmp_path / truth["ranks"][0]["path"])
    assert one(con, "SELECT count(*) FROM sqlite_schema WHERE name = 'PYTORCH_API'") == 0


def test_context_needs_an_ascend_format(tmp_path):
    r = subprocess.run([sys.executable, GEN, "--format", "nsys", "--out", str(tmp_path), "--quiet",
                        "--context", str(tmp_path / "ctx")], capture_output=True, text=True)
    assert r.returncode != 0 and "--context needs --format ascend or torchnpu" in r.stderr
