"""The Perfetto timeline export (spec perfetto.md): `traceloom export-perfetto` and the SQL
function traceloom_export_perfetto. Every file is parsed independently (json, gzip) and
checked against the analysis database with plain SQL: strict nesting per track, every
anchor exactly once in the device plane, repeat bodies equal to their child occurrences,
lossless timestamps, atomic writes and the refusals."""
import decimal
import gzip
import hashlib
import json
import os
import pathlib
import re
import shutil
import sqlite3
import subprocess
import sys
from collections import defaultdict

import pytest

PROFILES = [
    "gen/ascend_s5_l3_k6",
    "gen/ascend_s3_l6_k8",
    "gen/ascend_s6_l4_k6_aux",
    "gen/nsys_s6_l4_k6_aux",
    "gen/nsys_s4_l5_k7",
    "minimal_smoke/mono",
    "exact_hlt/mono",
    "body_mismatch/mono",
    "nsys/nsys_basic.sqlite",
    "nsys/nsys_graph.sqlite",
    "hygon/hipprof.db",
    "two_ranks/PROF_0",
    "two_ranks/PROF_1",
]


def run(cli, *args):
    return subprocess.run([str(cli), *map(str, args)], capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="session")
def analyses(cli, fixtures, tmp_path_factory):
    """Analysis DBs of the profiles that analyse on this build (name -> path)."""
    out = {}
    root = tmp_path_factory.mktemp("perfetto_analyses")
    for name in PROFILES:
        src = fixtures / name
        if not src.exists():
            continue
        db = root / (name.replace("/", "_") + ".db")
        r = run(cli, src, "--output", db)
        if r.returncode == 0:
            out[name] = db
    assert "gen/ascend_s5_l3_k6" in out, "the reference generated profile must analyse"
    return out


def load(path):
    """Parsed trace; numbers as Decimal so ts/dur are compared exactly."""
    raw = gzip.open(path).read() if str(path).endswith(".gz") else open(path, "rb").read()
    return json.loads(raw, parse_float=decimal.Decimal), raw


def ns(us):
    v = us * 1000
    assert v == int(v), f"{us} is not a whole number of ns"
    return int(v)


def query(db, sql, *args):
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return con.execute(sql, args).fetchall()
    finally:
        con.close()


def check_nesting(events):
    """Within each (pid, tid) the X slices nest strictly or are disjoint."""
    tracks = defaultdict(list)
    for e in events:
        if e["ph"] == "X":
            assert e["dur"] >= 0
            tracks[(e["pid"], e["tid"])].append((ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])))
    for key, spans in tracks.items():
        spans.sort(key=lambda s: (s[0], -s[1]))
        stack = []
        for s, t in spans:
            while stack and stack[-1] <= s:
                stack.pop()
            assert not stack or t <= stack[-1], f"partial overlap on track {key}: [{s},{t})"
            stack.append(t)
    return tracks


def drawn_origin(db, ranks=False):
    """The earliest start of anything the export draws, from SQL: occurrences, and (without
    ranks) replay members, runtime calls and scheduler context."""
    starts = [query(db, "SELECT MIN(start_ns) FROM traceloom_position_occurrence")[0][0]]
    if not ranks:
        for sql in ("SELECT MIN(start_ns) FROM traceloom_runtime_call",
                    "SELECT MIN(m.start_ns) FROM traceloom_graph_body_member m JOIN traceloom_graph_launch l "
                    "ON l.launch_id = m.launch_id WHERE l.anchor_id IS NOT NULL",
                    "SELECT MIN(start_ns) FROM traceloom_context_marker",
                    "SELECT MIN(start_ns) FROM traceloom_v_context_device_work"):
            try:
                starts.append(query(db, sql)[0][0])
            except sqlite3.OperationalError:
                pass
    return min(s for s in starts if s is not None)


def thread_names(events):
    return {(e["pid"], e["tid"]): e["args"]["name"] for e in events
            if e["ph"] == "M" and e["name"] == "thread_name"}


def parents(track_slices):
    """id(slice) -> its parent slice as Perfetto's JSON import nests one track: sorted by
    (start, longer first) keeping file order, a slice is the child of the innermost open
    slice; an open slice closes at its end (a zero-length one only after its own time)."""
    order = sorted(range(len(track_slices)),
                   key=lambda i: (ns(track_slices[i]["ts"]), -ns(track_slices[i]["dur"]), i))
    stack, out = [], {}
    for i in order:
        e = track_slices[i]
        s = ns(e["ts"])
        while stack:
            top = stack[-1]
            te = ns(top["ts"]) + ns(top["dur"])
            if te < s or (te == s and ns(top["dur"]) > 0):
                stack.pop()
            else:
                break
        out[id(e)] = stack[-1] if stack else None
        stack.append(e)
    return out


def check_trace(db, trace, raw):
    events = trace["traceEvents"]
    meta = trace["metadata"]
    assert trace["displayTimeUnit"] == "ns"
    assert meta["format"] == "TraceLoom queryable database timeline Perfetto export"
    assert {e["ph"] for e in events} <= {"M", "X", "s", "f"}
    # ts/dur are printed with exactly three decimals, never in exponent form.
    for m in re.finditer(rb'"(ts|dur)":([^,}]*)', raw):
        assert re.fullmatch(rb"\d+\.\d{3}", m.group(2)), m.group(0)
    tracks = check_nesting(events)
    names = thread_names(events)
    assert set(tracks) <= set(names), "every track has a thread_name"
    # Every timestamp is >= 0: the origin is the earliest start of anything drawn.
    origin = meta["time_origin_ns"]
    assert origin == drawn_origin(db)
    assert min(ns(e["ts"]) for e in events if "ts" in e) == 0
    by_track = defaultdict(list)
    for e in events:
        if e["ph"] == "X":
            by_track[(e["pid"], e["tid"])].append(e)

    # Device plane (stream tracks): every published anchor exactly once, at its exact
    # interval; an exact graph launch anchor (no event: its unit's event stands for the
    # launches) is replaced by its exact members.
    anchors = {r[0]: (r[1], r[2]) for r in query(
        db, "SELECT event_id, start_ns, end_ns FROM traceloom_anchor WHERE event_id IS NOT NULL")}
    launch_anchors = query(db, "SELECT count(*) FROM traceloom_anchor WHERE event_id IS NULL")[0][0]
    members = {r[0]: (r[1], r[2], r[3], r[4], r[5]) for r in query(
        db, "SELECT m.member_id, m.start_ns, m.end_ns, l.graph_event_id, m.launch_id, m.event_id "
            "FROM traceloom_graph_body_member m "
            "JOIN traceloom_graph_launch l ON l.launch_id = m.launch_id WHERE l.anchor_id IS NOT NULL")}
    units = dict(query(db, "SELECT launch_id, replay_unit_id FROM traceloom_graph_launch "
                           "WHERE anchor_id IS NOT NULL"))
    seen, seen_members = defaultdict(int), defaultdict(int)
    device_slice = {}
    for e in events:
        if e.get("cat") != "traceloom.timeline_event":
            continue
        a = e["args"]
        assert a["projection_plane"] == "device_events" and a["display_depth"] is None
        assert names[(e["pid"], e["tid"])].startswith(("stream ", "no stream"))
        if a["replay_derived"] is False:
            seen[a["event_id"]] += 1
            s, t = anchors[a["event_id"]]
            assert a["symbol"] == e["name"]
        else:
            seen_members[a["member_id"]] += 1
            s, t, launch_event, launch_id, _ = members[a["member_id"]]
            assert a["launch_event_id"] == launch_event and a["launch_id"] == launch_id
            assert a["geometry"] == "exact_launch_members; envelopes_include_gaps; non_additive"
            # the unit as traceloom_graph_launch names it: a bare integer from 0
            assert a["replay_unit_id"] == units[launch_id] and a["anchor_id"].startswith("anchor-")
        assert origin + ns(e["ts"]) == s and ns(e["dur"]) == max(0, t - s)
        device_slice[a["event_id"]] = e
    assert set(seen) == set(anchors) and set(seen.values()) <= {1}
    assert launch_anchors == query(db, "SELECT count(*) FROM traceloom_graph_launch "
                                       "WHERE anchor_id IS NOT NULL")[0][0]
    assert set(seen_members) == set(members) and set(seen_members.values()) <= {1}
    assert meta["replay_member_slices"] == len(members)

    # Structure: one slice per occurrence (seq, repeat, atom leaf) and one window per repeat
    # iteration, nested as the occurrence tree: each slice's innermost enclosing slice on its
    # track is its parent occurrence, or the window of the iteration it belongs to.
    occ = {(r[0], r[1]): r[2:] for r in query(db, """
        SELECT o.position_id, o.occurrence_idx, o.start_ns, o.end_ns, p.position_id,
               p.occurrence_idx, -- the iteration, where the parent is a Repeat
               CASE WHEN (SELECT pv.kind FROM traceloom_viz_node pv WHERE pv.node_n = p.node_n) = 'repeat' THEN o.repeat_iteration END, v.node_type,
               o.token_start_ordinal, o.token_end_exclusive
        FROM traceloom_position_occurrence o
        LEFT JOIN traceloom_position_occurrence p ON p.occurrence_n = o.parent_n
        JOIN traceloom_viz_node v ON v.node_id = o.position_id AND v.db_idx = o.db_idx
             AND v.device_id = o.device_id""")}
    bodies = {}
    for (pos, idx), (s, t, ppos, pidx, it, *_) in occ.items():
        if it is not None:
            b = bodies.setdefault((ppos, pidx, it), [s, t])
            b[0], b[1] = min(b[0], s), max(b[1], t)
    got_occ, got_body, detached, track_of = {}, {}, [], {}
    structure = ("traceloom.structural_interval", "traceloom.repeat_occurrence",
                 "traceloom.repeat_body_window", "traceloom.structural_atom")
    for key, sl in by_track.items():
        parent_of = parents(sl)
        for e in sl:
            if e["cat"] not in structure:
                continue
            assert names[key].startswith("structure")
            a = e["args"]
            span = (origin + ns(e["ts"]), origin + ns(e["ts"]) + ns(e["dur"]))
            parent = parent_of[id(e)]
            if e["cat"] == "traceloom.repeat_body_window":
                k = (a["repeat_node_id"], a["aggregate_occurrence_idx"], a["body_ordinal"])
                assert k not in got_body
                got_body[k] = list(span)
                track_of[k] = key
                assert e["name"].endswith(f"body {a['body_ordinal']}/{a['repeat_count']}")
                want_parent = (a["repeat_node_id"], a["aggregate_occurrence_idx"])
            else:
                k = (a["node_id"], a["occurrence_idx"])
                assert k not in got_occ
                got_occ[k] = span
                track_of[k] = key
                s, t, ppos, pidx, it, _, tok0, tok1 = occ[k]
                # The anchor range of a seq or repeat occurrence (1-based, inclusive) is the view's token ordinals (0-based,
                # end exclusive): the exporter derives them from the anchor numbers and one
                # offset per tree.
                if e["cat"] != "traceloom.structural_atom":
                    assert (a["anchor_start_idx"], a["anchor_end_idx"]) == (tok0 + 1, tok1), k
                want_parent = None if ppos is None else (
                    (ppos, pidx, it) if it is not None else (ppos, pidx))
            if parent is None:
                # A root, or a slice an overlapping sibling moved to another lane (checked
                # below: its parent is then on another track).
                if want_parent is not None:
                    detached.append((key, want_parent))
                continue
            pa = parent["args"]
            if parent["cat"] == "traceloom.repeat_body_window":
                assert want_parent == (pa["repeat_node_id"], pa["aggregate_occurrence_idx"], pa["body_ordinal"])
            else:
                assert want_parent == (pa["node_id"], pa["occurrence_idx"])
    for key, parent in detached:
        assert track_of[parent] != key, (key, parent)
    assert got_occ == {k: (v[0], v[1]) for k, v in occ.items()}
    assert got_body == bodies
    assert meta["repeat_body_slices"] == len(bodies)

    # Flows: host call -> device work of each exact relation, launch host call -> members;
    # both ends drawn, forward in time.
    call_slice = {}
    for e in events:
        if e.get("cat") == "traceloom.runtime_call":
            call_slice[e["args"]["runtime_call_id"]] = e
            assert names[(e["pid"], e["tid"])].startswith(("thread ", "no thread"))
    want = set()
    rows = query(db, """SELECT r.runtime_call_id, e.event_id FROM traceloom_runtime_device_relation r
                        JOIN traceloom_event e ON e.event_n = r.event_n
                        WHERE r.support_state = 'supported_exact'""")
    rows += query(db, """SELECT l.host_call_id, m.event_id FROM traceloom_graph_body_member m
                         JOIN traceloom_graph_launch l ON l.launch_id = m.launch_id
                         WHERE l.anchor_id IS NOT NULL AND l.host_call_id IS NOT NULL""")
    for call, ev in rows:
        if call in call_slice and ev in device_slice and \
                ns(device_slice[ev]["ts"]) >= ns(call_slice[call]["ts"]):
            want.add((call, ev))
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    ends = {e["id"]: e for e in events if e["ph"] == "f"}
    assert set(starts) == set(ends)
    got = set()
    for fid, s in starts.items():
        f = ends[fid]
        assert f["bp"] == "e"
        src = [e for e in by_track[(s["pid"], s["tid"])] if e["ts"] == s["ts"]]
        dst = [e for e in by_track[(f["pid"], f["tid"])] if e["ts"] == f["ts"]]
        assert src and dst
        got.add((src[-1]["args"]["runtime_call_id"], dst[0]["args"]["event_id"]))
    assert got == want
    assert meta["flows"] == len(want)


@pytest.mark.parametrize("name", PROFILES)
def test_export_plain_and_gzip(cli, analyses, tmp_path, name):
    if name not in analyses:
        pytest.skip(f"{name} does not analyse on this build")
    db = analyses[name]
    plain, packed = tmp_path / "t.json", tmp_path / "t.perfetto.json.gz"
    r1 = run(cli, "export-perfetto", db, "--output", plain)
    r2 = run(cli, "export-perfetto", db, "--output", packed)
    assert r1.returncode == 0, r1.stderr
    assert r2.returncode == 0, r2.stderr
    assert open(packed, "rb").read(2) == b"\x1f\x8b"
    trace, raw = load(plain)
    assert gzip.open(packed).read() == raw
    n = int(re.search(r"\((\d+) trace events\)", r1.stdout).group(1))
    assert n == sum(e["ph"] in ("X", "s") for e in trace["traceEvents"])
    check_trace(db, trace, raw)
    # Deterministic: a second export is byte-identical.
    again = tmp_path / "again.json"
    assert run(cli, "export-perfetto", db, "--output", again).returncode == 0
    assert open(again, "rb").read() == raw
    assert sorted(p.name for p in tmp_path.iterdir()) == ["again.json", "t.json", "t.perfetto.json.gz"]


def test_default_output_and_analyze_option(cli, fixtures, tmp_path):
    db = tmp_path / "analysis.db"
    out = tmp_path / "side.json.gz"
    r = run(cli, fixtures / "gen/ascend_s5_l3_k6", "--output", db, "--perfetto-out", out)
    assert r.returncode == 0, r.stderr
    trace, raw = load(out)
    check_trace(db, trace, raw)
    r = run(cli, "export-perfetto", db)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "analysis.perfetto.json.gz").exists()


def test_refuses_to_overwrite_the_analysis_db(cli, analyses, tmp_path):
    db = tmp_path / "a.db"
    shutil.copy(analyses["gen/ascend_s5_l3_k6"], db)
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    link = tmp_path / "hard.json"
    os.link(db, link)
    for target in (db, link):
        r = run(cli, "export-perfetto", db, "--output", target)
        assert r.returncode == 1
        assert "refusing to overwrite" in r.stderr and "analysis database" in r.stderr
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.db", "hard.json"]


def test_failed_export_is_atomic(cli, analyses, tmp_path):
    """A broken repeat projection fails closed: the old file stays, no temporary is left."""
    db = tmp_path / "broken.db"
    shutil.copy(analyses["gen/ascend_s5_l3_k6"], db)
    con = sqlite3.connect(db)
    # One more iteration claimed than the occurrences realize: one repeat node's stored
    # repeat_count raised (the core the export reads, and the tree view over it).
    con.execute("""UPDATE traceloom_node_core SET repeat_count = repeat_count + 1 WHERE node_n = (
        SELECT min(node_n) FROM traceloom_node_core WHERE node_kind = 3)""")
    assert con.total_changes == 1
    con.commit()
    con.close()
    for name, read in (("old.json", None), ("old.json.gz", None), ("old.json", "views")):
        out = tmp_path / name
        out.write_bytes(b"previous export")
        env = {k: v for k, v in os.environ.items() if k != "TRACELOOM_EXPORT_READ"}
        if read:
            env["TRACELOOM_EXPORT_READ"] = read
        r = subprocess.run([str(cli), "export-perfetto", str(db), "--output", str(out)],
                           capture_output=True, text=True, timeout=300, env=env)
        assert r.returncode == 1
        assert "incomplete repeat-body projection" in r.stderr
        assert out.read_bytes() == b"previous export"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["broken.db", "old.json", "old.json.gz"]


def test_option_errors_fail_before_the_output_is_opened(cli, analyses, tmp_path):
    db = analyses["gen/ascend_s5_l3_k6"]
    out = tmp_path / "t.json"
    r = run(cli, "export-perfetto", db, "--output", out, "--align", "sundial")
    assert r.returncode == 1 and "unknown alignment mode" in r.stderr
    r = run(cli, "export-perfetto", db, "--output", out, "--align", "provider")
    assert r.returncode == 1 and "need" in r.stderr and "ranks" in r.stderr
    r = run(cli, "export-perfetto", db, "--output", out, "--rank", f"1={db}")
    assert r.returncode == 1 and "rank 0 is required" in r.stderr
    model = tmp_path.parent / (tmp_path.name + "-model.jsonl")
    model.write_text("")
    r = run(cli, "export-perfetto", db, "--output", out, "--rank", f"0={db}", "--align", "provider",
            "--clock-model", model)
    assert r.returncode == 1 and "mutually exclusive" in r.stderr
    r = run(cli, "export-perfetto", db, "--output", out, "--clock-model", model)
    assert r.returncode == 1 and "ranks" in r.stderr
    assert run(cli, "export-perfetto", db, "--rank", "x").returncode == 2
    assert run(cli, "export-perfetto").returncode == 2
    assert list(tmp_path.iterdir()) == []
    r = run(cli, "export-perfetto", tmp_path / "missing.db", "--output", out)
    assert r.returncode == 1 and list(tmp_path.iterdir()) == []


def test_not_a_timeline_is_refused(cli, tmp_path):
    db = tmp_path / "plain.db"
    sqlite3.connect(db).execute("CREATE TABLE t(x)").connection.close()
    r = run(cli, "export-perfetto", db, "--output", tmp_path / "t.json")
    assert r.returncode == 1 and "traceloom_v_tree_node" in r.stderr


def sqlite_shell(build_dir, db, *stmts):
    return subprocess.run(["sqlite3", str(db), f".load {build_dir / 'traceloom'}", *stmts],
                          capture_output=True, text=True, timeout=120)


def test_function_and_directonly(build_dir, analyses, tmp_path):
    if not shutil.which("sqlite3"):
        pytest.skip("no sqlite3 shell")
    db = tmp_path / "a.db"
    shutil.copy(analyses["gen/ascend_s5_l3_k6"], db)
    out = tmp_path / "direct.json"
    r = sqlite_shell(build_dir, db, f"SELECT traceloom_export_perfetto('{out}');")
    assert r.returncode == 0, r.stderr
    trace, _ = load(out)
    assert int(r.stdout.strip()) == sum(e["ph"] in ("X", "s") for e in trace["traceEvents"])
    hostile = tmp_path / "hostile.json"
    r = sqlite_shell(build_dir, db,
                     f"CREATE VIEW v AS SELECT traceloom_export_perfetto('{hostile}') AS n;",
                     "SELECT n FROM v;")
    assert r.returncode != 0 and "unsafe use of traceloom_export_perfetto" in r.stderr
    assert not hostile.exists()


def test_two_ranks(cli, analyses, tmp_path):
    if "two_ranks/PROF_0" not in analyses or "two_ranks/PROF_1" not in analyses:
        pytest.skip("two_ranks does not analyse on this build")
    db0, db1 = analyses["two_ranks/PROF_0"], analyses["two_ranks/PROF_1"]
    firsts = {}
    for rank, db in ((0, db0), (1, db1)):
        firsts[rank] = query(db, """SELECT MIN(o.start_ns), COUNT(*) FROM traceloom_tree_node_occurrence o
            JOIN traceloom_viz_node v USING (node_id, db_idx, device_id, view_name)
            WHERE v.node_type = 'Atom'""")[0]
    for align in ("first_event", "provider"):
        out = tmp_path / f"{align}.json.gz"
        r = run(cli, "export-perfetto", db0, "--output", out, "--rank", f"0={db0}",
                "--rank", f"1={db1}", "--align", align)
        assert r.returncode == 0, r.stderr
        trace, raw = load(out)
        events, meta = trace["traceEvents"], trace["metadata"]
        check_nesting(events)
        dist = [e for e in events if e.get("cat") == "traceloom.distributed_timeline_event"]
        assert not [e for e in events if e.get("cat") == "traceloom.timeline_event"]
        origin = meta["time_origin_ns"]
        for rank in (0, 1):
            mine = [e for e in dist if e["args"]["rank"] == rank]
            assert len(mine) == firsts[rank][1]
            first = min(origin + ns(e["ts"]) for e in mine)
            if align == "first_event":
                assert first == firsts[0][0]
                assert {e["args"]["display_reference_anchor_ns"] for e in mine} == {firsts[0][0]}
            else:
                assert first == firsts[rank][0]
            for e in mine:
                a = e["args"]
                assert ns(e["dur"]) == a["source_end_ns"] - a["source_start_ns"]
                assert a["source_timeline_db_sha256"] == hashlib.sha256(
                    open(a["source_timeline_db"], "rb").read()).hexdigest()
        rank_pids = {e["pid"] for e in dist}
        names = {e["args"]["name"] for e in events if e["ph"] == "M" and e["pid"] in rank_pids
                 and e["name"] == "thread_name"}
        assert {"rank 0", "rank 1"} <= names
        # Ranks come first: their process is the first one.
        pnames = [e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"]
        assert pnames[0].startswith("ranks \u00b7 ")
        assert meta["distributed_rank_tracks"] == 2
        assert meta["distributed_alignment"] == (
            "first_timeline_event_per_rank" if align == "first_event" else "provider_timestamps_uncalibrated")


def test_refuses_to_overwrite_a_rank_db(cli, analyses, tmp_path):
    db = analyses["gen/ascend_s5_l3_k6"]
    rank_db = tmp_path / "r.db"
    shutil.copy(db, rank_db)
    r = run(cli, "export-perfetto", db, "--output", rank_db, "--rank", f"0={rank_db}")
    assert r.returncode == 1 and "rank 0 database" in r.stderr


def clock_record(**kw):
    rec = {"format": "traceloom.distributed-clock-model/v1", "rank": 1, "reference_rank": 0,
           "metric": "end", "status": "candidate_only", "source_clock_domain": "rank1_device",
           "target_clock_domain": "rank0_device", "marker_contract": "allreduce_end",
           "scale": "1.5", "reference_source_ns": "0", "reference_target_ns": "0"}
    rec.update(kw)
    # Decimal numbers are written as JSON numbers, exactly as given.
    return "{" + ",".join(
        f'"{k}":{v}' if k in ("scale", "reference_source_ns", "reference_target_ns", "rank", "reference_rank")
        else f'"{k}":{json.dumps(v)}' for k, v in rec.items()) + "}"


def test_clock_model_alignment(cli, analyses, tmp_path):
    if "two_ranks/PROF_0" not in analyses or "two_ranks/PROF_1" not in analyses:
        pytest.skip("two_ranks does not analyse on this build")
    db0, db1 = analyses["two_ranks/PROF_0"], analyses["two_ranks/PROF_1"]
    atoms = """SELECT o.start_ns, o.end_ns FROM traceloom_tree_node_occurrence o
               JOIN traceloom_viz_node v USING (node_id, db_idx, device_id, view_name)
               WHERE v.node_type = 'Atom'"""
    r0, r1 = query(db0, atoms), query(db1, atoms)
    f0, f1 = min(s for s, _ in r0), min(s for s, _ in r1)
    scale, rs, rt = "1.5", str(f1), f"{f0}.5"
    model = tmp_path / "clock.jsonl"
    model.write_text(clock_record(metric="start", scale="2") + "\n" +
                     clock_record(scale=scale, reference_source_ns=rs, reference_target_ns=rt) + "\n")
    out = tmp_path / "clock.json.gz"
    r = run(cli, "export-perfetto", db0, "--output", out, "--rank", f"0={db0}", "--rank", f"1={db1}",
            "--clock-model", model)
    assert r.returncode == 0, r.stderr
    trace, _ = load(out)
    events, meta = trace["traceEvents"], trace["metadata"]
    check_nesting(events)
    origin = meta["time_origin_ns"]

    def mapped(v):
        x = decimal.Decimal(rt) + decimal.Decimal(scale) * (v - decimal.Decimal(rs))
        return int(x.quantize(decimal.Decimal(1), rounding=decimal.ROUND_HALF_EVEN))

    want = {0: sorted(r0), 1: sorted((mapped(s), mapped(t)) for s, t in r1)}
    for rank in (0, 1):
        got = sorted((origin + ns(e["ts"]), origin + ns(e["ts"]) + ns(e["dur"])) for e in events
                     if e.get("cat") == "traceloom.distributed_timeline_event" and e["args"]["rank"] == rank)
        assert got == want[rank]
    a1 = next(e["args"] for e in events if e.get("args", {}).get("rank") == 1)
    a0 = next(e["args"] for e in events if e.get("args", {}).get("rank") == 0)
    assert a0["clock_model_status"] == "reference_identity" and a1["clock_model_status"] == "candidate_only"
    assert a1["clock_model_scale"] == scale and a1["clock_model_reference_target_ns"] == rt
    sha = hashlib.sha256(model.read_bytes()).hexdigest()
    assert a1["clock_model_receipt_sha256"] == sha == meta["distributed_clock_model_sha256"]
    assert meta["distributed_alignment"] == "collective_end_affine_clock_model"
    assert meta["distributed_alignment_boundary"].startswith("display-only candidate mapping")
    names = [e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"]
    assert names and names[0] == "ranks \u00b7 collective-end affine aligned"

    bad = {
        "scale must be > 0": clock_record(scale="0"),
        "no metric=end record for rank 1": clock_record(metric="start"),
        "more than one metric=end record": clock_record() + "\n" + clock_record(),
        "is not ASCII": clock_record(marker_contract="allreduce\u00e9nd").replace("\\u00e9", "\u00e9"),
        "not among the exported ranks": clock_record(rank=7),
        "is not JSON": "{not json",
        "expected a flat object": clock_record(status="guess"),
    }
    for why, text in bad.items():
        model.write_text(text + "\n", encoding="utf-8")
        out = tmp_path / "bad.json"
        r = run(cli, "export-perfetto", db0, "--output", out, "--rank", f"0={db0}",
                "--rank", f"1={db1}", "--clock-model", model)
        assert r.returncode == 1, why
        assert why in r.stderr, (why, r.stderr)
        assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["clock.json.gz", "clock.jsonl"]


def test_scheduler_context_processes(cli, fixtures, tmp_path):
    """perfetto.md section 9 on the generated execution-linked profile: host scopes, step
    envelopes and linked device work, each checked against SQL; every ts >= 0 (the context
    starts before the first occurrence here)."""
    src = fixtures / "context_gen" / "graph"
    ctx = sorted((src / "context").glob("*.jsonl"))
    db = tmp_path / "ctx.db"
    args = [src, "--output", db]
    for f in ctx:
        args += ["--context", f]
    r = run(cli, *args)
    assert r.returncode == 0, r.stderr
    out = tmp_path / "ctx.json.gz"
    r = run(cli, "export-perfetto", db, "--output", out)
    assert r.returncode == 0, r.stderr
    trace, raw = load(out)
    events = trace["traceEvents"]
    check_nesting(events)
    origin = trace["metadata"]["time_origin_ns"]
    assert min(ns(e["ts"]) for e in events if "ts" in e) == 0
    cats = {"traceloom.context.host": 130, "traceloom.context.step_envelope": 131,
            "traceloom.context.device": 132}
    by_pid = defaultdict(list)
    for e in events:
        if e["ph"] == "X" and e.get("cat") in cats:
            by_pid[cats[e["cat"]]].append(e)
    markers = query(db, "SELECT execution_id, start_ns, end_ns FROM traceloom_context_marker")
    assert markers and len(by_pid[130]) == len(markers)
    want = {m[0]: (m[1], m[2]) for m in markers}
    for e in by_pid[130]:
        assert e["cat"] == "traceloom.context.host" and e["name"].startswith("Step ")
        s, t = want[e["args"]["execution_id"]]
        assert origin + ns(e["ts"]) == s and ns(e["dur"]) == t - s
        assert e["args"]["boundary"] == "host dispatch scope; not device duration"
    envelopes = query(db, """SELECT step_id, device_id, min(start_ns), max(end_ns) FROM
        (SELECT DISTINCT step_id, device_id, device_work_id, start_ns, end_ns FROM traceloom_v_context_device_work)
        GROUP BY step_id, device_id""")
    assert len(by_pid[131]) == len(envelopes) > 0
    want = {(r[0], r[1]): (r[2], r[3]) for r in envelopes}
    for e in by_pid[131]:
        s, t = want[(e["args"]["step_id"], e["args"]["device_id"])]
        assert origin + ns(e["ts"]) == s and ns(e["dur"]) == t - s
    work = query(db, "SELECT count(*) FROM (SELECT DISTINCT device_work_id, step_id FROM traceloom_v_context_device_work)")[0][0]
    assert len(by_pid[132]) == work > 0
    assert all(e["args"]["association_basis"] for e in by_pid[132])
    assert trace["metadata"]["context_slices"] == len(markers) + len(envelopes) + work
    names = [e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"]
    assert names[-3:] == ["context \u00b7 host scopes", "context \u00b7 step envelopes",
                          "context \u00b7 linked device work"]
    check_trace(db, trace, raw)


def gzip_members(data):
    """Decompressed content of each gzip member of data, in order."""
    import zlib
    out = []
    while data:
        z = zlib.decompressobj(16 + 15)
        out.append(z.decompress(data) + z.flush())
        assert z.eof, "truncated gzip member"
        data = z.unused_data
    return out


def test_gzip_is_one_member_equal_to_plain(cli, analyses, tmp_path):
    db = analyses["gen/ascend_s5_l3_k6"]
    plain, packed = tmp_path / "t.json", tmp_path / "t.json.gz"
    assert run(cli, "export-perfetto", db, "--output", plain).returncode == 0
    assert run(cli, "export-perfetto", db, "--output", packed).returncode == 0
    members = gzip_members(packed.read_bytes())
    assert len(members) == 1
    assert members[0] == plain.read_bytes()


@pytest.fixture(scope="module")
def chunked_db(cli, tmp_path_factory):
    """An analysis whose export spans several 1 MiB deflate chunks (~12 MB of JSON)."""
    root = tmp_path_factory.mktemp("perfetto_chunks")
    prof, db = root / "profile", root / "a.db"
    gen = pathlib.Path(__file__).resolve().parents[2] / "tools" / "genprofile.py"
    subprocess.run([sys.executable, str(gen), "--out", str(prof), "--rows", "20000", "--quiet"],
                   check=True, timeout=300)
    r = run(cli, prof, "--output", db)
    assert r.returncode == 0, r.stderr
    return db


def test_gzip_spanning_chunks_is_thread_independent(cli, chunked_db, tmp_path):
    plain = tmp_path / "t.json"
    assert run(cli, "export-perfetto", chunked_db, "--output", plain).returncode == 0
    raw = plain.read_bytes()
    assert len(raw) > 4 * (1 << 20)
    packed = {}
    for threads in ("1", "2", "3"):
        out = tmp_path / f"t{threads}.json.gz"
        r = subprocess.run([str(cli), "export-perfetto", str(chunked_db), "--output", str(out)],
                           capture_output=True, text=True, timeout=300,
                           env={**os.environ, "TRACELOOM_EXPORT_THREADS": threads})
        assert r.returncode == 0, r.stderr
        packed[threads] = out.read_bytes()
        assert gzip_members(packed[threads]) == [raw]
        assert gzip.decompress(packed[threads]) == raw
    # Fixed chunk boundaries: the same bytes whatever the number of deflate threads.
    assert packed["1"] == packed["2"] == packed["3"]


def export_with_threads(cli, db, out, threads):
    """export-perfetto with TRACELOOM_EXPORT_THREADS=threads; its event count."""
    r = subprocess.run([str(cli), "export-perfetto", str(db), "--output", str(out)],
                       capture_output=True, text=True, timeout=300,
                       env={**os.environ, "TRACELOOM_EXPORT_THREADS": threads})
    assert r.returncode == 0, r.stderr
    return int(re.search(r"\((\d+) trace events\)", r.stdout).group(1))


def test_threads_do_not_change_the_bytes(cli, analyses, tmp_path):
    """The side reader (runtime calls, relations, anchors and events on a second read-only
    connection in a worker thread) and the occurrence reader (the occurrences on a third,
    while the nodes are read) give the same file as reading everything in turn."""
    db = analyses["gen/ascend_s6_l4_k6_aux"] if "gen/ascend_s6_l4_k6_aux" in analyses \
        else analyses["gen/ascend_s5_l3_k6"]
    for suffix in (".json", ".pftrace"):
        out = {}
        for threads in ("1", "2"):
            out[threads] = tmp_path / f"t{threads}{suffix}"
            export_with_threads(cli, db, out[threads], threads)
        assert out["1"].read_bytes() == out["2"].read_bytes()


def export_reading(cli, db, out, read, *extra, threads=None):
    """export-perfetto reading the stored core (read None) or the public views ("views"),
    with TRACELOOM_EXPORT_THREADS=threads when given."""
    env = dict(os.environ)
    env.pop("TRACELOOM_EXPORT_READ", None)
    env.pop("TRACELOOM_EXPORT_THREADS", None)
    if read:
        env["TRACELOOM_EXPORT_READ"] = read
    if threads:
        env["TRACELOOM_EXPORT_THREADS"] = threads
    r = subprocess.run([str(cli), "export-perfetto", str(db), "--output", str(out), *map(str, extra)],
                       capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stderr
    return out.read_bytes()


@pytest.fixture(scope="module")
def core_cases(cli, fixtures, analyses, tmp_path_factory):
    """Analyses for the core-against-views comparison: the fixtures above, a graph replay
    (exact members), the execution-linked context profile, and the demo when it is built."""
    root = tmp_path_factory.mktemp("perfetto_core")
    cases = dict(analyses)
    extra = {"aclgraph_smoke/mono": [], "context_gen/graph/PROF_0": []}
    ctx = fixtures / "context_gen" / "graph" / "context"
    for f in sorted(ctx.glob("*.jsonl")) if ctx.exists() else []:
        extra["context_gen/graph/PROF_0"] += ["--context", f]
    for name, args in extra.items():
        if (fixtures / name).exists():
            db = root / (name.replace("/", "_") + ".db")
            r = run(cli, fixtures / name, "--output", db, *args)
            assert r.returncode == 0, r.stderr
            cases[name] = db
    demo = pathlib.Path(__file__).resolve().parents[2] / "build" / "demo"
    for name in ("analysis.db", "graph.db"):
        if (demo / name).exists():
            cases["demo/" + name] = demo / name
    return cases


def test_core_reads_give_what_the_views_give(cli, core_cases, tmp_path):
    """The exporter reads the stored core (traceloom_node_core, ..._occurrence_core,
    ..._anchor_core, ..._event_core, the runtime call and relation cores and their shapes)
    by integer keys and derives what the public views derive (pf_read.c); with
    TRACELOOM_EXPORT_READ=views it reads the views. Both give the same bytes, protobuf and
    JSON, on every fixture analysis, a graph replay, the scheduler context, two ranks and the
    demo: the two readings cannot drift apart. The core read in turn on the caller's
    connection (TRACELOOM_EXPORT_THREADS=1: its rows fetched column by column) and by the
    worker readers on connections of their own (rows fed through the exporter's aggregate
    function, pf_read.c each_row) gives the same bytes too."""
    assert len(core_cases) >= 10
    for name, db in core_cases.items():
        for suffix in (".pftrace", ".json"):
            core = export_reading(cli, db, tmp_path / f"core{suffix}", None)
            views = export_reading(cli, db, tmp_path / f"views{suffix}", "views")
            assert core == views, (name, suffix)
            alone = export_reading(cli, db, tmp_path / f"alone{suffix}", None, threads="1")
            assert core == alone, (name, suffix, "threads")
    if "two_ranks/PROF_0" in core_cases and "two_ranks/PROF_1" in core_cases:
        ranks = ["--rank", f"0={core_cases['two_ranks/PROF_0']}",
                 "--rank", f"1={core_cases['two_ranks/PROF_1']}"]
        for suffix in (".pftrace", ".json"):
            core = export_reading(cli, core_cases["two_ranks/PROF_0"], tmp_path / f"rc{suffix}", None, *ranks)
            views = export_reading(cli, core_cases["two_ranks/PROF_0"], tmp_path / f"rv{suffix}", "views", *ranks)
            assert core == views, ("two ranks", suffix)


def test_core_nodes_out_of_display_order(cli, analyses, tmp_path):
    """The core read puts node rows straight into place while they come in display order
    (node_n order is local_n order in an analysis of this version) and moves those read back
    to be sorted at the first that does not (pf_read.c undo_direct). With local_n turned so
    that the display order drops after the 12th node, the core read gives the slices of the
    views read (which sorts on its own), the same bytes with one thread, and not the unturned
    bytes. The turned core breaks the invariant local_n = node_n - first + 1 on purpose, and
    traceloom_v_tree_node reads its display order as that position (sql/views/30_structure.sql),
    so there the children of a node keep their stored order: the two reads then differ in the
    topology signatures only (children in display order), which the comparison leaves out."""
    src = analyses["gen/ascend_s5_l3_k6"]
    db = tmp_path / "turned.db"
    shutil.copy(src, db)
    turn = "CASE WHEN {0} > 12 THEN {0} - 12 ELSE {0} + 100 END"
    con = sqlite3.connect(db)
    # (a parent's local_n is read from its own row: turned with it)
    con.execute(f"UPDATE traceloom_node_core SET local_n = {turn.format('local_n')}")
    con.commit()
    con.close()
    local = [r[0] for r in query(db, "SELECT local_n FROM traceloom_node_core ORDER BY node_n")]
    assert len(local) > 13 and local[:12] == sorted(local[:12]) and local[12] < local[11]
    def without_topology(raw):
        trace = json.loads(raw)
        for event in trace["traceEvents"] if isinstance(trace, dict) else trace:
            event.get("args", {}).pop("topology_signature_sha256", None)
        return trace

    core_json = export_reading(cli, db, tmp_path / "core.json", None)
    views_json = export_reading(cli, db, tmp_path / "views.json", "views")
    assert without_topology(core_json) == without_topology(views_json)
    for suffix in (".pftrace", ".json"):
        core = export_reading(cli, db, tmp_path / f"core{suffix}", None)
        assert core == export_reading(cli, db, tmp_path / f"alone{suffix}", None, threads="1"), suffix
        assert core != export_reading(cli, src, tmp_path / f"plain{suffix}", None), suffix


def test_the_export_reads_the_core_not_the_views(cli, analyses, tmp_path):
    """The default export really reads the stored core: with the public occurrence, node,
    anchor and runtime call views emptied it writes the same bytes, while reading the views
    (TRACELOOM_EXPORT_READ=views) sees the emptied relations."""
    db = tmp_path / "a.db"
    shutil.copy(analyses["gen/ascend_s5_l3_k6"], db)
    want = export_reading(cli, db, tmp_path / "want.pftrace", None)
    con = sqlite3.connect(db)
    for view in ("traceloom_position_occurrence", "traceloom_v_tree_node", "traceloom_anchor",
                 "traceloom_runtime_call"):
        cols = [r[1] for r in con.execute(f"PRAGMA table_info({view})")]
        con.executescript(f"DROP VIEW {view}; CREATE VIEW {view} AS SELECT " +
                          ", ".join(f"NULL AS {c}" for c in cols) + " WHERE 0;")
    con.close()
    assert query(db, "SELECT count(*) FROM traceloom_position_occurrence")[0][0] == 0
    assert export_reading(cli, db, tmp_path / "got.pftrace", None) == want
    env = {**os.environ, "TRACELOOM_EXPORT_READ": "views"}
    r = subprocess.run([str(cli), "export-perfetto", str(db), "--output", str(tmp_path / "v.pftrace")],
                       capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode != 0 or (tmp_path / "v.pftrace").read_bytes() != want


def test_core_damage_is_named(cli, analyses, tmp_path):
    """A core that breaks its own conventions fails the export with the row it names: an
    occurrence whose node row is gone, an atom whose anchor is gone (no time to draw)."""
    cases = [("DELETE FROM traceloom_node_core WHERE node_n = (SELECT max(node_n) FROM traceloom_node_core)",
              r"traceloom_position_occurrence \d+ \(node_n \d+\) has no traceloom_v_tree_node row"),
             ("DELETE FROM traceloom_anchor_core WHERE anchor_n = (SELECT max(anchor_first_n) FROM "
              "traceloom_position_occurrence_core WHERE occurrence_n NOT IN "
              "(SELECT occurrence_n FROM traceloom_position_occurrence_body))",
              r"occurrence_n \d+ \(node_n \d+\) has no start_ns/end_ns")]
    for k, (sql, msg) in enumerate(cases):
        db = tmp_path / f"d{k}.db"
        shutil.copy(analyses["gen/ascend_s5_l3_k6"], db)
        con = sqlite3.connect(db)
        assert con.execute(sql).rowcount == 1
        con.commit()
        con.close()
        out = tmp_path / f"d{k}.pftrace"
        r = subprocess.run([str(cli), "export-perfetto", str(db), "--output", str(out)],
                           capture_output=True, text=True, timeout=300,
                           env={k2: v for k2, v in os.environ.items() if k2 != "TRACELOOM_EXPORT_READ"})
        assert r.returncode != 0 and re.search(msg, r.stderr), r.stderr
        assert not out.exists()


def test_node_rows_out_of_display_order_give_the_same_bytes(cli, analyses, tmp_path):
    """Read from the views (TRACELOOM_EXPORT_READ=views), the tree nodes are taken as the
    view gives them and put in display order in C when they are not in it already: a view
    that lists them backwards exports the same bytes (two devices in the Hygon profile, a
    deep loop tree in the generated one)."""
    names = [n for n in ("hygon/hipprof.db", "gen/ascend_s3_l6_k8") if n in analyses]
    assert names
    for name in names:
        db = tmp_path / (name.replace("/", "_") + ".db")
        shutil.copy(analyses[name], db)  # one path: the metadata names the analysis file
        want = {}
        for suffix in (".json", ".pftrace"):
            want[suffix] = tmp_path / f"want{suffix}"
            export_reading(cli, db, want[suffix], "views")
        con = sqlite3.connect(db)
        sql = con.execute("SELECT sql FROM sqlite_master WHERE name = 'traceloom_v_tree_node'").fetchone()[0]
        con.executescript(sql.replace("traceloom_v_tree_node", "tree_node_as_published", 1) + ";" + """
            DROP VIEW traceloom_v_tree_node;
            CREATE VIEW traceloom_v_tree_node AS SELECT * FROM tree_node_as_published
                ORDER BY db_idx DESC, device_id DESC, display_order DESC;""")
        con.close()
        order = query(db, "SELECT db_idx, device_id, display_order FROM traceloom_v_tree_node")
        assert len(order) > 2 and order == sorted(order, reverse=True), "listed backwards"
        for suffix in (".json", ".pftrace"):
            got = tmp_path / f"got{suffix}"
            assert export_reading(cli, db, got, "views") == want[suffix].read_bytes(), (name, suffix)


def test_protobuf_halves_encoded_in_parallel_give_the_same_bytes(cli, chunked_db, tmp_path):
    """Large protobuf exports encode their second half of lanes on a worker thread into a
    temporary file that is copied after the first: same bytes as one thread, no file left."""
    for suffix in (".pftrace", ".pftrace.gz"):
        out = {}
        for threads in ("1", "2"):
            out[threads] = tmp_path / f"t{threads}{suffix}"
            assert export_with_threads(cli, chunked_db, out[threads], threads) > 20000
        assert out["1"].read_bytes() == out["2"].read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        f"t{n}{s}" for n in "12" for s in (".pftrace", ".pftrace.gz"))


@pytest.mark.parametrize("suffix", [".json", ".json.gz", ".pftrace", ".pftrace.gz"])
def test_unwritable_output_fails_cleanly(cli, analyses, tmp_path, suffix):
    db = analyses["gen/ascend_s5_l3_k6"]
    # The CLI makes a missing folder of the output (as for the analysis's --output), so the
    # unwritable place is one that refuses new files even to root: /sys.
    out = pathlib.Path("/sys") / ("t" + suffix)
    r = run(cli, "export-perfetto", db, "--output", out)
    assert r.returncode == 1
    assert "cannot create a temporary file" in r.stderr and "Permission denied" in r.stderr
    assert not out.exists()
    # Where a folder cannot be made (a file is in the way), nothing is left behind either.
    (tmp_path / "plain").write_text("")
    r = run(cli, "export-perfetto", db, "--output", tmp_path / "plain" / "sub" / ("t" + suffix))
    assert r.returncode == 1 and f"cannot create the folder {tmp_path / 'plain'}" in r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plain"]


def test_write_error_midway_leaves_no_file(cli, chunked_db, tmp_path):
    """A write that fails after the deflate threads started (file size limit) fails the
    export with the OS error and removes the temporary file."""
    import resource
    import signal

    def limit():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))

    for name in ("big.json", "big.json.gz", "big.pftrace"):
        out = tmp_path / name
        out.write_bytes(b"previous export")
        r = subprocess.run([str(cli), "export-perfetto", str(chunked_db), "--output", str(out)],
                           capture_output=True, text=True, timeout=300, preexec_fn=limit)
        assert r.returncode == 1, r.stdout
        assert "cannot write" in r.stderr
        assert out.read_bytes() == b"previous export"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.json", "big.json.gz", "big.pftrace"]
