#!/usr/bin/env python3
"""Kineto reader throughput, as a ratio to Python's json.load of the same file.

    python3 bench/kineto_bench.py [--ratio-mb 64] [--mb 1024] [--repeat 3] [--build build] [--record]

Writes (once, cached in bench/out/) two traces of about --ratio-mb megabytes of uncompressed
JSON and times, in the same run and as separate processes, each one's CPU time (user + system,
the best of --repeat runs; wall time moves with the machine's load, CPU time much less):

  json.load          python3 -c 'json.load(open(TRACE))': the whole document as Python objects
  reader             SELECT count(*) FROM traceloom_events(TRACE) in the sqlite3 shell: the
                     Kineto reader (ext/source/kineto.c) streaming its normalized events
  analysis           the CLI's complete analysis of the trace, for scale (not a reader figure)

The target (issue 22): the reader at >= 3x json.load on both traces.

  CPU-only    the real trace tests/data/kineto/llama_l2_d3_annotated.pt.trace.json.gz
              (torch.profiler with schedule + prof.step(), no GPU), its decode steps repeated
              with shifted timestamps until the file reaches the size: cpu_op,
              user_annotation (ProfilerStep#N, decode_<k>) events as torch 2.13 writes them
  GPU-style   synthetic: cpu_op, cuda_runtime, kernel (with a full args object) and ac2g
              flow events in the shape torch.profiler exports on a CUDA machine

--mb > 0 also times traceloom_events on a GPU-style trace of that size (default 1024, MB/s
against the earlier 180 MB/s target, peak RSS).
"""
import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET_RATIO = 3.0
TARGET_MB_S = 180.0
CPU_SEED = os.path.join(ROOT, "tests", "data", "kineto", "llama_l2_d3_annotated.pt.trace.json.gz")


def generate_gpu(path: str, mb: int) -> int:
    """Writes the GPU-style trace; returns the number of kernel events."""
    tmp = path + ".tmp"
    target = mb * 1024 * 1024
    kernels = 0
    with open(tmp, "w") as f:
        f.write('{"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA H200"}],\n'
                ' "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 1},\n'
                ' "traceEvents": [\n')
        written, ts, corr = 0, 1712345678901000, 1
        names = ["ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_32x5_tn",
                 "void vllm::rms_norm_kernel<c10::BFloat16, 8, 4>(c10::BFloat16*, int)",
                 "void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 64, 128>>(Flash_fwd_params)",
                 "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"]
        first = True
        while written < target:
            name = names[kernels % len(names)]
            chunk = []
            chunk.append(json.dumps({"ph": "X", "cat": "cpu_op", "name": "aten::linear", "pid": 4242, "tid": 4242,
                                     "ts": ts / 1000, "dur": 12.345, "args": {"External id": corr, "Sequence number": corr}}))
            chunk.append(json.dumps({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 4242, "tid": 4242,
                                     "ts": (ts + 2000) / 1000, "dur": 4.321, "args": {"cbid": 211, "correlation": corr, "External id": corr}}))
            chunk.append(json.dumps({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7,
                                     "ts": (ts + 5000) / 1000, "dur": 20.5, "args": {"External id": corr, "device": 0, "stream": 7,
                                     "correlation": corr, "registers per thread": 128, "shared memory": 0,
                                     "blocks per SM": 1.5, "grid": [132, 1, 1], "block": [128, 1, 1]}}))
            chunk.append(json.dumps({"ph": "s", "id": corr, "pid": 4242, "tid": 4242, "ts": (ts + 2000) / 1000,
                                     "cat": "ac2g", "name": "ac2g"}))
            text = (",\n" if not first else "") + ",\n".join(chunk)
            first = False
            f.write(text)
            written += len(text)
            kernels += 1
            corr += 1
            ts += 30000
        f.write("\n]}\n")
    os.replace(tmp, path)
    return kernels


def ns_of(us_value) -> int:
    """A Kineto microsecond number (as json.load read it) as integer ns, exactly as written."""
    text = repr(us_value) if isinstance(us_value, float) else str(us_value)
    whole, _, frac = text.partition(".")
    return int(whole) * 1000 + int((frac + "000")[:3])


def us_text(ns: int) -> str:
    return "%d.%03d" % (ns // 1000, ns % 1000)


def generate_cpu(path: str, mb: int) -> int:
    """Repeats the seed trace's ProfilerStep#2 window (every event that starts in it, all
    threads) with shifted timestamps until the file reaches the size; returns the number of
    cpu_op events on the main thread (what traceloom_events must emit)."""
    with gzip.open(CPU_SEED, "rt") as f:
        doc = json.load(f)
    events = doc.pop("traceEvents")
    steps = {e["name"]: e for e in events if e.get("ph") == "X" and e.get("name", "").startswith("ProfilerStep#")}
    s2, s3 = steps["ProfilerStep#2"], steps["ProfilerStep#3"]
    lo, period = ns_of(s2["ts"]), ns_of(s3["ts"]) - ns_of(s2["ts"])
    window = [e for e in events if "ts" in e and lo <= ns_of(e["ts"]) < lo + period]
    before = [e for e in events if "ts" not in e or ns_of(e["ts"]) < lo]
    main_tid = s2["tid"]
    target = mb * 1024 * 1024
    tmp = path + ".tmp"
    ops = sum(1 for e in before if e.get("cat") == "cpu_op" and e.get("tid") == main_tid
              and not e["name"].startswith("ProfilerStep#"))
    with open(tmp, "w") as f:
        head = json.dumps(doc)[:-1]  # the top-level members, then traceEvents last but base time
        f.write(head + ', "traceEvents": [\n')
        f.write(",\n".join(json.dumps(e) for e in before))
        written, k = f.tell(), 0
        while written < target:
            shift = k * period
            out = []
            for e in window:
                e2 = dict(e)
                text = json.dumps(e2)
                if e2.get("name", "").startswith("ProfilerStep#"):
                    text = text.replace('"ProfilerStep#2"', '"ProfilerStep#%d"' % (2 + k))
                text = text.replace('"ts": %s' % json.dumps(e["ts"]), '"ts": %s' % us_text(ns_of(e["ts"]) + shift), 1)
                out.append(text)
                if e.get("cat") == "cpu_op" and e.get("tid") == main_tid and not e["name"].startswith("ProfilerStep#"):
                    ops += 1
            chunk = ",\n" + ",\n".join(out)
            f.write(chunk)
            written += len(chunk)
            k += 1
        f.write("\n]}\n")
    os.replace(tmp, path)
    return ops


def run_child(cmd):
    """Runs one child process: (its stdout, its user + system CPU seconds, its own peak RSS
    in MiB, wall seconds), from wait4 on that process alone."""
    t0 = time.monotonic()
    with tempfile.TemporaryFile() as errf:
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=errf)
        out = p.stdout.read().decode()
        p.stdout.close()
        _, status, ru = os.wait4(p.pid, 0)
        p.returncode = status  # reaped here: Popen must not wait again
        errf.seek(0)
        err = errf.read().decode(errors="replace")
    if status != 0:
        sys.exit("%s failed: %s" % (cmd[0], err))
    return out, ru.ru_utime + ru.ru_stime, ru.ru_maxrss / 1024.0, time.monotonic() - t0


def cpu_seconds(cmd) -> float:
    out, cpu, _, _ = run_child(cmd)
    cmd_out[0] = out
    return cpu


cmd_out = [""]


def best(cmd, repeat):
    return min(cpu_seconds(cmd) for _ in range(repeat))


def cached(path, gen, mb):
    meta = path + ".count"
    if not (os.path.exists(path) and os.path.exists(meta)):
        t0 = time.monotonic()
        n = gen(path, mb)
        with open(meta, "w") as f:
            f.write(str(n))
        print("generated %s (%d events) in %.1f s" % (path, n, time.monotonic() - t0))
    return int(open(meta).read())


def ratio_run(label, path, expected, build, repeat, tmpdir):
    size = os.path.getsize(path)
    load = os.getloadavg()[0]
    j = best([sys.executable, "-c", "import json,sys; json.load(open(sys.argv[1]))", path], repeat)
    sql = "SELECT count(*) FROM traceloom_events('%s');" % path.replace("'", "''")
    r = best(["sqlite3", "-cmd", ".load " + os.path.join(build, "traceloom"), ":memory:", sql], repeat)
    got = int(cmd_out[0].strip())
    db = os.path.join(tmpdir, "kineto_bench_analysis.db")
    a = best([os.path.join(build, "traceloom"), path, "--output", db], 1)
    ratio = j / r if r > 0 else float("inf")
    line = ("kineto %s: %.0f MB of JSON, %d events (got %d); CPU s, best of %d: json.load %.3f, "
            "reader %.3f (%.0f MB/s), ratio %.2fx (target >= %.0fx): %s; whole CLI analysis %.3f; "
            "load average %.2f" % (label, size / 1e6, expected, got, repeat, j, r, size / 1e6 / r, ratio,
                                   TARGET_RATIO, "PASS" if ratio >= TARGET_RATIO else "FAIL", a, load))
    print(line)
    if got != expected:
        sys.exit("event count does not match the generated trace")
    return line


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ratio-mb", type=int, default=64)
    ap.add_argument("--mb", type=int, default=1024)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--build", default=os.environ.get("BUILD", "build"))
    ap.add_argument("--record", action="store_true")
    args = ap.parse_args()
    out = os.path.join(ROOT, "bench", "out")
    os.makedirs(out, exist_ok=True)
    build = os.path.join(ROOT, args.build)
    lines = []
    cpu = os.path.join(out, "kineto_cpu_%dmb.pt.trace.json" % args.ratio_mb)
    lines.append(ratio_run("CPU-only", cpu, cached(cpu, generate_cpu, args.ratio_mb), build, args.repeat, out))
    gpu = os.path.join(out, "kineto_%dmb.pt.trace.json" % args.ratio_mb)
    lines.append(ratio_run("GPU-style", gpu, cached(gpu, generate_gpu, args.ratio_mb), build, args.repeat, out))
    if args.mb > 0:
        path = os.path.join(out, "kineto_%dmb.pt.trace.json" % args.mb)
        kernels = cached(path, generate_gpu, args.mb)
        size = os.path.getsize(path)
        sql = "SELECT count(*) FROM traceloom_events('%s');" % path.replace("'", "''")
        stdout, _, rss_mb, secs = run_child(["sqlite3", "-cmd", ".load " + os.path.join(build, "traceloom"),
                                             ":memory:", sql])
        got = int(stdout.strip())
        mb_s = size / 1e6 / secs
        line = ("kineto: %.0f MB of JSON, %d kernel events (got %d), %.2f s, %.0f MB/s (target >= %.0f): %s, "
                "peak RSS %.0f MiB" % (size / 1e6, kernels, got, secs, mb_s, TARGET_MB_S,
                                       "PASS" if mb_s >= TARGET_MB_S else "FAIL", rss_mb))
        print(line)
        lines.append(line)
        if got != kernels:
            sys.exit("event count does not match the generated kernels")
    if args.record:
        with open(os.path.join(ROOT, "bench", "RESULTS.md"), "a") as f:
            f.write("\n## %s Kineto reader\n\n- machine: %d CPUs (nproc)\n" %
                    (time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), os.cpu_count() or 0))
            for line in lines:
                f.write("- %s\n" % line)


if __name__ == "__main__":
    main()
