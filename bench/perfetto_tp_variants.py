#!/usr/bin/env python3
"""What Perfetto's trace processor spends importing our protobuf trace (issue 23), measured
on variants of the same trace: each variant changes one thing in how the content is encoded
(or drops a part of the content, to size it), and the trace processor's own CPU seconds to
import it are compared with the JSON of the same analysis.

  .venv-perfetto/bin/python bench/perfetto_tp_variants.py TRACE.pftrace TRACE.json [--repeat 2]

Runs in the perfetto venv (the official perfetto protos decode and re-encode the trace). Each
variant is imported by tests/python/tp_probe.py (the wasm trace processor under node): the
import's wall seconds and node's CPU seconds (start-up included; the "empty" row is the
start-up alone), best of --repeat, and the slice, flow and arg counts it imported.
Memory: every variant is a copy of the whole trace as Python objects (the 1M-task bench
trace took 23 GB at its peak; use the 100,000-task profile).
"""
import argparse
import copy
import json
import os
import pathlib
import subprocess
import sys
import tempfile

from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb

ROOT = pathlib.Path(__file__).resolve().parents[1]
CHECK = os.environ.get("TRACELOOM_PERFETTO_CHECK", str(ROOT.parent / "shared" / "tools" / "perfetto-check"))


def probe(path, repeat):
    req = {"trace": str(path), "queries": {
        "n": "select count(*) n, max(depth) depth from slice",
        "flows": "select count(*) n from flow",
        "args": "select count(*) n from args",
        "bad": "select name, value from stats where value > 0 and severity in ('error', 'data_loss')"}}
    best = None
    for _ in range(repeat):
        r = subprocess.run([sys.executable, str(ROOT / "tests" / "python" / "tp_probe.py")],
                           input=json.dumps(req), capture_output=True, text=True, check=True,
                           env={**os.environ, "TRACELOOM_PERFETTO_CHECK": CHECK})
        out = json.loads(r.stdout)
        if best is None or out["cpu_s"] < best["cpu_s"]:
            best = out
    return best


def events(trace):
    for k in trace.packet:
        if k.HasField("track_event"):
            yield k


def interned_tables(trace):
    """iid -> text of every interned table, per sequence (names are re-interned per sequence
    with the same iids, so one table serves all)."""
    names, ann, strs, cats = {}, {}, {}, {}
    for k in trace.packet:
        if k.HasField("interned_data"):
            d = k.interned_data
            names.update((e.iid, e.name) for e in d.event_names)
            ann.update((e.iid, e.name) for e in d.debug_annotation_names)
            strs.update((e.iid, e.str) for e in d.debug_annotation_string_values)
            cats.update((e.iid, e.name) for e in d.event_categories)
    return names, ann, strs, cats


def v_noargs(t):
    for k in events(t):
        del k.track_event.debug_annotations[:]


def v_noflows(t):
    for k in events(t):
        del k.track_event.flow_ids[:]
        del k.track_event.terminating_flow_ids[:]


def v_inline_args(t):
    """Debug annotation names and string values as text on every event, not interned."""
    _, ann, strs, _ = interned_tables(t)
    for k in events(t):
        for a in k.track_event.debug_annotations:
            a.name = ann[a.name_iid].decode() if isinstance(ann[a.name_iid], bytes) else ann[a.name_iid]
            if a.HasField("string_value_iid"):
                a.string_value = strs[a.string_value_iid].decode()
    for k in t.packet:
        if k.HasField("interned_data"):
            del k.interned_data.debug_annotation_names[:]
            del k.interned_data.debug_annotation_string_values[:]


def v_zero_args_dropped(t):
    for k in events(t):
        keep = [a for a in k.track_event.debug_annotations
                if not (a.HasField("int_value") and a.int_value == 0)]
        del k.track_event.debug_annotations[:]
        k.track_event.debug_annotations.extend(keep)


def v_absolute_ts(t):
    """Absolute BOOTTIME timestamps on every event instead of the incremental clock."""
    last = {}
    for k in t.packet:
        seq = k.trusted_packet_sequence_id
        if k.HasField("clock_snapshot"):
            k.ClearField("clock_snapshot")
            k.trace_packet_defaults.ClearField("timestamp_clock_id")
            last[seq] = 0
        elif k.HasField("track_event"):
            last[seq] += k.timestamp
            k.timestamp = last[seq]


def v_inline_names(t):
    """Event names and categories as text on every event, not interned."""
    names, _, _, cats = interned_tables(t)
    for k in events(t):
        e = k.track_event
        if e.HasField("name_iid"):
            e.name = names[e.name_iid]
            e.ClearField("name_iid")
        if len(e.category_iids):
            e.categories.extend(cats[i] for i in e.category_iids)
            del e.category_iids[:]
    for k in t.packet:
        if k.HasField("interned_data"):
            del k.interned_data.event_names[:]
            del k.interned_data.event_categories[:]


def v_explicit_track(t):
    """track_uuid on every event instead of TrackEventDefaults."""
    uuid = {}
    for k in t.packet:
        seq = k.trusted_packet_sequence_id
        if k.HasField("trace_packet_defaults"):
            uuid[seq] = k.trace_packet_defaults.track_event_defaults.track_uuid
            k.trace_packet_defaults.ClearField("track_event_defaults")
        elif k.HasField("track_event"):
            k.track_event.track_uuid = uuid[seq]


def v_ts_order(t, absolute=False):
    """Packets in global timestamp order (sequences interleaved, each keeping its order), so
    the trace processor's sorter finds them sorted."""
    last, keyed = {}, []
    for i, k in enumerate(t.packet):
        seq = k.trusted_packet_sequence_id
        if k.HasField("clock_snapshot"):
            last[seq] = 0
            key = 0
        elif k.HasField("track_event"):
            last[seq] += k.timestamp
            key = last[seq]
        else:
            key = 0 if k.HasField("track_descriptor") else float("inf")
        keyed.append((key, i, k))
    keyed.sort(key=lambda x: (x[0], x[1]))
    new = [pb.TracePacket() for _ in keyed]
    for n, (_, _, k) in zip(new, keyed):
        n.CopyFrom(k)
    del t.packet[:]
    t.packet.extend(new)
    if absolute:
        v_absolute_ts(t)


VARIANTS = [("as exported", None), ("no args", v_noargs), ("no flows", v_noflows),
            ("no args, no flows", lambda t: (v_noargs(t), v_noflows(t))),
            ("zero-valued int args left out", v_zero_args_dropped),
            ("arg names and string values inline (not interned)", v_inline_args),
            ("event names and categories inline (not interned)", v_inline_names),
            ("absolute timestamps (no incremental clock)", v_absolute_ts),
            ("track_uuid on every event (no TrackEventDefaults)", v_explicit_track),
            ("packets in timestamp order (sequences interleaved)", v_ts_order),
            ("packets in timestamp order, absolute timestamps", lambda t: v_ts_order(t, True))]


def json_noargs(src, dst):
    with open(src) as f:
        doc = json.load(f)
    evs = doc["traceEvents"] if isinstance(doc, dict) else doc
    for ev in evs:
        if ev.get("ph") != "M":
            ev.pop("args", None)
    with open(dst, "w") as f:
        json.dump(doc, f, separators=(",", ":"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("pftrace")
    ap.add_argument("json")
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--only", help="comma-separated variant names (substring match)")
    a = ap.parse_args()
    base = pb.Trace()
    base.ParseFromString(pathlib.Path(a.pftrace).read_bytes())
    rows = []
    with tempfile.TemporaryDirectory(prefix="tl-tp-variants-") as tmp:
        tmp = pathlib.Path(tmp)
        empty = tmp / "empty.pftrace"
        empty.write_bytes(b"")
        todo = [("empty trace (start-up)", empty), ("JSON", pathlib.Path(a.json))]
        jn = tmp / "noargs.json"
        json_noargs(a.json, jn)
        todo.append(("JSON, no args", jn))
        for i, (name, fn) in enumerate(VARIANTS):
            if a.only and not any(s in name for s in a.only.split(",")):
                continue
            path = tmp / f"v{i}.pftrace"
            if fn is None:
                path = pathlib.Path(a.pftrace)
            else:
                t = copy.deepcopy(base)
                fn(t)
                path.write_bytes(t.SerializeToString())
            todo.append((f"protobuf: {name}", path))
        for name, path in todo:
            r = probe(path, a.repeat)
            n = r["n"][0] if r.get("n") else {"n": 0, "depth": None}
            row = {"variant": name, "MB": path.stat().st_size / 1e6, "load_s": r["load_s"],
                   "cpu_s": r["cpu_s"], "slices": n["n"], "flows": r["flows"][0]["n"],
                   "args": r["args"][0]["n"], "bad": r["bad"]}
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    start = rows[0]["cpu_s"]
    js = rows[1]["cpu_s"] - start
    print("| variant | MB | import wall s | trace processor CPU s | CPU s less start-up | "
          "JSON / this | slices | flows | args |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        net = r["cpu_s"] - start
        ratio = f"{js / net:.2f}x" if net > 0.05 else "-"
        print(f"| {r['variant']} | {r['MB']:.1f} | {r['load_s']:.2f} | {r['cpu_s']:.2f} | "
              f"{net:.2f} | {ratio} | {r['slices']:,} | {r['flows']:,} | {r['args']:,} |")


if __name__ == "__main__":
    main()
