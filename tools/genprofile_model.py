"""The format-independent workload model behind tools/genprofile.py.

A synthetic inference run is a few prefill steps followed by many decode steps. Every
step is the same template: head ops (input copy, embedding), `layers` repetitions of a
layer of `ops` operators, and tail ops (final norm, LM head, sampler, output copy).
Prefill uses the same operators with prefill attention, prefill shapes and longer
durations, so the two phases are distinct repeat units.

The model is laid out so that a format writer can produce millions of rows with
INSERT ... SELECT inside SQLite instead of Python loops:

  - `Phase.rows`   the expanded step template: one row per device task of one step,
                   with its offset from the step start, base duration and jitter bounds;
  - `Phase.calls`  the host calls of one step (one per launch, one per collective, one
                   stream synchronize), each pointing at the template row it launches;
  - `RankPlan.steps`   per step: start time and the row/call/stream counters it starts at;
  - perturbations  exact positions of dropped tasks, dropped host calls, auxiliary and
                   noise kernels, sampled here with a seeded `random.Random`, so the
                   ground truth is known exactly without reading the output back.

Per-row timing jitter comes from `sql_hash`, a deterministic integer hash evaluated in
SQL (no floating point, no overflow), so a seed gives byte-identical databases.

A new workload shape (graph mode, scheduler context, ...) extends this module; a new
output layout is a new tools/genprofile_<format>.py writer.
"""

import random
from dataclasses import dataclass, field

# Absolute time origin: local Unix time in ns, as real Ascend profiles carry (~1.7e18).
T0_NS = 1_717_171_717_000_000_000
HOST_LEAD_NS = 15_000        # host launch call precedes its task by this much
EXTRA_GAP_NS = 2_500         # idle gap after every compute task; extra kernels land here
COMM_SUBGAP_NS = 200         # spacing between the tasks of one collective
STEP_GAP_NS = {"prefill": 200_000, "decode": 80_000}

# Kinds of template rows (stored as integers in the SQL templates).
K_COMPUTE, K_COMM, K_MEMCPY = 0, 1, 2
KIND_NAMES = {K_COMPUTE: "compute", K_COMM: "communication", K_MEMCPY: "data_move"}
# Kinds of host calls.
C_LAUNCH, C_COMM, C_MEMCPY, C_SYNC = 0, 1, 2, 3


@dataclass(frozen=True)
class Op:
    key: str
    kind: int
    op_type: str            # Ascend opType (compute identity)
    ascend_name: str        # Ascend COMPUTE_TASK_INFO.name
    ascend_task_type: str   # Ascend TASK.taskType
    api: str                # Ascend CANN_API name of the launch
    decode_ns: int
    prefill_ns: int
    cuda_short: str         # Nsight shortName
    cuda_demangled: str     # Nsight demangledName
    cuda_api: str = "cudaLaunchKernel_v7000"
    block_dim: int = 24


def _op(key, kind, op_type, name, ttype, api, dec, pre, short, dem, **kw):
    return Op(key, kind, op_type, name, ttype, api, dec, pre, short, dem, **kw)


_GEMM = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_kernel__5x_cublas"
_MM = ("MatMulV2", "aclnnMm_MatMulCommon_MatMulV2", "AI_CORE", "aclnnMm")

OPS = {o.key: o for o in [
    _op("h2d", K_MEMCPY, "", "", "MEMCPY_ASYNC", "aclrtMemcpyAsync", 3_000, 9_000,
        "", "", cuda_api="cudaMemcpyAsync_v3020"),
    _op("d2h", K_MEMCPY, "", "", "MEMCPY_ASYNC", "aclrtMemcpyAsync", 3_000, 3_000,
        "", "", cuda_api="cudaMemcpyAsync_v3020"),
    _op("embedding", K_COMPUTE, "GatherV2", "aclnnEmbedding_GatherV2_GatherV2", "AI_VECTOR_CORE",
        "aclnnEmbedding", 4_000, 12_000, "embedding_lookup_kernel",
        "void vllm::embedding_lookup_kernel<c10::BFloat16>(c10::BFloat16*, long const*, int)"),
    _op("rmsnorm", K_COMPUTE, "RmsNorm", "aclnnRmsNorm_RmsNorm_RmsNorm", "AI_VECTOR_CORE",
        "aclnnRmsNorm", 6_000, 30_000, "rms_norm_kernel",
        "void vllm::rms_norm_kernel<c10::BFloat16, 8, 4>(c10::BFloat16*, c10::BFloat16 const*, float, int, int)"),
    _op("qkv_proj", K_COMPUTE, *_MM, 18_000, 180_000, _GEMM, _GEMM),
    _op("rope", K_COMPUTE, "ApplyRotaryPosEmb", "aclnnApplyRotaryPosEmb_ApplyRotaryPosEmb_ApplyRotaryPosEmb",
        "AI_VECTOR_CORE", "aclnnApplyRotaryPosEmb", 5_000, 25_000, "rotary_embedding_kernel",
        "void vllm::rotary_embedding_kernel<c10::BFloat16, true>(long const*, c10::BFloat16*, int)"),
    _op("decode_attention", K_COMPUTE, "IncreFlashAttention",
        "aclnnIncreFlashAttentionV4_IncreFlashAttention_IncreFlashAttention", "MIX_AIC",
        "aclnnIncreFlashAttentionV4", 25_000, 25_000, "paged_attention_v2_kernel",
        "void vllm::paged_attention_v2_kernel<c10::BFloat16, 128, 16, 128, 512>(float*, int)"),
    _op("prefill_attention", K_COMPUTE, "PromptFlashAttention",
        "aclnnPromptFlashAttentionV3_PromptFlashAttention_PromptFlashAttention", "MIX_AIC",
        "aclnnPromptFlashAttentionV3", 200_000, 200_000, "flash_fwd_kernel",
        "void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t>>(Flash_fwd_params)"),
    _op("o_proj", K_COMPUTE, *_MM, 12_000, 120_000, _GEMM, _GEMM),
    _op("allreduce", K_COMM, "hcom_allReduce_", "hcom_allReduce__synthetic_0_1", "", "HcclAllReduce",
        20_000, 150_000, "ncclDevKernel_AllReduce_Sum_bf16_RING_LL",
        "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
        cuda_api="cudaLaunchKernelExC_v11060"),
    _op("add_rmsnorm", K_COMPUTE, "AddRmsNorm", "aclnnAddRmsNorm_AddRmsNorm_AddRmsNorm", "AI_VECTOR_CORE",
        "aclnnAddRmsNorm", 7_000, 35_000, "fused_add_rms_norm_kernel",
        "void vllm::fused_add_rms_norm_kernel<c10::BFloat16, 8>(c10::BFloat16*, c10::BFloat16*, float, int)"),
    _op("gate_up_proj", K_COMPUTE, *_MM, 30_000, 300_000, _GEMM, _GEMM),
    _op("swiglu", K_COMPUTE, "SwiGlu", "aclnnSwiGlu_SwiGlu_SwiGlu", "AI_VECTOR_CORE", "aclnnSwiGlu",
        6_000, 40_000, "act_and_mul_kernel",
        "void vllm::act_and_mul_kernel<c10::BFloat16, &vllm::silu_kernel<c10::BFloat16>, true>(c10::BFloat16*, int)"),
    _op("down_proj", K_COMPUTE, *_MM, 22_000, 220_000, _GEMM, _GEMM),
    _op("lm_head", K_COMPUTE, *_MM, 40_000, 40_000, _GEMM, _GEMM),
    _op("sampler", K_COMPUTE, "ArgMaxV2", "aclnnArgMax_ArgMaxV2_ArgMaxV2", "AI_VECTOR_CORE", "aclnnArgMax",
        5_000, 5_000, "topk_topp_sampling_kernel",
        "void flashinfer::sampling::topk_topp_sampling_kernel<float, int>(float*, int*, int)"),
    # Auxiliary kernels: small format/fill/copy kernels that appear now and then.
    _op("aux_transdata", K_COMPUTE, "TransData", "aclnnTransData_TransData_TransData", "AI_VECTOR_CORE",
        "aclnnTransData", 1_200, 1_200, "vectorized_elementwise_kernel",
        "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at::detail::Array<char*, 1>>(int)"),
    _op("aux_cast", K_COMPUTE, "Cast", "aclnnCast_Cast_Cast", "AI_VECTOR_CORE", "aclnnCast",
        900, 900, "unrolled_elementwise_kernel",
        "void at::native::unrolled_elementwise_kernel<at::native::copy_kernel_cuda, at::detail::Array<char*, 2>>(int)"),
    _op("aux_zeros", K_COMPUTE, "ZerosLike", "aclnnInplaceZero_ZerosLike_ZerosLike", "AI_VECTOR_CORE",
        "aclnnInplaceZero", 700, 700, "memset_zero_kernel", "void at::native::memset_zero_kernel<float>(float*, long)"),
    # Noise kernels: unexpected extra launches of ordinary operators.
    _op("noise_add", K_COMPUTE, "Add", "aclnnAdd_Add_Add", "AI_VECTOR_CORE", "aclnnAdd",
        1_500, 1_500, "add_bias_kernel", "void vllm::add_bias_kernel<c10::BFloat16>(c10::BFloat16*, int)"),
    _op("noise_mul", K_COMPUTE, "Mul", "aclnnMul_Mul_Mul", "AI_VECTOR_CORE", "aclnnMul",
        1_300, 1_300, "scale_kernel", "void vllm::scale_kernel<c10::BFloat16>(c10::BFloat16*, float, int)"),
    _op("noise_matmul", K_COMPUTE, *_MM, 1_800, 1_800, _GEMM, _GEMM),
]}

AUX_KEYS = ["aux_transdata", "aux_cast", "aux_zeros"]
NOISE_KEYS = ["noise_add", "noise_mul", "noise_matmul"]
EXTRA_MAX_NS = EXTRA_GAP_NS - 600   # longest extra kernel, so it always fits its gap

DECODE_LAYER = ["rmsnorm", "qkv_proj", "rope", "decode_attention", "o_proj", "allreduce",
                "add_rmsnorm", "gate_up_proj", "swiglu", "down_proj", "allreduce"]
HEAD = ["h2d", "embedding"]
TAIL = ["rmsnorm", "lm_head", "sampler", "d2h"]

# Operators appended when a layer has more ops than DECODE_LAYER: all distinct, so a
# layer never repeats inside itself and its period is exactly `ops`.
_EXTRA_LAYER_TYPES = ["Transpose", "Slice", "ConcatD", "SoftmaxV2", "Sigmoid", "Exp", "Sub",
                      "Div", "ReduceSum", "Tile", "Gelu", "LayerNorm"]


def _layer_filler(i):
    t = _EXTRA_LAYER_TYPES[i] if i < len(_EXTRA_LAYER_TYPES) else "CustomOp%d" % i
    key = "layer_extra_%d" % i
    if key not in OPS:
        low = t.lower()
        OPS[key] = Op(key, K_COMPUTE, t, "aclnn%s_%s_%s" % (t, t, t), "AI_VECTOR_CORE", "aclnn" + t,
                      3_000 + 200 * (i % 7), 15_000, "%s_kernel" % low,
                      "void vllm::%s_kernel<c10::BFloat16>(c10::BFloat16*, int)" % low)
    return key


def layer_ops(ops, phase):
    """The operator keys of one layer with `ops` operators in `phase`."""
    base = list(DECODE_LAYER)
    keys = [base[i] if i < len(base) else _layer_filler(i - len(base)) for i in range(ops)]
    if phase == "prefill":
        keys = ["prefill_attention" if k == "decode_attention" else k for k in keys]
    return keys


@dataclass
class Row:
    """One device task of the step template."""
    j: int              # index within the step
    kind: int
    op: str
    layer: int          # -1 head, `layers` tail, else the layer number
    slot: int           # operator position within its layer/head/tail
    sub: int            # task number within a collective (0 otherwise)
    sub_name: str       # comm task type (Notify_Wait, ...) or ""
    task_type: str      # Ascend TASK.taskType of this row
    off: int
    dur: int
    jit: int            # start jitter is hash % jit (>= 1)
    djit: int           # duration jitter is in [-djit, +djit]
    call: int           # index of the host call that launches it
    stream_ord: int     # ordinal on its stream within the step
    comm_op: int        # index of the collective within the step, or -1
    compute_ord: int    # ordinal among compute rows of the step, or -1


@dataclass
class Call:
    """One host call of the step template."""
    c: int
    kind: int
    api: str
    row: int            # template row it launches (first task of a collective), -1 for sync
    off: int
    dur: int
    jit: int


@dataclass
class Phase:
    name: str
    index: int
    steps: int
    first_step: int
    layer_keys: list
    rows: list = field(default_factory=list)
    calls: list = field(default_factory=list)
    tail_keys: list = field(default_factory=lambda: list(TAIL))
    busy_ns: int = 0
    step_len_ns: int = 0
    compute_js: list = field(default_factory=list)   # template rows that are compute tasks
    comm_ops: int = 0                                 # collectives per step


def step_tail(name, extra_decode_ops=()):
    """The tail operators of one step: TAIL, with the extra decode operators (edits for
    comparisons, --extra-decode-op) after the LM head of every decode step."""
    if name != "decode" or not extra_decode_ops:
        return list(TAIL)
    at = TAIL.index("lm_head") + 1
    return TAIL[:at] + list(extra_decode_ops) + TAIL[at:]


def build_phase(name, index, steps, first_step, layers, ops, jitter, comm_subtasks,
                slow_ops=None, extra_decode_ops=()):
    """Expands one step of `name` into template rows and host calls.

    comm_subtasks: [(comm task type, TASK.taskType, fraction of the op's duration)], one
    entry per device task a collective produces in this format.
    slow_ops: {(op key, layer): factor}: that operator in that layer takes factor times its
    duration (edits for comparisons, --slow-op); extra_decode_ops: operator keys added to
    the tail of every decode step (--extra-decode-op).
    """
    keys = layer_ops(ops, name)
    ph = Phase(name, index, steps, first_step, keys)
    ph.tail_keys = step_tail(name, extra_decode_ops)
    slow_ops = slow_ops or {}
    plan = [(-1, i, k) for i, k in enumerate(HEAD)]
    for layer in range(layers):
        plan += [(layer, i, k) for i, k in enumerate(keys)]
    plan += [(layers, i, k) for i, k in enumerate(ph.tail_keys)]

    cursor = 0
    stream_ord = {0: 0, 1: 0}
    comm_ops = 0
    compute_ord = 0
    for layer, slot, key in plan:
        op = OPS[key]
        dur = op.prefill_ns if name == "prefill" else op.decode_ns
        if (key, layer) in slow_ops:
            dur = slowed_ns(dur, slow_ops[(key, layer)])
        c = len(ph.calls)
        if op.kind == K_COMM:
            first = len(ph.rows)
            sub_cursor = cursor
            for sub, (sub_name, ttype, frac) in enumerate(comm_subtasks):
                sdur = max(1, int(dur * frac))
                djit = min(COMM_SUBGAP_NS // 4, int(sdur * jitter / 2))
                ph.rows.append(Row(len(ph.rows), K_COMM, key, layer, slot, sub, sub_name, ttype,
                                   sub_cursor, sdur, 1, djit, c, stream_ord[1], comm_ops, -1))
                stream_ord[1] += 1
                sub_cursor += sdur + COMM_SUBGAP_NS
            ph.calls.append(Call(c, C_COMM, op.api, first, cursor - HOST_LEAD_NS, 3_000, 500))
            comm_ops += 1
            cursor = sub_cursor + EXTRA_GAP_NS
        else:
            jit = max(1, int(dur * jitter))
            djit = int(dur * jitter / 2)
            ph.rows.append(Row(len(ph.rows), op.kind, key, layer, slot, 0, "", op.ascend_task_type,
                               cursor, dur, jit, djit, c, stream_ord[0], -1,
                               compute_ord if op.kind == K_COMPUTE else -1))
            if op.kind == K_COMPUTE:
                compute_ord += 1
            stream_ord[0] += 1
            kind = C_MEMCPY if op.kind == K_MEMCPY else C_LAUNCH
            ph.calls.append(Call(c, kind, op.api, len(ph.rows) - 1, cursor - HOST_LEAD_NS,
                                 2_000 if kind == C_MEMCPY else 1_200, 400))
            cursor += jit + dur + djit + EXTRA_GAP_NS
    ph.busy_ns = cursor
    ph.compute_js = [r.j for r in ph.rows if r.kind == K_COMPUTE]
    ph.comm_ops = comm_ops
    # The step ends with a stream synchronize that waits for the tail: no device task.
    last = ph.rows[-1]
    sync_off = last.off - HOST_LEAD_NS + 2_500
    ph.calls.append(Call(len(ph.calls), C_SYNC, "aclrtSynchronizeStream", -1, sync_off,
                         cursor + 500 - sync_off, 1))
    ph.step_len_ns = cursor + STEP_GAP_NS[name]
    return ph


def slowed_ns(dur, factor):
    """The duration of an operator slowed by factor (--slow-op), in whole ns."""
    return int(round(dur * factor))


@dataclass
class Step:
    s: int
    phase: int
    start: int
    n0: int        # first template row number (globalTaskId of row 0)
    c0: int        # first host call number
    op0: int       # first collective number
    kc: int        # compute-stream task counter at step start
    km: int        # comm-stream task counter at step start


@dataclass
class Extra:
    e: int
    s: int
    j: int
    key: str
    role: str      # "aux" or "noise"
    dur: int


@dataclass
class RankPlan:
    rank: int
    seed: int
    salt: int
    phases: list
    steps: list
    rows_total: int          # template rows over all steps (before perturbation)
    calls_total: int
    comm_ops_total: int
    drop_tasks: list         # template row numbers n whose task is missing
    drop_calls: list         # host call numbers whose call is missing
    extras: list
    t_begin: int
    t_end: int
    drop_call_apis: dict     # API name -> dropped calls of it


def plan_rank(args, rank, comm_subtasks):
    """Lays out every step of one rank and samples its perturbations."""
    rng = random.Random(args.seed * 1_000_003 + rank * 7_919)
    phases, first = [], 0
    for index, (name, count) in enumerate([("prefill", args.prefill_steps), ("decode", args.decode_steps)]):
        if count <= 0:
            continue
        phases.append(build_phase(name, index, count, first, args.layers, args.ops, args.jitter,
                                  comm_subtasks, getattr(args, "slow_op", None),
                                  getattr(args, "extra_decode_op", None) or ()))
        first += count
    steps = []
    t = T0_NS + rank * 137   # ranks start a hair apart, as unsynchronized clocks do
    n0 = c0 = op0 = kc = km = 0
    for ph in phases:
        per_stream = [sum(1 for r in ph.rows if r.kind != K_COMM), sum(1 for r in ph.rows if r.kind == K_COMM)]
        for _ in range(ph.steps):
            steps.append(Step(len(steps), ph.index, t, n0, c0, op0, kc, km))
            n0 += len(ph.rows)
            c0 += len(ph.calls)
            op0 += ph.comm_ops
            kc += per_stream[0]
            km += per_stream[1]
            t += ph.step_len_ns + rng.randrange(STEP_GAP_NS[ph.name] // 4)
    t_end = steps[-1].start + phases[-1].busy_ns + 1_000 if steps else t

    # Perturbations: disjoint positions among the compute tasks of all steps.
    spans = []   # (first global compute index, phase, first step)
    nc = 0
    for ph in phases:
        spans.append((nc, ph))
        nc += ph.steps * len(ph.compute_js)
    want = [round(args.missing * nc), round(args.missing * nc), round(args.aux * nc), round(args.noise * nc)]
    total = min(nc, sum(want))
    picks = rng.sample(range(nc), total) if total else []

    def locate(i):
        for start, ph in reversed(spans):
            if i >= start:
                cj = ph.compute_js
                step, k = divmod(i - start, len(cj))
                return ph.first_step + step, cj[k], ph
        raise AssertionError(i)

    groups, at = [], 0
    for w in want:
        groups.append(sorted(picks[at:at + w]))
        at += w
    drop_tasks = []
    for i in groups[0]:
        s, j, _ = locate(i)
        drop_tasks.append(steps[s].n0 + j)
    drop_calls, drop_call_apis = [], {}
    for i in groups[1]:
        s, j, ph = locate(i)
        drop_calls.append(steps[s].c0 + ph.rows[j].call)
        api = ph.calls[ph.rows[j].call].api
        drop_call_apis[api] = drop_call_apis.get(api, 0) + 1
    extras = []
    for role, idx, pool in (("aux", groups[2], AUX_KEYS), ("noise", groups[3], NOISE_KEYS)):
        for i in idx:
            s, j, _ = locate(i)
            key = rng.choice(pool)
            base = OPS[key].decode_ns
            dur = min(EXTRA_MAX_NS, base + rng.randrange(max(1, int(base * args.jitter)) + 1))
            extras.append((s, j, key, role, dur))
    extras.sort()
    extras = [Extra(e, *x) for e, x in enumerate(extras)]
    return RankPlan(rank, args.seed, (args.seed * 2_654_435 + rank * 40_503 + 12_345) % 2_147_483_647,
                    phases, steps, n0, c0, op0, sorted(drop_tasks), sorted(drop_calls), extras,
                    T0_NS + rank * 137 - HOST_LEAD_NS, t_end, drop_call_apis)


def sql_hash(expr, salt):
    """SQL text of a deterministic hash of the integer `expr` in [0, 2**31 - 1).

    A multiplicative step, then a squaring modulo the prime 2**31 - 1. Every product stays
    below 2**63 (expr < 2**32), so SQLite never leaves integer arithmetic.
    """
    x = "((((%s) * 1103515245 + %d) %% 2147483648))" % (expr, salt)
    return "((%s * %s) %% 2147483647)" % (x, x)


def sql_start(n, step_start, off, jit, salt):
    return "(%s + %s + %s %% %s)" % (step_start, off, sql_hash(n, salt), jit)


def sql_end(n, start, dur, djit, salt):
    return "(%s + %s + %s %% (2 * %s + 1) - %s)" % (start, dur, sql_hash(n, salt + 1), djit, djit)


def rows_per_step_estimate(args, comm_subtasks):
    """Kernel rows one decode/prefill step produces on average (for --rows)."""
    out = {}
    for name in ("prefill", "decode"):
        ph = build_phase(name, 0, 1, 0, args.layers, args.ops, args.jitter, comm_subtasks,
                         getattr(args, "slow_op", None), getattr(args, "extra_decode_op", None) or ())
        nc = len(ph.compute_js)
        out[name] = (ph, len(ph.rows) + nc * (args.aux + args.noise - args.missing))
    return out
