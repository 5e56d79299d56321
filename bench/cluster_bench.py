#!/usr/bin/env python3
"""bench/cluster_bench.py: traceloom.cluster fan-out, 2 Dask workers against 1 (make bench).

Generates (once, cached under bench/out/) a run of BENCH_CLUSTER_RANKS (16) Ascend ranks of
BENCH_CLUSTER_ROWS (250,000) kernel rows each (genprofile --cluster, see SHAPE), then in this
one run:

  single   one rank through the CLI (--threads 1) in a fresh child: its peak RSS is the
           baseline for a worker's peak
  w1       traceloom.cluster.analyze(run, workers=1): a LocalCluster of one worker process
  w2       the same with two worker processes

Each cluster run starts from an empty ranks folder (nothing reused). Ratios against the
baselines of the same run: speedup w1/w2 (target >= 1.7x on 2 cores), the merge (streaming
the extracts into the cluster database) as a share of w2's total (target <= 10%), and the
largest child a worker ran against the single-rank analysis (target within 10%). --record
appends the results to bench/RESULTS.md.

Needs dask and distributed (the test venv has them: .venv/bin/python bench/cluster_bench.py).
"""
import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# A synchronized run with one slow and one late rank, and no noise kernels: every rank's
# tree is the same, as for ranks running one model (noise splits a tree into thousands of
# unrepeated fragments, which is slower to extract and merge; see docs/CLUSTER.md).
SHAPE = ["--cluster", "--slow-rank", "3", "--late-rank", "11", "--prefill-steps", "0",
         "--noise", "0", "--aux", "0", "--missing", "0"]


def generate(out: Path, ranks: int, rows: int) -> None:
    want = {"ranks": ranks, "rows": rows, "shape": SHAPE}
    stamp = out / "bench_params.json"
    if stamp.is_file() and json.loads(stamp.read_text()) == want:
        return
    shutil.rmtree(out, ignore_errors=True)
    subprocess.run([sys.executable, str(ROOT / "tools" / "genprofile.py"), "--format", "ascend",
                    "--out", str(out), "--ranks", str(ranks), "--rows", str(rows), *SHAPE, "--quiet"],
                   check=True)
    stamp.write_text(json.dumps(want))


def single_rank_peak_kb(cli: Path, profile: Path, out: Path) -> tuple:
    code = ("import resource, subprocess, sys, time; t = time.monotonic(); "
            "subprocess.run(sys.argv[1:], check=True, capture_output=True); "
            "print(time.monotonic() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    r = subprocess.run([sys.executable, "-c", code, str(cli), str(profile), "--output", str(out),
                        "--threads", "1"], check=True, capture_output=True, text=True)
    secs, kb = r.stdout.split()
    return float(secs), int(kb)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--record", action="store_true")
    a = ap.parse_args()
    build = (ROOT / a.build).resolve()
    os.environ["TRACELOOM_NATIVE_DIR"] = str(build)
    os.environ["PYTHONPATH"] = os.pathsep.join(
        x for x in (str(ROOT / "python"), os.environ.get("PYTHONPATH")) if x)
    sys.path.insert(0, str(ROOT / "python"))
    import traceloom.cluster as cluster

    ranks = int(os.environ.get("BENCH_CLUSTER_RANKS", "16"))
    rows = int(os.environ.get("BENCH_CLUSTER_ROWS", "250000"))
    run = ROOT / "bench" / "out" / f"cluster_{ranks}x{rows}"
    t0 = time.monotonic()
    generate(run, ranks, rows)
    gen_s = time.monotonic() - t0
    work = build / "bench" / "cluster"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)

    first = sorted(p for p in run.iterdir() if p.name.startswith("PROF_"))[0]
    single_s, single_kb = single_rank_peak_kb(build / "traceloom", first, work / "single.db")

    results = {}
    for workers in (1, 2):
        res = cluster.analyze(run, output=work / f"w{workers}.db", workers=workers,
                              ranks_dir=work / f"w{workers}.ranks", progress=False)
        assert not res.failed, [r.error for r in res.failed]
        peaks = {}
        for r in res.ranks:
            peaks[r.worker] = max(peaks.get(r.worker, 0), r.peak_rss_kb)
        results[workers] = (res, peaks)
    (r1, _), (r2, peaks2) = results[1], results[2]
    speedup = r1.elapsed_s / r2.elapsed_s
    merge_share = r2.merge_s / r2.elapsed_s
    worst = max(peaks2.values())
    mem_ratio = worst / single_kb
    size_mb = (work / "w2.db").stat().st_size / 1e6
    rank_mb = sum(Path(r.analysis_db).stat().st_size for r in r2.ranks) / 1e6
    analysis_sum = sum(r.analysis_s for r in r2.ranks)
    extract_sum = sum(r.extract_s for r in r2.ranks)
    hash_sum = sum(r.hash_s for r in r2.ranks)
    lines = [
        f"- machine: {os.cpu_count()} CPUs, {platform.machine()}; run {ranks} ranks x {rows:,} kernel rows "
        f"(generated in {gen_s:.1f} s, cached)",
        f"- single rank (CLI --threads 1): {single_s:.2f} s, peak RSS {single_kb / 1024:.0f} MB",
        f"- 1 worker: {r1.elapsed_s:.2f} s total, merge {r1.merge_s:.2f} s",
        f"- 2 workers: {r2.elapsed_s:.2f} s total, merge {r2.merge_s:.2f} s; per rank summed: "
        f"hash {hash_sum:.1f} s, analysis {analysis_sum:.1f} s, extract {extract_sum:.1f} s",
        f"- speedup 2 workers / 1: {speedup:.2f}x (target >= 1.7x)",
        f"- merge share of the 2-worker total: {100 * merge_share:.1f}% (target <= 10%)",
        f"- largest analysis child per worker: {', '.join(f'{v / 1024:.0f} MB' for v in peaks2.values())}; "
        f"worst / single rank = {mem_ratio:.3f} (target <= 1.10)",
        f"- cluster database {size_mb:.2f} MB; the {ranks} per-rank analyses {rank_mb:.0f} MB",
    ]
    print("\n".join(lines))
    if a.record:
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        with open(ROOT / "bench" / "RESULTS.md", "a") as f:
            f.write(f"\n## {stamp} cluster fan-out (bench/cluster_bench.py)\n\n" + "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
