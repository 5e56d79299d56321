#!/usr/bin/env python3
"""Kineto reader throughput: streams a large generated PyTorch-profiler trace.

    python3 bench/kineto_bench.py [--mb 1024] [--build build] [--record]

Writes (once, cached in bench/out/) a synthetic Chrome trace of about --mb megabytes of
uncompressed JSON with the shape torch.profiler exports (cpu_op, cuda_runtime, kernel,
gpu_memcpy events with args, ac2g flows), then times `SELECT count(*) FROM
traceloom_events(...)` in the sqlite3 shell with the extension loaded and reports MB/s of
JSON read and peak RSS. The issue's target: at least 180 MB/s (the Perfetto trace
processor's published JSON import rate) in bounded memory.
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET_MB_S = 180.0


def generate(path: str, mb: int) -> int:
    """Writes the trace; returns the number of kernel events."""
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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=int, default=1024)
    ap.add_argument("--build", default=os.environ.get("BUILD", "build"))
    ap.add_argument("--record", action="store_true")
    args = ap.parse_args()
    out = os.path.join(ROOT, "bench", "out")
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, "kineto_%dmb.pt.trace.json" % args.mb)
    meta = path + ".kernels"
    if not (os.path.exists(path) and os.path.exists(meta)):
        t0 = time.monotonic()
        n = generate(path, args.mb)
        with open(meta, "w") as f:
            f.write(str(n))
        print("generated %s (%d kernels) in %.1f s" % (path, n, time.monotonic() - t0))
    kernels = int(open(meta).read())
    size = os.path.getsize(path)
    build = os.path.join(ROOT, args.build)
    sql = "SELECT count(*) FROM traceloom_events('%s');" % path.replace("'", "''")
    t0 = time.monotonic()
    proc = subprocess.run(["sqlite3", "-cmd", ".load " + os.path.join(build, "traceloom"), ":memory:", sql],
                          capture_output=True, text=True)
    secs = time.monotonic() - t0
    rss_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024.0
    if proc.returncode != 0:
        sys.exit("traceloom_events failed: " + proc.stderr)
    got = int(proc.stdout.strip())
    mb_s = size / 1e6 / secs
    line = ("kineto: %.0f MB of JSON, %d kernel events (got %d), %.2f s, %.0f MB/s (target >= %.0f): %s, peak RSS %.0f MiB"
            % (size / 1e6, kernels, got, secs, mb_s, TARGET_MB_S, "PASS" if mb_s >= TARGET_MB_S else "FAIL", rss_mb))
    print(line)
    if got != kernels:
        sys.exit("event count does not match the generated kernels")
    if args.record:
        with open(os.path.join(ROOT, "bench", "RESULTS.md"), "a") as f:
            f.write("\n## %s Kineto reader\n\n- machine: %d CPUs (nproc)\n- %s\n"
                    % (time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), os.cpu_count() or 0, line))


if __name__ == "__main__":
    main()
