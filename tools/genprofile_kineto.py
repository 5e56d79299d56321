"""PyTorch profiler (Kineto) Chrome-trace JSON writer for tools/genprofile.py (`--format kineto`).

One DIR/<rank>.pt.trace.json per rank (DIR/<rank>.pt.trace.json.gz with --gzip), as
torch.profiler's export_chrome_trace leaves it on a CUDA machine (inputs.md section 8):

  {"schemaVersion": 1, "deviceProperties": [...], "distributedInfo": {"backend": "nccl",
   "rank": r, "world_size": R}, "traceEvents": [...], "displayTimeUnit": "ms",
   "baseTimeNanoseconds": B, "traceName": "..."}

traceEvents holds complete ("ph": "X") events only:
  kernel        compute kernels (demangled names) and one NCCL kernel per collective on its
                own stream; pid = device = rank, tid = stream, args device/stream/correlation
  gpu_memcpy    the input and output copies (Memcpy HtoD / DtoH), with args.bytes
  cuda_runtime  one host call per kernel or copy (cudaLaunchKernel, cudaLaunchKernelExC,
                cudaMemcpyAsync) with the same args.correlation, and one cudaStreamSynchronize
                per step (no device work); pid/tid are the rank's OS process and thread
  user_annotation  one ProfilerStep#N range per step (a host scope, not device work)

The rows are those of the nsys writer for the same plan (genprofile_nsys.py): the same
template, timing hash (genprofile_model.sql_hash, evaluated here in Python), dropped rows
and auxiliary/noise kernels; correlation ids start at 1 in every file, as each rank is its
own profiled process. ts/dur are microseconds relative to baseTimeNanoseconds (placed
after traceEvents, as PyTorch writes it), so base + ts is the plan's absolute ns time;
they are formatted from integer ns with exactly three decimals, never through a float.

The file is written step by step (one step's events at a time), so memory stays flat
whatever the row count; the same seed gives byte-identical files (gzip with mtime 0).
"""

import gzip
import io
import json
import os

import genprofile_model as M
import genprofile_nsys as N

FORMAT = "kineto"
SOURCE_KIND = "kineto_json"
PER_RANK_FILES = True
COMM_SUBTASKS = N.COMM_SUBTASKS
COMPUTE_STREAM = N.COMPUTE_STREAM
COMM_STREAM = N.COMM_STREAM
kernel_rows_per_step = N.kernel_rows_per_step
op_label = N.op_label
# ts = absolute ns - BASE_NS: about 1000 s of "uptime", like Kineto's relative clock.
BASE_NS = M.T0_NS - 1_000_000_000_000
CORR0 = 1
HOST_PID = 40_000
SYNC_API = "cudaStreamSynchronize"
COPY_NAME = {"h2d": "Memcpy HtoD (Pageable -> Device)", "d2h": "Memcpy DtoH (Device -> Pageable)"}
CBID = {"cudaLaunchKernel": 211, "cudaLaunchKernelExC": 430, "cudaMemcpyAsync": 41,
        "cudaStreamSynchronize": 131}


def kineto_api(nsys_api):
    """Kineto names runtime calls without Nsight's _vNNNN version suffix."""
    head, sep, tail = nsys_api.rpartition("_v")
    return head if sep and tail.isdigit() else nsys_api


def us(ns):
    """Integer ns as decimal microseconds with exactly three decimals (no float)."""
    if ns < 0:
        return "-" + us(-ns)
    return "%d.%03d" % (ns // 1000, ns % 1000)


def output_files(args):
    ext = ".pt.trace.json.gz" if getattr(args, "gzip", False) else ".pt.trace.json"
    return ["%d%s" % (r, ext) for r in range(args.ranks)]


def _hash(n, salt):
    x = (n * 1103515245 + salt) % 2147483648
    return (x * x) % 2147483647


def _kernel_parts(dev, stream, name, grid, regs, smem):
    """(text before ts, text between correlation and the end) of a kernel event."""
    head = '{"ph":"X","cat":"kernel","name":%s,"pid":%d,"tid":%d,"ts":' % (json.dumps(name), dev, stream)
    tail = (',"registers per thread":%d,"shared memory":%d,"grid":[%d,1,1],"block":[%d,%d,%d]}}'
            % (regs, smem, grid, N.BLOCK[0], N.BLOCK[1], N.BLOCK[2]))
    mid = ',"args":{"device":%d,"context":%d,"stream":%d,"correlation":' % (dev, N.CONTEXT_ID, stream)
    return head, mid, tail


def _copy_parts(dev, stream, key):
    head = '{"ph":"X","cat":"gpu_memcpy","name":%s,"pid":%d,"tid":%d,"ts":' % (json.dumps(COPY_NAME[key]), dev,
                                                                              stream)
    mid = ',"args":{"device":%d,"context":%d,"stream":%d,"correlation":' % (dev, N.CONTEXT_ID, stream)
    tail = ',"bytes":%d}}' % N.COPY_BYTES[key]
    return head, mid, tail


def _runtime_parts(api, pid, tid):
    head = '{"ph":"X","cat":"cuda_runtime","name":"%s","pid":%d,"tid":%d,"ts":' % (api, pid, tid)
    mid = ',"args":{"cbid":%d,"correlation":' % CBID.get(api, 0)
    return head, mid, "}}"


def _header(plan, args):
    devices = [{"id": d, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85_031_714_816, "computeMajor": 9,
                "computeMinor": 0, "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048,
                "regsPerBlock": 65536, "warpSize": 32, "sharedMemPerBlock": 49152, "numSms": 132,
                "sharedMemPerMultiprocessor": 233472} for d in range(args.ranks)]
    dist = {"backend": "nccl", "rank": plan.rank, "world_size": args.ranks, "pg_count": 1, "pg_config": [],
            "nccl_version": "2.21.5"}
    return ('{\n "schemaVersion": 1,\n "deviceProperties": %s,\n "distributedInfo": %s,\n "traceEvents": [\n'
            % (json.dumps(devices, sort_keys=True), json.dumps(dist, sort_keys=True)))


def _footer(plan):
    return ('\n ],\n "displayTimeUnit": "ms",\n "baseTimeNanoseconds": %d,\n "traceName": "%d.pt.trace.json"\n}\n'
            % (BASE_NS, plan.rank))


def _open(path, packed):
    if packed:
        raw = open(path, "wb")
        gz = gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=6)
        return io.TextIOWrapper(gz, encoding="utf-8", newline="\n"), raw
    return open(path, "w", encoding="utf-8", newline="\n", buffering=1 << 20), None


def write_rank(plan, args, path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    f, raw = _open(tmp, path.endswith(".gz"))
    try:
        f.write(_header(plan, args))
        _write_events(f, plan, args)
        f.write(_footer(plan))
    finally:
        f.close()
        if raw is not None:
            raw.close()
    os.replace(tmp, path)


def _write_events(f, plan, args):
    dev, pid = plan.rank, HOST_PID + plan.rank
    tid = pid + 3
    salt = plan.salt
    drop_tasks, drop_calls = set(plan.drop_tasks), set(plan.drop_calls)
    extras_by_step = {}
    for x in plan.extras:
        extras_by_step.setdefault(x.s, []).append(x)
    # Per phase: the constant text of every template row and call.
    rows_text, calls_text = {}, {}
    for ph in plan.phases:
        grid = N.GRID[ph.name][0]
        rt = []
        for r in ph.rows:
            op = M.OPS[r.op]
            if r.kind == M.K_MEMCPY:
                rt.append(_copy_parts(dev, COMPUTE_STREAM, r.op))
            else:
                rt.append(_kernel_parts(dev, COMM_STREAM if r.kind == M.K_COMM else COMPUTE_STREAM,
                                        op.cuda_demangled, grid, 128 if r.kind == M.K_COMPUTE else 96,
                                        49152 if "gemm" in op.cuda_short else 0))
        rows_text[ph.index] = rt
        ct = []
        for c in ph.calls:
            api = kineto_api(M.OPS[ph.rows[c.row].op].cuda_api) if c.row >= 0 else SYNC_API
            ct.append(_runtime_parts(api, pid, tid))
        calls_text[ph.index] = ct
    extra_text = {}
    for key in set(x.key for x in plan.extras):
        op = M.OPS[key]
        extra_text[key] = (_kernel_parts(dev, COMPUTE_STREAM, op.cuda_demangled, 64, 32, 0),
                           _runtime_parts(kineto_api(op.cuda_api), pid, tid))
    phases = {ph.index: ph for ph in plan.phases}
    step_head = '{"ph":"X","cat":"user_annotation","name":"ProfilerStep#%d","pid":%d,"tid":%d,"ts":'
    first = True
    for st in plan.steps:
        ph = phases[st.phase]
        out = []
        # The step's host range: from its first launch call to the end of its synchronize.
        s0 = st.start + ph.calls[0].off
        sync = ph.calls[-1]
        s1 = st.start + sync.off + sync.jit - 1 + sync.dur
        out.append("%s%s,\"dur\":%s,\"args\":{}}" % (step_head % (st.s, pid, tid), us(s0 - BASE_NS), us(s1 - s0)))
        rt = rows_text[ph.index]
        for r in ph.rows:
            n = st.n0 + r.j
            if n in drop_tasks:
                continue
            start = st.start + r.off + _hash(n, salt) % r.jit
            end = start + r.dur + _hash(n, salt + 1) % (2 * r.djit + 1) - r.djit
            head, mid, tail = rt[r.j]
            out.append("%s%s,\"dur\":%s%s%d%s" % (head, us(start - BASE_NS), us(end - start), mid,
                                                  CORR0 + st.c0 + r.call, tail))
        ct = calls_text[ph.index]
        for c in ph.calls:
            cn = st.c0 + c.c
            if cn in drop_calls:
                continue
            corr = CORR0 + cn
            start = st.start + c.off + _hash(corr, salt + 7) % c.jit
            head, mid, tail = ct[c.c]
            out.append("%s%s,\"dur\":%s%s%d%s" % (head, us(start - BASE_NS), us(c.dur), mid, corr, tail))
        for x in extras_by_step.get(st.s, ()):
            r = ph.rows[x.j]
            start = st.start + r.off + r.jit + r.dur + r.djit + 300 + _hash(x.e, salt + 11) % 200
            corr = CORR0 + plan.calls_total + x.e
            (kh, km, kt), (rh, rm, rtl) = extra_text[x.key]
            out.append("%s%s,\"dur\":%s%s%d%s" % (kh, us(start - BASE_NS), us(x.dur), km, corr, kt))
            out.append("%s%s,\"dur\":%s%s%d%s" % (rh, us(start - M.HOST_LEAD_NS - BASE_NS), us(600), rm, corr, rtl))
        if not first:
            f.write(",\n")
        first = False
        f.write(",\n".join(out))


def rank_truth(plan, c, args):
    """The nsys truth of the same plan, with Kineto's tables and API names."""
    t = N._eager_rank_truth(plan, c, args)
    kernels = t["tables"]["CUPTI_ACTIVITY_KIND_KERNEL"]
    copies = t["tables"]["CUPTI_ACTIVITY_KIND_MEMCPY"]
    calls = t["tables"]["CUPTI_ACTIVITY_KIND_RUNTIME"]
    steps = len(plan.steps)
    # traceEvents by cat (every event is ph "X"); source_rowid is the index in this array.
    t["tables"] = {"traceEvents": kernels + copies + calls + steps, "kernel": kernels, "gpu_memcpy": copies,
                   "gpu_memset": 0, "cuda_runtime": calls, "user_annotation": steps}
    by_api = {}
    for api, n in t["host_calls"]["by_api"].items():
        k = kineto_api(api)
        by_api[k] = by_api.get(k, 0) + n
    t["host_calls"]["by_api"] = dict(sorted(by_api.items()))
    t["profiler_steps"] = steps
    t["correlation_ids"] = [CORR0, CORR0 + plan.calls_total + len(plan.extras) - 1]
    t["base_time_ns"] = BASE_NS
    return t
