/*
** test_cudagraph.c: exact CUDA graph replays (ext/replay/cudagraph.c, recovery.md 7.2).
**
** Most cases build a small trace in memory: graph children are KERNEL / MEMCPY / MEMSET
** events with a graphNodeId, a contextId and the correlationId of a cudaGraphLaunch host
** call. Expected launches, statuses, lanes and ordinals are worked out by hand from the
** spec's rules (children by correlationId; lanes = streams sorted by their signature text
** then stream id; tasks by start; promotion needs one body per identity seen >= 2 times).
** The last cases read the Nsight fixtures of tests/fixtures/make_nsys.py (nsys_graph,
** nsys_graphtrace) and copies of nsys_graph changed in one way each.
*/
#include "tl_check.h"
#include "replay/replay.h"
#include "util/sqlite_api.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define K "CUPTI_ACTIVITY_KIND_KERNEL"
#define MC "CUPTI_ACTIVITY_KIND_MEMCPY"
#define MS "CUPTI_ACTIVITY_KIND_MEMSET"
#define NONE TL_REPLAY_NONE

static void trace_new(tl_trace *t) {
  tl_err e = {0};
  ck_assert_int_eq(tl_trace_init(t, NULL, &e), TL_OK);
}

/* Appends one device event; returns its index. */
static uint32_t ev(tl_trace *t, const char *table, uint32_t dev, uint32_t stream, int64_t start,
                   int64_t end, const char *name, int64_t corr, int64_t ctx, int64_t node) {
  tl_event_row r;
  memset(&r, 0, sizeof r);
  r.source_table = table;
  r.source_rowid = (int64_t)t->ev.n + 1;
  r.device_id = dev, r.stream_id = stream;
  r.start_ns = start, r.end_ns = end;
  int comm = strncmp(name, "nccl", 4) == 0;
  r.kind = strcmp(table, K) != 0 ? TL_KIND_DATA_MOVE : comm ? TL_KIND_COMMUNICATION
                                                            : TL_KIND_COMPUTE;
  r.name = r.op_name = tl_strpool_intern_cstr(t->pool, name);
  if (comm) r.comm_name = r.name;
  r.task_id = r.correlation_id = corr;
  r.global_task_id = r.model_id = r.op_id = TL_ABSENT;
  r.context_id = ctx;
  r.graph_node_id = node;
  ck_assert_int_eq(tl_trace_add_event(t, &r), 0);
  return (uint32_t)t->ev.n - 1;
}

/* Appends one host runtime call (provider cuda). */
static uint32_t call(tl_trace *t, const char *api, int64_t corr, int64_t start, int64_t end) {
  tl_call_row r;
  memset(&r, 0, sizeof r);
  r.source_table = "CUPTI_ACTIVITY_KIND_RUNTIME";
  r.source_rowid = (int64_t)t->calls.n + 1;
  r.provider = TL_PROVIDER_CUDA;
  r.api_name = tl_strpool_intern_cstr(t->pool, api);
  r.api_type = tl_strpool_intern_cstr(t->pool, "cuda_runtime");
  r.start_ns = start, r.end_ns = end;
  r.process_id = r.thread_id = r.global_tid = r.context_id = r.device_id = TL_ABSENT;
  r.correlation_id = corr;
  ck_assert_int_eq(tl_trace_add_call(t, &r), 0);
  return (uint32_t)t->calls.n - 1;
}

static void run(const tl_trace *t, const tl_profile *p, tl_replay *r) {
  tl_err e = {0};
  memset(r, 0, sizeof *r);
  int rc = tl_replay_cuda(t, p, r, &e);
  ck_assert_msg(rc == TL_OK, "tl_replay_cuda: %s", e.msg ? e.msg : "?");
}

/* One replay of graph G: node 11 "zeta_gemm" and node 12 "zeta_norm" on stream 7, node 13
** a D2D copy on stream 7, node 14 "alpha_attn" on stream 9. Children are added out of time
** order on purpose. Starts at base. */
static void graph_g(tl_trace *t, int64_t base, int64_t corr) {
  ev(t, K, 0, 7, base + 300, base + 400, "zeta_norm", corr, 1, 12);
  ev(t, K, 0, 7, base + 100, base + 200, "zeta_gemm", corr, 1, 11);
  ev(t, MC, 0, 7, base + 500, base + 550, "CudaMemcpy kind=8 bytes=64", corr, 1, 13);
  ev(t, K, 0, 9, base + 150, base + 450, "alpha_attn", corr, 1, 14);
}

static const char *const g_body =
    "cuda_graph_observed_stream_set_v1\nstream_count=2\n"
    "lane_begin\nkernel\talpha_attn\tnode=3\nlane_end\n"
    "lane_begin\nkernel\tzeta_gemm\tnode=0\nkernel\tzeta_norm\tnode=1\n"
    "memcpy\tCudaMemcpy kind=8 bytes=64\tnode=2\nlane_end\n";

START_TEST(promotes_repeated_graph) {
  tl_trace t;
  trace_new(&t);
  ev(&t, K, 0, 7, 10, 50, "eager_kernel", 5, 1, TL_ABSENT);
  call(&t, "cudaLaunchKernel_v7000", 5, 0, 5);
  /* Calls in reverse time order: launches come out by member start. */
  for (int l = 2; l >= 0; l--) {
    graph_g(&t, 1000 + l * 1000, 100 + l);
    call(&t, "cudaGraphLaunch_v10000", 100 + l, 900 + l * 1000, 950 + l * 1000);
  }
  tl_replay r;
  run(&t, NULL, &r);
  ck_assert_uint_eq(r.launches.n, 3);
  ck_assert_uint_eq(r.units.n, 3);
  ck_assert_uint_eq(r.members.n, 12);
  ck_assert_uint_eq(r.body_templates.n, 1);
  ck_assert_str_eq(r.body_templates.v[0], g_body);
  ck_assert_uint_eq(r.graph_templates.n, 1);
  ck_assert_uint_eq(r.envelopes.n, 0);
  for (uint32_t l = 0; l < 3; l++) {
    const tl_graph_launch *L = &r.launches.v[l];
    int64_t base = 1000 + l * 1000;
    ck_assert_int_eq(L->provider, TL_GRAPH_CUDA);
    ck_assert_str_eq(tl_launch_status_name(L->status), tl_launch_status_name(TL_LAUNCH_EXACT));
    ck_assert_int_eq(L->match_policy, TL_MATCH_CUDA_CORRELATION);
    ck_assert_int_eq(L->association_policy, TL_ASSOC_CUDA_NODE_SET);
    ck_assert_int_eq(L->correlation_id, 100 + l);
    ck_assert_uint_eq(L->host_call, 1 + (2 - l)); /* call 0 is the eager launch */
    ck_assert_int_eq(L->start_ns, base + 100);
    ck_assert_int_eq(L->end_ns, base + 550);
    ck_assert_uint_eq(L->device_id, 0);
    ck_assert_uint_eq(L->stream_id, 9); /* lane 0 (alpha_attn sorts first) */
    ck_assert_int_eq(L->graph_id, 1);
    ck_assert_uint_eq(L->body_template, 1);
    ck_assert_uint_eq(L->unit, l);
    ck_assert_uint_eq(L->member_order, 0);
    ck_assert_uint_eq(L->slot_order, 0);
    ck_assert_int_eq(L->slot_role, TL_SLOT_CUDA); /* the reference's cuda_graph slot */
    ck_assert_uint_eq(L->region, NONE);
    ck_assert_uint_eq(L->anchor_event, NONE);
    ck_assert_uint_eq(L->control[0], NONE);
    ck_assert_uint_eq(L->first_member, 4 * l);
    ck_assert_uint_eq(L->nmembers, 4);
    const tl_replay_unit *u = &r.units.v[l];
    ck_assert_uint_eq(u->first_launch, l);
    ck_assert_uint_eq(u->nlaunches, 1);
    ck_assert_uint_eq(u->graph_template, 1);
    ck_assert_uint_eq(u->region, NONE);
    ck_assert_int_eq(u->provider, TL_GRAPH_CUDA);
    /* Replay l added its children at events 1 + 4*(2-l) .. : norm, gemm, copy, attn. */
    uint32_t e0 = 1 + 4 * (2 - l);
    static const struct { uint32_t off, lane, task; uint8_t kind; } want[4] = {
        {3, 0, 0, TL_MEMBER_COMPUTE},  /* alpha_attn, stream 9 */
        {1, 1, 0, TL_MEMBER_COMPUTE},  /* zeta_gemm starts first on stream 7 */
        {0, 1, 1, TL_MEMBER_COMPUTE},  /* zeta_norm */
        {2, 1, 2, TL_MEMBER_DATA_MOVE} /* the copy */
    };
    for (int k = 0; k < 4; k++) {
      const tl_graph_member *m = &r.members.v[L->first_member + k];
      ck_assert_uint_eq(m->launch, l);
      ck_assert_uint_eq(m->event, e0 + want[k].off);
      ck_assert_uint_eq(m->lane_ordinal, want[k].lane);
      ck_assert_uint_eq(m->task_ordinal, want[k].task);
      ck_assert_int_eq(m->kind, want[k].kind);
      ck_assert_int_eq(m->original_graph_node_id, TL_ABSENT); /* no node table here */
    }
  }
  tl_replay_free(&r);
  tl_trace_free(&t);
}
END_TEST

/* Same node set, another label in one replay: every launch of the identity is a mismatch,
** keeps its members and its own body template, and none is promoted. */
START_TEST(body_mismatch) {
  tl_trace t;
  trace_new(&t);
  for (int l = 0; l < 3; l++) {
    int64_t b = 1000 * (l + 1);
    ev(&t, K, 0, 7, b, b + 10, l == 1 ? "other_kernel" : "gemm", 100 + l, 1, 1);
    ev(&t, K, 0, 7, b + 20, b + 30, "norm", 100 + l, 1, 2);
    call(&t, "cudaGraphLaunch_v10000", 100 + l, b - 50, b - 40);
  }
  tl_replay r;
  run(&t, NULL, &r);
  ck_assert_uint_eq(r.launches.n, 3);
  ck_assert_uint_eq(r.units.n, 0);
  ck_assert_uint_eq(r.body_templates.n, 2);
  ck_assert_uint_eq(r.members.n, 6);
  for (int l = 0; l < 3; l++) {
    const tl_graph_launch *L = &r.launches.v[l];
    ck_assert_int_eq(L->status, TL_LAUNCH_BODY_MISMATCH);
    ck_assert_uint_eq(L->unit, NONE);
    ck_assert_int_eq(L->slot_role, TL_SLOT_NONE);
    ck_assert_uint_eq(L->nmembers, 2);
    ck_assert_int_eq(L->graph_id, 1);
    ck_assert_uint_eq(L->body_template, l == 1 ? 2 : 1);
  }
  tl_replay_free(&r);
  tl_trace_free(&t);
}
END_TEST

/* Graph X (nodes 1, 2) replayed once, graph Y (nodes 5, 6) twice: X lacks repeat evidence,
** Y is promoted; graph ids number identities by first launch. */
START_TEST(insufficient_repeat) {
  tl_trace t;
  trace_new(&t);
  static const struct { int64_t start; int64_t node0; const char *a; } rep[3] = {
      {1000, 1, "x_kernel"}, {2000, 5, "y_kernel"}, {3000, 5, "y_kernel"}};
  for (int l = 0; l < 3; l++) {
    ev(&t, K, 0, 7, rep[l].start, rep[l].start + 10, rep[l].a, 100 + l, 1, rep[l].node0);
    ev(&t, K, 0, 7, rep[l].start + 20, rep[l].start + 30, "tail", 100 + l, 1, rep[l].node0 + 1);
    call(&t, "cudaGraphLaunch_v10000", 100 + l, rep[l].start - 50, rep[l].start - 40);
  }
  tl_replay r;
  run(&t, NULL, &r);
  ck_assert_uint_eq(r.launches.n, 3);
  ck_assert_int_eq(r.launches.v[0].status, TL_LAUNCH_INSUFFICIENT_REPEAT_EVIDENCE);
  ck_assert_int_eq(r.launches.v[0].graph_id, 1);
  ck_assert_uint_eq(r.launches.v[0].nmembers, 2);
  ck_assert_uint_eq(r.launches.v[0].unit, NONE);
  for (int l = 1; l < 3; l++) {
    ck_assert_int_eq(r.launches.v[l].status, TL_LAUNCH_EXACT);
    ck_assert_int_eq(r.launches.v[l].graph_id, 2);
  }
  ck_assert_uint_eq(r.units.n, 2);
  ck_assert_uint_eq(r.units.v[0].first_launch, 1);
  ck_assert_uint_eq(r.units.v[1].first_launch, 2);
  tl_replay_free(&r);
  tl_trace_free(&t);
}
END_TEST

/* Two good replays plus one defect each; every launch of the input then lacks capability. */
static void capability_case(int defect) {
  tl_trace t;
  trace_new(&t);
  for (int l = 0; l < 2; l++) {
    graph_g(&t, 1000 + l * 1000, 100 + l);
    call(&t, "cudaGraphLaunch_v10000", 100 + l, 900 + l * 1000, 950 + l * 1000);
  }
  if (defect == 0) /* a graph child without contextId */
    ev(&t, K, 0, 7, 5000, 5010, "late", 102, TL_ABSENT, 21);
  else if (defect == 1) /* a graph child without correlationId */
    ev(&t, MS, 0, 7, 5000, 5010, "CudaMemset bytes=4", TL_ABSENT, 1, 21);
  else /* graphNodeId in a table that is no child table */
    ev(&t, "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", 0, 7, 5000, 5010, "STREAM_SYNCHRONIZE",
       TL_ABSENT, 1, 21);
  tl_replay r;
  run(&t, NULL, &r);
  ck_assert_uint_eq(r.launches.n, 2);
  ck_assert_uint_eq(r.members.n, 0);
  ck_assert_uint_eq(r.units.n, 0);
  ck_assert_uint_eq(r.body_templates.n, 0);
  for (int l = 0; l < 2; l++) {
    const tl_graph_launch *L = &r.launches.v[l];
    ck_assert_int_eq(L->status, TL_LAUNCH_MISSING_BODY_CAPABILITY);
    ck_assert_int_eq(L->match_policy, TL_MATCH_UNMATCHED);
    ck_assert_int_eq(L->association_policy, TL_ASSOC_NONE);
    ck_assert_uint_eq(L->body_template, 0);
    ck_assert_int_eq(L->graph_id, TL_ABSENT);
    ck_assert_int_eq(L->start_ns, 900 + l * 1000); /* the host call's interval */
    ck_assert_int_eq(L->end_ns, 950 + l * 1000);
    ck_assert_uint_eq(L->stream_id, TL_NO_STREAM);
  }
  tl_replay_free(&r);
  tl_trace_free(&t);
}

START_TEST(capability_gate_null_context) { capability_case(0); }
END_TEST
START_TEST(capability_gate_null_correlation) { capability_case(1); }
END_TEST
START_TEST(capability_gate_other_table) { capability_case(2); }
END_TEST

/* Launch 0 spans two devices, launch 1 two contexts, launches 2 and 3 share a
** correlationId; launches 4 and 5 are clean replays of one graph and still promote. */
START_TEST(ambiguous_launches) {
  tl_trace t;
  trace_new(&t);
  ev(&t, K, 0, 7, 1000, 1010, "a", 100, 1, 1);
  ev(&t, K, 1, 7, 1020, 1030, "b", 100, 1, 2);
  call(&t, "cudaGraphLaunch_v10000", 100, 900, 910);
  ev(&t, K, 0, 7, 2000, 2010, "a", 101, 1, 1);
  ev(&t, K, 0, 7, 2020, 2030, "b", 101, 2, 2);
  call(&t, "cudaGraphLaunch_v10000", 101, 1900, 1910);
  ev(&t, K, 0, 7, 3000, 3010, "a", 102, 1, 1);
  ev(&t, K, 0, 7, 3020, 3030, "b", 102, 1, 2);
  call(&t, "cudaGraphLaunch_v10000", 102, 2900, 2910);
  call(&t, "cudaGraphLaunchAsync", 102, 2950, 2960);
  for (int l = 0; l < 2; l++) {
    int64_t b = 4000 + l * 1000;
    ev(&t, K, 0, 7, b, b + 10, "a", 103 + l, 1, 1);
    ev(&t, K, 0, 7, b + 20, b + 30, "b", 103 + l, 1, 2);
    call(&t, "cudaGraphLaunch_v10000", 103 + l, b - 100, b - 90);
  }
  tl_replay r;
  run(&t, NULL, &r);
  ck_assert_uint_eq(r.launches.n, 6);
  /* Order (device, start): no-body launches sit on device 0 at their call start. */
  static const struct { int64_t corr, start; uint8_t status; } want[6] = {
      {100, 900, TL_LAUNCH_AMBIGUOUS_BODY},  {101, 1900, TL_LAUNCH_AMBIGUOUS_BODY},
      {102, 2900, TL_LAUNCH_AMBIGUOUS_BODY}, {102, 2950, TL_LAUNCH_AMBIGUOUS_BODY},
      {103, 4000, TL_LAUNCH_EXACT},          {104, 5000, TL_LAUNCH_EXACT}};
  for (int l = 0; l < 6; l++) {
    const tl_graph_launch *L = &r.launches.v[l];
    ck_assert_int_eq(L->correlation_id, want[l].corr);
    ck_assert_int_eq(L->start_ns, want[l].start);
    ck_assert_int_eq(L->status, want[l].status);
    ck_assert_uint_eq(L->nmembers, want[l].status == TL_LAUNCH_EXACT ? 2 : 0);
  }
  ck_assert_uint_eq(r.launches.v[2].host_call, 2);
  ck_assert_uint_eq(r.launches.v[3].host_call, 3);
  ck_assert_uint_eq(r.units.n, 2);
  ck_assert_uint_eq(r.members.n, 4);
  tl_replay_free(&r);
  tl_trace_free(&t);
}
END_TEST

/* A launch whose correlationId no graph child carries (a kernel without graphNodeId is no
** child); launches without correlationId and calls of other APIs are no launches. */
START_TEST(missing_body_evidence) {
  tl_trace t;
  trace_new(&t);
  for (int l = 0; l < 2; l++) {
    graph_g(&t, 1000 + l * 1000, 100 + l);
    call(&t, "cudaGraphLaunch_v10000", 100 + l, 900 + l * 1000, 950 + l * 1000);
  }
  call(&t, "CUDAGRAPHLAUNCH_v12000", 300, 5000, 5100);
  ev(&t, K, 0, 7, 5200, 5300, "not_a_graph_node", 300, 1, TL_ABSENT); /* no graphNodeId */
  call(&t, "cudaGraphLaunch_v10000", TL_ABSENT, 6000, 6100);
  call(&t, "cudaGraphInstantiate", 301, 100, 200);
  tl_replay r;
  run(&t, NULL, &r);
  ck_assert_uint_eq(r.launches.n, 3);
  const tl_graph_launch *L = &r.launches.v[2];
  ck_assert_int_eq(L->status, TL_LAUNCH_MISSING_BODY_EVIDENCE);
  ck_assert_int_eq(L->correlation_id, 300);
  ck_assert_uint_eq(L->host_call, 2);
  ck_assert_int_eq(L->start_ns, 5000);
  ck_assert_int_eq(L->end_ns, 5100);
  ck_assert_uint_eq(L->nmembers, 0);
  ck_assert_uint_eq(L->body_template, 0);
  ck_assert_int_eq(L->graph_id, TL_ABSENT);
  ck_assert_uint_eq(L->unit, NONE);
  ck_assert_int_eq(r.launches.v[0].status, TL_LAUNCH_EXACT);
  ck_assert_int_eq(r.launches.v[1].status, TL_LAUNCH_EXACT);
  tl_replay_free(&r);
  tl_trace_free(&t);
}
END_TEST

/* No event carries a graphNodeId: not on the node-level path, so no launches at all. */
START_TEST(no_node_level_evidence) {
  tl_trace t;
  trace_new(&t);
  ev(&t, K, 0, 7, 1000, 1010, "a", 100, 1, TL_ABSENT);
  call(&t, "cudaGraphLaunch_v10000", 100, 900, 910);
  tl_replay r;
  run(&t, NULL, &r);
  ck_assert_uint_eq(r.launches.n, 0);
  ck_assert_uint_eq(r.members.n, 0);
  tl_replay_free(&r);
  tl_trace_free(&t);
}
END_TEST

/* Memcpy and memset children are data_move, an NCCL collective kernel communication. */
START_TEST(member_kinds) {
  tl_trace t;
  trace_new(&t);
  for (int l = 0; l < 2; l++) {
    int64_t b = 1000 + 1000 * l;
    ev(&t, MS, 0, 3, b, b + 5, "CudaMemset bytes=4", 100 + l, 1, 40);
    ev(&t, K, 0, 3, b + 10, b + 20, "gemm", 100 + l, 1, 41);
    ev(&t, K, 0, 5, b + 30, b + 90, "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", 100 + l, 1, 42);
    ev(&t, MC, 0, 3, b + 95, b + 99, "CudaMemcpy kind=2 bytes=8", 100 + l, 1, 43);
    call(&t, "cudaGraphLaunch_v10000", 100 + l, b - 100, b - 90);
  }
  tl_replay r;
  run(&t, NULL, &r);
  ck_assert_uint_eq(r.launches.n, 2);
  ck_assert_uint_eq(r.units.n, 2);
  /* Lane text: "communication..." < "memset..." so stream 5 is lane 0. */
  ck_assert_str_eq(r.body_templates.v[0],
                   "cuda_graph_observed_stream_set_v1\nstream_count=2\n"
                   "lane_begin\ncommunication\tncclDevKernel_AllReduce_Sum_bf16_RING_LL\tnode=2\n"
                   "lane_end\nlane_begin\nmemset\tCudaMemset bytes=4\tnode=0\n"
                   "kernel\tgemm\tnode=1\nmemcpy\tCudaMemcpy kind=2 bytes=8\tnode=3\nlane_end\n");
  static const uint8_t kinds[4] = {TL_MEMBER_COMMUNICATION, TL_MEMBER_DATA_MOVE,
                                   TL_MEMBER_COMPUTE, TL_MEMBER_DATA_MOVE};
  for (uint32_t l = 0; l < 2; l++)
    for (uint32_t k = 0; k < 4; k++) {
      const tl_graph_member *m = &r.members.v[4 * l + k];
      ck_assert_int_eq(m->kind, kinds[k]);
      ck_assert_uint_eq(m->lane_ordinal, k == 0 ? 0 : 1);
      ck_assert_uint_eq(m->task_ordinal, k == 0 ? 0 : k - 1);
    }
  ck_assert_uint_eq(r.launches.v[0].stream_id, 5);
  tl_replay_free(&r);
  tl_trace_free(&t);
}
END_TEST

/* Lanes are ordered by their text, not by stream id; tasks with equal starts by end. */
START_TEST(lane_and_task_ties) {
  tl_trace t;
  trace_new(&t);
  for (int l = 0; l < 2; l++) {
    int64_t b = 1000 + 1000 * l;
    ev(&t, K, 0, 30, b, b + 50, "k", 100 + l, 1, 1);  /* lane 1 */
    ev(&t, K, 0, 20, b, b + 50, "k", 100 + l, 1, 2);  /* lane 0 */
    ev(&t, K, 0, 20, b + 60, b + 90, "k", 100 + l, 1, 4);
    ev(&t, K, 0, 30, b + 60, b + 90, "k", 100 + l, 1, 3);
    ev(&t, K, 0, 20, b + 60, b + 80, "k", 100 + l, 1, 5);  /* ends first: task 1 */
    ev(&t, K, 0, 30, b + 60, b + 80, "k", 100 + l, 1, 6);
    call(&t, "cudaGraphLaunch_v10000", 100 + l, b - 100, b - 90);
  }
  tl_replay r;
  run(&t, NULL, &r);
  ck_assert_uint_eq(r.launches.n, 2);
  /* Lane texts differ by node ordinals: stream 20 has nodes 2,5,4 -> ordinals 1,4,3;
  ** stream 30 has 1,6,3 -> 0,5,2. "kernel\tk\tnode=0" < "node=1": stream 30 is lane 0. */
  static const struct { uint32_t off, lane, task; } want[6] = {
      {0, 0, 0}, {5, 0, 1}, {3, 0, 2}, {1, 1, 0}, {4, 1, 1}, {2, 1, 2}};
  for (uint32_t l = 0; l < 2; l++) {
    ck_assert_int_eq(r.launches.v[l].status, TL_LAUNCH_EXACT);
    ck_assert_uint_eq(r.launches.v[l].stream_id, 30);
    for (uint32_t k = 0; k < 6; k++) {
      const tl_graph_member *m = &r.members.v[6 * l + k];
      ck_assert_uint_eq(m->event, 6 * l + want[k].off);
      ck_assert_uint_eq(m->lane_ordinal, want[k].lane);
      ck_assert_uint_eq(m->task_ordinal, want[k].task);
    }
  }
  tl_replay_free(&r);
  tl_trace_free(&t);
}
END_TEST

static void same_members(const tl_replay *a, const tl_replay *b) {
  ck_assert_uint_eq(a->members.n, b->members.n);
  for (size_t k = 0; k < a->members.n; k++) {
    const tl_graph_member *x = &a->members.v[k], *y = &b->members.v[k];
    ck_assert_uint_eq(x->launch, y->launch);
    ck_assert_uint_eq(x->event, y->event);
    ck_assert_uint_eq(x->lane_ordinal, y->lane_ordinal);
    ck_assert_uint_eq(x->task_ordinal, y->task_ordinal);
    ck_assert_int_eq(x->kind, y->kind);
    ck_assert_int_eq(x->original_graph_node_id, y->original_graph_node_id);
  }
}

/* The same trace gives the same arrays twice, and calls in another order change nothing
** but host_call. */
START_TEST(deterministic) {
  tl_replay a, b;
  tl_trace t1, t2;
  trace_new(&t1);
  trace_new(&t2);
  for (int l = 0; l < 4; l++) graph_g(&t1, 1000 + l * 1000, 100 + l);
  for (int l = 0; l < 4; l++) graph_g(&t2, 1000 + l * 1000, 100 + l);
  for (int l = 0; l < 4; l++)
    call(&t1, "cudaGraphLaunch_v10000", 100 + l, 900 + l * 1000, 950 + l * 1000);
  static const int perm[4] = {2, 0, 3, 1};
  for (int k = 0; k < 4; k++)
    call(&t2, "cudaGraphLaunch_v10000", 100 + perm[k], 900 + perm[k] * 1000,
         950 + perm[k] * 1000);
  run(&t1, NULL, &a);
  run(&t1, NULL, &b);
  ck_assert_uint_eq(a.launches.n, 4);
  ck_assert_int_eq(memcmp(a.launches.v, b.launches.v, 4 * sizeof *a.launches.v), 0);
  same_members(&a, &b);
  tl_replay_free(&b);
  run(&t2, NULL, &b);
  ck_assert_uint_eq(b.launches.n, 4);
  for (int l = 0; l < 4; l++) {
    tl_graph_launch x = a.launches.v[l], y = b.launches.v[l];
    ck_assert_uint_eq(x.host_call, (uint32_t)l);
    ck_assert_int_eq(perm[y.host_call], l);
    x.host_call = y.host_call = 0;
    ck_assert_int_eq(memcmp(&x, &y, sizeof x), 0);
  }
  same_members(&a, &b);
  tl_replay_free(&a);
  tl_replay_free(&b);
  tl_trace_free(&t1);
  tl_trace_free(&t2);
}
END_TEST

/* GRAPH_TRACE events become envelopes (ordered by device, then time) that name the launch
** of their correlationId; they never add members. Without a file, graph ids stay absent. */
START_TEST(envelopes_from_graph_trace) {
  tl_trace t;
  trace_new(&t);
  for (int l = 0; l < 2; l++) {
    graph_g(&t, 1000 + l * 1000, 100 + l);
    call(&t, "cudaGraphLaunch_v10000", 100 + l, 900 + l * 1000, 950 + l * 1000);
  }
  const char *gt = "CUPTI_ACTIVITY_KIND_GRAPH_TRACE";
  uint32_t e1 = ev(&t, gt, 1, 4, 500, 600, "CudaGraph graph=5 exec=9", 300, 2, TL_ABSENT);
  uint32_t e0 = ev(&t, gt, 0, 7, 2000, 2600, "CudaGraph graph=5 exec=9", 101, 1, TL_ABSENT);
  tl_replay r;
  run(&t, NULL, &r);
  ck_assert_uint_eq(r.launches.n, 2);
  ck_assert_uint_eq(r.members.n, 8);
  ck_assert_uint_eq(r.envelopes.n, 2);
  const tl_graph_envelope *g = &r.envelopes.v[0];
  ck_assert_uint_eq(g->event, e0);
  ck_assert_uint_eq(g->launch, 1);
  ck_assert_int_eq(g->correlation_id, 101);
  ck_assert_int_eq(g->context_id, 1);
  ck_assert_int_eq(g->start_ns, 2000);
  ck_assert_int_eq(g->end_ns, 2600);
  ck_assert_uint_eq(g->stream_id, 7);
  ck_assert_int_eq(g->graph_id, TL_ABSENT);
  ck_assert_int_eq(g->graph_exec_id, TL_ABSENT);
  ck_assert_str_eq(g->graph_kind, "cuda_graph_trace");
  g = &r.envelopes.v[1];
  ck_assert_uint_eq(g->event, e1);
  ck_assert_uint_eq(g->device_id, 1);
  ck_assert_uint_eq(g->launch, NONE); /* no launch has correlationId 300 */
  tl_replay_free(&r);
  tl_trace_free(&t);
}
END_TEST

/* ------------------------------------------------------------------ Nsight fixtures */

typedef struct loaded {
  tl_profile p;
  tl_trace t;
  tl_replay r;
} loaded;

static void load_path(loaded *x, const char *path) {
  tl_err e = {0};
  memset(x, 0, sizeof *x);
  int rc = tl_profile_discover(path, "auto", &x->p, &e);
  ck_assert_msg(rc == TL_OK, "discover %s: %s", path, e.msg ? e.msg : "");
  rc = tl_trace_load(&x->p, &x->t, NULL, NULL, &e);
  ck_assert_msg(rc == TL_OK, "load %s: %s", path, e.msg ? e.msg : "");
  run(&x->t, &x->p, &x->r);
}

static void load_fixture(loaded *x, const char *rel) {
  char *path = tl_fixture(rel);
  load_path(x, path);
  free(path);
}

static void unload(loaded *x) {
  tl_replay_free(&x->r);
  tl_trace_free(&x->t);
  tl_profile_free(&x->p);
}

/* make_nsys.py graph(): 3 launches (corr 500..502) of kernels on nodes 201..203 plus a
** D2D copy on node 204, all on stream 13; instantiation mapped 201..204 from 101..104. */
static void check_nsys_graph(const loaded *x, uint8_t status, int64_t orig_of_201) {
  const tl_replay *r = &x->r;
  ck_assert_uint_eq(r->launches.n, 3);
  ck_assert_uint_eq(r->members.n, 12);
  ck_assert_uint_eq(r->units.n, status == TL_LAUNCH_EXACT ? 3 : 0);
  for (uint32_t l = 0; l < 3; l++) {
    const tl_graph_launch *L = &r->launches.v[l];
    int64_t g = 3000000000ll + l * 500000ll;
    ck_assert_int_eq(L->status, status);
    ck_assert_int_eq(L->correlation_id, 500 + l);
    ck_assert_int_eq(L->start_ns, g + 10000);
    ck_assert_int_eq(L->end_ns, g + 105000);
    ck_assert_uint_eq(L->stream_id, 13);
    ck_assert_int_eq(L->graph_id, 1);
    ck_assert_str_eq(tl_str(&x->t, x->t.calls.api_name[L->host_call]), "cudaGraphLaunch_v10000");
    for (uint32_t k = 0; k < 4; k++) {
      const tl_graph_member *m = &r->members.v[L->first_member + k];
      ck_assert_uint_eq(m->lane_ordinal, 0);
      ck_assert_uint_eq(m->task_ordinal, k);
      ck_assert_int_eq(tl_i64col_get(&x->t.ev.graph_node_id, m->event), 201 + k);
      ck_assert_int_eq(tl_i64col_get(&x->t.ev.correlation_id, m->event), 500 + l);
      ck_assert_int_eq(m->kind, k == 3 ? TL_MEMBER_DATA_MOVE : TL_MEMBER_COMPUTE);
      ck_assert_int_eq(m->original_graph_node_id, k == 0 ? orig_of_201 : 101 + k);
    }
  }
  ck_assert_uint_eq(r->envelopes.n, 0);
}

START_TEST(fixture_node_level) {
  loaded x;
  load_fixture(&x, "nsys/nsys_graph.sqlite");
  check_nsys_graph(&x, TL_LAUNCH_EXACT, 101);
  ck_assert_uint_eq(x.r.body_templates.n, 1);
  ck_assert_ptr_nonnull(strstr(x.r.body_templates.v[0], "\tCudaMemcpy kind=8 bytes=2048\tnode=3\n"));
  unload(&x);
}
END_TEST

/* make_nsys.py graphtrace(): two GRAPH_TRACE rows (graph 5, exec 9, corr 601/602) and no
** node table: envelopes only, no launches. */
START_TEST(fixture_graph_level) {
  loaded x;
  load_fixture(&x, "nsys/nsys_graphtrace.sqlite");
  ck_assert_uint_eq(x.r.launches.n, 0);
  ck_assert_uint_eq(x.r.members.n, 0);
  ck_assert_uint_eq(x.r.envelopes.n, 2);
  for (uint32_t l = 0; l < 2; l++) {
    const tl_graph_envelope *g = &x.r.envelopes.v[l];
    int64_t s = 4000000000ll + l * 500000ll;
    ck_assert_str_eq(g->graph_kind, "cuda_graph_trace");
    ck_assert_int_eq(g->provider, TL_GRAPH_CUDA);
    ck_assert_int_eq(g->start_ns, s + 10000);
    ck_assert_int_eq(g->end_ns, s + 130000);
    ck_assert_uint_eq(g->stream_id, 13);
    ck_assert_int_eq(g->correlation_id, 601 + l);
    ck_assert_int_eq(g->graph_id, 5);
    ck_assert_int_eq(g->graph_exec_id, 9);
    ck_assert_int_eq(g->context_id, 1);
    ck_assert_uint_eq(g->launch, NONE);
    ck_assert_str_eq(tl_trace_source_table(&x.t, tl_events_source_ref(&x.t.ev, g->event)),
                     "CUPTI_ACTIVITY_KIND_GRAPH_TRACE");
  }
  unload(&x);
}
END_TEST

/* A copy of nsys_graph with one change (SQL run on the copy). */
static void load_mutated(loaded *x, const char *sql, char *dir, size_t cap) {
  snprintf(dir, cap, "/tmp/tl_cudagraph_XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(dir));
  char *src = tl_fixture("nsys/nsys_graph.sqlite");
  char dst[256];
  snprintf(dst, sizeof dst, "%s/nsys_graph.sqlite", dir);
  sqlite3 *db;
  ck_assert_int_eq(sqlite3_open_v2(src, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
  char *vac = sqlite3_mprintf("VACUUM INTO %Q", dst);
  ck_assert_int_eq(sqlite3_exec(db, vac, NULL, NULL, NULL), SQLITE_OK);
  sqlite3_free(vac);
  sqlite3_close(db);
  free(src);
  ck_assert_int_eq(sqlite3_open(dst, &db), SQLITE_OK);
  char *err = NULL;
  int rc = sqlite3_exec(db, sql, NULL, NULL, &err);
  ck_assert_msg(rc == SQLITE_OK, "%s: %s", sql, err ? err : "");
  sqlite3_close(db);
  load_path(x, dst);
}

static void drop_mutated(loaded *x, const char *dir) {
  unload(x);
  char path[256];
  snprintf(path, sizeof path, "%s/nsys_graph.sqlite", dir);
  unlink(path);
  rmdir(dir);
}

START_TEST(fixture_other_table_graph_node) {
  loaded x;
  char dir[64];
  load_mutated(&x,
               "CREATE TABLE CUDA_GRAPH_EXTRA(start INTEGER, graphNodeId INTEGER);"
               "INSERT INTO CUDA_GRAPH_EXTRA VALUES(1, 201);",
               dir, sizeof dir);
  ck_assert_uint_eq(x.r.launches.n, 3);
  ck_assert_uint_eq(x.r.members.n, 0);
  for (int l = 0; l < 3; l++)
    ck_assert_int_eq(x.r.launches.v[l].status, TL_LAUNCH_MISSING_BODY_CAPABILITY);
  drop_mutated(&x, dir);
}
END_TEST

/* A copy table without bytes cannot label its graph children: no capability. */
START_TEST(fixture_memcpy_without_bytes) {
  loaded x;
  char dir[64];
  load_mutated(&x, "ALTER TABLE CUPTI_ACTIVITY_KIND_MEMCPY DROP COLUMN bytes;", dir, sizeof dir);
  ck_assert_uint_eq(x.r.launches.n, 3);
  for (int l = 0; l < 3; l++)
    ck_assert_int_eq(x.r.launches.v[l].status, TL_LAUNCH_MISSING_BODY_CAPABILITY);
  drop_mutated(&x, dir);
}
END_TEST

/* One graph copy without correlationId. */
START_TEST(fixture_memcpy_null_correlation) {
  loaded x;
  char dir[64];
  load_mutated(&x, "UPDATE CUPTI_ACTIVITY_KIND_MEMCPY SET correlationId = NULL WHERE rowid = 2;",
               dir, sizeof dir);
  ck_assert_uint_eq(x.r.launches.n, 3);
  ck_assert_uint_eq(x.r.members.n, 0);
  for (int l = 0; l < 3; l++)
    ck_assert_int_eq(x.r.launches.v[l].status, TL_LAUNCH_MISSING_BODY_CAPABILITY);
  drop_mutated(&x, dir);
}
END_TEST

/* A second original for node 201: its original id becomes unknown (ambiguous), nothing
** else changes. */
START_TEST(fixture_ambiguous_original) {
  loaded x;
  char dir[64];
  load_mutated(&x,
               "INSERT INTO CUDA_GRAPH_NODE_EVENTS(start, end, eventClass, globalTid, nameId, "
               "graphNodeId, originalGraphNodeId) SELECT start + 1, end + 1, eventClass, "
               "globalTid, nameId, 201, 999 FROM CUDA_GRAPH_NODE_EVENTS WHERE graphNodeId = 201;",
               dir, sizeof dir);
  check_nsys_graph(&x, TL_LAUNCH_EXACT, TL_ABSENT);
  drop_mutated(&x, dir);
}
END_TEST

/* Without CUDA_GRAPH_NODE_EVENTS rows the node-level path is off: no launches. */
START_TEST(fixture_empty_node_table) {
  loaded x;
  char dir[64];
  load_mutated(&x, "DELETE FROM CUDA_GRAPH_NODE_EVENTS;", dir, sizeof dir);
  ck_assert_uint_eq(x.r.launches.n, 0);
  ck_assert_uint_eq(x.r.members.n, 0);
  drop_mutated(&x, dir);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("cudagraph");
  TCase *c = tcase_create("core");
  tcase_add_test(c, promotes_repeated_graph);
  tcase_add_test(c, body_mismatch);
  tcase_add_test(c, insufficient_repeat);
  tcase_add_test(c, capability_gate_null_context);
  tcase_add_test(c, capability_gate_null_correlation);
  tcase_add_test(c, capability_gate_other_table);
  tcase_add_test(c, ambiguous_launches);
  tcase_add_test(c, missing_body_evidence);
  tcase_add_test(c, no_node_level_evidence);
  tcase_add_test(c, member_kinds);
  tcase_add_test(c, lane_and_task_ties);
  tcase_add_test(c, deterministic);
  tcase_add_test(c, envelopes_from_graph_trace);
  suite_add_tcase(s, c);
  TCase *f = tcase_create("nsight");
  tcase_add_test(f, fixture_node_level);
  tcase_add_test(f, fixture_graph_level);
  tcase_add_test(f, fixture_other_table_graph_node);
  tcase_add_test(f, fixture_memcpy_without_bytes);
  tcase_add_test(f, fixture_memcpy_null_correlation);
  tcase_add_test(f, fixture_ambiguous_original);
  tcase_add_test(f, fixture_empty_node_table);
  suite_add_tcase(s, f);
  return s;
}

TL_CHECK_MAIN(suite)
