"""Tests of tools/genprofile.py's PyTorch profiler (Kineto) Chrome-trace output (`--format kineto`).

The traces are read back here with the json module and a regular expression over the raw
text (inputs.md section 8: ph "X" events, cat kernel / gpu_memcpy / cuda_runtime, ts and dur
in microseconds with three decimals, args.device / stream / correlation), independently of
the generator, and compared with ground_truth.json; then TraceLoom's CLI must find the same
events, relations and the decode-step repeat.
"""

import filecmp
import gzip
import json
import re
import subprocess

import pytest

from test_genprofile import connect, generate
from test_genprofile_layouts import cli_path

# --ops 6 reaches the layer's first all-reduce, so every rank has NCCL kernels.
SHAPE = ("--format", "kineto", "--decode-steps", 3, "--prefill-steps", 1, "--layers", 2, "--ops", 6,
         "--ranks", 2, "--seed", 11)
PERTURBED = ("--aux", 0.1, "--noise", 0.1, "--missing", 0.05)
CLEAN = ("--aux", 0, "--noise", 0, "--missing", 0)
TIME = re.compile(rb'"(ts|dur)":(-?[0-9][0-9.eE+-]*)')


@pytest.fixture(scope="module")
def perturbed(tmp_path_factory):
    out = tmp_path_factory.mktemp("kineto_perturbed")
    return out, generate(out, *SHAPE, *PERTURBED)


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    out = tmp_path_factory.mktemp("kineto_clean")
    return out, generate(out, *SHAPE, *CLEAN)


def load(path):
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rb") as f:
        raw = f.read()
    return raw, json.loads(raw)


def test_files_and_top_level(perturbed):
    out, truth = perturbed
    assert truth["format"] == "kineto" and truth["source_kind"] == "kineto_json"
    assert truth["files"] == ["0.pt.trace.json", "1.pt.trace.json"]
    for rank in truth["ranks"]:
        _, doc = load(out / rank["path"])
        assert doc["distributedInfo"]["rank"] == rank["rank"] and doc["distributedInfo"]["world_size"] == 2
        assert isinstance(doc["baseTimeNanoseconds"], int)
        assert {d["id"] for d in doc["deviceProperties"]} == {0, 1}
        # baseTimeNanoseconds is written after traceEvents, as PyTorch does.
        assert list(doc).index("baseTimeNanoseconds") > list(doc).index("traceEvents")


def test_timestamps_are_three_decimal_microseconds(perturbed):
    out, truth = perturbed
    for rank in truth["ranks"]:
        raw, doc = load(out / rank["path"])
        values = TIME.findall(raw)
        assert len(values) == 2 * len(doc["traceEvents"])
        for _, v in values:
            assert re.fullmatch(rb"[0-9]+\.[0-9]{3}", v), v
        # base + ts (exact integer arithmetic on the text) lies in the rank's time range.
        lo, hi = rank["time_range_ns"]
        base = doc["baseTimeNanoseconds"]
        starts = [base + int(v.replace(b".", b"")) for k, v in values if k == b"ts"]
        assert lo <= min(starts) and max(starts) <= hi


def test_event_counts_match_ground_truth(perturbed):
    out, truth = perturbed
    for rank in truth["ranks"]:
        _, doc = load(out / rank["path"])
        ev = doc["traceEvents"]
        assert all(e["ph"] == "X" for e in ev)
        cats = {}
        for e in ev:
            cats[e["cat"]] = cats.get(e["cat"], 0) + 1
        tables = rank["tables"]
        assert len(ev) == tables["traceEvents"]
        assert cats == {k: v for k, v in tables.items() if k != "traceEvents" and v}
        kernels = [e for e in ev if e["cat"] == "kernel"]
        nccl = sum(1 for e in kernels if e["name"].lower().startswith("nccl"))
        copies = cats.get("gpu_memcpy", 0)
        assert rank["kernel_rows"] == len(kernels)
        assert rank["events"]["by_kind"] == {"compute": len(kernels) - nccl, "communication": nccl,
                                             "data_move": copies}
        assert nccl > 0 and copies > 0
        steps = sorted(e["name"] for e in ev if e["cat"] == "user_annotation")
        assert steps == sorted("ProfilerStep#%d" % s for s in range(truth["structure"]["steps"]["total"]))
        by_api = {}
        for e in ev:
            if e["cat"] == "cuda_runtime":
                by_api[e["name"]] = by_api.get(e["name"], 0) + 1
        assert by_api == rank["host_calls"]["by_api"]
        # Device events: pid = device = rank, tid = stream (args agree).
        for e in ev:
            if e["cat"] in ("kernel", "gpu_memcpy"):
                assert e["pid"] == e["args"]["device"] == rank["rank"] and e["tid"] == e["args"]["stream"]
        comm_streams = {e["args"]["stream"] for e in kernels if e["name"].lower().startswith("nccl")}
        assert comm_streams == {rank["streams"]["communication"]}


def test_correlations_match_ground_truth(perturbed):
    out, truth = perturbed
    for rank in truth["ranks"]:
        _, doc = load(out / rank["path"])
        calls, work = {}, {}
        for e in doc["traceEvents"]:
            side = calls if e["cat"] == "cuda_runtime" else work if e["cat"] in ("kernel", "gpu_memcpy") else None
            if side is not None:
                k = e["args"]["correlation"]
                side[k] = side.get(k, 0) + 1
        assert max(calls.values()) == 1 and max(work.values()) == 1
        both = set(calls) & set(work)
        want = rank["relation_rows"]
        assert len(both) == want["supported_exact"]
        assert len(set(calls) - both) == want["unmatched_runtime_call"]
        assert len(set(work) - both) == want["unmatched_device_work"]
        # Every kernel or copy starts after the runtime call that launched it.
        launch = {e["args"]["correlation"]: e["ts"] for e in doc["traceEvents"] if e["cat"] == "cuda_runtime"}
        for e in doc["traceEvents"]:
            if e["cat"] in ("kernel", "gpu_memcpy") and e["args"]["correlation"] in both:
                assert launch[e["args"]["correlation"]] < e["ts"]


def test_deterministic_and_gzip(tmp_path):
    a = generate(tmp_path / "a", *SHAPE, *PERTURBED)
    generate(tmp_path / "b", *SHAPE, *PERTURBED)
    z = generate(tmp_path / "z", *SHAPE, *PERTURBED, "--gzip")
    assert z["files"] == ["0.pt.trace.json.gz", "1.pt.trace.json.gz"]
    for plain, packed in zip(a["files"], z["files"]):
        assert filecmp.cmp(tmp_path / "a" / plain, tmp_path / "b" / plain, shallow=False)
        with gzip.open(tmp_path / "z" / packed, "rb") as f:
            assert f.read() == (tmp_path / "a" / plain).read_bytes()
    for key in ("kernel_rows", "structure"):
        assert z[key] == a[key]


def run_cli(out, tmp_path):
    db = tmp_path / "x.db"
    r = subprocess.run([cli_path(), str(out), "--output", str(db)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return connect(db)


def test_cli_sees_the_ground_truth(perturbed, tmp_path):
    out, truth = perturbed
    con = run_cli(out, tmp_path)
    inputs = con.execute("SELECT source_kind FROM traceloom_input ORDER BY db_idx").fetchall()
    assert inputs == [(truth["source_kind"],)] * len(truth["ranks"])
    kinds = dict(con.execute("SELECT kind, count(*) FROM traceloom_event GROUP BY 1"))
    want = {}
    for rank in truth["ranks"]:
        for kind, n in rank["events"]["by_kind"].items():
            want[kind] = want.get(kind, 0) + n
    assert kinds == want
    states = dict(con.execute("SELECT support_state, count(*) FROM traceloom_runtime_device_relation GROUP BY 1"))
    want = {}
    for rank in truth["ranks"]:
        for state, n in rank["relation_rows"].items():
            if state != "total" and n:
                want[state] = want.get(state, 0) + n
    assert states == want
    # baseTimeNanoseconds + ts: events lie inside each rank's absolute time range.
    for db_idx, device, lo, hi in con.execute(
            "SELECT db_idx, device_id, min(start_ns), max(end_ns) FROM traceloom_event GROUP BY 1, 2"):
        rank = truth["ranks"][device]
        assert rank["time_range_ns"][0] <= lo and hi <= rank["time_range_ns"][1]


def test_cli_finds_the_decode_repeat(clean, tmp_path):
    out, truth = clean
    con = run_cli(out, tmp_path)
    decode = truth["structure"]["steps"]["decode"]
    for rank in truth["ranks"]:
        counts = [n for (n,) in con.execute(
            "SELECT repeat_count FROM traceloom_v_position WHERE node_type = 'Repeat' AND device_id = ?",
            (rank["device_id"],))]
        assert decode in counts and truth["structure"]["layers"] in counts, counts
