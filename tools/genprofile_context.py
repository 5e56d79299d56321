"""Scheduler context for tools/genprofile.py (`--context DIR`, Ascend monolithic and torch-npu).

Writes, next to a generated profile, what a vLLM run with the TraceLoom observer would
leave (context-observer.md sections 2 and 5), with identities that link exactly:

  DIR/<scheduler producer>.jsonl   session, one step per profile step (ordinal 0, 1, ...),
                                   summary: schema traceloom.scheduler.v1
  DIR/<worker producer>.jsonl      per rank (execution-linked mode): session, one execution
                                   per step (worker_rank = rank), summary
  PROF DB                          per rank: PYTORCH_API rows named
                                   traceloom.execution.<execution_id> (names are STRING_IDS
                                   ids) on the thread of the rank's CANN_API calls, each
                                   covering exactly the host calls of its step (eager launch,
                                   collective, copy and sync calls; in --graph mode the
                                   aclmdlRIExecuteAsync launches and the step's sync)

--context-queue moves the host calls of odd-ordinal steps to a task-queue thread and adds
the torch-npu task-queue rows (type 50002): an Enqueue@ row inside the marker on the marker
thread and a Dequeue@ row around the calls on the queue thread, sharing one connection id
through CONNECTION_IDS. Those steps then link only through the task-queue bridge.

--context-mode scheduler_only writes the scheduler file only (association_contract
scheduler_only): no worker file, no markers; nothing may link.

Requests (BATCH of them): each prefill step schedules BATCH new requests of
PREFILL_TOKENS / BATCH prompt tokens each; every decode step schedules one token for each
request of the last prefill step; the last step lists them as finished. Ids are derived from
the seed (sha256), so the same arguments give byte-identical files. Every generated step's
marker is checked to hold exactly its own calls (no call of another step).
"""

import hashlib
import json
import os
import sqlite3

import genprofile_ascend as A
import genprofile_model as M

SCHEMA = "traceloom.scheduler.v1"
MARKER_PREFIX = "traceloom.execution."
QUEUE_TYPE = 50002
OP_TYPE = 50001
MARKER_STRING_BASE = 100_000     # STRING_IDS ids of marker and queue names (above ENUM ids)
QUEUE_CONN_BASE = 70_000_000     # task-queue connection ids (no TASK or CANN_API row has them)
MARKER_PAD_NS = 50


def add_arguments(p):
    p.add_argument("--context", metavar="DIR", default=None,
                   help="also write scheduler context JSONL into DIR and execution markers into "
                        "the profile (ascend, torchnpu; see genprofile_context.py)")
    p.add_argument("--context-mode", choices=("linked", "scheduler_only"), default="linked",
                   help="--context: execution-linked (worker files and markers) or scheduler-only")
    p.add_argument("--context-queue", action="store_true",
                   help="--context: odd-ordinal steps reach their calls through the task queue")


def check_args(p, a):
    if a.context and a.format not in ("ascend", "torchnpu"):
        p.error("--context needs --format ascend or torchnpu")


def _hex(*parts):
    return hashlib.sha256(":".join(str(x) for x in parts).encode()).hexdigest()[:32]


def run_id(args):
    return "genrun-%d" % args.seed


def scheduler_id(args):
    return _hex("scheduler", args.seed)


def worker_id(args, rank):
    return _hex("worker", args.seed, rank)


def step_id(args, s):
    return _hex("step", args.seed, s)


def execution_id(args, rank, s):
    return _hex("execution", args.seed, rank, s)


def total_steps(args):
    return args.prefill_steps + args.decode_steps


def step_phase(args, s):
    return "prefill" if s < args.prefill_steps else "decode"


def uses_queue(args, s):
    return bool(args.context_queue) and s % 2 == 1


# --- profile side ----------------------------------------------------------------------

def _step_connections(plan, args):
    """connectionIds of the host calls of each step of one rank: {step: [conn, ...]}."""
    out = {}
    by_phase = {ph.index: ph for ph in plan.phases}
    for st in plan.steps:
        n = len(by_phase[st.phase].calls)
        out[st.s] = [A.CONN_BASE + st.c0 + c for c in range(n)]
    for x in plan.extras:
        out[x.s].append(A.CONN_BASE + plan.calls_total + x.e)
    g = getattr(plan, "graph", None)
    if g is not None:
        for s in sorted({l["step"] for l in g.launches}):
            conns = [l["connection_id"] for l in g.launches if l["step"] == s]
            out[s] = conns + [max(conns) + 1]   # the step's aclrtSynchronizeStream follows
    return out


def apply_rank(path, plan, args):
    """Adds PYTORCH_API markers (and task-queue rows) to the rank's monolithic DB at path."""
    if not args.context or args.context_mode != "linked":
        return
    rank = plan.rank
    pid = 40_000 + rank
    gtid = (pid << 32) | (pid + 7)
    queue_tid = (pid << 32) | (pid + 9)
    con = sqlite3.connect(path, isolation_level=None)
    con.execute("PRAGMA journal_mode=OFF")
    con.execute("BEGIN")
    con.execute("CREATE TABLE IF NOT EXISTS PYTORCH_API(startNs INTEGER, endNs INTEGER, "
                "globalTid INTEGER, connectionId INTEGER, name INTEGER, sequenceNumber INTEGER, "
                "fwdThreadId INTEGER, inputDtypes INTEGER, inputShapes INTEGER, "
                "callchainId INTEGER, type INTEGER)")
    con.execute("CREATE TABLE IF NOT EXISTS CONNECTION_IDS(id INTEGER, connectionId INTEGER)")
    con.execute("CREATE TEMP TABLE conn(c INTEGER PRIMARY KEY)")
    strings = [MARKER_STRING_BASE]

    def name_id(text):
        i = strings[0]
        strings[0] += 1
        con.execute("INSERT INTO STRING_IDS VALUES(?, ?)", (i, text))
        return i

    linear = name_id("aten::linear")
    enq_name, deq_name = name_id("Enqueue@aten::linear"), name_id("Dequeue@aten::linear")
    rows, conn_rows = [], []
    for s, conns in sorted(_step_connections(plan, args).items()):
        con.execute("DELETE FROM temp.conn")
        con.executemany("INSERT INTO temp.conn VALUES(?)", [(c,) for c in conns])
        lo, hi, n = con.execute("SELECT min(startNs), max(endNs), count(*) FROM CANN_API "
                                "WHERE connectionId IN (SELECT c FROM temp.conn)").fetchone()
        if not n:
            continue
        m_lo, m_hi = lo - MARKER_PAD_NS, hi + MARKER_PAD_NS
        # The marker must hold exactly this step's calls.
        inside = con.execute("SELECT count(*) FROM CANN_API WHERE globalTid = ? AND startNs >= ? "
                             "AND startNs <= ? AND endNs <= ?", (gtid, m_lo, m_hi, m_hi)).fetchone()[0]
        assert inside == n, "marker of step %d holds %d calls, expected %d" % (s, inside, n)
        marker = name_id(MARKER_PREFIX + execution_id(args, rank, s))
        rows.append((m_lo, m_hi, gtid, None, marker, s, 0, None, None, None, OP_TYPE))
        # An ordinary framework op inside the marker, as torch's profiler records many.
        rows.append((lo, lo + 10, gtid, None, linear, s, 0, None, None, None, OP_TYPE))
        if uses_queue(args, s):
            con.execute("UPDATE CANN_API SET globalTid = ? WHERE connectionId IN "
                        "(SELECT c FROM temp.conn)", (queue_tid,))
            cid = len(conn_rows) + 1
            conn_rows.append((cid, QUEUE_CONN_BASE + s))
            rows.append((m_lo + 5, m_lo + 15, gtid, cid, enq_name, s, 0, None, None, None, QUEUE_TYPE))
            rows.append((lo - 20, hi + 20, queue_tid, cid, deq_name, s, 0, None, None, None, QUEUE_TYPE))
    con.executemany("INSERT INTO PYTORCH_API VALUES(?,?,?,?,?,?,?,?,?,?,?)", rows)
    con.executemany("INSERT INTO CONNECTION_IDS VALUES(?, ?)", conn_rows)
    con.execute("COMMIT")
    con.close()


# --- JSONL side ------------------------------------------------------------------------

def _line(args, producer, rec):
    rec = dict(rec)
    rec.update({"schema": SCHEMA, "run_id": run_id(args), "producer_id": producer})
    return json.dumps(rec, ensure_ascii=True, separators=(",", ":"), allow_nan=False) + "\n"


def _request(args, group, k):
    return _hex("request", args.seed, group, k)


def _steps(args):
    batch, per = A.BATCH, A.PREFILL_TOKENS // A.BATCH
    last_group = args.prefill_steps - 1
    out = []
    for s in range(total_steps(args)):
        if s < args.prefill_steps:
            reqs = [{"request_id": _request(args, s, k), "scheduled_tokens": per,
                     "scheduled_token_start": 0,
                     "scheduled_token_start_basis": "scheduler_output_num_computed_tokens",
                     "payload_kind": "new", "computed_tokens_after_schedule": per,
                     "prompt_tokens": per} for k in range(batch)]
        else:
            d = s - args.prefill_steps
            reqs = [{"request_id": _request(args, last_group, k), "scheduled_tokens": 1,
                     "scheduled_token_start": per + d,
                     "scheduled_token_start_basis": "scheduler_output_num_computed_tokens",
                     "payload_kind": "cached", "computed_tokens_after_schedule": per + d + 1,
                     "prompt_tokens": per} for k in range(batch)]
        finished = sorted(r["request_id"] for r in reqs) if s == total_steps(args) - 1 else []
        out.append({"type": "step", "step_id": step_id(args, s), "ordinal": s,
                    "observed_monotonic_ns": 1_000_000 + 10_000 * s,
                    "total_scheduled_tokens": sum(r["scheduled_tokens"] for r in reqs),
                    "requests": reqs,
                    "cache": {"observation_phase": "after_schedule", "free_blocks": 900 - s,
                              "pool_blocks": 1024},
                    "resumed_request_ids": None, "finished_request_ids": finished,
                    "preempted_request_ids": None})
    return out


def write_jsonl(args, ranks):
    """Writes the scheduler file and (linked mode) one worker file per rank into args.context."""
    if not args.context:
        return []
    d = os.path.abspath(args.context)
    os.makedirs(d, mode=0o700, exist_ok=True)
    for name in os.listdir(d):       # the generator owns this directory's *.jsonl
        if name.endswith(".jsonl"):
            os.remove(os.path.join(d, name))
    linked = args.context_mode == "linked"
    files = []
    sched = scheduler_id(args)
    lines = [_line(args, sched, {"type": "session", "metadata": {
        "runtime": "vllm", "role": "scheduler",
        "scheduler_config": {"max_num_batched_tokens": A.PREFILL_TOKENS, "max_num_seqs": A.BATCH,
                             "policy": "fcfs", "enable_chunked_prefill": True,
                             "async_scheduling": False},
        "cache_config": {"enable_prefix_caching": False, "block_size": 128},
        "runtime_version": None,
        "association_contract": "scheduler_output_field" if linked else "scheduler_only"}})]
    steps = _steps(args)
    lines += [_line(args, sched, st) for st in steps]
    lines.append(_line(args, sched, {"type": "summary", "written_records": len(steps),
                                     "dropped_records": 0}))
    files.append(_write(d, sched, lines))
    if linked:
        for r in range(ranks):
            w = worker_id(args, r)
            lines = [_line(args, w, {"type": "session", "metadata": {"runtime": "vllm", "role": "worker"}})]
            for s in range(total_steps(args)):
                x = execution_id(args, r, s)
                lines.append(_line(args, w, {"type": "execution", "execution_id": x,
                                             "step_id": step_id(args, s), "marker": MARKER_PREFIX + x,
                                             "phase": "execute_model", "worker_rank": r,
                                             "process_id": 40_000 + r, "status": "returned",
                                             "marker_state": "emitted"}))
            lines.append(_line(args, w, {"type": "summary", "written_records": total_steps(args),
                                         "dropped_records": 0}))
            files.append(_write(d, w, lines))
    return files


def _write(d, producer, lines):
    path = os.path.join(d, producer + ".jsonl")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.writelines(lines)
    return path


def truth(args, plans, files):
    """The context part of ground_truth.json."""
    steps = []
    for s in range(total_steps(args)):
        steps.append({"ordinal": s, "step_id": step_id(args, s), "phase": step_phase(args, s),
                      "graph": bool(args.graph) and s >= args.prefill_steps,
                      "basis": ("task_queue_connection" if uses_queue(args, s) else "same_thread_host_scope")
                      if args.context_mode == "linked" else None})
    return {"run_id": run_id(args), "mode": args.context_mode, "queue": bool(args.context_queue),
            "files": [os.path.basename(f) for f in files], "scheduler_id": scheduler_id(args),
            "workers": [worker_id(args, r) for r in range(len(plans))] if args.context_mode == "linked" else [],
            "steps": steps,
            "executions": [{"rank": r, "step": s, "execution_id": execution_id(args, r, s)}
                           for r in range(len(plans)) for s in range(total_steps(args))]
            if args.context_mode == "linked" else []}
