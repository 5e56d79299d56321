#!/usr/bin/env python3
"""genprofile: synthetic inference profiles with known ground truth.

Generates a profiler database whose structure is known exactly (prefill and decode steps,
layers, operators, collectives, host calls and their correlations), with seeded timing
jitter, occasional auxiliary kernels, random extra noise kernels and missing rows, and
writes DIR/ground_truth.json describing what an analysis must find. The same arguments
give byte-identical output.

  tools/genprofile.py --format ascend --out DIR --decode-steps 64 --layers 8 --ops 11
  tools/genprofile.py --format ascend --out DIR --rows 10000000 --layers 32   # derives steps
  tools/genprofile.py --format nsys   --out DIR --decode-steps 16 --ranks 2
  tools/genprofile.py --format split  --out DIR --decode-steps 16 --ranks 2
  tools/genprofile.py --format kineto --out DIR --decode-steps 16 --ranks 2 [--gzip]

Formats (one module each, tools/genprofile_<format>.py):
  ascend  DIR/PROF_<r>/msprof_<r>.db per rank (Ascend monolithic msprof schema)
  nsys    DIR/profile.sqlite (Nsight Systems SQLite export; ranks are devices 0..R-1)
  split   DIR/PROF_<r>/{host,device_<r>}/sqlite/*.db per rank (Ascend split layout, the
          same rows as `ascend` in AscendTask, TaskInfo, HCCL*SingleDevice, ApiData, HostTask)
  torchnpu  DIR/<host>_<pid>_<ts>_ascend_pt/ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_<r>.db
          per rank (the `ascend` DB) with one sibling PROF_*/host/sqlite/stream_info.db
  kineto  DIR/<rank>.pt.trace.json (or .json.gz with --gzip) per rank: PyTorch profiler
          Chrome trace with the nsys rows (kernel, gpu_memcpy, cuda_runtime), written
          streaming

--graph (ascend, torchnpu) runs the decode steps as ACL graph replays (head, one graph per
layer, tail; aclmdlRIExecuteAsync, MODEL_EXECUTE/NOTIFY_WAIT/NOTIFY_RECORD, CaptureStreamInfo
companion) after eager prefill steps; see genprofile_graph.py. The ground truth then lists
the instances (structure.graph) and per rank every launch with its step and members.

--cuda-graph node|graph (nsys) runs the decode steps as replays of one CUDA graph per rank,
with a node-level trace (graphNodeId rows, CUDA_GRAPH_NODE_EVENTS) or a graph-level one
(CUPTI_ACTIVITY_KIND_GRAPH_TRACE envelopes only); --cuda-graph-eager eager kernels run
between replays. ranks[r].cuda_graph lists every launch with the rowids of its members and
what an exact reconstruction must report; see genprofile_nsys.py.

--cluster (ascend, nsys) runs the ranks in lockstep on one clock with collectives as
barriers; --slow-rank S makes one rank's layers --slow-factor slower and --late-rank L makes
one rank arrive --late-ns late at every collective (nsys then writes one rank_<r>.sqlite per
rank); see genprofile_cluster.py. ground_truth.json "cluster" says what to find.

--context DIR (ascend, torchnpu) also writes the scheduler-context JSONL of a vLLM run with
the TraceLoom observer into DIR and a traceloom.execution.<id> PYTORCH_API marker per step
and rank into the profile (--context-mode, --context-queue; see genprofile_context.py).

Rates (--aux, --noise, --missing) are fractions of the template compute tasks; --jitter
is the timing jitter as a fraction of each task's duration. --missing drops that many
device tasks (their host calls stay, unmatched) and as many host launch calls (their
tasks stay, unmatched). Auxiliary and noise kernels sit in the idle gap after a compute
task, each with its own host call, and are appended after the template rows (rowid
order is not time order). Rows are produced by INSERT ... SELECT inside SQLite (see
genprofile_model.py): 10M TASK rows (28.7M rows over all tables) in about 22 s on two
cores.

ground_truth.json holds the structure (steps per phase, layers, the operator labels of
head/layer/tail, the loop tree to recover), per rank the row count of every table, task
rows and events by kind, host calls by API, the host<->device relations by state (per key
and as (call, task) rows), and, for small profiles, where each perturbation sits.
"""

import argparse
import json
import multiprocessing
import os
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import genprofile_ascend  # noqa: E402
import genprofile_cluster  # noqa: E402
import genprofile_context  # noqa: E402
import genprofile_graph  # noqa: E402
import genprofile_kineto  # noqa: E402
import genprofile_model as M  # noqa: E402
import genprofile_nsys  # noqa: E402
import genprofile_split  # noqa: E402
import genprofile_torchnpu  # noqa: E402

FORMATS = {m.FORMAT: m for m in (genprofile_ascend, genprofile_kineto, genprofile_nsys, genprofile_split,
                                  genprofile_torchnpu)}
GRAPH_FORMATS = ("ascend", "torchnpu")
GROUND_TRUTH_VERSION = 1


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--format", choices=sorted(FORMATS), default="ascend")
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--decode-steps", type=int, default=16)
    p.add_argument("--prefill-steps", type=int, default=1)
    p.add_argument("--layers", type=int, default=8)
    p.add_argument("--ops", type=int, default=11, help="operators per layer (>= 1)")
    p.add_argument("--ranks", type=int, default=1)
    p.add_argument("--rows", type=int, default=None,
                   help="target kernel rows per rank; derives --decode-steps")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--jitter", type=float, default=0.05)
    p.add_argument("--noise", type=float, default=0.01, help="extra noise kernels per compute task")
    p.add_argument("--aux", type=float, default=0.05, help="auxiliary kernels per compute task")
    p.add_argument("--missing", type=float, default=0.001,
                   help="dropped device tasks, and as many dropped host calls, per compute task")
    p.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1),
                   help="ranks generated in parallel")
    p.add_argument("--graph", action="store_true",
                   help="decode steps as ACL graph replays (ascend, torchnpu; see genprofile_graph.py)")
    p.add_argument("--graph-layers", choices=("per-layer", "shared"), default="per-layer",
                   help="--graph: one captured graph per layer, or one layer graph replayed for "
                        "every layer (head + layer x N + tail)")
    p.add_argument("--cuda-graph", choices=("node", "graph"), default=None,
                   help="nsys: decode steps as replays of one CUDA graph, with a node-level or a "
                        "graph-level trace (see genprofile_nsys.py)")
    p.add_argument("--cuda-graph-eager", type=int, default=1,
                   help="eager kernels between two CUDA graph replays (--cuda-graph)")
    p.add_argument("--gzip", action="store_true", help="kineto: write <rank>.pt.trace.json.gz")
    p.add_argument("--slow-op", action="append", default=[], metavar="KEY@LAYER=FACTOR",
                   help="an edit for comparisons: operator KEY (a key of genprofile_model.OPS, "
                        "e.g. decode_attention) in layer LAYER (0-based) takes FACTOR times its "
                        "duration, in every eager step; repeatable")
    p.add_argument("--extra-decode-op", action="append", default=[], metavar="KEY",
                   help="an edit for comparisons: one more task of operator KEY in every decode "
                        "step, after the LM head; repeatable")
    genprofile_context.add_arguments(p)
    genprofile_cluster.add_arguments(p)
    p.add_argument("--quiet", action="store_true")
    a = p.parse_args(argv)
    genprofile_context.check_args(p, a)
    genprofile_cluster.check_args(p, a)
    if a.graph:
        if a.format not in GRAPH_FORMATS:
            p.error("--graph needs --format %s" % " or ".join(GRAPH_FORMATS))
        if a.rows is not None:
            p.error("--graph takes --decode-steps, not --rows")
        if a.prefill_steps < 1 or a.decode_steps < 1:
            p.error("--graph needs at least one prefill (eager) and one decode (graph) step")
    if a.gzip and a.format != "kineto":
        p.error("--gzip needs --format kineto")
    if a.cuda_graph:
        if a.format != "nsys" or a.graph or a.rows is not None:
            p.error("--cuda-graph needs --format nsys, without --graph or --rows")
        if a.decode_steps < 1 or a.cuda_graph_eager < 0:
            p.error("--cuda-graph needs --decode-steps >= 1 and --cuda-graph-eager >= 0")
    for name in ("layers", "ops", "ranks"):
        if getattr(a, name) < 1:
            p.error("--%s must be >= 1" % name)
    a.slow_op = _parse_slow_ops(p, a)
    for key in a.extra_decode_op:
        if key not in M.OPS or M.OPS[key].kind != M.K_COMPUTE:
            p.error("--extra-decode-op %s: expected a compute operator key of genprofile_model.OPS" % key)
    if (a.slow_op or a.extra_decode_op) and (a.graph or a.cuda_graph):
        p.error("--slow-op and --extra-decode-op edit eager steps: not with --graph or --cuda-graph")
    if a.decode_steps < 0 or a.prefill_steps < 0 or a.decode_steps + a.prefill_steps < 1:
        p.error("need at least one step")
    for name in ("jitter", "noise", "aux", "missing"):
        if not 0 <= getattr(a, name) < 1:
            p.error("--%s must be in [0, 1)" % name)
    if a.rows is not None:
        est = M.rows_per_step_estimate(a, FORMATS[a.format].COMM_SUBTASKS)
        kernel = FORMATS[a.format].kernel_rows_per_step
        left = a.rows - a.prefill_steps * kernel(est["prefill"])
        a.decode_steps = max(1, round(left / kernel(est["decode"])))
    return a


def _parse_slow_ops(p, a):
    """--slow-op KEY@LAYER=FACTOR -> {(KEY, LAYER): FACTOR}."""
    out = {}
    for spec in a.slow_op:
        try:
            key, rest = spec.split("@", 1)
            layer, factor = rest.split("=", 1)
            layer, factor = int(layer), float(factor)
        except ValueError:
            p.error("--slow-op %s: expected KEY@LAYER=FACTOR, e.g. decode_attention@1=1.1" % spec)
        if key not in M.layer_ops(a.ops, "decode") + M.layer_ops(a.ops, "prefill"):
            p.error("--slow-op %s: %s is not an operator of a layer with --ops %d" % (spec, key, a.ops))
        if not 0 <= layer < a.layers or not factor > 0:
            p.error("--slow-op %s: LAYER must be in [0, %d) and FACTOR > 0" % (spec, a.layers))
        out[(key, layer)] = factor
    return out


def _edits_truth(args, phases):
    """The edits (--slow-op, --extra-decode-op) and the device time each adds per step."""
    slow = []
    for (key, layer), factor in sorted(args.slow_op.items()):
        per_step = {}
        for ph in phases:
            if key in ph.layer_keys:
                op = M.OPS[key]
                dur = op.prefill_ns if ph.name == "prefill" else op.decode_ns
                per_step[ph.name] = (M.slowed_ns(dur, factor) - dur) * ph.layer_keys.count(key)
        slow.append({"op": key, "layer": layer, "factor": factor, "extra_ns_per_step": per_step})
    return {"slow_ops": slow, "extra_decode_ops": list(args.extra_decode_op)}


def _plan(args, rank):
    if args.cuda_graph:
        return genprofile_nsys.plan_eager(args, rank)  # replays are laid out by write_all
    if not args.graph:
        return M.plan_rank(args, rank, FORMATS[args.format].COMM_SUBTASKS)
    # Graph mode: the ordinary plan covers the eager (prefill) steps; the decode steps are
    # graph replays laid out after them.
    eager = argparse.Namespace(**vars(args))
    eager.decode_steps = 0
    plan = M.plan_rank(eager, rank, FORMATS[args.format].COMM_SUBTASKS)
    plan.graph = genprofile_graph.plan_graph(args, plan)
    plan.capture_streams = plan.graph.capture_streams
    return plan


def _write_one(job):
    args, plan, path = job
    FORMATS[args.format].write_rank(plan, args, path)
    if args.graph:
        genprofile_graph.append(path, plan.graph, args)
        if args.format == "ascend":
            # The monolithic DB's companion: <dir of db>/host/sqlite/stream_info.db.
            genprofile_split.write_capture_streams(
                os.path.join(os.path.dirname(path), "host", "sqlite", "stream_info.db"), plan.capture_streams)
    genprofile_context.apply_rank(path, plan, args)
    return plan.rank


def plan_counts(plan):
    """Exact counts of what the plan puts in a profile, independent of the format."""
    tmpl = {M.K_COMPUTE: 0, M.K_COMM: 0, M.K_MEMCPY: 0}
    calls = {M.C_LAUNCH: 0, M.C_COMM: 0, M.C_MEMCPY: 0, M.C_SYNC: 0}
    apis = {}
    for ph in plan.phases:
        for r in ph.rows:
            tmpl[r.kind] += ph.steps
        for c in ph.calls:
            calls[c.kind] += ph.steps
            apis[c.api] = apis.get(c.api, 0) + ph.steps
    aux = sum(1 for x in plan.extras if x.role == "aux")
    noise = len(plan.extras) - aux
    for x in plan.extras:
        api = M.OPS[x.key].api
        apis[api] = apis.get(api, 0) + 1
    for api, n in plan.drop_call_apis.items():
        apis[api] -= n
    return dict(template_compute=tmpl[M.K_COMPUTE], template_comm_tasks=tmpl[M.K_COMM],
                template_memcpy=tmpl[M.K_MEMCPY], comm_ops=plan.comm_ops_total,
                launch_calls=calls[M.C_LAUNCH], comm_calls=calls[M.C_COMM],
                memcpy_calls=calls[M.C_MEMCPY], sync_calls=calls[M.C_SYNC],
                dropped_tasks=len(plan.drop_tasks), dropped_calls=len(plan.drop_calls),
                aux=aux, noise=noise, apis=apis)


def _phase_truth(ph, fmt):
    def labels(keys):
        return [fmt.op_label(M.OPS[k]) for k in keys]
    rows = ph.rows
    return {
        "name": ph.name,
        "steps": ph.steps,
        "first_step": ph.first_step,
        "head": labels(M.HEAD),
        "layer": labels(ph.layer_keys),
        "tail": labels(ph.tail_keys),
        "op_keys": {"head": M.HEAD, "layer": ph.layer_keys, "tail": ph.tail_keys},
        "template_rows_per_step": len(rows),
        "kernel_rows_per_step": fmt.kernel_rows_per_step((ph, len(rows))),
        "compute_tasks_per_step": len(ph.compute_js),
        "comm_ops_per_step": ph.comm_ops,
        "host_calls_per_step": len(ph.calls),
        "busy_ns_per_step": ph.busy_ns,
        "nominal_step_period_ns": ph.step_len_ns,
    }


def _perturbation_detail(plan, plan_layers, limit=2000):
    """Where each perturbation sits, as (step, layer, slot) of the compute task it touches."""
    if len(plan.drop_tasks) + len(plan.drop_calls) + len(plan.extras) > limit:
        return None
    by_n, by_c = {}, {}
    for st in plan.steps:
        ph = next(p for p in plan.phases if p.index == st.phase)
        for r in ph.rows:
            if r.kind == M.K_COMPUTE:
                by_n[st.n0 + r.j] = (st.s, r)
                by_c[st.c0 + r.call] = (st.s, r)

    def where(s, r):
        part = "head" if r.layer < 0 else "tail" if r.layer >= plan_layers else "layer"
        return {"step": s, "part": part, "layer": r.layer if part == "layer" else None,
                "slot": r.slot, "op": r.op}

    return {
        "dropped_tasks": [dict(where(*by_n[n]), global_task_id=n) for n in plan.drop_tasks],
        "dropped_calls": [dict(where(*by_c[c]), call=c) for c in plan.drop_calls],
        "extras": [{"step": x.s, "after": where(x.s, next(p for p in plan.phases if p.index ==
                                                          plan.steps[x.s].phase).rows[x.j]),
                    "role": x.role, "op": x.key} for x in plan.extras],
    }


def ground_truth(args, files, plans):
    fmt = FORMATS[args.format]
    ranks = []
    for r, plan in enumerate(plans):
        counts = plan_counts(plan)
        entry = {"rank": r, "device_id": r, "path": files[r] if len(files) > 1 else files[0]}
        entry.update(fmt.rank_truth(plan, counts, args))
        entry["perturbations"] = {k: counts[k] for k in ("dropped_tasks", "dropped_calls", "aux", "noise")}
        detail = _perturbation_detail(plan, args.layers)
        if detail is not None:
            entry["perturbation_positions"] = detail
        entry["time_range_ns"] = [plan.t_begin, plan.t_end]
        if args.graph:
            genprofile_graph.add_rank_truth(entry, plan.graph)
        ranks.append(entry)
    plan0 = plans[0]
    phases = [_phase_truth(ph, fmt) for ph in plan0.phases]
    total_steps = sum(ph.steps for ph in plan0.phases) + (args.decode_steps if args.graph or args.cuda_graph else 0)
    truth = {
        "ground_truth_version": GROUND_TRUTH_VERSION,
        "generator": "tools/genprofile.py",
        "format": args.format,
        "source_kind": fmt.SOURCE_KIND,
        "params": {k: getattr(args, k) for k in ("seed", "prefill_steps", "decode_steps", "layers", "ops",
                                                 "ranks", "jitter", "noise", "aux", "missing", "rows",
                                                 "graph", "cuda_graph", "cuda_graph_eager", "gzip", "cluster")},
        "files": files,
        "structure": {
            "steps": {"prefill": args.prefill_steps, "decode": args.decode_steps, "total": total_steps},
            "layers": args.layers,
            "ops_per_layer": args.ops,
            "phases": phases,
            # The repeat structure an analysis should recover, outermost first.
            "loop_tree": [{"phase": p["name"], "repeat": p["steps"],
                           "body": p["head"] + [{"repeat": args.layers, "body": p["layer"]}] + p["tail"]}
                          for p in phases],
        },
        "kernel_rows": sum(e["kernel_rows"] for e in ranks),
        "edits": _edits_truth(args, plan0.phases),
        "ranks": ranks,
    }
    if args.graph:
        # Decode steps are graph replays: the eager loop tree covers prefill only, and the
        # launches (per rank, with their steps and members) are in ranks[r].graph.
        truth["structure"]["graph"] = genprofile_graph.structure_truth(args, fmt)
    return truth


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    fmt = FORMATS[args.format]
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    # Remove what an earlier run wrote (only the generator's own names).
    for name in os.listdir(out):
        full = os.path.join(out, name)
        if (name.startswith("PROF_") or name.endswith("_ascend_pt")) and os.path.isdir(full):
            shutil.rmtree(full)
        elif (name in ("profile.sqlite", "ground_truth.json") or name.endswith((".pt.trace.json", ".pt.trace.json.gz"))
              or (name.startswith("rank_") and name.endswith(".sqlite"))):
            os.remove(full)
    t0 = time.monotonic()
    files = (args.cluster and genprofile_cluster.output_files(args)) or fmt.output_files(args)
    plans = [_plan(args, r) for r in range(args.ranks)]
    cluster_truth = genprofile_cluster.synchronize(plans, args) if args.cluster else None
    if args.cluster and not fmt.PER_RANK_FILES:
        for r, plan in enumerate(plans):      # one export per rank
            fmt.write_all([plan], args, os.path.join(out, files[r]))
    elif fmt.PER_RANK_FILES:
        jobs = [(args, plans[r], os.path.join(out, files[r])) for r in range(args.ranks)]
        if args.jobs > 1 and len(jobs) > 1:
            with multiprocessing.get_context("fork").Pool(min(args.jobs, len(jobs))) as pool:
                pool.map(_write_one, jobs)
        else:
            for job in jobs:
                _write_one(job)
    else:
        fmt.write_all(plans, args, os.path.join(out, files[0]))
    truth = ground_truth(args, files, plans)
    if cluster_truth is not None:
        truth["cluster"] = cluster_truth
    if args.context:
        truth["context"] = genprofile_context.truth(args, plans, genprofile_context.write_jsonl(args, args.ranks))
    tmp = os.path.join(out, "ground_truth.json.tmp")
    with open(tmp, "w") as f:
        json.dump(truth, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(tmp, os.path.join(out, "ground_truth.json"))
    if not args.quiet:
        secs = time.monotonic() - t0
        print("genprofile: %s, %d rank(s), %d steps x %d layers x %d ops: %d kernel rows in %.2f s (%.0f rows/s)"
              % (args.format, args.ranks, args.prefill_steps + args.decode_steps, args.layers, args.ops,
                 truth["kernel_rows"], secs, truth["kernel_rows"] / secs if secs > 0 else 0),
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
