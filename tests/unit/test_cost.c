/*
** test_cost.c: anchors (ordering, comm-op representation, aux links) and cost packets
** (shares, prelude windows, conservation) on small hand-built traces, and the occurrence
** sums the structure reads from them.
*/
#include "tl_check.h"
#include "anchor/anchors.h"
#include "cost/packets.h"
#include "structure/structure.h"

#include <string.h>

typedef struct ev_spec {
  uint32_t device;
  int64_t start, end;
  tl_kind kind;
  const char *name;
  uint8_t role;
  int64_t corr;
  const char *table;
} ev_spec;

typedef struct built {
  tl_trace t;
  uint8_t *role;
  uint32_t *symbol;
  tl_anchors a;
  tl_packets packets;
  tl_packet *p; /* packets, unpacked: p[k] = tl_packet_at(&packets, k) */
} built;

static void build_merged(built *b, const ev_spec *spec, size_t n, const tl_anchor_merges *merges) {
  tl_err e = {0};
  ck_assert_int_eq(tl_trace_init(&b->t, NULL, &e), TL_OK);
  b->role = malloc(n);
  b->symbol = malloc(n * sizeof *b->symbol);
  for (size_t i = 0; i < n; i++) {
    tl_event_row r;
    memset(&r, 0, sizeof r);
    r.source_table = spec[i].table ? spec[i].table : "TASK";
    r.source_rowid = (int64_t)i + 1;
    r.device_id = spec[i].device;
    r.stream_id = 1;
    r.start_ns = spec[i].start, r.end_ns = spec[i].end;
    r.kind = spec[i].kind;
    r.name = r.task_type = tl_strpool_intern_cstr(b->t.pool, spec[i].name);
    if (strcmp(r.source_table, "COMMUNICATION_OP") == 0) r.task_type = tl_strpool_intern_cstr(b->t.pool, "COMMUNICATION_OP");
    r.task_id = r.global_task_id = r.context_id = r.model_id = r.graph_node_id = r.op_id = TL_ABSENT;
    r.correlation_id = spec[i].corr ? spec[i].corr : TL_ABSENT;
    ck_assert_int_eq(tl_trace_add_event(&b->t, &r), 0);
    b->role[i] = spec[i].role;
    b->symbol[i] = r.name;
  }
  tl_anchor_input in = {&b->t, NULL, b->role, NULL, b->symbol, NULL, merges};
  ck_assert_int_eq(tl_anchors_build(&in, &b->a, &e), TL_OK);
  ck_assert_int_eq(tl_packets_build(&b->t, &b->a, &b->packets, &e), TL_OK);
  ck_assert_uint_eq(b->packets.n, b->a.n);
  b->p = malloc((b->a.n ? b->a.n : 1) * sizeof *b->p);
  for (size_t k = 0; k < b->a.n; k++) b->p[k] = tl_packet_at(&b->packets, k);
}

static void build(built *b, const ev_spec *spec, size_t n) { build_merged(b, spec, n, NULL); }

static void release(built *b) {
  free(b->p);
  tl_packets_free(&b->packets);
  tl_anchors_free(&b->a);
  free(b->role), free(b->symbol);
  tl_trace_free(&b->t);
}

/* outputs.md 3.1: anchors [1000,1100) and [2000,2100), nothing else. */
START_TEST(spec_example_idle_gap) {
  ev_spec s[] = {{0, 2000, 2100, TL_KIND_COMPUTE, "B", TL_ROLE_ANCHOR, 0, NULL},
                 {0, 1000, 1100, TL_KIND_COMPUTE, "A", TL_ROLE_ANCHOR, 0, NULL}};
  built b;
  build(&b, s, 2);
  ck_assert_uint_eq(b.a.n, 2);
  ck_assert_uint_eq(b.a.event[0], 1); /* sorted by start */
  ck_assert_int_eq(b.p[1].compute_ns, 100);
  ck_assert_int_eq(b.p[1].idle_ns, 900);
  ck_assert_int_eq(tl_packet_total_ns(&b.p[1]), 1000);
  ck_assert_int_eq(b.p[0].idle_ns, 0); /* the first anchor has no prelude window */
  ck_assert_int_eq(tl_packet_total_ns(&b.p[0]), 100);
  release(&b);
}
END_TEST

/* Epoch-scale times with windows and kernels beyond 2^32 ns (the packed packet columns
** keep such values in their overflow map): every field is exact. */
START_TEST(long_windows_exact) {
  const int64_t T = 1712345678000000000LL, G = 10000000000LL; /* 10 s */
  ev_spec s[] = {{0, T, T + 100, TL_KIND_COMPUTE, "A", TL_ROLE_ANCHOR, 0, NULL},
                 {0, T + G, T + G + 5 * G, TL_KIND_COMPUTE, "B", TL_ROLE_ANCHOR, 0, NULL},
                 {0, T + 7 * G, T + 7 * G + 50, TL_KIND_COMPUTE, "C", TL_ROLE_ANCHOR, 0, NULL}};
  built b;
  build(&b, s, 3);
  ck_assert_int_eq(b.p[1].idle_ns, G - 100);
  ck_assert_int_eq(b.p[1].compute_ns, 5 * G);
  ck_assert_int_eq(b.p[1].self_ns, 5 * G);
  ck_assert_int_eq(b.p[2].idle_ns, G);
  ck_assert_int_eq(b.p[2].compute_ns, 50);
  ck_assert_int_eq(b.p[0].compute_ns, 100);
  ck_assert_int_eq(tl_packet_total_ns(&b.p[0]) + tl_packet_total_ns(&b.p[1]) +
                       tl_packet_total_ns(&b.p[2]), 7 * G + 50);
  release(&b);
}
END_TEST

/* Occurrence sums read from checkpoints every TL_SUM_BLOCK anchors equal the plain sums of
** the packets (and linked aux durations) they cover, for spans of every length and
** position; the atoms come back one per token, in token order. */
START_TEST(tree_sums_match_plain_sums) {
  enum { N = 1500 };
  static ev_spec s[N];
  static const char *const names[] = {"A", "B", "C", "D", "E"};
  int64_t t = 1712345678000000000LL;
  uint64_t x = 0x9E3779B97F4A7C15ull;
  for (int i = 0; i < N; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    int aux = (x >> 8) % 5 == 0;
    int64_t len = 100 + (int64_t)((x >> 16) % 900);
    /* Now and then a gap or a kernel beyond 2^32 ns. */
    if ((x >> 30) % 97 == 0) len += 5000000000LL;
    int64_t gap = (x >> 40) % 89 == 0 ? 6000000000LL : (int64_t)((x >> 44) % 300) - 100;
    s[i] = (ev_spec){0, t, t + len, (x >> 50) % 4 == 0 ? TL_KIND_COMMUNICATION : TL_KIND_COMPUTE,
                     names[(i % 7) % 5], aux ? TL_ROLE_AUXILIARY : TL_ROLE_ANCHOR, 0, NULL};
    t += len + gap;
  }
  built b;
  build(&b, s, N);
  tl_err e = {0};
  tl_forest f;
  ck_assert_int_eq(tl_forest_build(&b.t, &b.a, &b.packets, NULL, &f, &e), TL_OK);
  ck_assert_uint_eq(f.trees.n, 1);
  const tl_tree *tr = &f.trees.v[0];
  size_t n = b.a.groups.v[tr->group].count, first = b.a.groups.v[tr->group].first;
  ck_assert_uint_gt(n, 4 * TL_SUM_BLOCK);
  /* Plain linked aux durations per anchor, from the links themselves. */
  int64_t *linked = calloc(b.a.n, sizeof *linked);
  for (size_t k = 0; k < b.a.nlinks; k++) {
    uint32_t ev = b.a.link_event[k];
    linked[b.a.link_anchor[k]] += tl_events_end(&b.t.ev, ev) - b.t.ev.start_ns[ev];
  }
  for (uint32_t lo = 0; lo <= n; lo += 7) {
    for (uint32_t hi = lo; hi <= n; hi += 1 + (hi % 13)) {
      int64_t want[TL_SUM_COUNT] = {0};
      for (uint32_t k = lo; k < hi; k++) {
        const tl_packet *p = &b.p[first + k];
        want[TL_SUM_COMPUTE] += p->compute_ns, want[TL_SUM_COMM] += p->comm_ns;
        want[TL_SUM_IDLE] += p->idle_ns, want[TL_SUM_SELF] += p->self_ns;
        want[TL_SUM_AUX] += p->aux_ns, want[TL_SUM_AUX_EVENTS] += p->aux_events;
        want[TL_SUM_LINKED_AUX] += linked[first + k];
      }
      tl_sums got;
      tl_tree_sums(tr, lo, hi, &got);
      for (int fld = 0; fld < TL_SUM_COUNT; fld++) ck_assert_int_eq(got.v[fld], want[fld]);
    }
  }
  uint32_t cursor = 0;
  for (uint32_t k = 0; k < n; k++) {
    uint32_t o = tl_tree_next_atom(tr, &cursor);
    ck_assert_uint_ne(o, UINT32_MAX);
    ck_assert_uint_eq(tr->occ[o].start, k);
    ck_assert_uint_eq(tl_tree_occ_end(tr, o), k + 1);
  }
  ck_assert_uint_eq(tl_tree_next_atom(tr, &cursor), UINT32_MAX);
  free(linked);
  tl_forest_free(&f);
  release(&b);
}
END_TEST

/* A built tree keeps only each occurrence's parent and start: over "X" then (A B C) x 4 then
** "Y", what it derives (end, slot, member order, the node's occurrence index arithmetic)
** is what the input says: the loop's four iterations are tokens [1,4), [4,7), [7,10),
** [10,13), and the atom of token k inside it is in iteration (k - 1) / 3 + 1. */
START_TEST(tree_occurrences_derive_their_fields) {
  enum { N = 14 };
  static const char *const names[N] = {"X", "A", "B", "C", "A", "B", "C", "A", "B", "C",
                                       "A", "B", "C", "Y"};
  ev_spec s[N];
  for (int i = 0; i < N; i++)
    s[i] = (ev_spec){0, 1000 * i, 1000 * i + 500, TL_KIND_COMPUTE, names[i], TL_ROLE_ANCHOR, 0, NULL};
  built b;
  build(&b, s, N);
  tl_err e = {0};
  tl_forest f;
  ck_assert_int_eq(tl_forest_build(&b.t, &b.a, &b.packets, NULL, &f, &e), TL_OK);
  const tl_tree *tr = &f.trees.v[0];
  ck_assert_ptr_null(tr->st.occurrences); /* given back once the slim form is built */
  /* The root spans every token. */
  ck_assert_uint_eq(tr->occ[0].parent, TL_RECOVER_NONE);
  ck_assert_uint_eq(tl_tree_occ_end(tr, 0), N);
  ck_assert_uint_eq(tl_tree_occ_member(tr, 0), 0);
  ck_assert_uint_eq(tl_tree_occ_slot(tr, 0), 0);
  uint32_t cursor = 0, loop = UINT32_MAX;
  for (uint32_t k = 0; k < N; k++) {
    uint32_t o = tl_tree_next_atom(tr, &cursor);
    ck_assert_uint_ne(o, UINT32_MAX);
    ck_assert_uint_eq(tr->occ[o].start, k);
    ck_assert_uint_eq(tl_tree_occ_end(tr, o), k + 1);
    /* The nearest Repeat ancestor: the loop for tokens 1..12, none for X and Y. */
    uint32_t x = o, below = o;
    while (tr->occ[x].parent != TL_RECOVER_NONE &&
           tl_tree_occ_position(tr, tr->occ[x].parent)->kind != TL_POS_REPEAT)
      x = tr->occ[x].parent;
    below = x, x = tr->occ[x].parent;
    if (k == 0 || k == N - 1) {
      ck_assert_uint_eq(x, TL_RECOVER_NONE);
      continue;
    }
    ck_assert_uint_ne(x, TL_RECOVER_NONE);
    if (loop == UINT32_MAX) loop = x;
    ck_assert_uint_eq(x, loop); /* one loop */
    ck_assert_uint_eq(tl_tree_occ_member(tr, below), (k - 1) / 3 + 1);
    /* The child's occurrence index from its parent's, and back (structure.h). */
    const tl_position *pp = tl_tree_occ_position(tr, x);
    uint32_t child_idx = (uint32_t)tl_tree_child_idx(pp, 1, tl_tree_occ_member(tr, below));
    ck_assert_uint_eq(child_idx, (k - 1) / 3 + 1); /* the loop occurs once */
    ck_assert_uint_eq(tl_tree_parent_idx(pp, child_idx, tl_tree_occ_member(tr, below)), 1);
  }
  ck_assert_uint_ne(loop, UINT32_MAX);
  const tl_position *lp = tl_tree_occ_position(tr, loop);
  ck_assert_uint_eq(lp->repeat_count, 4);
  ck_assert_uint_eq(tr->occ[loop].start, 1);
  ck_assert_uint_eq(tl_tree_occ_end(tr, loop), 13);
  ck_assert_uint_eq(tl_tree_occ_slot(tr, loop), 2); /* after X */
  tl_forest_free(&f);
  release(&b);
}
END_TEST

/* Communication wins the overlap; the compute anchor keeps only its own slices. */
START_TEST(comm_beats_compute) {
  ev_spec s[] = {{0, 0, 100, TL_KIND_COMPUTE, "MatMul", TL_ROLE_ANCHOR, 0, NULL},
                 {0, 50, 150, TL_KIND_COMMUNICATION, "AllReduce", TL_ROLE_ANCHOR, 0, NULL}};
  built b;
  build(&b, s, 2);
  ck_assert_int_eq(b.p[0].compute_ns, 50);
  ck_assert_int_eq(b.p[1].comm_ns, 100);
  ck_assert_int_eq(b.p[0].self_ns, 100);
  ck_assert_int_eq(b.p[1].self_ns, 100);
  ck_assert_int_eq(tl_packet_total_ns(&b.p[0]) + tl_packet_total_ns(&b.p[1]), 150);
  release(&b);
}
END_TEST

/* A prelude window: comm > non-wait execution > idle; waits are idle but count as aux. */
START_TEST(prelude_window_classes) {
  ev_spec s[] = {
      {0, 0, 100, TL_KIND_COMPUTE, "A", TL_ROLE_ANCHOR, 0, NULL},
      {0, 1000, 1100, TL_KIND_COMPUTE, "B", TL_ROLE_ANCHOR, 0, NULL},
      {0, 200, 400, TL_KIND_DATA_MOVE, "MEMCPY", TL_ROLE_AUXILIARY, 0, NULL},       /* exec 200 */
      {0, 300, 500, TL_KIND_COMMUNICATION, "hccl", TL_ROLE_AUXILIARY, 0, NULL},     /* comm 200 */
      {0, 600, 700, TL_KIND_SYNC, "EVENT_WAIT", TL_ROLE_AUXILIARY, 0, NULL},        /* wait: idle */
  };
  built b;
  build(&b, s, 5);
  /* Window [100, 1000) = 900: comm [300,500) = 200, exec [200,300) = 100, idle 600. */
  ck_assert_int_eq(b.p[1].comm_ns, 200);
  ck_assert_int_eq(b.p[1].compute_ns, 100 + 100);
  ck_assert_int_eq(b.p[1].idle_ns, 600);
  ck_assert_int_eq(b.p[1].aux_events, 3);
  ck_assert_int_eq(b.p[1].aux_ns, 200 + 200 + 100);
  /* Every aux event ends before B starts: all three link to B, in start order. */
  ck_assert_uint_eq(b.a.nlinks, 3);
  for (size_t k = 0; k < 3; k++) {
    ck_assert_uint_eq(b.a.link_anchor[k], 1);
    ck_assert_uint_eq(b.a.link_order[k], k + 1);
  }
  release(&b);
}
END_TEST

/* A task overlapped by a communication op on its (device, connection) is not an anchor. */
START_TEST(comm_op_represents_its_tasks) {
  ev_spec s[] = {
      {0, 100, 200, TL_KIND_COMMUNICATION, "hccl_task", TL_ROLE_ANCHOR, 77, "TASK"},
      {0, 90, 210, TL_KIND_COMMUNICATION, "hcclAllReduce", TL_ROLE_ANCHOR, 77, "COMMUNICATION_OP"},
      {1, 100, 200, TL_KIND_COMMUNICATION, "other_device", TL_ROLE_ANCHOR, 77, "TASK"},
  };
  built b;
  build(&b, s, 3);
  ck_assert_uint_eq(b.a.n, 2);
  ck_assert_int_eq(b.a.non_anchor[0], TL_NA_REPRESENTED_BY_COMM_OP);
  ck_assert_int_eq(b.a.non_anchor[2], TL_NA_NONE); /* another device: not the same op */
  ck_assert_uint_eq(b.a.groups.n, 2);
  ck_assert_uint_eq(b.a.nlinks, 0); /* represented tasks are not aux links */
  release(&b);
}
END_TEST

/* recovery.md 2.5: a reconciled pair (envelope 0 [1000,1100), detail 1 [1000,1099)) is one
** anchor, the detail's, with the envelope's interval; the envelope is no anchor, aux link or
** cost. The window before the next anchor starts at the merged end (1100): 50 ns of the aux
** kernel [1200,1250) are execution, the other 150 idle (151 if it started at the detail's end). */
START_TEST(reconciled_pair_is_one_anchor) {
  ev_spec s[] = {
      {0, 1000, 1100, TL_KIND_COMPUTE, "KERNEL_MIX_AIV", TL_ROLE_UNKNOWN_ANCHOR, 0, "TASK"},
      {0, 1000, 1099, TL_KIND_COMPUTE, "Add", TL_ROLE_UNKNOWN_ANCHOR, 0, "TASK"},
      {0, 1200, 1250, TL_KIND_COMPUTE, "small", TL_ROLE_AUXILIARY, 0, "TASK"},
      {0, 1300, 1400, TL_KIND_COMPUTE, "MatMul", TL_ROLE_ANCHOR, 0, "TASK"},
  };
  uint8_t member[4] = {1, 0, 0, 0};
  uint32_t canonical = 1, envelope = 0;
  tl_anchor_merges m = {member, 1, &canonical, &envelope};
  built b;
  build_merged(&b, s, 4, &m);
  ck_assert_uint_eq(b.a.n, 2);
  ck_assert_int_eq(b.a.non_anchor[0], TL_NA_RECONCILED);
  ck_assert_uint_eq(b.a.event[0], 1);
  ck_assert_int_eq(tl_anchor_start(&b.a, 0), 1000);
  ck_assert_int_eq(tl_anchor_end(&b.a, 0), 1100);
  ck_assert_int_eq(tl_anchor_end(&b.a, 1), 1400);
  ck_assert_uint_eq(b.a.nother, 1); /* the aux kernel only */
  ck_assert_uint_eq(b.a.nlinks, 1);
  ck_assert_uint_eq(b.a.link_event[0], 2);
  ck_assert_int_eq(b.p[0].compute_ns, 100);
  ck_assert_int_eq(b.p[0].self_ns, 100);
  ck_assert_int_eq(b.p[1].compute_ns, 150);
  ck_assert_int_eq(b.p[1].idle_ns, 150);
  release(&b);
}
END_TEST

/* Aux events after the last anchor are unplaced; devices never mix. */
START_TEST(unplaced_and_devices) {
  ev_spec s[] = {
      {0, 0, 10, TL_KIND_COMPUTE, "A", TL_ROLE_ANCHOR, 0, NULL},
      {0, 20, 30, TL_KIND_DATA_MOVE, "MEMCPY", TL_ROLE_AUXILIARY, 0, NULL},
      {1, 25, 40, TL_KIND_COMPUTE, "A", TL_ROLE_ANCHOR, 0, NULL},
  };
  built b;
  build(&b, s, 3);
  ck_assert_uint_eq(b.a.unplaced.n, 1);
  ck_assert_uint_eq(b.a.unplaced.v[0], 1);
  ck_assert_int_eq(b.p[1].idle_ns, 0); /* device 1's first anchor has no window */
  release(&b);
}
END_TEST

/* Conservation: per device, shares and windows tile [s_1, max e) exactly. */
START_TEST(random_traces_conserve_time) {
  uint64_t x = 12345;
  for (int round = 0; round < 50; round++) {
    enum { N = 300 };
    ev_spec s[N];
    for (int i = 0; i < N; i++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      int64_t start = (int64_t)(x % 100000);
      int64_t len = (int64_t)((x >> 20) % 3000);
      tl_kind kind = (x >> 40) % 4 == 0 ? TL_KIND_COMMUNICATION : TL_KIND_COMPUTE;
      uint8_t role = (x >> 44) % 3 == 0 ? TL_ROLE_AUXILIARY : TL_ROLE_ANCHOR;
      s[i] = (ev_spec){(uint32_t)((x >> 50) % 2), start, start + len, kind, "k", role, 0, NULL};
    }
    built b;
    build(&b, s, N);
    for (size_t gi = 0; gi < b.a.groups.n; gi++) {
      const tl_anchor_group *g = &b.a.groups.v[gi];
      if (!g->count) continue;
      int64_t lo = INT64_MAX, hi = INT64_MIN, total = 0;
      for (size_t k = g->first; k < g->first + g->count; k++) {
        size_t ei = b.a.event[k];
        if (b.t.ev.start_ns[ei] < lo) lo = b.t.ev.start_ns[ei];
        if (tl_events_end(&b.t.ev, ei) > hi) hi = tl_events_end(&b.t.ev, ei);
        total += tl_packet_total_ns(&b.p[k]);
        ck_assert_int_ge(b.p[k].idle_ns, 0);
      }
      ck_assert_int_eq(total, hi - lo);
    }
    release(&b);
  }
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("cost");
  TCase *tc = tcase_create("cost");
  tcase_add_test(tc, spec_example_idle_gap);
  tcase_add_test(tc, comm_beats_compute);
  tcase_add_test(tc, long_windows_exact);
  tcase_add_test(tc, tree_sums_match_plain_sums);
  tcase_add_test(tc, tree_occurrences_derive_their_fields);
  tcase_add_test(tc, prelude_window_classes);
  tcase_add_test(tc, comm_op_represents_its_tasks);
  tcase_add_test(tc, reconciled_pair_is_one_anchor);
  tcase_add_test(tc, unplaced_and_devices);
  tcase_add_test(tc, random_traces_conserve_time);
  suite_add_tcase(s, tc);
  return s;
}

TL_CHECK_MAIN(suite)
