"""Nsight Systems SQLite export writer for tools/genprofile.py.

Writes every rank of the plan into one DIR/profile.sqlite, rank r as CUDA device r of
its own process, with the export's real column sets (inputs.md section 6):
CUPTI_ACTIVITY_KIND_KERNEL (full column list), CUPTI_ACTIVITY_KIND_RUNTIME,
CUPTI_ACTIVITY_KIND_MEMCPY, StringIds, ENUM_CUDA_MEMCPY_OPER and META_DATA_EXPORT.
Name columns are StringIds ids. Every kernel and copy has the correlationId of the
runtime call that launched it; a collective is one NCCL kernel on its own stream.
Correlation ids are unique across the whole file (ranks take consecutive ranges).

Bulk rows come from INSERT ... SELECT over TEMP template tables, like the Ascend writer.

CUDA graph mode (--cuda-graph node|graph, see the section at the end): the prefill steps
stay eager and every decode step is one replay of a single captured graph per rank (the
decode step's operators: head, --layers x --ops, tail, plus one device-to-device copy per
layer), launched by a cudaGraphLaunch_v10000 runtime row with its own correlationId.
`node` writes the node-level trace: the graph's kernels and copies carry graphNodeId,
contextId and that correlationId, and CUDA_GRAPH_NODE_EVENTS maps each instantiated node
to its captured original. `graph` writes the graph-level trace instead: one
CUPTI_ACTIVITY_KIND_GRAPH_TRACE envelope per replay and no body rows at all. Eager kernels
(--cuda-graph-eager per gap) run between consecutive replays.
"""

import argparse
import os
import random
import sqlite3

import genprofile_model as M

FORMAT = "nsys"
SOURCE_KIND = "cuda_nsys_sqlite"
PER_RANK_FILES = False
COMPUTE_STREAM = 7
COMM_STREAM = 13
CONTEXT_ID = 1
EXPORT_SCHEMA_VERSION = "3.11.1"
COMM_SUBTASKS = [("", "", 1.0)]          # an NCCL collective is a single kernel
COPY_KIND = {"h2d": 1, "d2h": 2}
COPY_BYTES = {"h2d": 8 * 4096 * 2, "d2h": 8 * 4}
MEMCPY_KINDS = [(0, "CUDA_MEMCPY_KIND_UNKNOWN", "Unknown"), (1, "CUDA_MEMCPY_KIND_HTOD", "Host-to-Device"),
                (2, "CUDA_MEMCPY_KIND_DTOH", "Device-to-Host"), (3, "CUDA_MEMCPY_KIND_HTOA", "Host-to-Array"),
                (4, "CUDA_MEMCPY_KIND_ATOH", "Array-to-Host"), (5, "CUDA_MEMCPY_KIND_ATOA", "Array-to-Array"),
                (6, "CUDA_MEMCPY_KIND_ATOD", "Array-to-Device"), (7, "CUDA_MEMCPY_KIND_DTOA", "Device-to-Array"),
                (8, "CUDA_MEMCPY_KIND_DTOD", "Device-to-Device"), (9, "CUDA_MEMCPY_KIND_HTOH", "Host-to-Host"),
                (10, "CUDA_MEMCPY_KIND_PTOP", "Peer-to-Peer")]
GRID = {"decode": (108, 1, 1), "prefill": (864, 1, 1)}
BLOCK = (128, 1, 1)

SCHEMA = """
CREATE TABLE META_DATA_EXPORT(name TEXT, value TEXT);
CREATE TABLE StringIds(id INTEGER PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE ENUM_CUDA_MEMCPY_OPER(id INTEGER PRIMARY KEY, name TEXT, label TEXT);
CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL(start INTEGER NOT NULL, end INTEGER NOT NULL,
  deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL,
  correlationId INTEGER, globalPid INTEGER, demangledName INTEGER NOT NULL,
  shortName INTEGER NOT NULL, mangledName INTEGER, launchType INTEGER, cacheConfig INTEGER,
  registersPerThread INTEGER NOT NULL, gridX INTEGER NOT NULL, gridY INTEGER NOT NULL,
  gridZ INTEGER NOT NULL, blockX INTEGER NOT NULL, blockY INTEGER NOT NULL,
  blockZ INTEGER NOT NULL, staticSharedMemory INTEGER NOT NULL,
  dynamicSharedMemory INTEGER NOT NULL, localMemoryPerThread INTEGER NOT NULL,
  localMemoryTotal INTEGER NOT NULL, gridId INTEGER NOT NULL, sharedMemoryExecuted INTEGER,
  graphNodeId INTEGER, sharedMemoryLimitConfig INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME(start INTEGER NOT NULL, end INTEGER NOT NULL,
  eventClass INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER,
  nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL, callchainId INTEGER);
CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY(start INTEGER NOT NULL, end INTEGER NOT NULL,
  deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL,
  correlationId INTEGER, globalPid INTEGER, bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL,
  deprecatedSrcId INTEGER, srcKind INTEGER, dstKind INTEGER, srcDeviceId INTEGER,
  srcContextId INTEGER, dstDeviceId INTEGER, dstContextId INTEGER, migrationCause INTEGER,
  graphNodeId INTEGER, virtualAddress INTEGER);
"""

TEMP_SCHEMA = """
CREATE TEMP TABLE steps(s INTEGER PRIMARY KEY, phase INTEGER, start INTEGER, n0 INTEGER,
  c0 INTEGER);
CREATE TEMP TABLE tmpl(idx INTEGER PRIMARY KEY, j INTEGER, kind INTEGER, off INTEGER,
  dur INTEGER, jit INTEGER, djit INTEGER, call INTEGER, stream INTEGER, short INTEGER,
  demangled INTEGER, gx INTEGER, regs INTEGER, smem INTEGER, copy_kind INTEGER, bytes INTEGER);
CREATE TEMP TABLE calls(idx INTEGER PRIMARY KEY, c INTEGER, off INTEGER, dur INTEGER,
  jit INTEGER, name INTEGER);
CREATE TEMP TABLE drop_task(n INTEGER PRIMARY KEY);
CREATE TEMP TABLE drop_call(c INTEGER PRIMARY KEY);
CREATE TEMP TABLE extra(e INTEGER PRIMARY KEY, s INTEGER, tidx INTEGER, dur INTEGER,
  short INTEGER, demangled INTEGER, api INTEGER);
"""


class Strings:
    def __init__(self):
        self.ids = {}

    def __call__(self, text):
        if text not in self.ids:
            self.ids[text] = len(self.ids) + 1
        return self.ids[text]


def output_files(args):
    return ["profile.sqlite"]


def kernel_rows_per_step(phase_and_rows):
    """Copies go to the MEMCPY table, so they are not kernel rows."""
    ph, rows = phase_and_rows
    return rows - sum(1 for r in ph.rows if r.kind == M.K_MEMCPY)


def op_label(op):
    return op.cuda_short if op.kind != M.K_MEMCPY else "memcpy_" + op.key


def corr_bases(plans):
    """First correlationId of each rank: consecutive ranges, unique in the file."""
    out, base = [], 1
    for p in plans:
        out.append(base)
        base += p.calls_total + len(p.extras)
    return out


def write_all(plans, args, path):
    tmp = path + ".tmp"
    if os.path.exists(tmp):
        os.remove(tmp)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    con = sqlite3.connect(tmp, isolation_level=None)
    for p in ("journal_mode=OFF", "synchronous=OFF", "temp_store=MEMORY", "cache_size=-32768",
              "locking_mode=EXCLUSIVE"):
        con.execute("PRAGMA " + p)
    con.executescript(SCHEMA + TEMP_SCHEMA)
    con.execute("BEGIN")
    st = Strings()
    for plan, base in zip(plans, corr_bases(plans)):
        _fill_rank(con, st, plan, base)
    if getattr(args, "cuda_graph", None):
        # Nsight creates tables lazily: a node-level trace has no GRAPH_TRACE table and a
        # graph-level one no node table.
        con.execute(GRAPH_SCHEMA[args.cuda_graph])
        corr = sum(p.calls_total + len(p.extras) for p in plans) + 1
        for plan in plans:
            corr = _fill_cuda_graph(con, st, plan, args, corr)
    con.execute("INSERT INTO META_DATA_EXPORT VALUES('EXPORT_SCHEMA_VERSION', ?)", (EXPORT_SCHEMA_VERSION,))
    con.executemany("INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES(?,?,?)", MEMCPY_KINDS)
    con.executemany("INSERT INTO StringIds VALUES(?,?)", [(i, s) for s, i in st.ids.items()])
    con.execute("COMMIT")
    con.close()
    os.replace(tmp, path)


def _fill_rank(con, st, plan, corr0):
    for t in ("steps", "tmpl", "calls", "drop_task", "drop_call", "extra"):
        con.execute("DELETE FROM temp.%s" % t)
    dev = plan.rank
    pid = 50_000 + plan.rank
    gpid = pid << 24                 # Nsight packing: pid = (globalTid >> 24) & 0xFFFFFF
    gtid = gpid | (pid + 3)
    salt = plan.salt
    tbase, cbase, tmpl, calls = {}, {}, [], []
    for ph in plan.phases:
        tbase[ph.index], cbase[ph.index] = len(tmpl), len(calls)
        gx = GRID[ph.name][0]
        for r in ph.rows:
            op = M.OPS[r.op]
            copy = r.kind == M.K_MEMCPY
            tmpl.append((len(tmpl), r.j, r.kind, r.off, r.dur, r.jit, r.djit, r.call,
                         COMM_STREAM if r.kind == M.K_COMM else COMPUTE_STREAM,
                         None if copy else st(op.cuda_short), None if copy else st(op.cuda_demangled),
                         gx, 128 if r.kind == M.K_COMPUTE else 96, 49152 if "gemm" in op.cuda_short else 0,
                         COPY_KIND.get(r.op), COPY_BYTES.get(r.op)))
        for c in ph.calls:
            api = (M.OPS[ph.rows[c.row].op].cuda_api if c.row >= 0 else "cudaStreamSynchronize_v3020")
            calls.append((len(calls), c.c, c.off, c.dur, c.jit, st(api)))
    con.executemany("INSERT INTO temp.tmpl VALUES(%s)" % ",".join("?" * 16), tmpl)
    con.executemany("INSERT INTO temp.calls VALUES(?,?,?,?,?,?)", calls)
    con.executemany("INSERT INTO temp.steps VALUES(?,?,?,?,?)",
                    [(s.s, s.phase, s.start, s.n0, s.c0) for s in plan.steps])
    con.executemany("INSERT INTO temp.drop_task VALUES(?)", [(n,) for n in plan.drop_tasks])
    con.executemany("INSERT INTO temp.drop_call VALUES(?)", [(c,) for c in plan.drop_calls])
    step_phase = {s.s: s.phase for s in plan.steps}
    con.executemany("INSERT INTO temp.extra VALUES(?,?,?,?,?,?,?)", [
        (x.e, x.s, tbase[step_phase[x.s]] + x.j, x.dur, st(M.OPS[x.key].cuda_short),
         st(M.OPS[x.key].cuda_demangled), st(M.OPS[x.key].cuda_api)) for x in plan.extras])

    kernel_cols = ("start, end, deviceId, contextId, streamId, correlationId, globalPid, demangledName, "
                   "shortName, mangledName, launchType, cacheConfig, registersPerThread, gridX, gridY, "
                   "gridZ, blockX, blockY, blockZ, staticSharedMemory, dynamicSharedMemory, "
                   "localMemoryPerThread, localMemoryTotal, gridId, sharedMemoryExecuted, graphNodeId, "
                   "sharedMemoryLimitConfig")
    for ph in plan.phases:
        lo, hi = tbase[ph.index], tbase[ph.index] + len(ph.rows) - 1
        s_lo, s_hi = ph.first_step, ph.first_step + ph.steps - 1
        n = "(s.n0 + t.j)"
        corr = "(%d + s.c0 + t.call)" % corr0
        start = M.sql_start(n, "s.start", "t.off", "t.jit", salt)
        end = M.sql_end(n, start, "t.dur", "t.djit", salt)
        keep = ("AND NOT EXISTS (SELECT 1 FROM temp.drop_task d WHERE d.n = s.n0 + t.j)"
                if plan.drop_tasks else "")
        frm = ("FROM temp.steps s CROSS JOIN temp.tmpl t WHERE s.s BETWEEN %d AND %d "
               "AND t.idx BETWEEN %d AND %d" % (s_lo, s_hi, lo, hi))
        con.execute(
            "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL(%s) SELECT %s, %s, %d, %d, t.stream, %s, %d, "
            "t.demangled, t.short, NULL, 0, 0, t.regs, t.gx, 1, 1, %d, %d, %d, 0, t.smem, 0, 0, %s, "
            "t.smem, NULL, 1 %s AND t.kind <> %d %s"
            % (kernel_cols, start, end, dev, CONTEXT_ID, corr, gpid, BLOCK[0], BLOCK[1], BLOCK[2],
               corr, frm, M.K_MEMCPY, keep))
        con.execute(
            "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY SELECT %s, %s, %d, %d, t.stream, %s, %d, t.bytes, "
            "t.copy_kind, NULL, CASE t.copy_kind WHEN 1 THEN 0 ELSE 2 END, CASE t.copy_kind WHEN 1 "
            "THEN 2 ELSE 0 END, %d, %d, %d, %d, 0, NULL, NULL %s AND t.kind = %d"
            % (start, end, dev, CONTEXT_ID, corr, gpid, dev, CONTEXT_ID, dev, CONTEXT_ID, frm, M.K_MEMCPY))
        c_lo = cbase[ph.index]
        ccorr = "(%d + s.c0 + c.c)" % corr0
        c_start = "(s.start + c.off + %s %% c.jit)" % M.sql_hash(ccorr, salt + 7)
        ckeep = ("AND NOT EXISTS (SELECT 1 FROM temp.drop_call d WHERE d.c = s.c0 + c.c)"
                 if plan.drop_calls else "")
        con.execute(
            "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME SELECT %s, %s + c.dur, 0, %d, %s, c.name, 0, NULL "
            "FROM temp.steps s CROSS JOIN temp.calls c WHERE s.s BETWEEN %d AND %d "
            "AND c.idx BETWEEN %d AND %d %s"
            % (c_start, c_start, gtid, ccorr, s_lo, s_hi, c_lo, c_lo + len(ph.calls) - 1, ckeep))

    if plan.extras:
        frm = "FROM temp.extra x JOIN temp.steps s ON s.s = x.s JOIN temp.tmpl t ON t.idx = x.tidx"
        x_start = "(s.start + t.off + t.jit + t.dur + t.djit + 300 + %s %% 200)" % M.sql_hash("x.e", salt + 11)
        corr = "(%d + %d + x.e)" % (corr0, plan.calls_total)
        con.execute(
            "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL(%s) SELECT %s, %s + x.dur, %d, %d, %d, %s, %d, "
            "x.demangled, x.short, NULL, 0, 0, 32, 64, 1, 1, %d, %d, %d, 0, 0, 0, 0, %s, 0, NULL, 1 "
            "%s ORDER BY x.e"
            % (kernel_cols, x_start, x_start, dev, CONTEXT_ID, COMPUTE_STREAM, corr, gpid,
               BLOCK[0], BLOCK[1], BLOCK[2], corr, frm))
        con.execute(
            "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME SELECT %s - %d, %s - %d + 600, 0, %d, %s, x.api, 0, "
            "NULL %s ORDER BY x.e" % (x_start, M.HOST_LEAD_NS, x_start, M.HOST_LEAD_NS, gtid, corr, frm))


def rank_truth(plan, c, args):
    truth = _eager_rank_truth(plan, c, args)
    g = getattr(plan, "cuda_graph", None)
    if g is not None:
        _add_cuda_graph_truth(truth, g)
    return truth


def _eager_rank_truth(plan, c, args):
    kernels = (c["template_compute"] - c["dropped_tasks"] + c["aux"] + c["noise"]
               + c["template_comm_tasks"])
    calls = (c["launch_calls"] + c["comm_calls"] + c["memcpy_calls"] + c["sync_calls"]
             - c["dropped_calls"] + c["aux"] + c["noise"])
    one_to_one = (c["template_compute"] - c["dropped_tasks"] - c["dropped_calls"] + c["aux"] + c["noise"]
                  + c["template_comm_tasks"] + c["template_memcpy"])
    return {
        "kernel_rows": kernels,
        "tables": {
            "CUPTI_ACTIVITY_KIND_KERNEL": kernels,
            "CUPTI_ACTIVITY_KIND_MEMCPY": c["template_memcpy"],
            "CUPTI_ACTIVITY_KIND_RUNTIME": calls,
        },
        "task_rows_by_kind": {"compute": kernels - c["template_comm_tasks"],
                              "communication": c["template_comm_tasks"],
                              "data_move": c["template_memcpy"]},
        "task_rows_by_role": {"template_compute": c["template_compute"] - c["dropped_tasks"],
                              "aux": c["aux"], "noise": c["noise"], "comm": c["template_comm_tasks"],
                              "memcpy": c["template_memcpy"]},
        # traceloom_events: kernels and copies (runtime host mirrors are not events).
        "events": {"total": kernels + c["template_memcpy"],
                   "by_kind": {"compute": kernels - c["template_comm_tasks"],
                               "communication": c["template_comm_tasks"],
                               "data_move": c["template_memcpy"]}},
        "host_calls": {"total": calls, "by_api": _cuda_apis(plan, c)},
        "correlations": {
            "supported_exact": one_to_one,
            "one_to_one": one_to_one,
            "one_to_many": 0,
            "tasks_per_collective": 1,
            "unmatched_runtime_call": c["sync_calls"] + c["dropped_tasks"],
            "unmatched_device_work": c["dropped_calls"],
            "keys": one_to_one + c["sync_calls"] + c["dropped_tasks"] + c["dropped_calls"],
        },
        "relation_rows": {
            "supported_exact": one_to_one,
            "unmatched_runtime_call": c["sync_calls"] + c["dropped_tasks"],
            "unmatched_device_work": c["dropped_calls"],
            "total": one_to_one + c["sync_calls"] + c["dropped_tasks"] + c["dropped_calls"],
        },
        "streams": {"compute": COMPUTE_STREAM, "communication": COMM_STREAM},
    }


def _cuda_apis(plan, c):
    out = {}
    for ph in plan.phases:
        for call in ph.calls:
            api = M.OPS[ph.rows[call.row].op].cuda_api if call.row >= 0 else "cudaStreamSynchronize_v3020"
            out[api] = out.get(api, 0) + ph.steps
    for x in plan.extras:
        api = M.OPS[x.key].cuda_api
        out[api] = out.get(api, 0) + 1
    # Dropped calls are always kernel launches of template compute operators.
    out["cudaLaunchKernel_v7000"] -= len(plan.drop_calls)
    return dict(sorted(out.items()))


# ---------------------------------------------------------------------- CUDA graph mode

GRAPH_LAUNCH_API = "cudaGraphLaunch_v10000"
EAGER_API = "cudaLaunchKernel_v7000"
GRAPH_STREAM = 21            # graph compute kernels and copies
GRAPH_COMM_STREAM = 22       # graph NCCL collectives
ORIG_NODE_BASE = 1_000_000   # captured node ids: base + rank * NODE_STRIDE + position
EXEC_NODE_BASE = 5_000_000   # instantiated (replayed) node ids, same layout
NODE_STRIDE = 100_000_000
GRAPH_ID_BASE = 7            # graphId / graphExecId of rank r: base + r, base + 100 + r
EAGER_BETWEEN_OPS = ["sampler", "aux_cast"]
D2D_KIND, D2D_BYTES = 8, 2 * 4096

GRAPH_SCHEMA = {
    "node": """CREATE TABLE CUDA_GRAPH_NODE_EVENTS(start INTEGER NOT NULL, end INTEGER NOT NULL,
  eventClass INTEGER NOT NULL, globalTid INTEGER, nameId INTEGER NOT NULL,
  graphNodeId INTEGER NOT NULL, originalGraphNodeId INTEGER)""",
    "graph": """CREATE TABLE CUPTI_ACTIVITY_KIND_GRAPH_TRACE(start INTEGER NOT NULL, end INTEGER NOT NULL,
  deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, greenContextId INTEGER,
  streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,
  graphId INTEGER NOT NULL, graphExecId INTEGER NOT NULL)""",
}

KERNEL_INSERT = ("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL(start, end, deviceId, contextId, streamId, "
                 "correlationId, globalPid, demangledName, shortName, mangledName, launchType, cacheConfig, "
                 "registersPerThread, gridX, gridY, gridZ, blockX, blockY, blockZ, staticSharedMemory, "
                 "dynamicSharedMemory, localMemoryPerThread, localMemoryTotal, gridId, sharedMemoryExecuted, "
                 "graphNodeId, sharedMemoryLimitConfig) VALUES(%s)" % ",".join("?" * 27))
MEMCPY_INSERT = "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES(%s)" % ",".join("?" * 19)


def plan_eager(args, rank):
    """The eager plan of a CUDA graph profile: prefill steps only (decode steps are replays)."""
    eager = argparse.Namespace(**vars(args))
    eager.decode_steps = 0
    return M.plan_rank(eager, rank, COMM_SUBTASKS)


def graph_body(args):
    """The captured graph, in capture order: (op key, kind, stream, copyKind, bytes) per node."""
    body = []

    def add(key):
        op = M.OPS[key]
        if op.kind == M.K_MEMCPY:
            body.append((key, M.K_MEMCPY, GRAPH_STREAM, COPY_KIND[key], COPY_BYTES[key]))
        else:
            body.append((key, op.kind, GRAPH_COMM_STREAM if op.kind == M.K_COMM else GRAPH_STREAM, None, None))

    for key in M.HEAD:
        add(key)
    layer = M.layer_ops(args.ops, "decode")
    for _ in range(args.layers):
        for key in layer:
            add(key)
        body.append(("d2d", M.K_MEMCPY, GRAPH_STREAM, D2D_KIND, D2D_BYTES))
    for key in M.TAIL:
        add(key)
    return body


def _max_rowid(con, table):
    return con.execute('SELECT coalesce(max(rowid), 0) FROM "%s"' % table).fetchone()[0]


def _fill_cuda_graph(con, st, plan, args, corr):
    """Appends one rank's graph capture, replays and eager gaps; returns the next free
    correlationId. The ground truth goes to plan.cuda_graph."""
    node_level = args.cuda_graph == "node"
    rng = random.Random(args.seed * 31_337 + plan.rank)
    dev = plan.rank
    pid = 50_000 + plan.rank
    gpid = pid << 24
    gtid = gpid | (pid + 3)
    body = graph_body(args)
    orig0 = ORIG_NODE_BASE + plan.rank * NODE_STRIDE
    exec0 = EXEC_NODE_BASE + plan.rank * NODE_STRIDE
    graph_id, exec_id = GRAPH_ID_BASE + plan.rank, GRAPH_ID_BASE + 100 + plan.rank
    t = plan.t_end + 1_000_000

    # Capture (node ids 1:1 with body positions), then instantiation clones every node.
    node_rows = 0
    if node_level:
        rows = []
        for j, (key, kind, _, _, _) in enumerate(body):
            api = "cudaMemcpyAsync_v3020" if kind == M.K_MEMCPY else M.OPS[key].cuda_api
            rows.append((t + 10 * j, t + 10 * j + 5, 0, gtid, st(api), orig0 + j, None))
        t += 10 * len(body) + 50_000
        for j in range(len(body)):
            rows.append((t + 10 * j, t + 10 * j + 5, 0, gtid, st("cudaGraphInstantiate_v10000"), exec0 + j,
                         orig0 + j))
        t += 10 * len(body) + 50_000
        con.executemany("INSERT INTO CUDA_GRAPH_NODE_EVENTS VALUES(?,?,?,?,?,?,?)", rows)
        node_rows = len(rows)

    launches, eager_rowids = [], []
    grid_id = 1_000_000 + plan.rank * 10_000_000
    for s in range(args.decode_steps):
        c = corr
        corr += 1
        call_start = t - M.HOST_LEAD_NS
        runtime_rowid = _max_rowid(con, "CUPTI_ACTIVITY_KIND_RUNTIME") + 1
        con.execute("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES(?,?,0,?,?,?,0,NULL)",
                    (call_start, call_start + 6_000 + rng.randrange(500), gtid, c, st(GRAPH_LAUNCH_API)))
        kernels, copies = [], []
        cursor = t
        for j, (key, kind, stream, copy_kind, nbytes) in enumerate(body):
            if kind == M.K_MEMCPY:
                dur = 2_000 + rng.randrange(200)
                copies.append((cursor, cursor + dur, dev, CONTEXT_ID, stream, c, gpid, nbytes, copy_kind, None,
                               0 if copy_kind == 1 else 2, 2 if copy_kind == 1 else 0, dev, CONTEXT_ID, dev,
                               CONTEXT_ID, 0, exec0 + j if node_level else None, None))
            else:
                op = M.OPS[key]
                dur = op.decode_ns + rng.randrange(max(1, op.decode_ns // 20))
                smem = 49152 if "gemm" in op.cuda_short else 0
                grid_id += 1
                kernels.append((cursor, cursor + dur, dev, CONTEXT_ID, stream, c, gpid, st(op.cuda_demangled),
                                st(op.cuda_short), None, 0, 0, 128 if kind == M.K_COMPUTE else 96,
                                GRID["decode"][0], 1, 1, BLOCK[0], BLOCK[1], BLOCK[2], 0, smem, 0, 0, grid_id,
                                smem, exec0 + j if node_level else None, 1))
            cursor += dur + 300
        start, end = t, cursor - 300
        launch = {"replay": s, "step": args.prefill_steps + s, "correlation_id": c, "runtime_rowid": runtime_rowid,
                  "start_ns": start, "end_ns": end, "members": len(body) if node_level else 0,
                  "kernel_rowids": None, "memcpy_rowids": None, "graph_trace_rowid": None}
        if node_level:
            k0 = _max_rowid(con, "CUPTI_ACTIVITY_KIND_KERNEL") + 1
            con.executemany(KERNEL_INSERT, kernels)
            m0 = _max_rowid(con, "CUPTI_ACTIVITY_KIND_MEMCPY") + 1
            con.executemany(MEMCPY_INSERT, copies)
            launch["kernel_rowids"] = [k0, k0 + len(kernels) - 1]
            launch["memcpy_rowids"] = [m0, m0 + len(copies) - 1] if copies else None
        else:
            launch["graph_trace_rowid"] = _max_rowid(con, "CUPTI_ACTIVITY_KIND_GRAPH_TRACE") + 1
            con.execute("INSERT INTO CUPTI_ACTIVITY_KIND_GRAPH_TRACE VALUES(?,?,?,?,NULL,?,?,?,?,?)",
                        (start, end, dev, CONTEXT_ID, GRAPH_STREAM, c, gpid, graph_id, exec_id))
        launches.append(launch)
        t = end + 5_000
        # Eager work between two replays: ordinary launches, no graphNodeId.
        if s + 1 < args.decode_steps:
            for k in range(args.cuda_graph_eager):
                op = M.OPS[EAGER_BETWEEN_OPS[k % len(EAGER_BETWEEN_OPS)]]
                dur = op.decode_ns + rng.randrange(max(1, op.decode_ns // 20))
                con.execute("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES(?,?,0,?,?,?,0,NULL)",
                            (t - M.HOST_LEAD_NS, t - M.HOST_LEAD_NS + 3_000, gtid, corr, st(EAGER_API)))
                grid_id += 1
                con.execute(KERNEL_INSERT, (t, t + dur, dev, CONTEXT_ID, COMPUTE_STREAM, corr, gpid,
                                            st(op.cuda_demangled), st(op.cuda_short), None, 0, 0, 64,
                                            GRID["decode"][0], 1, 1, BLOCK[0], BLOCK[1], BLOCK[2], 0, 0, 0, 0,
                                            grid_id, 0, None, 1))
                eager_rowids.append(_max_rowid(con, "CUPTI_ACTIVITY_KIND_KERNEL"))
                corr += 1
                t += dur + 2_000
        t += M.STEP_GAP_NS["decode"] + rng.randrange(M.STEP_GAP_NS["decode"] // 4)
    plan.t_end = max(plan.t_end, t)

    kinds = [b[1] for b in body]
    n, members = args.decode_steps, len(body)
    exact = node_level and n >= 2
    plan.cuda_graph = {
        "mode": args.cuda_graph,
        "launch_api": GRAPH_LAUNCH_API,
        "streams": {"compute": GRAPH_STREAM,
                    "communication": GRAPH_COMM_STREAM if M.K_COMM in kinds else None},
        "replays": n,
        "first_replay_step": args.prefill_steps,
        "graph_id": graph_id,
        "graph_exec_id": exec_id,
        "body": {"members": members,
                 "kernels": members - kinds.count(M.K_MEMCPY),
                 "compute": kinds.count(M.K_COMPUTE),
                 "communication": kinds.count(M.K_COMM),
                 "data_move": kinds.count(M.K_MEMCPY),
                 "streams": len({b[2] for b in body}),
                 "node_ids": [exec0, exec0 + members - 1],
                 "original_node_ids": [orig0, orig0 + members - 1] if node_level else None},
        "node_events_rows": node_rows,
        "launches": launches,
        "eager_between": {"kernels": len(eager_rowids), "kernel_rowids": eager_rowids},
        # What an exact reconstruction (recovery.md 7.2) must report for this rank; members
        # are the body members found by identity (published only for promoted launches).
        "expected": {"launches": n if node_level else 0,
                     "launch_status": ("exact_replay_member" if exact else
                                       "insufficient_repeat_evidence") if node_level else None,
                     "exact_units": n if exact else 0,
                     "members": n * members if node_level else 0,
                     "body_templates": 1 if node_level else 0,
                     "envelopes": 0 if node_level else n},
    }
    return corr


def _add_cuda_graph_truth(truth, g):
    """Adds a rank's graph rows to the counts of the eager rank_truth."""
    n, b, node_level = g["replays"], g["body"], g["mode"] == "node"
    eager = g["eager_between"]["kernels"]
    t, ev, hc = truth["tables"], truth["events"], truth["host_calls"]
    body_kernels = n * b["kernels"] if node_level else 0
    truth["kernel_rows"] += body_kernels + eager
    t["CUPTI_ACTIVITY_KIND_KERNEL"] += body_kernels + eager
    t["CUPTI_ACTIVITY_KIND_MEMCPY"] += n * b["data_move"] if node_level else 0
    t["CUPTI_ACTIVITY_KIND_RUNTIME"] += n + eager
    if node_level:
        t["CUDA_GRAPH_NODE_EVENTS"] = g["node_events_rows"]
    else:
        t["CUPTI_ACTIVITY_KIND_GRAPH_TRACE"] = n
    add = {"compute": (n * b["compute"] if node_level else 0) + eager,
           "communication": n * b["communication"] if node_level else 0,
           "data_move": n * b["data_move"] if node_level else 0}
    if not node_level:
        add["graph_launch"] = n
    for by in (truth["task_rows_by_kind"], ev["by_kind"]):
        for k, v in add.items():
            by[k] = by.get(k, 0) + v
    ev["total"] += sum(add.values())
    hc["total"] += n + eager
    hc["by_api"][GRAPH_LAUNCH_API] = hc["by_api"].get(GRAPH_LAUNCH_API, 0) + n
    hc["by_api"][EAGER_API] = hc["by_api"].get(EAGER_API, 0) + eager
    hc["by_api"] = dict(sorted(hc["by_api"].items()))
    # A launch's correlationId keys its call and all its body rows (node level) or its one
    # GRAPH_TRACE row (graph level); each eager kernel has its own call.
    work = b["members"] if node_level else 1
    co, rr = truth["correlations"], truth["relation_rows"]
    co["keys"] += n + eager
    co["supported_exact"] += n + eager
    co["one_to_one"] += eager + (n if work == 1 else 0)
    co["one_to_many"] += n if work > 1 else 0
    rr["supported_exact"] += n * work + eager
    rr["total"] += n * work + eager
    truth["cuda_graph"] = g
