#!/usr/bin/env python3
"""What exact graph replay reconstruction costs, measured against the same analysis without it.

    python3 bench/replay_bench.py [--rows 10000000] [--build build] [--repeat 1] [--record]

Generates (cached under bench/out/) an Ascend ACL-graph decode profile (tools/genprofile.py
--graph --graph-layers shared: per decode step a head, 36 layer and a tail launch), then runs
the CLI on it twice per repeat: with reconstruction (the default) and with
{"graph_replay": false}, where the launches and their member kernels stay eager work. It prints
both end-to-end times (best of --repeat) and CPU seconds, their ratios (target:
reconstruction adds at most 20%), the reconstruction stage and the replay publication from TRACELOOM_TIMING, peak RSS, and
checks the result against the ground truth (every launch promoted, member count exact), so a
fast wrong answer does not count. A second, small case times a CUDA graph (Nsight, node-level
trace) of 5 replays x 10,000 members.
"""

import argparse
import datetime
import json
import os
import platform
import re
import sqlite3
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROWS_PER_STEP = 666  # measured: 36 shared layers, 11 ops, one rank


def generate(out, args):
    truth = os.path.join(out, "ground_truth.json")
    if not os.path.exists(truth):
        subprocess.run([sys.executable, os.path.join(ROOT, "tools", "genprofile.py"), "--out", out,
                        "--quiet", *args], check=True)
    with open(truth) as f:
        return json.load(f)


def run_cli(build, profile, out, options=None):
    if os.path.exists(out):
        os.remove(out)
    cmd = [os.path.join(ROOT, build, "traceloom"), profile, "--output", out]
    if options:
        cmd += ["--options", options]
    env = dict(os.environ, TRACELOOM_TIMING="1")
    rss_file = out + ".rss"
    t0 = time.perf_counter()
    r = subprocess.run(["/usr/bin/time", "-f", "%M %U %S", "-o", rss_file] + cmd,
                       capture_output=True, text=True, env=env)
    dt = time.perf_counter() - t0
    if r.returncode != 0:
        sys.exit("traceloom failed: %s" % r.stderr[-2000:])
    with open(rss_file) as f:
        rss_kib, user_s, sys_s = f.read().split()[-3:]
    os.remove(rss_file)
    stages = {m.group(1).strip(): float(m.group(2))
              for m in re.finditer(r"traceloom timing: (.+?)\s+([0-9.]+) s", r.stderr)}
    # CPU seconds (user + system): other work on a shared machine stretches the wall time
    return dt, stages, int(rss_kib) / 1024.0, float(user_s) + float(sys_s)


def check(out, truth, kind):
    db = sqlite3.connect("file:%s?mode=ro" % out, uri=True)
    if kind == "acl":
        launches = sum(r["graph"]["launches"] for r in truth["ranks"])
        members = sum(r["graph"]["member_tasks"] for r in truth["ranks"])
    else:
        launches = sum(len(r["cuda_graph"]["launches"]) for r in truth["ranks"])
        members = sum(r["cuda_graph"]["expected"]["members"] for r in truth["ranks"])
    got_l = db.execute("SELECT count(*) FROM traceloom_graph_launch WHERE replay_unit_id IS NOT NULL").fetchone()[0]
    got_m = db.execute("SELECT count(*) FROM traceloom_graph_body_member").fetchone()[0]
    db.close()
    ok = got_l == launches and got_m == members
    return ok, "%d/%d launches promoted, %d/%d members" % (got_l, launches, got_m, members)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=int, default=int(os.environ.get("BENCH_REPLAY_ROWS", 10_000_000)))
    p.add_argument("--build", default="build")
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--record", action="store_true")
    a = p.parse_args()
    out_dir = os.path.join(ROOT, "bench", "out")
    os.makedirs(out_dir, exist_ok=True)
    steps = max(3, a.rows // ROWS_PER_STEP)
    prof = os.path.join(out_dir, "acl_graph_%d" % steps)
    t0 = time.perf_counter()
    truth = generate(prof, ["--format", "ascend", "--graph", "--graph-layers", "shared", "--decode-steps",
                            str(steps), "--prefill-steps", "1", "--layers", "36", "--ops", "11",
                            "--ranks", "1", "--seed", "5"])
    gen_s = time.perf_counter() - t0
    db = os.path.join(a.build, "bench", "replay.db")
    os.makedirs(os.path.dirname(db), exist_ok=True)
    best = {}
    for _ in range(a.repeat):
        for mode, opts in (("with", None), ("without", '{"graph_replay": false}')):
            dt, stages, rss, cpu = run_cli(a.build, prof, db, opts)
            if mode == "with":
                ok, detail = check(db, truth, "acl")
            if mode not in best or dt < best[mode][0]:
                best[mode] = (dt, stages, rss, cpu)
    w, wo = best["with"], best["without"]
    recon = w[1].get("reconstructing graph replays", 0.0)
    pub = w[1].get("publish replays", 0.0)
    ratio = w[0] / wo[0]
    load = os.getloadavg()[0]
    lines = [
        "- machine: %d CPUs (nproc), %s" % (os.cpu_count(), platform.processor() or platform.machine()),
        "- ACL graph profile: %d kernel rows (%d decode steps x 38 launches), generated in %.1f s"
        % (truth["kernel_rows"], steps, gen_s),
        "- with reconstruction: %.2f s, %.2f s CPU (reconstruction %.2f s, replay publication %.2f s), "
        "peak RSS %.0f MiB" % (w[0], w[3], recon, pub, w[2]),
        "- without (`{\"graph_replay\": false}`): %.2f s, %.2f s CPU, peak RSS %.0f MiB"
        % (wo[0], wo[3], wo[2]),
        "- ratio with / without: %.3f (target <= 1.20: %s), in CPU seconds %.3f; load average %.1f "
        "at the end; ground truth: %s (%s)"
        % (ratio, "PASS" if ratio <= 1.20 else "FAIL", w[3] / wo[3], load, "PASS" if ok else "FAIL",
           detail),
    ]
    # CUDA graph: 5 replays of a graph of ~10,000 kernels and memcpys (Nsight node-level).
    cprof = os.path.join(out_dir, "cuda_graph_5x10k")
    ctruth = generate(cprof, ["--format", "nsys", "--cuda-graph", "node", "--decode-steps", "5",
                              "--prefill-steps", "1", "--layers", "320", "--ops", "30", "--ranks", "1",
                              "--seed", "9"])
    cdt, cst, crss, ccpu = run_cli(a.build, cprof, db)
    cok, cdetail = check(db, ctruth, "cuda")
    lines.append("- CUDA graph (Nsight node-level, %d kernel rows): %.2f s (%.2f s CPU), reconstruction "
                 "%.3f s, peak RSS %.0f MiB; ground truth: %s (%s)"
                 % (ctruth["kernel_rows"], cdt, ccpu, cst.get("reconstructing graph replays", 0.0), crss,
                    "PASS" if cok else "FAIL", cdetail))
    print("\n".join(lines))
    if a.record:
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        with open(os.path.join(ROOT, "bench", "RESULTS.md"), "a") as f:
            f.write("\n## %s graph replay reconstruction (bench/replay_bench.py)\n\n" % stamp)
            f.write("\n".join(lines) + "\n")
    return 0 if ok and cok else 1


if __name__ == "__main__":
    sys.exit(main())
