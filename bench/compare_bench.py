#!/usr/bin/env python3
"""What comparing two analyses costs, measured against reading both analyses' tree tables.

    python3 bench/compare_bench.py [--rows 1000000] [--build build] [--repeat 3] [--record]

Generates (cached under bench/out/compare/) two pairs of Ascend profiles of --rows kernel rows
each, with the shape of bench/measure.py (32 layers, 11 operators, 2 prefill steps, seed 1):

  clean   no noise, auxiliary or missing rows: the loop tree is a few dozen nodes;
  noisy   the generator's defaults (1% noise and 5% auxiliary kernels, 0.1% missing rows):
          sporadic kernels break the repeats, so the tree has ~500,000 nodes, most of them
          children of the root;

each as a base and a new run with decode attention in layer 5 made 10% slower
(--slow-op decode_attention@5=1.1), analyses them with the CLI (cached while newer than the
CLI), then times, as separate processes, in this run:

  read    the sqlite3 shell reading, in both analyses, every column traceloom_compare reads
          from traceloom_semantic_tree, traceloom_viz_node, traceloom_position_refinement and
          traceloom_position_occurrence (sum() of each: every value is read, nothing kept);
  compare SELECT traceloom_compare(BASE, '{"new": NEW}') into a fresh database (journal and
          synchronous off), which reads the same rows, aligns, and publishes its tables.

It prints wall and CPU seconds (best of --repeat), the ratio compare / read (target <= 2) and
whether the slowed operator ranks first, so a fast wrong answer does not count. --record
appends the results to bench/RESULTS.md.
"""

import argparse
import datetime
import os
import platform
import sqlite3
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHAPE = ["--layers", "32", "--ops", "11", "--prefill-steps", "2", "--seed", "1"]
CLEAN = ["--noise", "0", "--aux", "0", "--missing", "0"]
EDIT = ["--slow-op", "decode_attention@5=1.1"]
TARGET = 2.0

READ_SQL = """
SELECT count(*), sum(db_idx), sum(device_id), sum(length(root_node_id)) FROM {s}.traceloom_semantic_tree;
SELECT count(*), sum(length(node_id)), sum(db_idx), sum(device_id), sum(length(node_type)),
       sum(length(symbol)), sum(length(label)), sum(repeat_count) FROM {s}.traceloom_viz_node;
SELECT count(*), sum(length(parent_position_id)), sum(slot_ordinal), sum(length(child_position_id)),
       sum(db_idx), sum(device_id) FROM {s}.traceloom_position_refinement;
SELECT count(*), sum(occurrence_n), sum(parent_n), sum(db_idx), sum(device_id), sum(slot_ordinal),
       sum(repeat_iteration), sum(compute_us), sum(comm_us), sum(idle_us)
  FROM {s}.traceloom_position_occurrence;
"""


def generate(out, args):
    if not os.path.exists(os.path.join(out, "ground_truth.json")):
        subprocess.run([sys.executable, os.path.join(ROOT, "tools", "genprofile.py"), "--out", out,
                        "--quiet", *args], check=True)


def analyse(cli, profile, out):
    if not os.path.exists(out) or os.path.getmtime(out) < os.path.getmtime(cli):
        subprocess.run([cli, profile, "--output", out], check=True, capture_output=True)


def timed(cmd, stdin=None):
    """(wall seconds, CPU seconds) of one child process."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE if stdin else None, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, text=True)
    _, err = p.communicate(stdin)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit("failed: %s\n%s" % (" ".join(cmd), err[-2000:]))
    return wall


def best(repeat, fn):
    runs = []
    for _ in range(repeat):
        r0 = os.times()
        wall = fn()
        r1 = os.times()
        runs.append((wall, (r1.children_user - r0.children_user) + (r1.children_system - r0.children_system)))
    return min(r[0] for r in runs), min(r[1] for r in runs)


def case(args, name, extra):
    out = os.path.join(ROOT, "bench", "out", "compare")
    os.makedirs(out, exist_ok=True)
    cli = os.path.join(ROOT, args.build, "traceloom")
    dbs = []
    for side, edit in (("base", []), ("new", EDIT)):
        prof = os.path.join(out, "%s_%s_%d" % (name, side, args.rows))
        generate(prof, ["--format", "ascend", "--rows", str(args.rows)] + SHAPE + extra + edit)
        db = prof + ".db"
        analyse(cli, prof, db)
        dbs.append(db)
    base, new = dbs
    read_script = ("ATTACH '%s' AS a; ATTACH '%s' AS b;\n" % (base, new)) + \
        READ_SQL.format(s="a") + READ_SQL.format(s="b")
    read = best(args.repeat, lambda: timed(["sqlite3", ":memory:"], read_script))
    target = os.path.join(out, "compare_%s.db" % name)

    def run_compare():
        if os.path.exists(target):
            os.remove(target)
        return timed(["sqlite3", "-cmd", ".load " + os.path.join(ROOT, args.build, "traceloom"), target,
                      "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; "
                      "SELECT traceloom_compare('%s', '{\"new\": \"%s\"}');" % (base, new)])
    cmp = best(args.repeat, run_compare)
    db = sqlite3.connect(target)
    top = db.execute("SELECT n.new_symbol, r.effect FROM traceloom_compare_rank r JOIN "
                     "traceloom_compare_node n ON n.node_key = r.node_key WHERE r.rank = 1").fetchone()
    nodes = db.execute("SELECT count(*) FROM traceloom_compare_node").fetchone()[0]
    occ = sqlite3.connect(base).execute("SELECT count(*) FROM traceloom_position_occurrence").fetchone()[0]
    db.close()
    return {"case": name, "read": read, "compare": cmp, "nodes": nodes, "occurrences": occ,
            "top": top, "ok": top == ("IncreFlashAttention", "slower")}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, default=int(os.environ.get("BENCH_COMPARE_ROWS", 1_000_000)))
    p.add_argument("--build", default="build")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--record", action="store_true")
    args = p.parse_args()
    results = [case(args, "clean", CLEAN), case(args, "noisy", [])]
    lines = ["| case | occurrences per analysis | compared nodes | read both (wall / CPU s) | "
             "compare (wall / CPU s) | ratio wall / CPU (target <= %.0f) | top change |" % TARGET,
             "|---|---:|---:|---:|---:|---:|---|"]
    for r in results:
        rw, rc = r["compare"][0] / r["read"][0], r["compare"][1] / r["read"][1]
        lines.append("| %s | %d | %d | %.2f / %.2f | %.2f / %.2f | %.2f / %.2f %s | %s %s |" % (
            r["case"], r["occurrences"], r["nodes"], r["read"][0], r["read"][1], r["compare"][0],
            r["compare"][1], rw, rc, "PASS" if max(rw, rc) <= TARGET else "FAIL",
            " ".join(map(str, r["top"] or ())), "(right)" if r["ok"] else "(WRONG)"))
    print("\n".join(lines))
    if args.record:
        with open(os.path.join(ROOT, "bench", "RESULTS.md"), "a") as f:
            f.write("\n## %s traceloom_compare of two %d-row analyses (bench/compare_bench.py)\n\n"
                    % (datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"), args.rows))
            f.write("- machine: %d CPUs (nproc), %s, load average %.1f at the end; best of %d\n\n"
                    % (os.cpu_count() or 0, platform.machine(), os.getloadavg()[0], args.repeat))
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
