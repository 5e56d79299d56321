#!/usr/bin/env python3
"""Digests of every published relation of TraceLoom analyses, to prove a change kept them.

    tools/analysis_digest.py run  [--build build] [--out digests.json] [--profiles LIST]
    tools/analysis_digest.py db   ANALYSIS.db            # one database, one line per relation
    tools/analysis_digest.py diff OLD.json NEW.json      # exit 1 when any relation differs

`run` analyses every profile of the standard set (the materialized fixtures under
build/fixtures, the demo profiles under build/demo, or a comma-separated list of paths given
with --profiles; a path may be PATH::OPTIONS_JSON) with build/traceloom into a temporary
directory and writes {profile: {relation: digest}}. A relation's digest is the SHA-256 of
its rows in a canonical order (every column, rows sorted), so two builds that
publish the same rows get the same digest however they store them. Relations whose name
ends in _core or _shape (storage, not contract) are skipped unless --storage is given;
traceloom_metadata rows that name times, paths or versions are skipped, and the build
folder's absolute path is removed from every text value (checkouts differ in it).
"""
import argparse
import hashlib
import json
import os
import sqlite3
import subprocess
import sys
import tempfile

VOLATILE_METADATA = {"created_utc", "tool_version", "source_path", "source_paths",
                     "analysis_seconds", "analysis_options"}


def default_profiles(build):
    fx = os.path.join(build, "fixtures")
    out = []
    for rel in [
        "minimal_smoke/mono", "aclgraph_smoke/mono", "aclgraph_smoke/mut_single_slot",
        "exact_hlt/mono", "exact_hlt/split", "exact_hlt/mut_device_order_without_host_api",
        "exact_hlt/mut_incomplete_compute_schema", "exact_hlt/mut_missing_communication_schema",
        "body_mismatch/mono", "body_mismatch/mut_body_sequence_mismatch",
        "split_golden/mono", "split_golden/split", "split_golden/fallback", "two_ranks",
        "torchnpu/single",
        "gen/ascend_s3_l6_k8", "gen/ascend_s5_l3_k6", "gen/ascend_s6_l4_k6_aux",
        "gen/ascend_s8_l4_k5", "gen/nsys_s4_l5_k7", "gen/nsys_s5_l3_k6",
        "gen/nsys_s6_l4_k6_aux", "nsys/nsys_basic.sqlite", "nsys/nsys_graph.sqlite",
        "nsys/nsys_graphtrace.sqlite", "hygon/hipprof.db", "kineto/gpu_basic.pt.trace.json",
        "kineto/cpu_only.pt.trace.json",
    ]:
        p = os.path.join(fx, rel)
        if os.path.exists(p):
            out.append(p)
    for demo in ("demo/profile", "demo/graph_profile"):
        p = os.path.join(build, demo)
        if os.path.exists(p):
            out.append(p)
    return out


def relation_digests(db_path, storage=False, strip=None):
    con = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    names = [r[0] for r in con.execute(
        "SELECT name FROM sqlite_master WHERE type IN ('table','view') AND name LIKE 'traceloom%' "
        "ORDER BY name")]
    out = {}
    for name in names:
        if not storage and (name.endswith("_core") or name.endswith("_shape")):
            continue
        cols = [r[1] for r in con.execute(f'PRAGMA table_xinfo("{name}")') if r[6] in (0, 2, 3)]
        if not cols:
            continue
        sel = ", ".join(f'"{c}"' for c in cols)
        where = ""
        if name == "traceloom_metadata":
            where = " WHERE key NOT IN (%s)" % ",".join(f"'{k}'" for k in sorted(VOLATILE_METADATA))
        h = hashlib.sha256()
        n = 0
        try:
            rows = con.execute(f'SELECT {sel} FROM "{name}"{where}').fetchall()
            if strip:  # absolute paths of the inputs differ between checkouts
                rows = [tuple(v.replace(strip, "") if isinstance(v, str) else v for v in r)
                        for r in rows]
            for row in sorted(rows, key=repr):
                h.update(repr(row).encode())
                n += 1
        except sqlite3.Error as exc:
            out[name] = f"error: {exc}"
            continue
        out[name] = f"{n}:{h.hexdigest()[:16]}"
    con.close()
    return out


def run(args):
    profiles = args.profiles.split(",") if args.profiles else default_profiles(args.build)
    cli = os.path.join(args.build, "traceloom")
    result = {}
    with tempfile.TemporaryDirectory() as tmp:
        for i, spec in enumerate(profiles):
            path, _, opts = spec.partition("::")
            out = os.path.join(tmp, f"a{i}.db")
            cmd = [cli, path, "--output", out]
            if opts:
                cmd += ["--options", opts]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            key = os.path.relpath(path, args.build) + (f"::{opts}" if opts else "")
            if proc.returncode != 0:
                result[key] = {"__error__": proc.stderr.strip()[-300:]}
                continue
            result[key] = relation_digests(out, args.storage, os.path.abspath(args.build))
    text = json.dumps(result, indent=1, sort_keys=True)
    if args.out:
        with open(args.out, "w") as f:
            f.write(text + "\n")
    else:
        print(text)
    return 0


def diff(args):
    a = json.load(open(args.old))
    b = json.load(open(args.new))
    bad = 0
    for prof in sorted(set(a) | set(b)):
        ra, rb = a.get(prof, {}), b.get(prof, {})
        for rel in sorted(set(ra) | set(rb)):
            if ra.get(rel) != rb.get(rel):
                bad += 1
                print(f"{prof}: {rel}: {ra.get(rel, 'absent')} -> {rb.get(rel, 'absent')}")
    print(f"{bad} difference(s)")
    return 1 if bad else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("--build", default=os.environ.get("BUILD", "build"))
    r.add_argument("--out")
    r.add_argument("--profiles")
    r.add_argument("--storage", action="store_true")
    d = sub.add_parser("db")
    d.add_argument("db")
    d.add_argument("--storage", action="store_true")
    d.add_argument("--strip", help="a path prefix to remove from every text value")
    x = sub.add_parser("diff")
    x.add_argument("old")
    x.add_argument("new")
    args = ap.parse_args()
    if args.cmd == "run":
        return run(args)
    if args.cmd == "db":
        for k, v in relation_digests(args.db, args.storage, args.strip).items():
            print(k, v)
        return 0
    return diff(args)


if __name__ == "__main__":
    sys.exit(main())
