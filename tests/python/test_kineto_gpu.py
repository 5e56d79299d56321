"""The Kineto reader on real GPU traces (tests/data/kineto_gpu): PyTorch profiler output of a
small Llama run on an NVIDIA H200 with CUDA activity, once eagerly and once with every decode
step a CUDA graph replay (tools/make_kineto_traces.py --device cuda [--cuda-graph]; the
configs beside the traces). Every expected value is worked out here from the raw trace with
json alone (kernels, runtime calls, correlation ids, the ProfilerStep ranges on the GPU
timeline), never from the reader's output.
"""
import collections
import gzip
import json
import pathlib
import re
import sqlite3
import subprocess

import apsw
import pytest

DATA = pathlib.Path(__file__).resolve().parents[1] / "data" / "kineto_gpu"
TRACES = sorted(p.name[: -len(".pt.trace.json.gz")] for p in DATA.glob("*.pt.trace.json.gz"))
DEVICE_CATS = ("kernel", "gpu_memcpy", "gpu_memset")


def config(name):
    return json.loads((DATA / (name + ".json")).read_text())


def ns(us):
    """Kineto's microseconds (3 decimals) as integer nanoseconds."""
    return round(float(us) * 1000)


class Raw:
    """What the trace itself says: device events, runtime calls by correlation, the steps."""

    def __init__(self, name):
        with gzip.open(DATA / (name + ".pt.trace.json.gz"), "rt") as f:
            trace = json.load(f)
        ev = trace["traceEvents"]
        # ts is relative to baseTimeNanoseconds: the reader adds it back (capability base_time)
        self.base = trace["baseTimeNanoseconds"]
        self.device = sorted((e for e in ev if e.get("cat") in DEVICE_CATS and "ts" in e),
                             key=lambda e: ns(e["ts"]))
        self.calls = {e["args"]["correlation"]: e for e in ev
                      if e.get("cat") in ("cuda_runtime", "cuda_driver")
                      and "correlation" in e.get("args", {})}
        # The ProfilerStep#k ranges on the GPU timeline: what each step ran on the device.
        self.steps = sorted((e for e in ev if e.get("cat") == "gpu_user_annotation"
                             and e["name"].startswith("ProfilerStep#")), key=lambda e: ns(e["ts"]))

    def launched(self):
        """(device event, its runtime call) for every device event whose correlation id names
        a runtime or driver call."""
        return [(d, self.calls[d["args"]["correlation"]]) for d in self.device
                if d["args"].get("correlation") in self.calls]

    def step_sequences(self):
        out = []
        for s in self.steps:
            lo, hi = ns(s["ts"]), ns(s["ts"]) + ns(s["dur"])
            out.append([d["name"] for d in self.device if lo <= ns(d["ts"]) < hi])
        return out


@pytest.fixture(scope="module")
def dbs(cli, tmp_path_factory):
    base = tmp_path_factory.mktemp("kineto_gpu")
    out = {}
    for name in TRACES:
        db = base / (name + ".db")
        r = subprocess.run([str(cli), str(DATA / (name + ".pt.trace.json.gz")), "--output", str(db)],
                           capture_output=True, text=True, timeout=300)
        assert r.returncode == 0, r.stderr
        out[name] = db
    return out


def query(db, sql):
    con = sqlite3.connect(str(db))
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def test_the_traces_are_there_and_from_a_gpu():
    assert TRACES == ["gpt2_l2_d4_cuda", "llama_l2_d3_cuda", "llama_l2_d4_cuda_graph",
                      "mistral_l3_d3_cuda", "opt_l3_d3_cuda", "qwen2_l2_d3_cuda"]
    assert len({config(t)["arch"] for t in TRACES}) == 5
    for name in TRACES:
        cfg = config(name)
        assert cfg["device"] == "cuda" and cfg["gpu"].startswith("NVIDIA")
        assert cfg["cuda_graph"] == name.endswith("_cuda_graph")


@pytest.mark.parametrize("name", TRACES)
def test_every_device_event_is_read_with_exact_times(dbs, name):
    raw = Raw(name)
    got = query(dbs[name], "SELECT start_ns, end_ns, label FROM traceloom_event ORDER BY event_n")
    assert len(got) == len(raw.device) > 200
    # The reader keeps the trace's order of device events; compare as sorted multisets.
    want = sorted((raw.base + ns(d["ts"]), raw.base + ns(d["ts"]) + ns(d["dur"])) for d in raw.device)
    assert sorted((s, e) for s, e, _ in got) == want


@pytest.mark.parametrize("name", TRACES)
def test_every_launched_event_is_related_to_its_call_by_correlation(dbs, name):
    raw = Raw(name)
    want = collections.Counter(c["name"] for _, c in raw.launched())
    got = dict(query(dbs[name], """
        SELECT c.api_name, count(*) FROM traceloom_runtime_device_relation r
          JOIN traceloom_runtime_call c ON c.call_n = r.call_n
         WHERE r.support_state = 'supported_exact' GROUP BY c.api_name"""))
    assert got == dict(want)
    if config(name)["cuda_graph"]:
        # Every kernel a replay ran carries its cudaGraphLaunch's correlation id.
        launches = [c for c in raw.calls.values() if c["name"] == "cudaGraphLaunch"]
        assert len(launches) == config(name)["decode_steps"]
        per_launch = collections.Counter(d["args"]["correlation"] for d, c in raw.launched()
                                         if c["name"] == "cudaGraphLaunch")
        assert len(set(per_launch.values())) == 1 and got["cudaGraphLaunch"] == sum(per_launch.values())


@pytest.mark.parametrize("name", TRACES)
def test_launch_delay_is_the_kernel_start_after_its_call(dbs, name):
    raw = Raw(name)
    want = sorted(ns(d["ts"]) - ns(c["ts"]) for d, c in raw.launched())
    got = sorted(r[0] for r in query(dbs[name], "SELECT start_ns - call_start_ns FROM traceloom_v_launch_delay"))
    assert got == want


@pytest.mark.parametrize("name", TRACES)
def test_the_step_loop_holds_the_alike_steps_and_the_layer_loop(dbs, name):
    """The step loop is the run of steps that ran alike on the device, the layer loop inside it
    named after the decoder layer's module (five transformers families). Eagerly that is every
    step: the prefill (8 tokens) runs other kernel variants than the decode steps (GEMM for
    GEMV: both CudaMatMul), one operator each (Mistral's prefill adds 3 auxiliary kernels,
    no anchor). With graph replays the eager forward of step 0 runs fewer kernels than each
    replay step (it reads a value back to the host where the captured forward computes on the
    device), so the loop is the decode steps: counted here from the raw GPU step ranges."""
    cfg, raw = config(name), Raw(name)
    counts = [len(s) for s in raw.step_sequences()]
    assert len(counts) == cfg["steps"]
    if cfg["cuda_graph"]:
        loop = sum(1 for c in counts if c == counts[-1])
        assert loop == cfg["decode_steps"] and counts[0] < counts[-1]
    else:
        loop = cfg["steps"]
    rows = query(dbs[name], """
        SELECT o.label, o.repeat_count, o.occurrence_count, i.label, i.repeat_count, i.occurrence_count
          FROM traceloom_v_tree_node o JOIN traceloom_v_tree_node i ON i.parent_n = o.node_n
         WHERE o.kind = 'repeat' AND o.label LIKE 'ProfilerStep x%' AND i.kind = 'repeat'
         ORDER BY i.anchors_per_occurrence DESC LIMIT 1""")
    layer = cfg["layer_class"] if cfg["modules"] else "Rep"
    assert rows == [("ProfilerStep x%d" % loop, loop, 1,
                     "%s x%d" % (layer, cfg["layers"]), cfg["layers"], loop)]


@pytest.mark.parametrize("name", TRACES)
def test_atoms_keep_whole_kernel_names_and_gemv_is_a_matmul(dbs, name):
    """A node's label and symbol are its anchors' symbol, however long (raw CUDA names run
    to hundreds of characters); cuBLAS's matrix-vector kernels are CudaMatMul."""
    raw = Raw(name)
    gemv = sum(1 for d in raw.device if "gemv" in d["name"].lower())
    assert gemv > 0
    assert query(dbs[name], "SELECT count(*) FROM traceloom_event WHERE lower(raw_label) LIKE '%gemv%'"
                            " AND op_type = 'CudaMatMul'")[0][0] == gemv
    longest = max(len(d["name"]) for d in raw.device)
    assert longest > 63
    mismatched, long_atoms = query(dbs[name], """
        SELECT sum(n.symbol <> a.symbol OR n.label <> a.symbol), max(length(n.label))
          FROM traceloom_anchor a JOIN traceloom_tree_node_anchor na ON na.anchor_n = a.anchor_n
          JOIN traceloom_v_tree_node n ON n.node_n = na.node_n WHERE n.kind = 'atom'""")[0]
    assert mismatched == 0
    # A cub scan kernel (a cumsum) matches no lifting rule: its atom carries the whole raw name.
    scan = [d["name"] for d in raw.device if "DeviceScanKernel" in d["name"]]
    if config(name)["cuda_graph"]:
        assert scan and long_atoms >= max(len(n) for n in scan) > 63


@pytest.mark.parametrize("name", TRACES)
def test_profiler_steps_partition_the_anchors(dbs, name):
    cfg = config(name)
    steps = query(dbs[name], "SELECT count(*), sum(anchor_count), count(host_bound_share) "
                             "FROM traceloom_v_profiler_step")[0]
    anchors = query(dbs[name], "SELECT count(*) FROM traceloom_anchor")[0][0]
    # Each step has launches on a device plane, so each has a host-bound share.
    assert steps == (cfg["steps"], anchors, cfg["steps"])


def test_graph_trace_capabilities_say_launches_without_node_identity(build_dir):
    raw = Raw("llama_l2_d4_cuda_graph")
    n_launch = sum(1 for c in raw.calls.values() if c["name"] == "cudaGraphLaunch")
    con = apsw.Connection(":memory:")
    try:
        con.enable_load_extension(True)
        con.load_extension(str(build_dir / "traceloom.so"))
        rows = dict((cap, (usable, detail)) for cap, usable, detail in con.execute(
            "SELECT capability, usable, detail FROM traceloom_profile(?)",
            (str(DATA / "llama_l2_d4_cuda_graph.pt.trace.json.gz"),)) if cap)
    finally:
        con.close()
    assert rows["graph_launch"][0] == 1 and rows["graph_launch"][1].startswith("%d cudaGraphLaunch" % n_launch)
    assert rows["graph_node_identity"][0] == 0
    assert rows["device_plane"] == (1, "%d kernel, %d gpu_memcpy, 0 gpu_memset events" % (
        sum(1 for d in raw.device if d["cat"] == "kernel"),
        sum(1 for d in raw.device if d["cat"] == "gpu_memcpy")))


def test_each_graph_launch_is_an_envelope_over_its_kernels(dbs):
    """Kineto writes no graph node id, so no replay body is exact (inputs.md section 8), but
    every cudaGraphLaunch gives an envelope: the interval of the device events that carry its
    correlation id, on their stream, with what it encloses in time. Here the replays run on a
    synchronised stream, so each encloses exactly its own kernels."""
    raw = Raw("llama_l2_d4_cuda_graph")
    launches = sorted(c["args"]["correlation"] for c in raw.calls.values()
                      if c["name"] == "cudaGraphLaunch")
    want = []
    for corr in launches:
        ks = [d for d in raw.device if d["args"].get("correlation") == corr]
        start = min(raw.base + ns(d["ts"]) for d in ks)
        end = max(raw.base + ns(d["ts"]) + ns(d["dur"]) for d in ks)
        inside = [d for d in raw.device
                  if start <= raw.base + ns(d["ts"]) and raw.base + ns(d["ts"]) + ns(d["dur"]) <= end]
        streams = {d["args"]["stream"] for d in ks}
        want.append((str(corr), start, end, streams.pop() if len(streams) == 1 else None,
                     len(inside), len(ks)))
    got = query(dbs["llama_l2_d4_cuda_graph"], """
        SELECT correlation_id, start_ns, end_ns, stream_id, enclosed_event_count,
               enclosed_kernel_count FROM traceloom_cuda_graph_replay
         WHERE graph_provider = 'cuda' AND graph_kind = 'cuda_graph_launch_correlation'
           AND event_id IS NULL ORDER BY start_ns""")
    assert got == sorted(want, key=lambda r: r[1]) and len(got) == config("llama_l2_d4_cuda_graph")["decode_steps"]
    # Containment is temporal evidence only: no exact launch, no member.
    assert query(dbs["llama_l2_d4_cuda_graph"], "SELECT count(*) FROM traceloom_graph_launch")[0][0] == 0
    assert query(dbs["llama_l2_d3_cuda"], "SELECT count(*) FROM traceloom_cuda_graph_replay")[0][0] == 0


def test_loop_tree_writes_a_long_kernel_name_by_its_name(dbs):
    """The Markdown writes a raw C++ kernel name (over 64 characters) as its qualified name,
    without return type, template arguments and parameters; the tree's label stays whole."""
    md = dbs["llama_l2_d4_cuda_graph"].with_name("llama_l2_d4_cuda_graph.loop_tree.md").read_text()
    outline = md[md.index("Outline"):md.index("\n### ")]
    # void at_cuda_detail::cub::detail::scan::DeviceScanKernel<at_cuda_detail::cub::...>(long const*, ...)
    assert re.search(r"^- N\d+ at_cuda_detail::cub::detail::scan::DeviceScanKernel<\.\.\.>\(\.\.\.\)  total_us=",
                     outline, re.M), outline[:1500]
    assert max(len(line) for line in outline.splitlines()) < 160
    labels = [r[0] for r in query(dbs["llama_l2_d4_cuda_graph"],
                                  "SELECT label FROM traceloom_v_tree_node WHERE label LIKE '%DeviceScanKernel%'")]
    assert labels and all(label.startswith("void at_cuda_detail::cub::detail::scan::DeviceScanKernel<")
                          and label.endswith(")") for label in labels)


def test_compare_eager_with_graph_replays(cli, dbs, tmp_path):
    """`traceloom compare` of the eager run (base) with the graph-replay run (new): the step
    loop is matched (as many alike steps on each side, counted from the raw traces) and is
    faster per iteration, as the raw GPU step ranges say; the report writes a raw kernel name
    by its qualified name."""
    alike = {}
    for name in TRACES:
        counts = [len(s) for s in Raw(name).step_sequences()]
        alike[name] = [c for c in counts if c == counts[-1]]
    n_base, n_new = len(alike["llama_l2_d3_cuda"]), len(alike["llama_l2_d4_cuda_graph"])
    step_us = {}
    for name in TRACES:
        raw = Raw(name)
        counts = [len(s) for s in raw.step_sequences()]
        durs = [ns(s["dur"]) for s, c in zip(raw.steps, counts) if c == counts[-1]]
        step_us[name] = sum(durs) / len(durs)
    assert step_us["llama_l2_d4_cuda_graph"] < step_us["llama_l2_d3_cuda"]
    out = tmp_path / "cmp.db"
    r = subprocess.run([str(cli), "compare", str(dbs["llama_l2_d3_cuda"]), str(dbs["llama_l2_d4_cuda_graph"]),
                        "--output", str(out), "--markdown", "-"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    rows = query(out, """SELECT alignment, base_units, new_units,
                                (base_compute_ns + base_comm_ns + base_idle_ns) / base_units,
                                (new_compute_ns + new_comm_ns + new_idle_ns) / new_units
                           FROM traceloom_compare_node
                          WHERE node_type = 'Repeat' AND depth = 1 AND base_units = ?1 AND new_units = ?2
                       """.replace("?1", str(n_base)).replace("?2", str(n_new)))
    assert len(rows) == 1 and rows[0][0] != "added" and rows[0][4] < rows[0][3], rows
    assert "at_cuda_detail::cub::detail::scan::DeviceScanKernel<...>(...)" in r.stdout
    assert "DeviceScanKernel<at_cuda_detail" not in r.stdout
