"""Synchronized multi-rank runs for tools/genprofile.py (--cluster): one slow rank, one late rank.

A plain multi-rank profile lays every rank out on its own (its own step gaps, clocks a hair
apart), which is right for per-rank tests but says nothing about how ranks wait for each
other. With --cluster the ranks run one job in lockstep on one clock:

  - every rank starts every step at the same time (the step gaps come from one generator
    shared by all ranks, and a step lasts as long as its longest rank);
  - a collective is a barrier: rank r arrives when its preceding work is done (its first
    communication task starts then), the transfer begins on every rank when the last rank
    has arrived, so each rank's first communication task (Ascend Notify_Wait, or the single
    NCCL kernel) lasts its wait (last arrival - own arrival) plus the template duration,
    and every rank leaves the collective at the same time;
  - --slow-rank S runs every compute task of its layers (not head or tail) --slow-factor
    longer: duration x (1 + F), rounded to the nanosecond; jitter bounds stay as they were;
  - --late-rank L arrives --late-ns later at every collective (its host launches the
    collective that much later), so every other rank waits about that long.

Ground truth (ground_truth.json "cluster") gives what the cluster views must find: the slow
rank and the extra compute per layer iteration, the late rank and its lateness, and per
phase the arrival offset of every rank at every collective of a step. The generator refuses
parameters under which the late rank would not be the last to arrive at every collective
(the slow rank's extra work before one collective must stay below --late-ns), so "who made
everyone wait" has exactly one answer.
"""

import random

import genprofile_model as M

FORMATS = ("ascend", "nsys")


def add_arguments(p):
    g = p.add_argument_group("cluster (synchronized ranks, see genprofile_cluster.py)")
    g.add_argument("--cluster", action="store_true",
                   help="ranks run in lockstep on one clock; collectives are barriers")
    g.add_argument("--slow-rank", type=int, default=None, help="--cluster: rank with slower layers")
    g.add_argument("--slow-factor", type=float, default=0.25,
                   help="--cluster: extra duration of the slow rank's layer compute tasks (fraction)")
    g.add_argument("--late-rank", type=int, default=None,
                   help="--cluster: rank that arrives late at every collective")
    g.add_argument("--late-ns", type=int, default=40_000, help="--cluster: how late, in ns")


def check_args(p, a):
    if not a.cluster:
        if a.slow_rank is not None or a.late_rank is not None:
            p.error("--slow-rank / --late-rank need --cluster")
        return
    if a.format not in FORMATS:
        p.error("--cluster needs --format %s" % " or ".join(FORMATS))
    if a.graph or a.cuda_graph or a.context:
        p.error("--cluster runs without --graph, --cuda-graph or --context")
    for name in ("slow_rank", "late_rank"):
        v = getattr(a, name)
        if v is not None and not 0 <= v < a.ranks:
            p.error("--%s must be a rank in [0, %d)" % (name.replace("_", "-"), a.ranks))
    if a.slow_rank is not None and a.slow_rank == a.late_rank:
        p.error("--slow-rank and --late-rank must be different ranks")
    if not 0 <= a.slow_factor < 10 or a.late_ns < 0:
        p.error("--slow-factor must be in [0, 10) and --late-ns >= 0")


def output_files(args):
    """Nsight runs write one export per rank, as `nsys profile -o rank_%q{RANK}` would."""
    if args.format == "nsys":
        width = len(str(args.ranks - 1))
        return ["rank_%0*d.sqlite" % (width, r) for r in range(args.ranks)]
    return None


def _is_layer_compute(row, layers):
    return row.kind == M.K_COMPUTE and 0 <= row.layer < layers


def synchronize(plans, args):
    """Rewrites the offsets and durations of every rank's plan in place; returns the truth."""
    ranks = len(plans)
    slow, late = args.slow_rank, args.late_rank
    phases_truth = []
    for p in range(len(plans[0].phases)):
        phases = [plan.phases[p] for plan in plans]
        rows = [ph.rows for ph in phases]
        cursor = [0] * ranks
        slow_extra_since_barrier = 0
        layer_compute_ns = 0          # one layer iteration's compute tasks, template durations
        slow_extra_per_layer = 0
        collectives = []
        j, n = 0, len(rows[0])
        while j < n:
            head = rows[0][j]
            if head.kind != M.K_COMM:
                for r in range(ranks):
                    row = rows[r][j]
                    row.off = cursor[r]
                    if _is_layer_compute(row, args.layers):
                        if r == 0 and row.layer == 0:
                            layer_compute_ns += row.dur
                        if r == slow:
                            longer = int(round(row.dur * (1 + args.slow_factor)))
                            if row.layer == 0:
                                slow_extra_per_layer += longer - row.dur
                            slow_extra_since_barrier += longer - row.dur
                            row.dur = longer
                    cursor[r] += row.jit + row.dur + row.djit + M.EXTRA_GAP_NS
                j += 1
                continue
            js = [j]
            while js[-1] + 1 < n and rows[0][js[-1] + 1].comm_op == head.comm_op:
                js.append(js[-1] + 1)
            arrival = [cursor[r] + (args.late_ns if r == late else 0) for r in range(ranks)]
            last = max(arrival)
            if late is not None and sorted(arrival)[-2] >= arrival[late]:
                raise SystemExit("genprofile: --late-ns %d is too small: the slow rank's extra work "
                                 "before a collective (%d ns) makes it arrive no earlier than the "
                                 "late rank" % (args.late_ns, slow_extra_since_barrier))
            for r in range(ranks):
                sub_cursor = last
                for i, jj in enumerate(js):
                    row = rows[r][jj]
                    if i == 0:
                        row.off = arrival[r]
                        row.dur = (last - arrival[r]) + row.dur
                        sub_cursor = last + (row.dur - (last - arrival[r])) + M.COMM_SUBGAP_NS
                    else:
                        row.off = sub_cursor
                        sub_cursor += row.dur + M.COMM_SUBGAP_NS
                cursor[r] = sub_cursor + M.EXTRA_GAP_NS
            collectives.append({"comm_op": head.comm_op, "layer": head.layer, "slot": head.slot,
                                "arrival_offset_ns": arrival, "last_arrival_offset_ns": last})
            slow_extra_since_barrier = 0
            j = js[-1] + 1
        busy = max(cursor)
        for r, ph in enumerate(phases):
            for c in ph.calls:
                if c.row >= 0:
                    c.off = ph.rows[c.row].off - M.HOST_LEAD_NS
            sync = ph.calls[-1]
            assert sync.row < 0, "the last call of a step is its stream synchronize"
            sync.off = ph.rows[-1].off - M.HOST_LEAD_NS + 2_500
            sync.dur = cursor[r] + 500 - sync.off
            ph.busy_ns = cursor[r]
            ph.step_len_ns = busy + M.STEP_GAP_NS[ph.name]
        phases_truth.append({
            "name": phases[0].name, "steps": phases[0].steps,
            "layer_compute_ns_per_iteration": layer_compute_ns,
            "slow_extra_compute_ns_per_layer_iteration": slow_extra_per_layer,
            "collectives_per_step": collectives,
        })

    # One clock, one step schedule for every rank.
    rng = random.Random(args.seed * 1_000_003 + 424_242)
    t = M.T0_NS
    for s in range(len(plans[0].steps)):
        ph = plans[0].phases[[x.index for x in plans[0].phases].index(plans[0].steps[s].phase)]
        for plan in plans:
            plan.steps[s].start = t
        t += ph.step_len_ns + rng.randrange(M.STEP_GAP_NS[ph.name] // 4)
    for plan in plans:
        plan.t_begin = M.T0_NS - M.HOST_LEAD_NS
        last = plan.steps[-1]
        plan.t_end = last.start + next(x for x in plan.phases if x.index == last.phase).busy_ns + 1_000
    return {
        "ranks": ranks,
        "slow_rank": slow,
        "slow_factor": args.slow_factor if slow is not None else 0.0,
        "late_rank": late,
        "late_ns": args.late_ns if late is not None else 0,
        "collectives_per_rank": plans[0].comm_ops_total,
        "phases": phases_truth,
        "same_clock": True,
    }
