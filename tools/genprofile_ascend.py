"""Ascend monolithic msprof writer for tools/genprofile.py.

Writes one rank of a RankPlan as PROF_<r>/msprof_<r>.db with the real msprof table
family (inputs.md section 3): TASK, STRING_IDS, COMPUTE_TASK_INFO,
COMMUNICATION_TASK_INFO, COMMUNICATION_OP, CANN_API and ENUM_API_TYPE. Name columns
are ids into STRING_IDS. Host calls and their tasks share connectionId; a collective's
host call (HcclAllReduce), its three device tasks and its COMMUNICATION_OP row share one
connectionId.

All bulk rows come from INSERT ... SELECT over small TEMP template tables (steps x
template rows), with timing jitter from genprofile_model.sql_hash; Python only lays out
one step and the sampled perturbations. The database is built in `<path>.tmp` with the
journal off and renamed into place.
"""

import os
import sqlite3

import genprofile_model as M

FORMAT = "ascend"
COMPUTE_STREAM = 2
COMM_STREAM = 48
CONN_BASE = 1_000
MODEL_ID_NONE = 4_294_967_295   # eager mode: UINT32_MAX, normalized to "absent"
# CANN_API.type holds an ENUM_API_TYPE id (inputs.md section 3.2).
API_TYPES = [(20000, "acl"), (15000, "model"), (10000, "node"), (5500, "communication"),
             (5000, "runtime"), (50001, "op"), (50002, "queue"), (50003, "trace"), (50004, "mstx")]
CALL_API_TYPE = {M.C_LAUNCH: 10000, M.C_COMM: 5500, M.C_MEMCPY: 20000, M.C_SYNC: 20000}
# Each collective is three device tasks: (comm task type, TASK.taskType, share of the op).
COMM_SUBTASKS = [("Notify_Wait", "EVENT_WAIT", 0.25), ("Reduce_Inline", "SDMA", 0.60),
                 ("Notify_Record", "EVENT_RECORD", 0.15)]
GROUP_NAME = "10.0.0.1%enp189s0f0_60000_0_1717171717000000"
BATCH, PREFILL_TOKENS, HIDDEN = 8, 2048, 4096

SCHEMA = """
CREATE TABLE STRING_IDS(id INTEGER PRIMARY KEY, value TEXT);
CREATE TABLE ENUM_API_TYPE(id INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE TASK(startNs INTEGER, endNs INTEGER, deviceId INTEGER, connectionId INTEGER,
  globalTaskId INTEGER, globalPid INTEGER, taskType INTEGER, contextId INTEGER,
  streamId INTEGER, taskId INTEGER, modelId INTEGER);
CREATE TABLE COMPUTE_TASK_INFO(name INTEGER, globalTaskId INTEGER, blockDim INTEGER,
  mixBlockDim INTEGER, taskType INTEGER, opType INTEGER, inputFormats INTEGER,
  inputDataTypes INTEGER, inputShapes INTEGER, outputFormats INTEGER, outputDataTypes INTEGER,
  outputShapes INTEGER, attrInfo INTEGER, opState INTEGER, hf32Eligible INTEGER);
CREATE TABLE COMMUNICATION_TASK_INFO(name INTEGER, globalTaskId INTEGER, taskType INTEGER,
  planeId INTEGER, groupName INTEGER, notifyId INTEGER, rdmaType INTEGER, srcRank INTEGER,
  dstRank INTEGER, transportType INTEGER, size INTEGER, dataType INTEGER, linkType INTEGER,
  opId INTEGER, isMaster INTEGER, bandwidth NUMERIC);
CREATE TABLE COMMUNICATION_OP(opName INTEGER, startNs INTEGER, endNs INTEGER,
  connectionId INTEGER, groupName INTEGER, opId INTEGER, relay INTEGER, retry INTEGER,
  dataType INTEGER, algType INTEGER, count NUMERIC, opType INTEGER, deviceId INTEGER);
CREATE TABLE CANN_API(startNs INTEGER, endNs INTEGER, type INTEGER, globalTid INTEGER,
  connectionId INTEGER, name INTEGER);
"""

TEMP_SCHEMA = """
CREATE TEMP TABLE steps(s INTEGER PRIMARY KEY, phase INTEGER, start INTEGER, n0 INTEGER,
  c0 INTEGER, op0 INTEGER, kc INTEGER, km INTEGER);
CREATE TEMP TABLE tmpl(idx INTEGER PRIMARY KEY, j INTEGER, kind INTEGER, off INTEGER,
  dur INTEGER, jit INTEGER, djit INTEGER, call INTEGER, tt INTEGER, stream INTEGER,
  stream_ord INTEGER, comm_op INTEGER, name INTEGER, optype INTEGER, block INTEGER,
  mix INTEGER, fmt INTEGER, dtype INTEGER, ishape INTEGER, oshape INTEGER,
  comm_name INTEGER, comm_tt INTEGER, comm_size INTEGER);
CREATE TEMP TABLE commop(idx INTEGER PRIMARY KEY, k INTEGER, call INTEGER,
  fj INTEGER, foff INTEGER, fjit INTEGER, lj INTEGER, loff INTEGER, ldur INTEGER,
  ldjit INTEGER, name INTEGER, optype INTEGER, count INTEGER);
CREATE TEMP TABLE calls(idx INTEGER PRIMARY KEY, c INTEGER, off INTEGER, dur INTEGER,
  jit INTEGER, type INTEGER, name INTEGER);
CREATE TEMP TABLE drop_task(n INTEGER PRIMARY KEY);
CREATE TEMP TABLE drop_call(c INTEGER PRIMARY KEY);
CREATE TEMP TABLE extra(e INTEGER PRIMARY KEY, s INTEGER, tidx INTEGER, dur INTEGER,
  tt INTEGER, name INTEGER, optype INTEGER, api INTEGER, block INTEGER, ishape INTEGER,
  oshape INTEGER);
"""


class Strings:
    """STRING_IDS in first-use order, so ids are deterministic."""

    def __init__(self):
        self.ids = {}

    def __call__(self, text):
        if text not in self.ids:
            self.ids[text] = len(self.ids) + 1
        return self.ids[text]


def _pragmas(con):
    for p in ("journal_mode=OFF", "synchronous=OFF", "temp_store=MEMORY", "cache_size=-32768",
              "locking_mode=EXCLUSIVE"):
        con.execute("PRAGMA " + p)


def write_rank(plan, args, path):
    """Writes the msprof database of one rank to `path` (atomically)."""
    tmp = path + ".tmp"
    if os.path.exists(tmp):
        os.remove(tmp)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    con = sqlite3.connect(tmp, isolation_level=None)
    _pragmas(con)
    con.executescript(SCHEMA + TEMP_SCHEMA)
    con.execute("BEGIN")
    _fill(con, plan, args)
    con.execute("COMMIT")
    con.close()
    os.replace(tmp, path)


def _fill(con, plan, args):
    st = Strings()
    dev = plan.rank
    pid = 40_000 + plan.rank
    gtid = (pid << 32) | (pid + 7)
    salt = plan.salt
    ranks = args.ranks

    # Template tables, one block of rows per phase.
    tbase, cbase, obase = {}, {}, {}
    tmpl, calls, commops = [], [], []
    for ph in plan.phases:
        tbase[ph.index], cbase[ph.index], obase[ph.index] = len(tmpl), len(calls), len(commops)
        tokens = BATCH if ph.name == "decode" else PREFILL_TOKENS
        ishape = st("%d,%d" % (tokens, HIDDEN))
        for r in ph.rows:
            op = M.OPS[r.op]
            is_comm = r.kind == M.K_COMM
            tmpl.append((len(tmpl), r.j, r.kind, r.off, r.dur, r.jit, r.djit, r.call,
                         st(r.task_type), COMM_STREAM if is_comm else COMPUTE_STREAM, r.stream_ord,
                         r.comm_op, st(op.ascend_name) if r.kind == M.K_COMPUTE else None,
                         st(op.op_type) if r.kind == M.K_COMPUTE else None,
                         op.block_dim, op.block_dim * 2 if op.ascend_task_type == "MIX_AIC" else 0,
                         st("ND"), st("DT_BF16"), ishape, ishape,
                         st(op.ascend_name) if is_comm else None,
                         st(r.sub_name) if is_comm else None, tokens * HIDDEN * 2))
        for k in range(ph.comm_ops):
            subs = [r for r in ph.rows if r.comm_op == k]
            f, last = subs[0], subs[-1]
            op = M.OPS[f.op]
            commops.append((len(commops), k, f.call, f.j, f.off, f.jit, last.j, last.off, last.dur,
                            last.djit, st(op.ascend_name), st(op.op_type), tokens * HIDDEN))
        for c in ph.calls:
            calls.append((len(calls), c.c, c.off, c.dur, c.jit, CALL_API_TYPE[c.kind], st(c.api)))
    con.executemany("INSERT INTO temp.tmpl VALUES(%s)" % ",".join("?" * 23), tmpl)
    con.executemany("INSERT INTO temp.commop VALUES(%s)" % ",".join("?" * 13), commops)
    con.executemany("INSERT INTO temp.calls VALUES(?,?,?,?,?,?,?)", calls)
    con.executemany("INSERT INTO temp.steps VALUES(?,?,?,?,?,?,?,?)",
                    [(s.s, s.phase, s.start, s.n0, s.c0, s.op0, s.kc, s.km) for s in plan.steps])
    con.executemany("INSERT INTO temp.drop_task VALUES(?)", [(n,) for n in plan.drop_tasks])
    con.executemany("INSERT INTO temp.drop_call VALUES(?)", [(c,) for c in plan.drop_calls])
    step_phase = {s.s: s.phase for s in plan.steps}
    ex = []
    for x in plan.extras:
        op = M.OPS[x.key]
        ish = st("%d,%d" % (BATCH, HIDDEN))
        ex.append((x.e, x.s, tbase[step_phase[x.s]] + x.j, x.dur, st(op.ascend_task_type),
                   st(op.ascend_name), st(op.op_type), st(op.api), op.block_dim, ish, ish))
    con.executemany("INSERT INTO temp.extra VALUES(?,?,?,?,?,?,?,?,?,?,?)", ex)
    group = st(GROUP_NAME)
    for misc in ("INVALID_TYPE", "SDMA", "HCCS", "BF16", "MESH-RING", "{}", "dynamic"):
        st(misc)
    assert len(st.ids) < 5000, "STRING_IDS ids must stay below the ENUM_API_TYPE ids"

    for ph in plan.phases:
        lo, hi = tbase[ph.index], tbase[ph.index] + len(ph.rows) - 1
        s_lo, s_hi = ph.first_step, ph.first_step + ph.steps - 1
        n = "(s.n0 + t.j)"
        start = M.sql_start(n, "s.start", "t.off", "t.jit", salt)
        end = M.sql_end(n, start, "t.dur", "t.djit", salt)
        keep = ("AND NOT EXISTS (SELECT 1 FROM temp.drop_task d WHERE d.n = s.n0 + t.j)"
                if plan.drop_tasks else "")
        frm = ("FROM temp.steps s CROSS JOIN temp.tmpl t WHERE s.s BETWEEN %d AND %d "
               "AND t.idx BETWEEN %d AND %d" % (s_lo, s_hi, lo, hi))
        con.execute(
            "INSERT INTO TASK SELECT %s, %s, %d, %d + s.c0 + t.call, %s, %d, t.tt, 0, t.stream, "
            "((CASE WHEN t.kind = %d THEN s.km ELSE s.kc END) + t.stream_ord) %% 65536, %d %s %s"
            % (start, end, dev, CONN_BASE, n, pid, M.K_COMM, MODEL_ID_NONE, frm, keep))
        con.execute(
            "INSERT INTO COMPUTE_TASK_INFO SELECT t.name, %s, t.block, t.mix, t.tt, t.optype, t.fmt, "
            "t.dtype, t.ishape, t.fmt, t.dtype, t.oshape, %d, %d, 0 %s AND t.kind = %d %s"
            % (n, st("{}"), st("dynamic"), frm, M.K_COMPUTE, keep))
        con.execute(
            "INSERT INTO COMMUNICATION_TASK_INFO SELECT t.comm_name, %s, t.comm_tt, 0, %d, "
            "(s.op0 + t.comm_op) %% 1024, %d, %d, %d, %d, t.comm_size, %d, %d, s.op0 + t.comm_op, 1, "
            "NULL %s AND t.kind = %d"
            % (n, group, st("INVALID_TYPE"), dev, (dev + 1) % ranks, st("SDMA"), st("BF16"),
               st("HCCS"), frm, M.K_COMM))
        if ph.comm_ops:
            o_lo = obase[ph.index]
            fn, ln = "(s.n0 + o.fj)", "(s.n0 + o.lj)"
            o_start = M.sql_start(fn, "s.start", "o.foff", "o.fjit", salt)
            o_last_start = M.sql_start(ln, "s.start", "o.loff", "1", salt)
            o_end = M.sql_end(ln, o_last_start, "o.ldur", "o.ldjit", salt)
            con.execute(
                "INSERT INTO COMMUNICATION_OP SELECT o.name, %s, %s, %d + s.c0 + o.call, %d, "
                "s.op0 + o.k, 0, 0, %d, %d, o.count, o.optype, %d FROM temp.steps s CROSS JOIN "
                "temp.commop o WHERE s.s BETWEEN %d AND %d AND o.idx BETWEEN %d AND %d"
                % (o_start, o_end, CONN_BASE, group, st("BF16"), st("MESH-RING"), dev, s_lo, s_hi,
                   o_lo, o_lo + ph.comm_ops - 1))
        c_lo = cbase[ph.index]
        conn = "(%d + s.c0 + c.c)" % CONN_BASE
        c_start = "(s.start + c.off + %s %% c.jit)" % M.sql_hash(conn, salt + 7)
        ckeep = ("AND NOT EXISTS (SELECT 1 FROM temp.drop_call d WHERE d.c = s.c0 + c.c)"
                 if plan.drop_calls else "")
        con.execute(
            "INSERT INTO CANN_API SELECT %s, %s + c.dur, c.type, %d, %s, c.name FROM temp.steps s "
            "CROSS JOIN temp.calls c WHERE s.s BETWEEN %d AND %d AND c.idx BETWEEN %d AND %d %s"
            % (c_start, c_start, gtid, conn, s_lo, s_hi, c_lo, c_lo + len(ph.calls) - 1, ckeep))

    if plan.extras:
        # Extra kernels sit in the idle gap after the compute task they follow.
        frm = ("FROM temp.extra x JOIN temp.steps s ON s.s = x.s JOIN temp.tmpl t ON t.idx = x.tidx")
        x_start = "(s.start + t.off + t.jit + t.dur + t.djit + 300 + %s %% 200)" % M.sql_hash(
            "x.e", salt + 11)
        gid = "(%d + x.e)" % plan.rows_total
        conn = "(%d + %d + x.e)" % (CONN_BASE, plan.calls_total)
        con.execute(
            "INSERT INTO TASK SELECT %s, %s + x.dur, %d, %s, %s, %d, x.tt, 0, %d, (50000 + x.e) %% 65536, "
            "%d %s ORDER BY x.e" % (x_start, x_start, dev, conn, gid, pid, COMPUTE_STREAM, MODEL_ID_NONE, frm))
        con.execute(
            "INSERT INTO COMPUTE_TASK_INFO SELECT x.name, %s, x.block, 0, x.tt, x.optype, %d, %d, "
            "x.ishape, %d, %d, x.oshape, %d, %d, 0 %s ORDER BY x.e"
            % (gid, st("ND"), st("DT_BF16"), st("ND"), st("DT_BF16"), st("{}"), st("dynamic"), frm))
        con.execute(
            "INSERT INTO CANN_API SELECT %s - %d, %s - %d + 600, %d, %d, %s, x.api %s ORDER BY x.e"
            % (x_start, M.HOST_LEAD_NS, x_start, M.HOST_LEAD_NS, CALL_API_TYPE[M.C_LAUNCH], gtid, conn, frm))

    con.executemany("INSERT INTO ENUM_API_TYPE VALUES(?,?)", API_TYPES)
    con.executemany("INSERT INTO STRING_IDS VALUES(?,?)", [(i, s) for s, i in st.ids.items()])


# --- what tools/genprofile.py needs to know about this format ---------------------------

SOURCE_KIND = "ascend_sqlite_hot_path"
PER_RANK_FILES = True


def output_files(args):
    width = len(str(args.ranks - 1))
    return ["PROF_%0*d/msprof_%0*d.db" % (width, r, width, r) for r in range(args.ranks)]


def kernel_rows_per_step(phase_and_rows):
    """Every template row is a TASK row here (copies are MEMCPY_ASYNC tasks)."""
    return phase_and_rows[1]


def op_label(op):
    """The identity an analysis sees for a template operator: opType, or the task type."""
    return op.op_type if op.kind != M.K_MEMCPY else op.ascend_task_type


def rank_truth(plan, c, args):
    compute = c["template_compute"] - c["dropped_tasks"] + c["aux"] + c["noise"]
    comm_tasks = c["template_comm_tasks"]
    task_rows = compute + comm_tasks + c["template_memcpy"]
    calls = (c["launch_calls"] + c["comm_calls"] + c["memcpy_calls"] + c["sync_calls"]
             - c["dropped_calls"] + c["aux"] + c["noise"])
    one_to_one = (c["template_compute"] - c["dropped_tasks"] - c["dropped_calls"]
                  + c["template_memcpy"] + c["aux"] + c["noise"])
    one_to_many = c["comm_ops"] if len(COMM_SUBTASKS) > 1 else 0
    if len(COMM_SUBTASKS) == 1:
        one_to_one += c["comm_ops"]
    unmatched_call = c["sync_calls"] + c["dropped_tasks"]
    unmatched_work = c["dropped_calls"]
    return {
        "kernel_rows": task_rows,
        "tables": {
            "TASK": task_rows,
            "COMPUTE_TASK_INFO": compute,
            "COMMUNICATION_TASK_INFO": comm_tasks,
            "COMMUNICATION_OP": c["comm_ops"],
            "CANN_API": calls,
            "ENUM_API_TYPE": len(API_TYPES),
        },
        # TASK rows by the kind an analysis assigns (inputs.md section 9.1).
        "task_rows_by_kind": {"compute": compute, "communication": comm_tasks,
                              "data_move": c["template_memcpy"]},
        "task_rows_by_role": {"template_compute": c["template_compute"] - c["dropped_tasks"],
                              "aux": c["aux"], "noise": c["noise"], "comm": comm_tasks,
                              "memcpy": c["template_memcpy"]},
        # traceloom_events: one event per TASK row plus one per COMMUNICATION_OP row.
        "events": {"total": task_rows + c["comm_ops"],
                   "by_kind": {"compute": compute, "communication": comm_tasks + c["comm_ops"],
                               "data_move": c["template_memcpy"]}},
        "host_calls": {"total": calls, "by_api": dict(sorted(c["apis"].items()))},
        # Host <-> device relations by connectionId (inputs.md section 10), one per key.
        "correlations": {
            "supported_exact": one_to_one + one_to_many,
            "one_to_one": one_to_one,
            "one_to_many": one_to_many,
            "tasks_per_collective": len(COMM_SUBTASKS),
            "unmatched_runtime_call": unmatched_call,
            "unmatched_device_work": unmatched_work,
            "keys": one_to_one + one_to_many + unmatched_call + unmatched_work,
        },
        # The same relations as rows of (call, task) pairs, one row per task for a collective.
        "relation_rows": {
            "supported_exact": one_to_one + one_to_many * len(COMM_SUBTASKS),
            "unmatched_runtime_call": unmatched_call,
            "unmatched_device_work": unmatched_work,
            "total": one_to_one + one_to_many * len(COMM_SUBTASKS) + unmatched_call + unmatched_work,
        },
        "streams": {"compute": COMPUTE_STREAM, "communication": COMM_STREAM},
    }
