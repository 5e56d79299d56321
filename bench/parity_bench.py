#!/usr/bin/env python3
"""Ours against the reference TraceLoom 0.1.4 on the same ~1M-task Ascend profile, in one run.

  bench/parity_bench.py [--build build] [--rows 1000000] [--record]

Generates (cached under bench/out/parity_ascend_<rows>/) an Ascend monolithic profile of
--rows kernel rows with the shape of bench/measure.py (32 layers, 11 operators, 2 prefill
steps), then analyses it with our CLI and with the reference CLI (installed into
build/refvenv by tools/parity.py, or TRACELOOM_REF_BIN), each as a child process timed with
os.wait4: wall time, CPU time (user + system), peak RSS, and the size of the database each
writes by default (the reference copies the raw profile tables into its database; ours
references them). Prints the three ratios against the acceptance of issue 19: ours at least
10x faster, 20x less memory and 10x smaller. --record appends the result to
bench/RESULTS.md with the machine, date and load.

The reference needs about 13 GB of RAM at 1M tasks; run it when the machine is quiet.
Without the reference (no wheel for the platform, no network) it prints why and exits 0.
"""
import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import parity  # noqa: E402

SHAPE = ["--layers", "32", "--ops", "11", "--prefill-steps", "2", "--seed", "1"]
TARGETS = {"time": 10.0, "rss": 20.0, "size": 10.0}


def run_timed(cmd):
    """(wall s, cpu s, peak RSS KiB, exit status, last stderr line) of one child process."""
    with tempfile.TemporaryFile() as err:
        t0 = time.monotonic()
        p = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(p.pid, 0)
        wall = time.monotonic() - t0
        err.seek(0)
        tail = err.read().decode(errors="replace").strip().splitlines()[-1:] or [""]
        return (wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss,
                os.waitstatus_to_exitcode(status), tail[0])


def profile(rows):
    d = os.path.join(ROOT, "bench", "out", f"parity_ascend_{rows}")
    args = ["--format", "ascend", "--rows", str(rows)] + SHAPE
    stamp = os.path.join(d, "bench_stamp.json")
    if not (os.path.isfile(stamp) and json.load(open(stamp)) == args):
        shutil.rmtree(d, ignore_errors=True)
        subprocess.run([sys.executable, os.path.join(ROOT, "tools", "genprofile.py"), "--out", d,
                        "--quiet"] + args, check=True)
        with open(stamp, "w") as f:
            json.dump(args, f)
    truth = json.load(open(os.path.join(d, "ground_truth.json")))
    return d, os.path.join(d, "PROF_0", "msprof_0.db"), truth


def load():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--record", action="store_true")
    a = ap.parse_args(argv)
    build = os.path.abspath(a.build)
    ref, why = parity.reference_binary(build)
    if ref is None:
        print(f"parity bench: SKIPPED: the reference traceloom=={parity.REF_VERSION} is not available ({why})")
        return 0
    folder, db, truth = profile(a.rows)
    tasks = truth["ranks"][0]["tables"]["TASK"] if "tables" in truth["ranks"][0] else None
    work = os.path.join(build, "bench", "parity")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    ours_db, ref_db = os.path.join(work, "ours.db"), os.path.join(work, "ref.db")
    load_before = load()
    ours = run_timed([os.path.join(build, "traceloom"), db, "--output", ours_db])
    theirs = run_timed([ref, db, "--output", ref_db])
    load_after = load()
    for name, r in (("ours", ours), ("reference", theirs)):
        if r[3] != 0:
            print(f"parity bench: {name} failed (exit {r[3]}): {r[4]}", file=sys.stderr)
            return 1
    size_ours, size_ref = os.path.getsize(ours_db), os.path.getsize(ref_db)
    ratio = {"time": theirs[0] / ours[0], "cpu": theirs[1] / ours[1], "rss": theirs[2] / ours[2],
             "size": size_ref / size_ours}
    lines = [
        f"profile: {folder} ({tasks if tasks else a.rows} TASK rows, genprofile --rows {a.rows} {' '.join(SHAPE)})",
        f"{'':10s} {'wall s':>9s} {'cpu s':>9s} {'peak RSS MB':>12s} {'database MB':>12s}",
        f"{'ours':10s} {ours[0]:9.1f} {ours[1]:9.1f} {ours[2] / 1024:12.0f} {size_ours / 2**20:12.0f}",
        f"{'reference':10s} {theirs[0]:9.1f} {theirs[1]:9.1f} {theirs[2] / 1024:12.0f} {size_ref / 2**20:12.0f}",
        f"ratio (reference / ours): time {ratio['time']:.1f}x (cpu {ratio['cpu']:.1f}x), "
        f"memory {ratio['rss']:.1f}x, size {ratio['size']:.1f}x",
    ]
    ok = all(ratio[k] >= t for k, t in TARGETS.items())
    verdict = ("meets" if ok else "MISSES") + " the issue 19 targets: >= 10x faster, >= 20x less memory, >= 10x smaller"
    lines.append(verdict)
    print("\n".join(lines))
    if a.record:
        with open(os.path.join(ROOT, "bench", "RESULTS.md"), "a") as f:
            f.write(f"\n## {datetime.datetime.utcnow():%Y-%m-%d %H:%M} UTC parity: ours vs the reference "
                    f"TraceLoom {parity.REF_VERSION} (bench/parity_bench.py)\n\n")
            f.write(f"- machine: {os.cpu_count()} CPUs, {platform.machine()}, load average "
                    f"{load_before} before, {load_after} after (shared with other sessions)\n")
            f.write("- both CLIs with their defaults, one after the other, on the same file\n\n```text\n")
            f.write("\n".join(lines) + "\n```\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
