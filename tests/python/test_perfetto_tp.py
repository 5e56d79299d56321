"""Every kind of Perfetto export, JSON and protobuf, loaded into Perfetto's own trace
processor (the wasm build the Perfetto UI runs; ../shared/tools/perfetto-check) and checked
against the analysis database with plain SQL: no error or data-loss stats, the slice count,
a sample of slices exact to the nanosecond on their stream / thread tracks, the loop tree as
nested slices (depth > 0, ancestor_slice and descendant_slice walk the occurrence tree),
the flows of the exact relations, every ts >= 0, and the JSON and protobuf imports equal.

The trace processor runs in its own venv (tests/run_python.sh sets it up and exports
TRACELOOM_PERFETTO_PYTHON); without node these tests skip."""
import json
import os
import pathlib
import re
import shutil
import sqlite3
import subprocess
import sys
from collections import Counter, defaultdict

import pytest

from test_perfetto import drawn_origin, query, run

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]

pytestmark = pytest.mark.skipif(
    not shutil.which("node") or not os.environ.get("TRACELOOM_PERFETTO_PYTHON"),
    reason="Perfetto's trace processor needs node (and tests/run_python.sh to set up "
           "its venv): not available here")

KINDS = ["demo", "context", "two_ranks", "ranks", "cuda_graph", "kineto", "kineto_gpu",
         "kineto_gpu_graph"]
FORMATS = ["json", "pftrace"]
STRUCTURE = ("traceloom.structural_interval", "traceloom.repeat_occurrence",
             "traceloom.repeat_body_window", "traceloom.structural_atom")


def probe(trace, **queries):
    r = subprocess.run([os.environ["TRACELOOM_PERFETTO_PYTHON"], str(HERE / "tp_probe.py")],
                       input=json.dumps({"trace": str(trace), "queries": queries}),
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    return json.loads(r.stdout)


def genprofile(out, *args):
    subprocess.run([sys.executable, str(ROOT / "tools" / "genprofile.py"), "--format", "ascend",
                    "--out", str(out), "--prefill-steps", "1", "--decode-steps", "6",
                    "--layers", "4", "--ops", "6", "--noise", "0", "--missing", "0", "--aux", "0",
                    "--seed", "7", "--quiet", *map(str, args)], check=True, timeout=300)


@pytest.fixture(scope="module")
def analyses(cli, fixtures, tmp_path_factory):
    """kind -> (analysis db, extra export-perfetto arguments): the demo profile and its
    ACL-graph variant with scheduler context (examples/demo.sh), two ranks in one analysis
    and as a distributed export, an Nsight CUDA graph, a Kineto trace, and the two real GPU
    Kineto traces (eager, CUDA graph replays)."""
    root = tmp_path_factory.mktemp("perfetto_tp")
    out = {}

    def analyse(kind, src, *args):
        db = root / f"{kind}.db"
        r = run(cli, src, "--output", db, *args)
        assert r.returncode == 0, r.stderr
        return db

    genprofile(root / "demo_profile")
    out["demo"] = (analyse("demo", root / "demo_profile"), [])
    genprofile(root / "graph_profile", "--graph", "--graph-layers", "shared", "--context",
               root / "graph_profile" / "context")
    ctx = []
    for f in sorted((root / "graph_profile" / "context").glob("*.jsonl")):
        ctx += ["--context", f]
    out["context"] = (analyse("context", root / "graph_profile", *ctx), [])
    out["two_ranks"] = (analyse("two_ranks", fixtures / "two_ranks"), [])
    r0 = analyse("rank0", fixtures / "two_ranks" / "PROF_0")
    r1 = analyse("rank1", fixtures / "two_ranks" / "PROF_1")
    out["ranks"] = (r0, ["--rank", f"0={r0}", "--rank", f"1={r1}"])
    out["cuda_graph"] = (analyse("cuda_graph", fixtures / "nsys" / "nsys_graph.sqlite"), [])
    out["kineto"] = (analyse("kineto", fixtures / "kineto" / "gpu_basic.pt.trace.json"), [])
    # Real GPU traces (tests/data/kineto_gpu): eager, and with CUDA graph replays
    gpu = pathlib.Path(__file__).resolve().parents[1] / "data" / "kineto_gpu"
    out["kineto_gpu"] = (analyse("kineto_gpu", gpu / "llama_l2_d3_cuda.pt.trace.json.gz"), [])
    out["kineto_gpu_graph"] = (analyse("kineto_gpu_graph",
                                       gpu / "llama_l2_d4_cuda_graph.pt.trace.json.gz"), [])
    return out


QUERIES = dict(
    bad_stats="select name, idx, severity, value from stats where value > 0 "
              "and severity in ('error', 'data_loss')",
    slices="select s.id, s.ts, s.dur, s.depth, s.name, s.category cat, s.parent_id, "
           "coalesce(t.name, th.name) track, "
           "coalesce(cast(t.parent_id as text), 'pid ' || pr.pid) box, "
           "coalesce(pt.name, pr.name) boxname from slice s "
           "join track t on t.id = s.track_id left join track pt on pt.id = t.parent_id "
           "left join thread_track tt on tt.id = s.track_id "
           "left join thread th using(utid) left join process pr on pr.upid = th.upid",
    args="select s.id, a.key, a.int_value i, a.string_value s, a.real_value r, a.value_type "
         "from slice s join args a using(arg_set_id) "
         "where a.key glob 'args.*' or a.key glob 'debug.*'",
    flows="select slice_out, slice_in from flow",
    ancestors="select s.id leaf, a.id, a.depth from slice s "
              "join ancestor_slice(s.id) a where s.category = 'traceloom.structural_atom'",
    descendants="select r.id, (select count(*) from descendant_slice(r.id)) n from slice r "
                "where r.category = 'traceloom.structural_interval' and r.depth = 0",
)


@pytest.fixture(scope="module")
def loaded(cli, analyses, tmp_path_factory):
    """(kind, format) -> (db, probe result, export metadata counters)."""
    root = tmp_path_factory.mktemp("perfetto_tp_exports")
    cache = {}

    def get(kind, fmt):
        if (kind, fmt) not in cache:
            db, extra = analyses[kind]
            path = root / f"{kind}.{fmt}"
            r = run(cli, "export-perfetto", db, "--output", path, *extra)
            assert r.returncode == 0, r.stderr
            res = probe(path, **QUERIES)
            cache[(kind, fmt)] = (db, res, extra)
        return cache[(kind, fmt)]
    return get


def node_names(db):
    """node_n -> node_id of the analysis (empty where the tree view has no node_n)."""
    try:
        return dict(query(db, "SELECT node_n, node_id FROM traceloom_v_tree_node"))
    except sqlite3.OperationalError:
        return {}


# The protobuf names a node by its integer key (node_n, repeat_node_n) where the JSON writes
# its node_id text: read back as the text through the analysis.
NODE_KEYS = {"node_n": "node_id", "repeat_node_n": "repeat_node_id"}


def args_of(res, names=None):
    """slice id -> {key without args./debug.: value}; node_n keys as their node_id text."""
    out = defaultdict(dict)
    for a in res["args"]:
        key = a["key"].split(".", 1)[1]
        v = a["i"] if a["i"] is not None else a["s"] if a["s"] is not None else a["r"]
        if key in NODE_KEYS and names is not None:
            key, v = NODE_KEYS[key], names[v]
        out[a["id"]][key] = v
    return out


def ident(a):
    """The occurrence (or iteration window) a structure slice draws, from its args."""
    if "repeat_node_id" in a:
        return (a["repeat_node_id"], a["aggregate_occurrence_idx"], a["body_ordinal"])
    return (a["node_id"], a["occurrence_idx"])


def expected_slices(db, ranks):
    """The number of slices the export must draw, from SQL."""
    occ = query(db, "SELECT count(*) FROM traceloom_position_occurrence")[0][0]
    # one window per (Repeat occurrence, iteration): the children of Repeat occurrences
    bodies = query(db, "SELECT count(*) FROM (SELECT DISTINCT o.parent_n, o.member_order "
                       "FROM traceloom_position_occurrence_core o "
                       "JOIN traceloom_position_occurrence_core p ON p.occurrence_n = o.parent_n "
                       "JOIN traceloom_node_core n ON n.node_n = p.node_n WHERE n.node_kind = 3)")[0][0]
    if ranks:
        n = occ + bodies
        for path in ranks:
            n += query(path, """SELECT count(*) FROM traceloom_tree_node_occurrence o
                JOIN traceloom_viz_node v USING (node_id, db_idx, device_id, view_name)
                WHERE v.node_type = 'Atom'""")[0][0]
        return n
    anchors = query(db, "SELECT count(*) FROM traceloom_anchor")[0][0]
    launches, members = query(db, """SELECT count(DISTINCT l.launch_id), count(*)
        FROM traceloom_graph_body_member m JOIN traceloom_graph_launch l ON l.launch_id = m.launch_id
        WHERE l.anchor_id IS NOT NULL""")[0]
    calls = query(db, "SELECT count(*) FROM traceloom_runtime_call WHERE start_ns IS NOT NULL "
                      "AND end_ns IS NOT NULL")[0][0]
    ctx = 0
    if query(db, "SELECT count(*) FROM sqlite_master WHERE name = 'traceloom_context_marker'")[0][0]:
        ctx = query(db, "SELECT count(*) FROM traceloom_context_marker")[0][0]
        ctx += query(db, """SELECT count(*) FROM (SELECT DISTINCT run_id, step_id, device_id
                            FROM traceloom_v_context_device_work)""")[0][0]
        ctx += query(db, """SELECT count(*) FROM (SELECT DISTINCT device_work_id, run_id, step_id
                            FROM traceloom_v_context_device_work)""")[0][0]
    return occ + bodies + anchors - launches + members + calls + ctx


def expected_flows(db):
    """(call_n, event_n) of every flow: exact relations and launch host call -> member, both
    ends drawn (calls with times; anchors not replaced by members, or members), forward in time."""
    drawn = {r[0]: r[1] for r in query(db, """
        SELECT a.event_n, a.start_ns FROM traceloom_anchor a WHERE a.event_id NOT IN (
          SELECT graph_event_id FROM traceloom_graph_launch WHERE anchor_id IS NOT NULL
            AND graph_event_id IS NOT NULL)""")}
    for ev, start in query(db, """SELECT CAST(substr(m.event_id, 7) AS INTEGER), m.start_ns
            FROM traceloom_graph_body_member m JOIN traceloom_graph_launch l ON l.launch_id = m.launch_id
            WHERE l.anchor_id IS NOT NULL"""):
        drawn.setdefault(ev, start)
    calls = {r[0]: r[1] for r in query(db, "SELECT call_n, start_ns FROM traceloom_runtime_call "
                                           "WHERE start_ns IS NOT NULL AND end_ns IS NOT NULL")}
    pairs = query(db, "SELECT call_n, event_n FROM traceloom_runtime_device_relation "
                      "WHERE support_state = 'supported_exact'")
    pairs += query(db, """SELECT CAST(substr(l.host_call_id, 14) AS INTEGER),
                                 CAST(substr(m.event_id, 7) AS INTEGER)
        FROM traceloom_graph_body_member m JOIN traceloom_graph_launch l ON l.launch_id = m.launch_id
        WHERE l.anchor_id IS NOT NULL AND l.host_call_id IS NOT NULL""")
    return {(c, e) for c, e in pairs if c in calls and e in drawn and drawn[e] >= calls[c]}


def event_n_of(a):
    return a["event_n"] if "event_n" in a else int(a["event_id"].split("-")[1])


def call_n_of(a):
    return a["call_n"] if "call_n" in a else int(a["runtime_call_id"].split("-")[2])


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("kind", KINDS)
def test_trace_processor_imports_the_export(loaded, kind, fmt):
    db, res, extra = loaded(kind, fmt)
    ranks = [extra[i + 1].split("=", 1)[1] for i in range(0, len(extra), 2)]
    assert res["bad_stats"] == []
    slices = {s["id"]: s for s in res["slices"]}
    args = args_of(res, node_names(db))
    assert len(slices) == expected_slices(db, ranks)
    # Every ts >= 0: the origin is the earliest start of anything drawn.
    assert min(s["ts"] for s in slices.values()) == 0
    origin = drawn_origin(db, ranks=bool(ranks))

    # A sample of anchors and host calls, exact to the ns on their stream / thread track.
    if not ranks:
        by = defaultdict(list)
        for s in slices.values():
            # "stream 7" or, where its slices overlap, "stream 7 · lane 1"
            by[(s["track"].split(" \u00b7 lane ")[0], s["name"], s["ts"], s["dur"])].append(s)
        for sym, stream, start, end in query(db, """SELECT a.symbol, e.stream_id, a.start_ns, a.end_ns
                FROM traceloom_anchor a JOIN traceloom_event e ON e.event_n = a.event_n
                WHERE a.event_id NOT IN (SELECT graph_event_id FROM traceloom_graph_launch
                  WHERE anchor_id IS NOT NULL AND graph_event_id IS NOT NULL)
                ORDER BY a.start_ns LIMIT 25"""):
            track = f"stream {stream}" if stream is not None else "no stream"
            assert by[(track, sym, start - origin, end - start)], (sym, start)
        for api, tid, start, end in query(db, """SELECT api_name, COALESCE(global_tid, thread_id),
                start_ns, end_ns FROM traceloom_runtime_call WHERE start_ns IS NOT NULL
                ORDER BY start_ns LIMIT 25"""):
            track = f"thread {tid}" if tid is not None else "no thread"
            assert by[(track, api, start - origin, end - start)], (api, start)

    # The loop tree nests: depth > 0, and each atom's ancestors are its occurrence's
    # parents (with the iteration window under each repeat), innermost first.
    structure = {i: s for i, s in slices.items() if s["cat"] in STRUCTURE}
    assert structure and max(s["depth"] for s in structure.values()) > 0
    assert {s["track"].split(" \u00b7 ")[0] for s in structure.values()} == {"structure"}
    # (db, device) of each device box, from its name: "device V" or "device V · db D".
    box_dev = {}
    for s in structure.values():
        m = re.fullmatch(r"device (\d+)(?: \u00b7 db (\d+))?", s["boxname"])
        assert m, s["boxname"]
        box_dev[s["box"]] = (int(m.group(2) or 0), int(m.group(1)))
    occ = {(r[0], r[1], r[2], r[3]): (r[4], r[5], r[6]) for r in query(db, """
        SELECT o.db_idx, o.device_id, o.position_id, o.occurrence_idx, p.position_id,
               p.occurrence_idx, -- the iteration, where the parent is a Repeat
               CASE WHEN (SELECT pv.kind FROM traceloom_viz_node pv WHERE pv.node_n = p.node_n) = 'repeat' THEN o.repeat_iteration END
        FROM traceloom_position_occurrence o
        LEFT JOIN traceloom_position_occurrence p ON p.occurrence_n = o.parent_n""")}

    def chain(dev, key):
        out = []
        while True:
            ppos, pidx, it = occ[dev + key]
            if ppos is None:
                return out
            if it is not None:
                out.append((ppos, pidx, it))
            key = (ppos, pidx)
            out.append(key)

    anc = defaultdict(list)
    for r in sorted(res["ancestors"], key=lambda r: -r["depth"]):
        anc[r["leaf"]].append(ident(args[r["id"]]))
    leaves = [i for i, s in structure.items() if s["cat"] == "traceloom.structural_atom"]
    assert leaves and set(anc) <= set(leaves)
    track_of = {(s["box"], ident(args[i])): s["track"] for i, s in structure.items()}
    moved = 0
    for leaf in leaves:
        box = slices[leaf]["box"]
        want = chain(box_dev[box], ident(args[leaf]))
        assert anc[leaf] == want[:len(anc[leaf])], slices[leaf]
        if len(anc[leaf]) < len(want):
            # Cut where an overlapping sibling moved a slice to another lane: the parent
            # there sits on another track.
            top = anc[leaf][-1] if anc[leaf] else ident(args[leaf])
            assert track_of[(box, top)] != track_of[(box, want[len(anc[leaf])])]
            moved += 1
    assert moved < len(leaves) / 2
    # descendant_slice of each device's root covers that device's whole structure lane.
    for r in res["descendants"]:
        track = slices[r["id"]]["track"]
        assert r["n"] == sum(1 for s in structure.values() if s["track"] == track and
                             s["box"] == slices[r["id"]]["box"]) - 1

    # Flows: host call -> device work of every exact relation, launch host call -> member.
    got = set()
    for f in res["flows"]:
        got.add((call_n_of(args[f["slice_out"]]), event_n_of(args[f["slice_in"]])))
        assert slices[f["slice_out"]]["cat"] == "traceloom.runtime_call"
        assert slices[f["slice_in"]]["cat"] == "traceloom.timeline_event"
    assert got == (set() if ranks else expected_flows(db))
    assert len(got) == len(res["flows"])
    if kind in ("demo", "context", "cuda_graph", "kineto", "kineto_gpu", "kineto_gpu_graph"):
        assert got, "this export has flows"


def normalized(res, names):
    """Slices and flows of one import, comparable across formats: JSON durations in us and
    text ids become the protobuf's integer ns and *_n keys (node_n back to node_id text)."""
    args = args_of(res, names)
    out = {}
    for i, a in args.items():
        n = {}
        for k, v in a.items():
            if k.endswith("_us") and isinstance(v, float):
                n[k[:-3] + "_ns"] = round(v * 1000)
            elif k == "event_id" and isinstance(v, str) and v.startswith("event-"):
                n["event_n"] = int(v[6:])
            elif k == "runtime_call_id":
                n["call_n"] = int(v.split("-")[2])
            elif k == "aggregate_id":
                n["aggregate_n"] = int(v.split("-")[3])
            else:
                n[k] = v
        out[i] = n
    slices = {s["id"]: s for s in res["slices"]}
    key = {i: (s["track"], s["name"], s["cat"], s["ts"], s["dur"], s["depth"])
           for i, s in slices.items()}
    return slices, key, out, Counter((key[f["slice_out"]], key[f["slice_in"]]) for f in res["flows"])


# Keys only the JSON carries (perfetto.md 4.2, 5.1; pf_proto.c proto_skips): everywhere,
# on every slice but rank and context rows (the box says them), on device-plane atoms.
JSON_ONLY = {"semantic_kind", "view_name", "database_index", "projection_plane", "display_depth",
             "replay_derived", "tree_depth", "parent_node_id", "symbol",
             "topology_signature_sha256"}
ROWS = ("traceloom.distributed_timeline_event", "traceloom.context.host",
        "traceloom.context.step_envelope", "traceloom.context.device")


def json_only(cat, key):
    if key in JSON_ONLY:
        return True
    if key in ("db_idx", "device_id"):
        return cat not in ROWS
    return key in ("anchor_end_idx", "anchor_count") and cat == "traceloom.timeline_event"


@pytest.mark.parametrize("kind", KINDS)
def test_json_and_protobuf_import_the_same(loaded, kind):
    db, rj, _ = loaded(kind, "json")
    _, rp, _ = loaded(kind, "pftrace")
    names = node_names(db)
    sj, kj, aj, fj = normalized(rj, names)
    sp, kp, ap, fp = normalized(rp, names)
    # The protobuf writes a node by its node_n where the view has one, never its text.
    keys = Counter(a["key"].split(".", 1)[1] for a in rp["args"])
    if names and kind != "ranks":
        assert keys["node_n"] > 0 and keys["node_id"] == 0, keys
    assert Counter(a["key"].split(".", 1)[1] for a in rj["args"])["node_n"] == 0
    assert Counter(kj.values()) == Counter(kp.values())
    assert fj == fp
    # Args: the same values under the same (normalized) keys, the JSON-only keys aside.
    pj = Counter((kj[i], tuple(sorted((k, v) for k, v in aj.get(i, {}).items()
                                      if not json_only(sj[i]["cat"], k))))
                 for i in sj)
    pp = Counter((kp[i], tuple(sorted(ap.get(i, {}).items()))) for i in sp)
    assert pj == pp


def test_gzipped_protobuf_imports_the_same(loaded, analyses, cli, tmp_path):
    """A .pftrace.gz is the protobuf trace deflated: Perfetto imports the same slices."""
    db, res, _ = loaded("context", "pftrace")
    out = tmp_path / "context.pftrace.gz"
    r = run(cli, "export-perfetto", db, "--output", out)
    assert r.returncode == 0, r.stderr
    assert out.read_bytes()[:2] == b"\x1f\x8b"
    gz = probe(out, **QUERIES)
    assert gz["bad_stats"] == []
    sa, ka, aa, fa = normalized(gz, node_names(db))
    sb, kb, ab, fb = normalized(res, node_names(db))
    assert fa == fb
    assert Counter((ka[i], tuple(sorted(aa.get(i, {}).items()))) for i in sa) == \
        Counter((kb[i], tuple(sorted(ab.get(i, {}).items()))) for i in sb)
