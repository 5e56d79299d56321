/*
** test_classify.c: evidence roles and structural symbols (ext/classify: roles.c, symbols.c,
** classify.c) with the default rules.
**
** Expected roles and rule ids follow recovery.md sections 2.1-2.4 and the rule lists in
** rules/classification.yaml and rules/symbol_normalization.yaml: the first rule in priority
** order wins, a bare AI_CORE is transparent but defers when the task names an operator, and
** anything unmatched stays an unknown_anchor. Fixture expectations are derived from the
** fixture scripts (../shared/fixtures/ascend_sqlite):
**   minimal_smoke   AI_CORE task with op_type MatMul (op_name model.layers.0.mlp.gate_up_proj),
**                   EVENT_WAIT task with comm identity comm_task_hccl_allreduce, and the
**                   COMMUNICATION_OP hcclAllReduce (type hcom_allReduce_)
**   aclgraph_smoke  MIX_AIC GatherV2 (1) and MatMulV2 (3), MODEL_EXECUTE (4), 2 hcclAllGather ops
**   exact_hlt       14 MODEL_EXECUTE, 14 NOTIFY_WAIT, 14 NOTIFY_RECORD, 28 KERNEL_AIVEC kernels
*/
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "classify/classify.h"
#include "embedded.h"
#include "source/source.h"
#include "trace/trace.h"
#include "tl_check.h"

/* ---------------------------------------------------------------- helpers */

static tl_rules *defaults(void) {
  tl_rules *r = NULL;
  tl_err e = {0};
  ck_assert_msg(tl_rules_load(NULL, &r, &e) == TL_OK, "%s", e.msg ? e.msg : "?");
  return r;
}

static const char *rule_id(const tl_rules *r, int rule) {
  return rule >= 0 ? r->cls.rules.v[rule].rule_id : "fallback.unknown_observation";
}

/* The decision inputs built by hand from the spec (recovery.md 2.1): label = first of
** op_type, op_name, comm_name, task_type; blob = lower("label op_name op_type
** compute_task_type task_type"); task_type_key is given already normalized. */
static tl_role_decision decide(const tl_rules *r, tl_scope scope, const char *task_type_key,
                               const char *task_type, const char *op_name, const char *op_type,
                               const char *ctt, const char *comm_name) {
  const char *label = *op_type ? op_type : *op_name ? op_name : *comm_name ? comm_name : task_type;
  char blob[512] = "", op[256] = "";
  if (*label || *op_name || *op_type || *ctt || *task_type)
    snprintf(blob, sizeof blob, "%s %s %s %s %s", label, op_name, op_type, ctt, task_type);
  snprintf(op, sizeof op, "%s", label);
  for (char *p = blob; *p; p++) *p = (char)tolower((unsigned char)*p);
  for (char *p = op; *p; p++) *p = (char)tolower((unsigned char)*p);
  tl_role_input in = {scope, task_type_key, blob, op, *op_type || *op_name};
  tl_role_decision d;
  tl_decide_role(&r->cls, &in, &d);
  return d;
}

#define CHECK_ROLE(d, want_role, want_rule)                                          \
  do {                                                                               \
    tl_role_decision d_ = (d);                                                       \
    ck_assert_msg(d_.role == (want_role) && strcmp(rule_id(r, d_.rule), want_rule) == 0, \
                  "line %d: got role %s rule %s, want %s %s", __LINE__,              \
                  tl_evidence_role_name(d_.role), rule_id(r, d_.rule),               \
                  tl_evidence_role_name(want_role), want_rule);                      \
  } while (0)

/* ---------------------------------------------------------------- roles */

START_TEST(test_roles_defaults) {
  tl_rules *r = defaults();
  /* A bare AI_CORE container is transparent ... */
  CHECK_ROLE(decide(r, TL_SCOPE_ASCEND, "AI_CORE", "AI_CORE", "", "", "", ""),
             TL_EVIDENCE_TRANSPARENT, "ascend.transparent.task.type.ai.core.7897ff1d");
  /* ... with a concrete operator the rule defers: an unfamiliar one stays an unknown anchor */
  CHECK_ROLE(decide(r, TL_SCOPE_ASCEND, "AI_CORE", "AI_CORE", "", "FooOp", "", ""),
             TL_EVIDENCE_UNKNOWN_ANCHOR, "fallback.unknown_observation");
  CHECK_ROLE(decide(r, TL_SCOPE_ASCEND, "AI_CORE", "AI_CORE", "layer0", "MatMul", "MIX_AIC", ""),
             TL_EVIDENCE_ANCHOR, "any.anchor.blob.matmul.b362963b");
  /* compute_task_type alone is not a concrete operator */
  CHECK_ROLE(decide(r, TL_SCOPE_ASCEND, "AI_CORE", "AI_CORE", "", "", "MIX_AIV", ""),
             TL_EVIDENCE_TRANSPARENT, "ascend.transparent.task.type.ai.core.7897ff1d");
  /* Ascend control tasks; the provider must match */
  CHECK_ROLE(decide(r, TL_SCOPE_ASCEND, "NOTIFY_WAIT", "NOTIFY_WAIT", "", "", "", ""),
             TL_EVIDENCE_AUXILIARY, "ascend.aux.task.type.notify.wait.717e33e3");
  CHECK_ROLE(decide(r, TL_SCOPE_ASCEND, "NOTIFY_WAIT", "notify-wait", "", "", "", ""),
             TL_EVIDENCE_AUXILIARY, "ascend.aux.task.type.notify.wait.717e33e3");
  CHECK_ROLE(decide(r, TL_SCOPE_CUDA, "NOTIFY_WAIT", "NOTIFY_WAIT", "", "", "", ""),
             TL_EVIDENCE_UNKNOWN_ANCHOR, "fallback.unknown_observation");
  /* an unknown provider ("any") matches rules of every scope */
  CHECK_ROLE(decide(r, TL_SCOPE_ANY, "NOTIFY_WAIT", "NOTIFY_WAIT", "", "", "", ""),
             TL_EVIDENCE_AUXILIARY, "ascend.aux.task.type.notify.wait.717e33e3");
  CHECK_ROLE(decide(r, TL_SCOPE_ASCEND, "MODEL_MAINTAINCE", "MODEL_MAINTAINCE", "", "", "", ""),
             TL_EVIDENCE_AUXILIARY, "ascend.aux.task.type.model.maintaince.9af5400a");
  /* sync helpers (90) beat the collective blob rules (80) */
  CHECK_ROLE(decide(r, TL_SCOPE_ASCEND, "KERNEL_AIVEC", "KERNEL_AIVEC", "hccl_aiv_sync_allreduce",
                    "", "", ""),
             TL_EVIDENCE_AUXILIARY, "ascend.aux.blob.hccl.aiv.sync.002d332c");
  /* operator anchor (85) beats the ffn blob (60); operators compare case-insensitively */
  CHECK_ROLE(decide(r, TL_SCOPE_ASCEND, "MIX_AIC", "MIX_AIC", "", "dispatchFFNcombineBF16", "", ""),
             TL_EVIDENCE_ANCHOR, "ascend.anchor.operator.dispatchffncombinebf16.dccb9f76");
  /* a collective name on an EVENT_WAIT task: the blob rule (80) beats the task type (70) */
  CHECK_ROLE(decide(r, TL_SCOPE_ASCEND, "EVENT_WAIT", "EVENT_WAIT", "", "", "", "hccl_allreduce_x"),
             TL_EVIDENCE_ANCHOR, "any.anchor.blob.allreduce.2167e26c");
  /* CUDA and Hygon task types from the adapters */
  CHECK_ROLE(decide(r, TL_SCOPE_CUDA, "CUDA_KERNEL", "CUDA_KERNEL", "gemm_kernel", "CudaMatMul", "", ""),
             TL_EVIDENCE_ANCHOR, "cuda.anchor.task.type.cuda.kernel.51cc7472");
  CHECK_ROLE(decide(r, TL_SCOPE_CUDA, "CUDA_KERNEL_AUX", "CUDA_KERNEL_AUX", "fill", "CudaAux:Fill", "", ""),
             TL_EVIDENCE_AUXILIARY, "cuda.aux.task.type.cuda.kernel.aux.c4ce98bf");
  CHECK_ROLE(decide(r, TL_SCOPE_CUDA, "CUDA_MEMSET_AUX", "CUDA_MEMSET_AUX", "CudaMemset bytes=4", "", "", ""),
             TL_EVIDENCE_UNKNOWN_ANCHOR, "fallback.unknown_observation"); /* not in the list */
  CHECK_ROLE(decide(r, TL_SCOPE_HYGON, "MEMCPY", "MEMCPY", "", "DataMove", "", ""),
             TL_EVIDENCE_AUXILIARY, "hygon.aux.task.type.memcpy.5aa0fdd9");
  CHECK_ROLE(decide(r, TL_SCOPE_ASCEND, "MEMCPY", "MEMCPY", "", "", "", ""),
             TL_EVIDENCE_AUXILIARY, "ascend.aux.task.type.memcpy.5aa0fdd9");
  CHECK_ROLE(decide(r, TL_SCOPE_HYGON, "HIP_KERNEL", "HIP_KERNEL", "k", "", "", ""),
             TL_EVIDENCE_ANCHOR, "hygon.anchor.task.type.hip.kernel");
  /* PyTorch CPU operators (Kineto's CPU plane: op_name = op_type = the operator), one
  ** alternative of each exact_any list, then the CPU_OP fallback for the rest; exact_any
  ** compares whole alternatives, so a prefix of one (aten::lin) is no match */
  static const struct {
    const char *op;
    tl_evidence_role role;
    const char *rule;
  } cpu_ops[] = {
      {"aten::linear", TL_EVIDENCE_ANCHOR, "cuda.anchor.operator.cpu_compute"},
      {"aten::mm", TL_EVIDENCE_ANCHOR, "cuda.anchor.operator.cpu_compute"},
      {"aten::scaled_dot_product_attention", TL_EVIDENCE_ANCHOR, "cuda.anchor.operator.cpu_compute"},
      {"aten::view", TL_EVIDENCE_TRANSPARENT, "cuda.transparent.operator.cpu_view"},
      {"aten::to", TL_EVIDENCE_TRANSPARENT, "cuda.transparent.operator.cpu_view"},
      {"aten::copy_", TL_EVIDENCE_AUXILIARY, "cuda.auxiliary.operator.cpu_copy"},
      {"aten::_local_scalar_dense", TL_EVIDENCE_AUXILIARY, "cuda.auxiliary.operator.cpu_sync"},
      {"aten::item", TL_EVIDENCE_AUXILIARY, "cuda.auxiliary.operator.cpu_sync"},
      {"aten::lin", TL_EVIDENCE_ANCHOR, "cuda.anchor.task_type.cpu_op"},
      {"mylib::fused_op", TL_EVIDENCE_ANCHOR, "cuda.anchor.task_type.cpu_op"},
  };
  for (size_t i = 0; i < sizeof cpu_ops / sizeof cpu_ops[0]; i++)
    CHECK_ROLE(decide(r, TL_SCOPE_CUDA, "CPU_OP", "CPU_OP", cpu_ops[i].op, cpu_ops[i].op, "", ""),
               cpu_ops[i].role, cpu_ops[i].rule);
  CHECK_ROLE(decide(r, TL_SCOPE_ASCEND, "AI_VECTOR_CORE", "AI_VECTOR_CORE", "", "RmsNorm", "", ""),
             TL_EVIDENCE_ANCHOR, "any.anchor.blob.rmsnorm.eb7e4edc");
  CHECK_ROLE(decide(r, TL_SCOPE_ASCEND, "", "", "", "", "", ""), TL_EVIDENCE_UNKNOWN_ANCHOR,
             "fallback.unknown_observation");
  tl_rules_free(r);
}
END_TEST

/* ---------------------------------------------------------------- symbols */

START_TEST(test_cann_kernel_base) {
  size_t n = 0;
  ck_assert_int_eq(tl_cann_kernel_base("Add_0123456789abcdef0123456789ABCDEF", &n), 1);
  ck_assert_int_eq(n, 3);
  ck_assert_int_eq(tl_cann_kernel_base("Add_0123456789abcdef0123456789ABCDE", &n), 0); /* 31 */
  ck_assert_int_eq(tl_cann_kernel_base("Cast_0123456789abcdef0123456789abcdef_high_performance_1", &n), 1);
  ck_assert_int_eq(n, 4);
  ck_assert_int_eq(tl_cann_kernel_base("Foo_optional_x", &n), 1);
  ck_assert_int_eq(n, 3);
  ck_assert_int_eq(tl_cann_kernel_base("Foo_high_precision_", &n), 1);
  ck_assert_int_eq(tl_cann_kernel_base("MatMulV2_ND", &n), 1);
  ck_assert_int_eq(n, 8);
  ck_assert_int_eq(tl_cann_kernel_base("BatchMatMulV3_NZ_x", &n), 1);
  ck_assert_int_eq(n, 13);
  ck_assert_int_eq(tl_cann_kernel_base("Conv2D_ND", &n), 0);      /* ND only for MatMul bases */
  ck_assert_int_eq(tl_cann_kernel_base("Fused_Norm_v2", &n), 0);  /* identity suffix */
  ck_assert_int_eq(tl_cann_kernel_base("aclnnAdds_AddAiCore_Add", &n), 0);
  ck_assert_int_eq(tl_cann_kernel_base("MatMul", &n), 0);
  ck_assert_int_eq(tl_cann_kernel_base("", &n), 0);
  /* the first '_' at position 0 does not split */
  ck_assert_int_eq(tl_cann_kernel_base("_k_0123456789abcdef0123456789abcdef", &n), 1);
  ck_assert_int_eq(n, 2);
}
END_TEST

typedef struct sym_case {
  tl_sym_domain domain;
  const char *provider, *op_name, *op_type, *task_type, *comm_name;
  tl_symbol_outcome outcome;
  const char *symbol, *rule;
} sym_case;

START_TEST(test_symbols_defaults) {
  tl_rules *r = defaults();
  const sym_case cases[] = {
      {TL_SD_TASK, "ascend", "", "MatMulV2", "MIX_AIC", "", TL_SYM_NORMALIZED, "MatMul",
       "ascend.task.matmul-backend-variant"},
      {TL_SD_TASK, "ascend", "", "MatMulV3_ND", "AI_CORE", "", TL_SYM_NORMALIZED, "MatMul",
       "ascend.task.matmul-backend-variant"},
      {TL_SD_TASK, "ascend", "BatchMatMulV2_NZ", "", "AI_CORE", "", TL_SYM_NORMALIZED, "MatMul",
       "ascend.task.matmul-backend-variant"},
      {TL_SD_TASK, "ascend", "", "Add_0123456789abcdef0123456789abcdef", "AI_CORE", "",
       TL_SYM_NORMALIZED, "Add", "ascend.task.decorated-kernel-base"},
      {TL_SD_TASK, "ascend", "", "Fused_Norm_v2", "AI_CORE", "", TL_SYM_IDENTITY, "Fused_Norm_v2",
       "fallback.identity-preserve"},
      {TL_SD_TASK, "cuda", "", "MatMulV2", "CUDA_KERNEL", "", TL_SYM_IDENTITY, "MatMulV2",
       "fallback.identity-preserve"}, /* Ascend rules do not apply to CUDA */
      {TL_SD_TASK, "ascend", "", "", "KERNEL_AIVEC", "aiv_allreduce_kernel_1", TL_SYM_NORMALIZED,
       "AIV_AllReduce", "ascend.task.aiv-allreduce"},
      {TL_SD_TASK, "ascend", "", "", "EVENT_WAIT", "", TL_SYM_IDENTITY, "EVENT_WAIT",
       "fallback.identity-preserve"},
      {TL_SD_COMMUNICATION, "ascend", "hcclAllReduce", "hcom_allReduce_", "", "", TL_SYM_NORMALIZED,
       "AllReduce", "collective.communication.allreduce-alias"},
      {TL_SD_COMMUNICATION, "ascend", "12_34", "", "", "", TL_SYM_NORMALIZED, "AllReduce",
       "ascend.communication.opaque-allreduce-instance"},
      {TL_SD_COMMUNICATION, "cuda", "12_34", "", "", "", TL_SYM_IDENTITY, "12_34",
       "fallback.identity-preserve"},
      {TL_SD_COMMUNICATION, "", "hcclReduceScatter", "hcom_reduceScatter_", "", "",
       TL_SYM_NORMALIZED, "ReduceScatter", "collective.communication.reduce-scatter-alias"},
      {TL_SD_COMMUNICATION, "ascend", "hcclAllGather", "hcom_allGather_", "", "",
       TL_SYM_NORMALIZED, "AllGather", "collective.communication.allgather-alias"},
      {TL_SD_COMMUNICATION, "cuda", "ncclBroadcast", "", "", "", TL_SYM_NORMALIZED, "Broadcast",
       "collective.communication.broadcast-alias"},
      {TL_SD_COMMUNICATION, "cuda", "moe_a2a_dispatch", "", "", "", TL_SYM_NORMALIZED, "AllToAll",
       "collective.communication.alltoall-alias"},
      /* a name without the collective's word: the operation type still names it */
      {TL_SD_COMMUNICATION, "ascend", "hcclOp_7", "hcom_allReduce_", "", "", TL_SYM_NORMALIZED,
       "AllReduce", "collective.communication.allreduce-alias"},
      /* the highest matching priority wins: all-reduce (100) over reduce-scatter (90) */
      {TL_SD_COMMUNICATION, "ascend", "allreduce_then_reducescatter", "", "", "",
       TL_SYM_NORMALIZED, "AllReduce", "collective.communication.allreduce-alias"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const sym_case *c = &cases[i];
    tl_symbol_input in = {c->domain, c->provider, c->op_name, c->op_type, c->task_type, "",
                          c->comm_name, NULL, NULL};
    tl_symbol_decision d;
    tl_err e = {0};
    ck_assert_int_eq(tl_normalize_symbol(&r->sym, &in, &d, &e), TL_OK);
    ck_assert_msg(d.outcome == c->outcome, "case %zu: outcome %s", i, tl_symbol_outcome_name(d.outcome));
    ck_assert_msg(strcmp(d.symbol, c->symbol) == 0, "case %zu: symbol %s, want %s", i, d.symbol,
                  c->symbol);
    ck_assert_str_eq(tl_symbol_rule_id(&r->sym, d.outcome, d.rule), c->rule);
    /* a communication op is observed by its name, not its operation type (symbols.c) */
    if (c->domain == TL_SD_COMMUNICATION) ck_assert_str_eq(d.observed, c->op_name);
    /* a canonicalized symbol names its one rule as the candidate; identity has none */
    if (c->outcome == TL_SYM_NORMALIZED)
      ck_assert_str_eq(d.candidates, c->rule);
    else
      ck_assert_ptr_null(d.candidates);
    tl_symbol_decision_free(&d);
  }
  /* nothing observed at all */
  tl_symbol_input none = {TL_SD_TASK, "ascend", "", "", "", "", "", NULL, NULL};
  tl_symbol_decision d;
  tl_err e = {0};
  ck_assert_int_eq(tl_normalize_symbol(&r->sym, &none, &d, &e), TL_OK);
  ck_assert_int_eq(d.outcome, TL_SYM_UNSUPPORTED);
  ck_assert_ptr_null(d.symbol);
  ck_assert_str_eq(tl_symbol_rule_id(&r->sym, d.outcome, d.rule), "fallback.missing-observed-symbol");
  tl_symbol_decision_free(&d);
  tl_rules_free(r);
}
END_TEST

START_TEST(test_symbol_conflict) {
  static const char text[] =
      "schema: traceloom-analysis-rules-v1\n"
      "symbol_normalization:\n"
      "  mode: replace\n"
      "  metadata: {policy_id: t.conflict, policy_version: \"1\"}\n"
      "  rules:\n"
      "    - {priority: 50, rule_id: t.exact, provider_scope: provider-neutral, source_domain: task,\n"
      "       field: op_type, match: exact, pattern: Foo, structural_symbol: A, note: n}\n"
      "    - {priority: 50, rule_id: t.contains, provider_scope: ascend, source_domain: task,\n"
      "       field: any_identity, match: contains_ci, pattern: FOO, structural_symbol: B, note: n}\n"
      "    - {priority: 10, rule_id: t.low, provider_scope: ascend, source_domain: task,\n"
      "       field: op_type, match: exact_any, pattern: Bar|Foo, structural_symbol: C, note: n}\n";
  char path[] = "/tmp/tl_conflict_XXXXXX.yaml";
  int fd = mkstemps(path, 5);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq((long)write(fd, text, strlen(text)), (long)strlen(text));
  close(fd);
  tl_rules *r = NULL;
  tl_err e = {0};
  ck_assert_msg(tl_rules_load(path, &r, &e) == TL_OK, "%s", e.msg ? e.msg : "?");
  unlink(path);
  tl_symbol_input in = {TL_SD_TASK, "ascend", "", "Foo", "AI_CORE", "", "", NULL, NULL};
  tl_symbol_decision d;
  ck_assert_int_eq(tl_normalize_symbol(&r->sym, &in, &d, &e), TL_OK);
  ck_assert_int_eq(d.outcome, TL_SYM_CONFLICT);
  ck_assert_str_eq(d.symbol, "Foo"); /* the observed symbol is kept */
  ck_assert_str_eq(d.candidates, "t.exact|t.contains");
  ck_assert_str_eq(tl_symbol_rule_id(&r->sym, d.outcome, d.rule), "fallback.rule-conflict");
  tl_symbol_decision_free(&d);
  /* under another provider only the neutral rule applies at 50 */
  in.provider = "cuda";
  ck_assert_int_eq(tl_normalize_symbol(&r->sym, &in, &d, &e), TL_OK);
  ck_assert_int_eq(d.outcome, TL_SYM_NORMALIZED);
  ck_assert_str_eq(d.symbol, "A");
  ck_assert_str_eq(d.candidates, "t.exact"); /* the one rule at the winning priority */
  tl_symbol_decision_free(&d);
  /* only the low rule matches Bar */
  in.provider = "ascend", in.op_type = "Bar";
  ck_assert_int_eq(tl_normalize_symbol(&r->sym, &in, &d, &e), TL_OK);
  ck_assert_int_eq(d.outcome, TL_SYM_NORMALIZED);
  ck_assert_str_eq(d.symbol, "C");
  ck_assert_str_eq(d.candidates, "t.low");
  tl_symbol_decision_free(&d);
  tl_rules_free(r);
}
END_TEST

/* ---------------------------------------------------------------- fixtures */

typedef struct loaded {
  tl_profile profile;
  tl_trace trace;
} loaded;

static void load_fixture(const char *rel, loaded *l) {
  char *path = tl_fixture(rel);
  tl_err e = {0};
  memset(l, 0, sizeof *l);
  ck_assert_msg(tl_profile_discover(path, "auto", &l->profile, &e) == TL_OK, "%s: %s", path,
                e.msg ? e.msg : "?");
  ck_assert_msg(tl_trace_load(&l->profile, &l->trace, NULL, NULL, &e) == TL_OK, "%s", e.msg ? e.msg : "?");
  free(path);
}

static void unload(loaded *l) {
  tl_trace_free(&l->trace);
  tl_profile_free(&l->profile);
}

static const char *S(const tl_trace *t, uint32_t id) { return tl_str(t, id); }

/* Independent per-event classification (no label sharing) compared with the per-label result. */
static void check_per_event(const tl_trace *t, const tl_rules *r, const tl_classification *c) {
  uint8_t *roles, *costs;
  uint32_t *syms;
  tl_err e = {0};
  ck_assert_int_eq(tl_classification_event_arrays(c, t, &roles, &costs, &syms, &e), TL_OK);
  for (size_t i = 0; i < t->ev.n; i++) {
    const tl_label *l = tl_event_label(t, i);
    const tl_label_class *k = tl_event_class(c, t, i);
    const tl_family_def *fam = t->profile->inputs.v[tl_events_db_idx(&t->ev, i)].family;
    tl_provider prov = tl_family_provider(fam);
    tl_scope scope = prov == TL_PROVIDER_ASCEND ? TL_SCOPE_ASCEND
                     : prov == TL_PROVIDER_CUDA ? TL_SCOPE_CUDA
                     : prov == TL_PROVIDER_HYGON ? TL_SCOPE_HYGON : TL_SCOPE_ANY;
    const char *tt = S(t, l->task_type);
    int comm_op = strcmp(tt, "COMMUNICATION_OP") == 0;
    ck_assert_int_eq(roles[i], k->final_role);
    ck_assert_int_eq(costs[i], k->cost);
    ck_assert_int_eq(syms[i], k->symbol);
    if (comm_op) {
      ck_assert_int_eq(k->final_role, TL_EVIDENCE_ANCHOR);
      ck_assert_int_eq(k->policy_role, TL_EVIDENCE_NONE);
      ck_assert_str_eq(tl_class_rule_id(r, k), "system.communication_anchor");
    } else {
      char *key = tl_task_type_normalize(tt);
      tl_role_decision d = decide(r, scope, key, tt, S(t, l->op_name), S(t, l->op_type),
                                  S(t, l->compute_task_type), S(t, l->comm_name));
      free(key);
      ck_assert_msg(d.role == k->final_role && d.rule == k->rule, "event-%zu: %s/%d vs %s/%d", i,
                    tl_evidence_role_name(d.role), d.rule,
                    tl_evidence_role_name((tl_evidence_role)k->final_role), k->rule);
    }
    tl_symbol_input in;
    memset(&in, 0, sizeof in);
    in.provider = scope == TL_SCOPE_ANY ? "" : tl_scope_name(scope);
    if (comm_op) {
      in.domain = TL_SD_COMMUNICATION;
      in.op_name = *S(t, l->op_name) ? S(t, l->op_name) : S(t, l->name);
      in.op_type = S(t, l->op_type);
    } else {
      in.domain = TL_SD_TASK;
      in.op_name = S(t, l->op_name), in.op_type = S(t, l->op_type), in.task_type = tt;
      in.compute_task_type = S(t, l->compute_task_type), in.comm_name = S(t, l->comm_name);
    }
    tl_symbol_decision sd;
    ck_assert_int_eq(tl_normalize_symbol(&r->sym, &in, &sd, &e), TL_OK);
    ck_assert_int_eq(sd.outcome, k->symbol_outcome);
    ck_assert_str_eq(sd.symbol ? sd.symbol : S(t, l->name), S(t, k->symbol));
    tl_symbol_decision_free(&sd);
  }
  free(roles), free(costs), free(syms);
}

static void classify_fixture(const char *rel, loaded *l, tl_rules *r, tl_classification *c) {
  load_fixture(rel, l);
  tl_err e = {0};
  ck_assert_msg(tl_classify(&l->trace, NULL, r, c, &e) == TL_OK, "%s", e.msg ? e.msg : "?");
  ck_assert_int_eq(c->nlabels, l->trace.labels.n);
}

START_TEST(test_fixture_minimal_smoke) {
  tl_rules *r = defaults();
  loaded l;
  tl_classification c;
  classify_fixture("minimal_smoke/mono", &l, r, &c);
  const tl_trace *t = &l.trace;
  ck_assert_int_eq(t->ev.n, 3);
  const tl_label_class *k0 = tl_event_class(&c, t, 0), *k1 = tl_event_class(&c, t, 1),
                       *k2 = tl_event_class(&c, t, 2);
  /* AI_CORE with a concrete MatMul operator: not transparent, anchored by the matmul blob */
  ck_assert_str_eq(tl_class_rule_id(r, k0), "any.anchor.blob.matmul.b362963b");
  ck_assert_int_eq(k0->final_role, TL_EVIDENCE_ANCHOR);
  ck_assert_str_eq(S(t, k0->symbol), "MatMul");
  ck_assert_int_eq(k0->symbol_outcome, TL_SYM_IDENTITY);
  ck_assert_str_eq(tl_class_reason_code(k0), "matched_positive_rule");
  /* EVENT_WAIT carrying the all-reduce comm identity */
  ck_assert_str_eq(tl_class_rule_id(r, k1), "any.anchor.blob.allreduce.2167e26c");
  ck_assert_str_eq(S(t, k1->symbol), "comm_task_hccl_allreduce");
  /* the communication op */
  ck_assert_int_eq(k2->domain, TL_OBS_COMMUNICATION);
  ck_assert_str_eq(tl_class_rule_id(r, k2), "system.communication_anchor");
  ck_assert_str_eq(tl_class_reason_code(k2), "represented_by_communication_anchor");
  ck_assert_str_eq(tl_class_policy_participation(k2), "not_applicable");
  ck_assert_str_eq(tl_class_effective_participation(k2), "identity");
  ck_assert_str_eq(S(t, k2->observed_symbol), "hcclAllReduce"); /* its name, not its type */
  ck_assert_str_eq(S(t, k2->symbol), "AllReduce");
  ck_assert_int_eq(k2->symbol_outcome, TL_SYM_NORMALIZED);
  ck_assert_int_eq(c.events_by_role[TL_EVIDENCE_ANCHOR], 3);
  check_per_event(t, r, &c);
  /* The comm op represents the EVENT_WAIT task (event 1): the task moves to a variant of its
  ** class decided by the system rule; the op's own class (already system) and the MatMul's
  ** stay. An event marked but of the communication domain (event 2) gets no variant. */
  size_t nclasses = c.nclasses;
  uint8_t represented[3] = {0, 1, 1};
  uint32_t role_class[3] = {k0->class_id, k1->class_id, k2->class_id};
  tl_err e = {0};
  ck_assert_int_eq(tl_classification_represent(&c, t, NULL, represented, role_class, &e), TL_OK);
  ck_assert_uint_eq(c.nrep, 1);
  ck_assert_uint_eq(c.nclasses, nclasses + 1);
  const tl_label_class *v = &c.rep[0];
  ck_assert_uint_eq(role_class[1], v->class_id);
  ck_assert_uint_eq(role_class[0], k0->class_id);
  ck_assert_uint_eq(role_class[2], k2->class_id);
  ck_assert_str_eq(tl_class_rule_id(r, v), "system.communication_anchor");
  ck_assert_str_eq(tl_class_reason_code(v), "represented_by_communication_anchor");
  ck_assert_int_eq(v->policy_role, k1->policy_role);
  ck_assert_int_eq(v->final_role, TL_EVIDENCE_ANCHOR);
  ck_assert_uint_eq(v->symbol, k1->symbol);
  ck_assert_uint_eq(v->events, 1);
  ck_assert_uint_eq(k1->events, 0);
  ck_assert_int_eq(c.events_by_role[TL_EVIDENCE_ANCHOR], 3);
  tl_classification_free(&c);
  unload(&l);
  tl_rules_free(r);
}
END_TEST

START_TEST(test_fixture_aclgraph_smoke) {
  tl_rules *r = defaults();
  loaded l;
  tl_classification c;
  classify_fixture("aclgraph_smoke/mono", &l, r, &c);
  const tl_trace *t = &l.trace;
  int matmul = 0, gather = 0, model_execute = 0, comm = 0;
  for (size_t i = 0; i < t->ev.n; i++) {
    const tl_label *lb = tl_event_label(t, i);
    const tl_label_class *k = tl_event_class(&c, t, i);
    const char *op = S(t, lb->op_type), *tt = S(t, lb->task_type);
    if (strcmp(op, "MatMulV2") == 0) {
      matmul++;
      ck_assert_int_eq(k->final_role, TL_EVIDENCE_ANCHOR);
      ck_assert_str_eq(tl_class_rule_id(r, k), "any.anchor.blob.matmul.b362963b");
      ck_assert_str_eq(S(t, k->observed_symbol), "MatMulV2");
      ck_assert_str_eq(S(t, k->symbol), "MatMul"); /* structural MatMul */
      ck_assert_int_eq(k->symbol_outcome, TL_SYM_NORMALIZED);
      ck_assert_str_eq(r->sym.rules.v[k->symbol_rule].rule_id, "ascend.task.matmul-backend-variant");
    } else if (strcmp(op, "GatherV2") == 0) {
      gather++;
      ck_assert_int_eq(k->final_role, TL_EVIDENCE_UNKNOWN_ANCHOR);
      ck_assert_str_eq(tl_class_rule_id(r, k), "fallback.unknown_observation");
      ck_assert_str_eq(tl_class_reason_code(k), "unmatched_observation_unknown_first");
      ck_assert_str_eq(tl_class_semantic_role(k), "raw");
      ck_assert_str_eq(S(t, k->symbol), "GatherV2");
    } else if (strcmp(tt, "MODEL_EXECUTE") == 0) {
      model_execute++;
      ck_assert_int_eq(k->final_role, TL_EVIDENCE_AUXILIARY);
      ck_assert_str_eq(tl_class_rule_id(r, k), "ascend.aux.task.type.model.execute.85a30ce3");
      ck_assert_str_eq(tl_class_semantic_role(k), "aux");
      ck_assert_int_eq(k->cost, TL_COSTP_RETAINED_FOR_ATTRIBUTION);
    } else if (strcmp(tt, "COMMUNICATION_OP") == 0) {
      comm++;
      ck_assert_int_eq(k->final_role, TL_EVIDENCE_ANCHOR);
      ck_assert_str_eq(S(t, k->symbol), "AllGather");
    } else {
      ck_abort_msg("unexpected event-%zu %s/%s", i, tt, op);
    }
  }
  ck_assert_int_eq(matmul, 3);
  ck_assert_int_eq(gather, 1);
  ck_assert_int_eq(model_execute, 4);
  ck_assert_int_eq(comm, 2);
  check_per_event(t, r, &c);
  tl_classification_free(&c);
  unload(&l);
  tl_rules_free(r);
}
END_TEST

START_TEST(test_fixture_exact_hlt) {
  tl_rules *r = defaults();
  const char *layouts[] = {"exact_hlt/mono", "exact_hlt/split"};
  for (int li = 0; li < 2; li++) {
    loaded l;
    tl_classification c;
    classify_fixture(layouts[li], &l, r, &c);
    const tl_trace *t = &l.trace;
    int notify = 0, kernels = 0;
    for (size_t i = 0; i < t->ev.n; i++) {
      const tl_label *lb = tl_event_label(t, i);
      const tl_label_class *k = tl_event_class(&c, t, i);
      const char *tt = S(t, lb->task_type);
      if (strncmp(tt, "NOTIFY_", 7) == 0) {
        notify++;
        ck_assert_int_eq(k->final_role, TL_EVIDENCE_AUXILIARY);
        ck_assert_str_eq(tl_class_effective_participation(k), "excluded");
        ck_assert_str_eq(tl_class_rule_id(r, k), strcmp(tt, "NOTIFY_WAIT") == 0
                                                     ? "ascend.aux.task.type.notify.wait.717e33e3"
                                                     : "ascend.aux.task.type.notify.record.21a93893");
      } else if (strcmp(tt, "KERNEL_AIVEC") == 0) {
        kernels++;
        ck_assert_int_eq(k->final_role, TL_EVIDENCE_UNKNOWN_ANCHOR);
        ck_assert_str_eq(tl_class_reason_code(k), "unmatched_observation_unknown_first");
        ck_assert_str_eq(tl_class_effective_participation(k), "identity");
        ck_assert_int_eq(k->symbol, lb->op_type); /* identity keeps the observed op_type */
      }
    }
    ck_assert_int_eq(notify, 28);
    ck_assert_int_eq(kernels, 28);
    ck_assert_int_eq(c.events_by_role[TL_EVIDENCE_AUXILIARY], 42);
    ck_assert_int_eq(c.events_by_role[TL_EVIDENCE_UNKNOWN_ANCHOR], 28);
    check_per_event(t, r, &c);
    tl_classification_free(&c);
    unload(&l);
  }
  tl_rules_free(r);
}
END_TEST

/* A rules config changes the decisions: the test extension makes GatherV2 auxiliary
** (evidence only) and the override names MatMulV2 Gemm. */
START_TEST(test_fixture_with_config) {
  tl_rules *r = NULL;
  tl_err e = {0};
  ck_assert_int_eq(tl_rules_load("tests/fixtures/rules/good_stages.yaml", &r, &e), TL_OK);
  loaded l;
  tl_classification c;
  classify_fixture("aclgraph_smoke/mono", &l, r, &c);
  const tl_trace *t = &l.trace;
  for (size_t i = 0; i < t->ev.n; i++) {
    const char *op = S(t, tl_event_label(t, i)->op_type);
    const tl_label_class *k = tl_event_class(&c, t, i);
    if (strcmp(op, "GatherV2") == 0) {
      ck_assert_int_eq(k->final_role, TL_EVIDENCE_AUXILIARY);
      ck_assert_str_eq(tl_class_rule_id(r, k), "test.gatherv2-aux");
      ck_assert_int_eq(k->cost, TL_COSTP_RETAINED_AS_EVIDENCE);
    } else if (strcmp(op, "MatMulV2") == 0) {
      ck_assert_str_eq(S(t, k->symbol), "Gemm");
    }
  }
  check_per_event(t, r, &c);
  tl_classification_free(&c);
  unload(&l);
  tl_rules_free(r);

  /* an empty classification policy: every task is an unknown anchor, comm ops stay anchors */
  ck_assert_int_eq(tl_rules_load("tests/fixtures/rules/replace_empty.yaml", &r, &e), TL_OK);
  classify_fixture("aclgraph_smoke/mono", &l, r, &c);
  ck_assert_int_eq(c.events_by_role[TL_EVIDENCE_UNKNOWN_ANCHOR], 8);
  ck_assert_int_eq(c.events_by_role[TL_EVIDENCE_ANCHOR], 2);
  tl_classification_free(&c);
  unload(&l);
  tl_rules_free(r);
}
END_TEST

/* ---------------------------------------------------------------- publication */

static int64_t q_int(sqlite3 *db, const char *sql) {
  sqlite3_stmt *st;
  ck_assert_int_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
  ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
  int64_t v = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  return v;
}

static void exec_embedded(sqlite3 *db, const char *name) {
  const tl_embedded_file *f = tl_embedded_find(name);
  ck_assert_ptr_nonnull(f);
  char *msg = NULL;
  ck_assert_msg(sqlite3_exec(db, f->text, NULL, NULL, &msg) == SQLITE_OK, "%s: %s", name, msg);
}

/* A stand-in for the event writer (ext/publish): the columns the role views read. */
static void write_events(sqlite3 *db, const tl_trace *t, const tl_classification *c) {
  char *msg = NULL;
  ck_assert_msg(sqlite3_exec(db,
                             "CREATE TABLE traceloom_event(event_id TEXT, db_idx INTEGER, "
                             "device_id INTEGER, source_id INTEGER, source_table TEXT, "
                             "source_key TEXT, role_class_id INTEGER, stream_id INTEGER, "
                             "start_ns INTEGER, end_ns INTEGER, dur_us REAL, kind TEXT, "
                             "label TEXT, task_type TEXT, op_name TEXT, op_type TEXT, "
                             "compute_task_type TEXT, comm_name TEXT, task_id INTEGER, "
                             "event_n INTEGER PRIMARY KEY);"
                             /* the decisions look retained-but-unplaced links up */
                             "CREATE TABLE traceloom_aux_link(anchor_id TEXT, aux_event_id TEXT, "
                             "link_type TEXT, aux_event_n INTEGER, anchor_n INTEGER)",
                             NULL, NULL, &msg) == SQLITE_OK,
                "%s", msg);
  sqlite3_stmt *st;
  ck_assert_int_eq(sqlite3_prepare_v2(db,
                                      "INSERT INTO traceloom_event(event_id, db_idx, device_id, "
                                      "source_id, source_table, source_key, role_class_id, "
                                      "task_type, op_type, dur_us, event_n) VALUES (?1, ?2, ?3, "
                                      "?4, ?5, ?6, ?7, ?8, ?9, 1.0, ?10)",
                                      -1, &st, NULL),
                   SQLITE_OK);
  for (size_t i = 0; i < t->ev.n; i++) {
    char id[32], key[32];
    snprintf(id, sizeof id, "event-%zu", i);
    snprintf(key, sizeof key, "%lld", (long long)tl_i64col_get(&t->ev.source_rowid, i));
    const tl_source_ref *ref = &t->source_refs.v[tl_events_source_ref(&t->ev, i)];
    sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 2, tl_events_db_idx(&t->ev, i));
    sqlite3_bind_int64(st, 3, tl_events_device_id(&t->ev, i));
    sqlite3_bind_int(st, 4, ref->source_id);
    sqlite3_bind_text(st, 5, S(t, ref->table), -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 6, key, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 7, tl_event_class(c, t, i)->class_id);
    sqlite3_bind_text(st, 8, S(t, tl_event_label(t, i)->task_type), -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 9, S(t, tl_event_label(t, i)->op_type), -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 10, (int64_t)i);
    ck_assert_int_eq(sqlite3_step(st), SQLITE_DONE);
    sqlite3_reset(st);
  }
  sqlite3_finalize(st);
  /* the decisions and role summaries read the event core and its shape (one shape per event
     here), as sql/schema/10_events.sql stores them */
  ck_assert_msg(sqlite3_exec(db,
                             "CREATE TABLE traceloom_event_shape(shape_id INTEGER PRIMARY KEY, "
                             "role_class_id INTEGER, source_id INTEGER, source_table TEXT, "
                             "source_rowid_offset INTEGER);"
                             "INSERT INTO traceloom_event_shape SELECT event_n, role_class_id, "
                             "source_id, source_table, CAST(source_key AS INTEGER) - event_n "
                             "FROM traceloom_event;"
                             "CREATE TABLE traceloom_event_core(event_n INTEGER PRIMARY KEY, "
                             "db_idx INTEGER, device_id INTEGER, shape_id INTEGER, "
                             "start_ns INTEGER, dur_ns INTEGER, "
                             "task_id INTEGER, event_id TEXT GENERATED ALWAYS AS "
                             "('event-' || event_n) VIRTUAL);"
                             "INSERT INTO traceloom_event_core(event_n, db_idx, device_id, shape_id, "
                             "start_ns, dur_ns, task_id) SELECT event_n, "
                             "db_idx, device_id, event_n, start_ns, "
                             "CAST(round(dur_us * 1000) AS INTEGER), "
                             "task_id FROM traceloom_event;"
                             /* every shape has its offset: no key stored by event */
                             "CREATE TABLE traceloom_event_source_key(event_n INTEGER "
                             "PRIMARY KEY, source_key INTEGER NOT NULL)",
                             NULL, NULL, &msg) == SQLITE_OK,
                "%s", msg);
}

START_TEST(test_publish) {
  tl_rules *r = defaults();
  loaded l;
  tl_classification c;
  classify_fixture("aclgraph_smoke/mono", &l, r, &c);
  /* classes: GatherV2, MatMulV2, MODEL_EXECUTE, hcclAllGather (all under Ascend) */
  ck_assert_int_eq(c.nclasses, 4);
  sqlite3 *db;
  ck_assert_int_eq(sqlite3_open(":memory:", &db), SQLITE_OK);
  exec_embedded(db, "sql/schema/00_core.sql");
  exec_embedded(db, "sql/schema/20_classify.sql");
  /* (the replay units' spans: the decisions read the protected intervals, empty here) */
  exec_embedded(db, "sql/schema/40_replay.sql");
  write_events(db, &l.trace, &c);
  tl_err e = {0};
  ck_assert_msg(tl_publish_classification(db, &l.trace, NULL, r, &c, &e) == TL_OK, "%s", e.msg ? e.msg : "?");
  exec_embedded(db, "sql/views/20_classify.sql");
  ck_assert_int_eq(q_int(db, "SELECT count(*) FROM traceloom_evidence_role_class"), 4);
  ck_assert_int_eq(q_int(db, "SELECT sum(event_count) FROM traceloom_evidence_role_class"), 10);
  ck_assert_int_eq(q_int(db, "SELECT count(*) FROM traceloom_evidence_role_decision"), 10);
  ck_assert_int_eq(q_int(db, "SELECT count(DISTINCT event_id) FROM traceloom_evidence_role_decision"), 10);
  ck_assert_int_eq(q_int(db, "SELECT count(*) FROM traceloom_evidence_role_decision "
                             "WHERE typeof(decision_id) = 'integer' "
                             "AND event_id = 'event-' || decision_id"), 10);
  ck_assert_int_eq(q_int(db, "SELECT count(*) FROM traceloom_evidence_role_decision WHERE "
                             "final_role = 'auxiliary' AND rule_id = "
                             "'ascend.aux.task.type.model.execute.85a30ce3' AND policy_role = "
                             "'auxiliary' AND effective_structural_participation = 'excluded' AND "
                             "source_table = 'TASK'"), 4);
  ck_assert_int_eq(q_int(db, "SELECT count(*) FROM traceloom_evidence_role_decision WHERE "
                             "policy_role IS NULL AND final_role = 'anchor' AND "
                             "source_table = 'COMMUNICATION_OP' AND structural_symbol = 'AllGather' "
                             "AND policy_structural_participation = 'not_applicable'"), 2);
  ck_assert_int_eq(q_int(db, "SELECT count(*) FROM traceloom_evidence_role_decision WHERE "
                             "observed_symbol = 'MatMulV2' AND structural_symbol = 'MatMul' AND "
                             "symbol_outcome = 'canonicalized' AND symbol_rule_id = "
                             "'ascend.task.matmul-backend-variant'"), 3);
  ck_assert_int_eq(q_int(db, "SELECT event_count FROM traceloom_evidence_role_class WHERE "
                             "op_type = 'GatherV2' AND final_role = 'unknown_anchor' AND "
                             "provider_scope = 'ascend' AND kind = 'compute'"), 1);
  ck_assert_int_eq(q_int(db, "SELECT event_count FROM traceloom_v_symbol_normalization WHERE "
                             "observed_symbol = 'MatMulV2' AND outcome = 'canonicalized'"), 3);
  ck_assert_int_eq(q_int(db, "SELECT sum(event_count) FROM traceloom_v_evidence_role_summary"), 10);
  ck_assert_int_eq(q_int(db, "SELECT sum(total_us) = 10.0 FROM traceloom_v_evidence_role_summary"), 1);
  /* the manifest's 68 rules and the 4 built-in decisions; of the 10 events the rules decide 7,
  ** the fallback GatherV2 and system.communication_anchor the 2 communication ops */
  ck_assert_int_eq(q_int(db, "SELECT count(*) FROM traceloom_evidence_role_rule"), 72);
  ck_assert_int_eq(q_int(db, "SELECT sum(decided_event_count) FROM traceloom_evidence_role_rule "
                             "WHERE rule_class = 'positive_policy'"), 7);
  ck_assert_int_eq(q_int(db, "SELECT decided_event_count FROM traceloom_evidence_role_rule WHERE "
                             "rule_id = 'fallback.unknown_observation' AND decision_order = 69"), 1);
  ck_assert_int_eq(q_int(db, "SELECT decided_event_count FROM traceloom_evidence_role_rule WHERE "
                             "rule_id = 'system.communication_anchor' AND decision_order = 0"), 2);
  ck_assert_int_eq(q_int(db, "SELECT decided_event_count FROM traceloom_evidence_role_rule WHERE "
                             "rule_id = 'any.anchor.blob.matmul.b362963b'"), 3);
  ck_assert_int_eq(q_int(db, "SELECT min(decision_order) = 1 AND max(decision_order) = 68 FROM "
                             "traceloom_evidence_role_rule WHERE rule_class = 'positive_policy'"), 1);
  ck_assert_int_eq(q_int(db, "SELECT count(*) FROM traceloom_evidence_role_policy WHERE "
                             "policy_id = 'traceloom.default.accelerator-task-projection' AND "
                             "rule_count = 68 AND policy_mode = 'builtin'"), 1);
  ck_assert_int_eq(q_int(db, "SELECT count(*) FROM traceloom_symbol_normalization_rule"), 13);
  ck_assert_int_eq(q_int(db, "SELECT count(*) FROM traceloom_symbol_normalization_rule WHERE "
                             "precedence < 0 AND rule_origin = 'analysis'"), 4);
  ck_assert_int_eq(q_int(db, "SELECT count(*) FROM traceloom_event_reconciliation_rule"), 3);
  ck_assert_int_eq(q_int(db, "SELECT count(*) FROM traceloom_metadata WHERE key IN "
                             "('evidence_role_policy_sha256', 'symbol_normalization_policy_id', "
                             "'rules_digest')"), 3);
  ck_assert_int_eq(q_int(db, "SELECT count(*) FROM traceloom_metadata WHERE key = 'rules_config'"), 0);
  sqlite3_close(db);
  tl_classification_free(&c);
  unload(&l);
  tl_rules_free(r);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("classify");
  TCase *tc = tcase_create("classify");
  tcase_add_test(tc, test_roles_defaults);
  tcase_add_test(tc, test_cann_kernel_base);
  tcase_add_test(tc, test_symbols_defaults);
  tcase_add_test(tc, test_symbol_conflict);
  tcase_add_test(tc, test_fixture_minimal_smoke);
  tcase_add_test(tc, test_fixture_aclgraph_smoke);
  tcase_add_test(tc, test_fixture_exact_hlt);
  tcase_add_test(tc, test_fixture_with_config);
  tcase_add_test(tc, test_publish);
  suite_add_tcase(s, tc);
  return s;
}

TL_CHECK_MAIN(suite)
