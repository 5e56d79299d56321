"""ACL graph mode for tools/genprofile.py (`--graph`, Ascend monolithic and torch-npu).

With --graph the prefill steps stay eager (the ordinary plan) and every decode step runs
as ACL graph replays, the way vLLM-Ascend replays captured graphs: one captured graph
instance for the head, one per layer and one for the tail, each replayed once per decode
step. A replay (a "launch") is, as in the exact_hlt fixture and inputs.md sections 3.2, 4
and 9.4:

  host    CANN_API aclmdlRIExecuteAsync, connectionId C
  launch  stream 2 (the capture source stream): MODEL_EXECUTE then NOTIFY_WAIT, both C
  body    the instance's operators on its private model streams (compute and copies on
          100 + 2i, collective tasks on 101 + 2i), each task with its own connectionId
          (a capture-time id no host call carries)
  done    NOTIFY_RECORD on the main model stream, connectionId fixed per instance; the
          NOTIFY_WAIT on the launch stream ends after it

Each decode step ends with an aclrtSynchronizeStream call (no device task). The capture
streams go to CaptureStreamInfo (device_id, model_id, original_stream_id, stream_id,
batch_id, capture_status, timestamp): one (device, model_id) group per instance, one row
per model stream. Decode-step perturbations (aux, noise, missing) apply to the eager
steps only. Graph rows are appended to the monolithic DB after the eager rows, with
Python-built rows (graph profiles are meant for replay tests, not for 10M-row benches).
"""

import random
import sqlite3
from dataclasses import dataclass, field

import genprofile_ascend as A
import genprofile_model as M

LAUNCH_API = "aclmdlRIExecuteAsync"
SYNC_API = "aclrtSynchronizeStream"
MODEL_STREAM_BASE = 100
BODY_CONN_BASE = 50_000_000
RECORD_CONN_BASE = 40_000_000
MODEL_ID_BASE = 1
LAUNCH_DETAIL_LIMIT = 50_000


@dataclass
class Instance:
    model_id: int
    role: str            # head | layer | tail
    layer: int           # layer number, or None
    ops: list            # operator keys, in order
    main_stream: int
    comm_stream: int     # None when the instance has no collective


@dataclass
class GraphPlan:
    instances: list
    launches: list = field(default_factory=list)   # dicts, see plan_graph
    tasks: list = field(default_factory=list)      # TASK rows (tuples, table order)
    compute: list = field(default_factory=list)    # (globalTaskId, op key)
    comm: list = field(default_factory=list)       # (globalTaskId, op key, sub name)
    calls: list = field(default_factory=list)      # (start, end, api, connectionId)
    capture_streams: list = field(default_factory=list)
    counts: dict = field(default_factory=dict)
    t_end: int = 0


def instances_for(args):
    """The captured instances. --graph-layers shared captures the layer once and replays it
    for every layer (head + layer x N + tail); per-layer captures one graph per layer."""
    keys = M.layer_ops(args.ops, "decode")
    shared = getattr(args, "graph_layers", "per-layer") == "shared"
    layers = [("layer", None if shared else l, keys) for l in range(1 if shared else args.layers)]
    parts = [("head", None, list(M.HEAD))] + layers + [("tail", None, list(M.TAIL))]
    out = []
    for i, (role, layer, ops) in enumerate(parts):
        has_comm = any(M.OPS[k].kind == M.K_COMM for k in ops)
        out.append(Instance(MODEL_ID_BASE + i, role, layer, ops, MODEL_STREAM_BASE + 2 * i,
                            MODEL_STREAM_BASE + 2 * i + 1 if has_comm else None))
    return out


def launch_sequence(args, instances):
    """The instances in launch order within one decode step."""
    if getattr(args, "graph_layers", "per-layer") == "shared":
        return [instances[0]] + [instances[1]] * args.layers + [instances[2]]
    return list(instances)


def plan_graph(args, plan):
    """Lays out the decode graph replays of one rank after its eager (prefill) plan."""
    rng = random.Random(args.seed * 7_777 + plan.rank)
    dev = plan.rank
    g = GraphPlan(instances_for(args))
    gid = plan.rows_total + len(plan.extras)
    conn = A.CONN_BASE + plan.calls_total + len(plan.extras)
    body_conn = BODY_CONN_BASE
    task_no = {}
    pid = 40_000 + plan.rank

    def task(start, end, stream, c, ttype, model):
        nonlocal gid
        n = task_no.get(stream, 0)
        task_no[stream] = n + 1
        g.tasks.append((start, end, dev, c, gid, pid, ttype, 0, stream, n % 65536, model))
        gid += 1
        return gid - 1

    capture_t = plan.t_end + 1_000_000
    for i, inst in enumerate(g.instances):
        ts = capture_t + 1_000 * i
        g.capture_streams.append((dev, inst.model_id, A.COMPUTE_STREAM, inst.main_stream, 0, 0, ts))
        if inst.comm_stream is not None:
            g.capture_streams.append((dev, inst.model_id, A.COMM_STREAM, inst.comm_stream, 0, 0, ts))

    first_step = args.prefill_steps
    t = capture_t + 1_000_000
    n_launch = n_body = n_compute = n_comm = n_copy = 0
    for s in range(first_step, first_step + args.decode_steps):
        for inst in launch_sequence(args, g.instances):
            c = conn
            conn += 1
            g.calls.append((t - M.HOST_LEAD_NS, t - M.HOST_LEAD_NS + 4_000 + rng.randrange(500), LAUNCH_API, c))
            task(t, t + 1_500, A.COMPUTE_STREAM, c, "MODEL_EXECUTE", inst.model_id)
            wait_start = t + 2_000
            cursor = t + 2_500
            lo = gid + 1       # the NOTIFY_WAIT takes the next id; body ids follow it
            body = []
            for key in inst.ops:
                op = M.OPS[key]
                dur = op.decode_ns + rng.randrange(max(1, op.decode_ns // 20))
                if op.kind == M.K_COMM:
                    for sub_name, ttype, frac in A.COMM_SUBTASKS:
                        sdur = max(1, int(dur * frac))
                        body.append((cursor, cursor + sdur, inst.comm_stream, ttype, key, sub_name))
                        cursor += sdur + M.COMM_SUBGAP_NS
                else:
                    body.append((cursor, cursor + dur, inst.main_stream, op.ascend_task_type, key, None))
                    cursor += dur + 300
            record_start = cursor
            wait_end = record_start + 400 + 500
            task(wait_start, wait_end, A.COMPUTE_STREAM, c, "NOTIFY_WAIT", inst.model_id)
            for start, end, stream, ttype, key, sub in body:
                g_id = task(start, end, stream, body_conn, ttype, inst.model_id)
                body_conn += 1
                if sub is not None:
                    g.comm.append((g_id, key, sub))
                    n_comm += 1
                elif M.OPS[key].kind == M.K_MEMCPY:
                    n_copy += 1
                else:
                    g.compute.append((g_id, key))
                    n_compute += 1
            hi = gid - 1
            task(record_start, record_start + 400, inst.main_stream, RECORD_CONN_BASE + inst.model_id,
                 "NOTIFY_RECORD", inst.model_id)
            g.launches.append({"launch": n_launch, "step": s, "model_id": inst.model_id, "role": inst.role,
                               "layer": inst.layer, "connection_id": c, "member_tasks": len(body),
                               "member_global_task_ids": [lo, hi], "start_ns": t, "end_ns": wait_end})
            n_launch += 1
            n_body += len(body)
            t = wait_end + 1_000
        sync_start = t - 2_000
        g.calls.append((sync_start, t + 500, SYNC_API, conn))
        conn += 1
        t += M.STEP_GAP_NS["decode"] + rng.randrange(M.STEP_GAP_NS["decode"] // 4)
    g.t_end = t
    g.counts = {"launches": n_launch, "body_tasks": n_body, "compute": n_compute, "communication": n_comm,
                "data_move": n_copy, "syncs": args.decode_steps, "instances": len(g.instances)}
    return g


def append(path, g, args):
    """Appends the graph rows of one rank to its monolithic DB at `path`."""
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("PRAGMA journal_mode=OFF")
    con.execute("PRAGMA synchronous=OFF")
    con.execute("BEGIN")
    ids = dict(con.execute("SELECT value, id FROM STRING_IDS"))
    nxt = [max(ids.values(), default=0) + 1]

    def st(text):
        if text not in ids:
            ids[text] = nxt[0]
            con.execute("INSERT INTO STRING_IDS VALUES(?, ?)", (nxt[0], text))
            nxt[0] += 1
        return ids[text]

    con.executemany("INSERT INTO TASK VALUES(?,?,?,?,?,?,?,?,?,?,?)",
                    [r[:6] + (st(r[6]),) + r[7:] for r in g.tasks])
    shape = st("%d,%d" % (A.BATCH, A.HIDDEN))
    nd, bf16, attr, state = st("ND"), st("DT_BF16"), st("{}"), st("static")
    rows = []
    for gid, key in g.compute:
        op = M.OPS[key]
        rows.append((st(op.ascend_name), gid, op.block_dim, op.block_dim * 2 if op.ascend_task_type == "MIX_AIC" else 0,
                     st(op.ascend_task_type), st(op.op_type), nd, bf16, shape, nd, bf16, shape, attr, state, 0))
    con.executemany("INSERT INTO COMPUTE_TASK_INFO VALUES(%s)" % ",".join("?" * 15), rows)
    group, inv, sdma, hccs = st(A.GROUP_NAME), st("INVALID_TYPE"), st("SDMA"), st("HCCS")
    dev = g.tasks[0][2] if g.tasks else 0
    rows = [(st(M.OPS[key].ascend_name), gid, st(sub), 0, group, k % 1024, inv, dev, (dev + 1) % args.ranks, sdma,
             A.BATCH * A.HIDDEN * 2, bf16, hccs, 1_000_000 + k // len(A.COMM_SUBTASKS), 1, None)
            for k, (gid, key, sub) in enumerate(g.comm)]
    con.executemany("INSERT INTO COMMUNICATION_TASK_INFO VALUES(%s)" % ",".join("?" * 16), rows)
    gtid = ((40_000 + dev) << 32) | (40_000 + dev + 7)
    con.executemany("INSERT INTO CANN_API VALUES(?,?,?,?,?,?)",
                    [(s, e, 15000 if api == LAUNCH_API else 20000, gtid, c, st(api)) for s, e, api, c in g.calls])
    assert nxt[0] < 5000
    con.execute("COMMIT")
    con.close()


def add_rank_truth(entry, g):
    """Adds the graph rows to a rank's ground truth (written by the eager format's rank_truth)."""
    c = g.counts
    launches, body, syncs, inst = c["launches"], c["body_tasks"], c["syncs"], c["instances"]
    task_rows = 3 * launches + body
    entry["kernel_rows"] += task_rows
    t = entry["tables"]
    t["TASK"] += task_rows
    t["COMPUTE_TASK_INFO"] += c["compute"]
    t["COMMUNICATION_TASK_INFO"] += c["communication"]
    t["CANN_API"] += launches + syncs
    by_kind = entry["task_rows_by_kind"]
    for k in ("compute", "communication", "data_move"):
        by_kind[k] += c[k]
    by_kind["graph_launch"] = launches
    by_kind["control"] = 2 * launches
    ev = entry["events"]
    ev["total"] += task_rows
    for k in ("compute", "communication", "data_move"):
        ev["by_kind"][k] += c[k]
    ev["by_kind"]["graph_launch"] = launches
    ev["by_kind"]["control"] = 2 * launches
    hc = entry["host_calls"]
    hc["total"] += launches + syncs
    hc["by_api"][LAUNCH_API] = hc["by_api"].get(LAUNCH_API, 0) + launches
    hc["by_api"][SYNC_API] = hc["by_api"].get(SYNC_API, 0) + syncs
    hc["by_api"] = dict(sorted(hc["by_api"].items()))
    # A launch call relates to its MODEL_EXECUTE and NOTIFY_WAIT (one key, two tasks); body
    # tasks have unique capture-time ids and NOTIFY_RECORDs one id per instance: no call.
    co = entry["correlations"]
    co["one_to_many"] += launches
    co["supported_exact"] += launches
    co["unmatched_runtime_call"] += syncs
    co["unmatched_device_work"] += body + inst
    co["keys"] += launches + syncs + body + inst
    rr = entry["relation_rows"]
    rr["supported_exact"] += 2 * launches
    rr["unmatched_runtime_call"] += syncs
    rr["unmatched_device_work"] += body + launches
    rr["total"] += 2 * launches + syncs + body + launches
    entry["time_range_ns"][1] = max(entry["time_range_ns"][1], g.t_end)
    entry["graph"] = {
        "launches": launches,
        "member_tasks": body,
        "capture_stream_rows": len(g.capture_streams),
        "launch_list": g.launches if launches <= LAUNCH_DETAIL_LIMIT else None,
    }


def structure_truth(args, fmt):
    """Rank-independent graph structure: the instances and their members in order."""
    out = []
    for inst in instances_for(args):
        members = []
        for k in inst.ops:
            op = M.OPS[k]
            members += [fmt.op_label(op)] * (len(A.COMM_SUBTASKS) if op.kind == M.K_COMM else 1)
        out.append({"model_id": inst.model_id, "role": inst.role, "layer": inst.layer,
                    "op_keys": inst.ops, "members": members,
                    "streams": {str(A.COMPUTE_STREAM): inst.main_stream,
                                **({str(A.COMM_STREAM): inst.comm_stream} if inst.comm_stream else {})}})
    return {"launch_stream": A.COMPUTE_STREAM, "launch_api": LAUNCH_API, "instances": out,
            "launches_per_step": len(out), "decode_steps": args.decode_steps,
            "first_decode_step": args.prefill_steps}
