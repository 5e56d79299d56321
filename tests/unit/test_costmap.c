/*
** test_costmap.c: the replay cost map's aggregates (ext/replay/costmap.c, outputs.md 3.3).
**
** A small trace and a hand-made reconstruction: launches of one graph template, slot role
** and body template, whose members are given by hand. The aggregate of a body position
** collects that position's member of every launch, in (start, member) order; its
** quartiles are the samples nearest to a quarter and three quarters of the way along the
** sorted samples' n - 1 gaps (a tie going up), its median the middle sample or the floor of
** the two middle samples' mean (the reference's rule). Expected numbers, contributor orders and percentiles are
** worked out by hand from the intervals below. The first case has launches with identical
** bodies (every launch group uniform: the aggregates are found by slot); the second adds a
** launch of the same group with another body layout (the general path that orders every
** member's key). Launch order differs from time order in both, on purpose.
*/
#include "tl_check.h"
#include "replay/replay.h"

#include <stdlib.h>
#include <string.h>

static uint32_t event(tl_trace *t, int64_t start, int64_t end, int64_t stream) {
  tl_event_row r;
  memset(&r, 0, sizeof r);
  r.source_table = "TASK";
  r.source_rowid = (int64_t)t->ev.n + 1;
  r.device_id = 0, r.stream_id = (uint32_t)stream;
  r.start_ns = start, r.end_ns = end;
  r.kind = TL_KIND_COMPUTE;
  r.name = r.op_name = tl_strpool_intern_cstr(t->pool, "MatMul");
  r.task_id = r.correlation_id = r.global_task_id = r.model_id = r.op_id = TL_ABSENT;
  r.context_id = r.graph_node_id = TL_ABSENT;
  ck_assert_int_eq(tl_trace_add_event(t, &r), 0);
  return (uint32_t)t->ev.n - 1;
}

/* One promoted launch of its own replay unit (graph template 1) with members
** (lane, task, start, end, stream) x n, stored in that order. */
static void launch(tl_trace *t, tl_replay *r, uint8_t role, uint32_t body, size_t n,
                   const int64_t (*m)[5]) {
  tl_replay_unit u;
  memset(&u, 0, sizeof u);
  u.first_launch = (uint32_t)r->launches.n, u.nlaunches = 1, u.graph_template = 1;
  u.region = TL_REPLAY_NONE;
  ck_assert_int_eq(TL_VEC_PUSH(&r->units, u), 0);
  tl_graph_launch l;
  memset(&l, 0, sizeof l);
  l.provider = TL_GRAPH_ACL, l.slot_role = role, l.body_template = body;
  l.unit = (uint32_t)r->units.n - 1;
  l.first_member = (uint32_t)r->members.n, l.nmembers = (uint32_t)n;
  ck_assert_int_eq(TL_VEC_PUSH(&r->launches, l), 0);
  for (size_t k = 0; k < n; k++) {
    tl_graph_member x;
    memset(&x, 0, sizeof x);
    x.launch = (uint32_t)r->launches.n - 1;
    x.event = event(t, m[k][2], m[k][3], m[k][4]);
    x.lane_ordinal = (uint32_t)m[k][0], x.task_ordinal = (uint32_t)m[k][1];
    x.kind = TL_MEMBER_COMPUTE;
    x.original_graph_node_id = TL_ABSENT;
    ck_assert_int_eq(TL_VEC_PUSH(&r->members, x), 0);
  }
}

/* Launches 0-2: layer slots (role 3), body 1, two members on lane 0 (stream 5); launch 3: a
** head (role 2, body 2) with one member. Members are numbered 0, 1 (launch 0), 2, 3, 4, 5, 6. */
static void three_layers_and_a_head(tl_trace *t, tl_replay *r) {
  static const int64_t l0[2][5] = {{0, 0, 1000, 1010, 5}, {0, 1, 1010, 1050, 5}}; /* 10, 40 */
  static const int64_t l1[2][5] = {{0, 0, 500, 530, 5}, {0, 1, 530, 550, 5}};     /* 30, 20 */
  static const int64_t l2[2][5] = {{0, 0, 2000, 2020, 5}, {0, 1, 2020, 2030, 5}}; /* 20, 10 */
  static const int64_t head[1][5] = {{0, 0, 100, 107, 5}};
  launch(t, r, TL_SLOT_LAYER, 1, 2, l0);
  launch(t, r, TL_SLOT_LAYER, 1, 2, l1);
  launch(t, r, TL_SLOT_LAYER, 1, 2, l2);
  launch(t, r, TL_SLOT_HEAD, 2, 1, head);
}

static void setup(tl_trace *t, tl_replay *r) {
  tl_err e = {0};
  ck_assert_int_eq(tl_trace_init(t, NULL, &e), TL_OK);
  tl_replay_init(r);
}

static void build(const tl_trace *t, const tl_replay *r, tl_replay_costs *c) {
  tl_err e = {0};
  int rc = tl_replay_costs_build(t, r, c, &e);
  ck_assert_msg(rc == TL_OK, "tl_replay_costs_build: %s", e.msg ? e.msg : "?");
}

static void teardown(tl_trace *t, tl_replay *r, tl_replay_costs *c) {
  tl_replay_costs_free(c);
  tl_replay_free(r);
  tl_trace_free(t);
}

static void check_aggregate(const tl_replay_aggregate *g, uint32_t first, uint32_t count,
                            int64_t p25, int64_t p50, int64_t p75, int64_t work, int64_t denom) {
  ck_assert_uint_eq(g->first_member, first);
  ck_assert_uint_eq(g->count, count);
  ck_assert_uint_eq(g->launches, count);
  ck_assert_uint_eq(g->units, count); /* one launch per unit here */
  ck_assert_int_eq(g->dur_p25, p25);
  ck_assert_int_eq(g->dur_p50, p50);
  ck_assert_int_eq(g->dur_p75, p75);
  ck_assert_int_eq(g->work_ns, work);
  ck_assert_int_eq(g->body_task_sum_ns, denom);
}

/* Each member's aggregate and its 0-based contributor order within it (the reference's base). */
static void check_members(const tl_replay_costs *c, const uint32_t *aggregate,
                          const uint32_t *contributor, int n) {
  for (int m = 0; m < n; m++) {
    ck_assert_uint_eq(c->member_aggregate[m], aggregate[m]);
    ck_assert_uint_eq(c->member_contributor[m], contributor[m]);
  }
}

START_TEST(uniform_bodies) {
  tl_trace t;
  tl_replay r;
  setup(&t, &r);
  three_layers_and_a_head(&t, &r);
  tl_replay_costs c;
  build(&t, &r, &c);
  /* the head's role sorts first (head 2 < layer 3), then the layer slots 0 and 1 */
  ck_assert_uint_eq(c.aggregates.n, 3);
  check_aggregate(&c.aggregates.v[0], 6, 1, 7, 7, 7, 7, 7);
  /* slot 0: launch 1 (start 500, 30), launch 0 (1000, 10), launch 2 (2000, 20); task sums
  ** 50, 50, 30; sorted 10, 20, 30: quartile indexes (2 + 2) / 4 = 1 and (6 + 2) / 4 = 2 */
  check_aggregate(&c.aggregates.v[1], 2, 3, 20, 20, 30, 60, 130);
  /* slot 1: launch 1 (530, 20), launch 0 (1010, 40), launch 2 (2020, 10): 10, 20, 40 */
  check_aggregate(&c.aggregates.v[2], 3, 3, 20, 20, 40, 70, 130);
  static const uint32_t aggregate[7] = {1, 2, 1, 2, 1, 2, 0};
  static const uint32_t contributor[7] = {1, 1, 0, 0, 2, 2, 0};
  check_members(&c, aggregate, contributor, 7);
  /* shares: trunc(dur * 10^6 / task sum): 10/50, 40/50, 30/50, 20/50, 20/30, 10/30, 7/7 */
  static const int64_t share[7] = {200000, 800000, 600000, 400000, 666666, 333333, 1000000};
  for (int m = 0; m < 7; m++) ck_assert_int_eq(c.member_share_ppm[m], share[m]);
  /* slot 0's shares 600000, 200000, 666666: the middle one twice, then the largest */
  ck_assert_int_eq(c.aggregates.v[1].share_p25, 600000);
  ck_assert_int_eq(c.aggregates.v[1].share_p50, 600000);
  ck_assert_int_eq(c.aggregates.v[1].share_p75, 666666);
  teardown(&t, &r, &c);
}
END_TEST

START_TEST(mixed_body_layouts) {
  tl_trace t;
  tl_replay r;
  setup(&t, &r);
  three_layers_and_a_head(&t, &r);
  /* launch 4: the layer group again, with a second lane on stream 6 (members 7, 8, 9) */
  static const int64_t l4[3][5] = {
      {0, 0, 3000, 3005, 5}, {0, 1, 3005, 3010, 5}, {1, 0, 3000, 3100, 6}};
  launch(&t, &r, TL_SLOT_LAYER, 1, 3, l4);
  tl_replay_costs c;
  build(&t, &r, &c);
  /* head; layer (stream 5, task 0); (5, 1); (6, 0) */
  ck_assert_uint_eq(c.aggregates.n, 4);
  check_aggregate(&c.aggregates.v[0], 6, 1, 7, 7, 7, 7, 7);
  /* (0, 0): 30, 10, 20, 5 by start 500, 1000, 2000, 3000; sorted 5, 10, 20, 30: quartile
  ** indexes (3 + 2) / 4 = 1 and (9 + 2) / 4 = 2, median (10 + 20) / 2; task sums
  ** 50 + 50 + 30 + 110 */
  check_aggregate(&c.aggregates.v[1], 2, 4, 10, 15, 20, 65, 240);
  /* (0, 1): 20, 40, 10, 5: sorted 5, 10, 20, 40 */
  check_aggregate(&c.aggregates.v[2], 3, 4, 10, 15, 20, 75, 240);
  check_aggregate(&c.aggregates.v[3], 9, 1, 100, 100, 100, 100, 110);
  static const uint32_t aggregate[10] = {1, 2, 1, 2, 1, 2, 0, 1, 2, 3};
  static const uint32_t contributor[10] = {1, 1, 0, 0, 2, 2, 0, 3, 3, 0};
  check_members(&c, aggregate, contributor, 10);
  teardown(&t, &r, &c);
}
END_TEST

/* Two samples, 10 and 13: the lower quartile is the first ((1 + 2) / 4 = 0), the upper the
** second ((3 + 2) / 4 = 1), the median the floor of 23 / 2. */
START_TEST(two_samples_median_floors) {
  tl_trace t;
  tl_replay r;
  setup(&t, &r);
  static const int64_t a[1][5] = {{0, 0, 1000, 1010, 5}};
  static const int64_t b[1][5] = {{0, 0, 2000, 2013, 5}};
  launch(&t, &r, TL_SLOT_LAYER, 1, 1, a);
  launch(&t, &r, TL_SLOT_LAYER, 1, 1, b);
  tl_replay_costs c;
  build(&t, &r, &c);
  ck_assert_uint_eq(c.aggregates.n, 1);
  check_aggregate(&c.aggregates.v[0], 0, 2, 10, 11, 13, 23, 23);
  teardown(&t, &r, &c);
}
END_TEST

/* Two lanes whose stream ids run the other way from their lane ordinals: lane 0 on stream 9,
** lane 1 on stream 4. The aggregates are numbered by stream, then position (the reference's
** order, recovery.md 7.3's key), so lane 1's position comes first. Members 0-2 (launch 0,
** start 100) and 3-5 (launch 1, start 200). */
static void reversed_streams(tl_trace *t, tl_replay *r) {
  static const int64_t a[3][5] = {{0, 0, 100, 110, 9}, {0, 1, 110, 130, 9}, {1, 0, 100, 105, 4}};
  static const int64_t b[3][5] = {{0, 0, 200, 220, 9}, {0, 1, 220, 230, 9}, {1, 0, 200, 207, 4}};
  launch(t, r, TL_SLOT_LAYER, 1, 3, a);
  launch(t, r, TL_SLOT_LAYER, 1, 3, b);
}

START_TEST(aggregates_by_stream_not_lane) {
  tl_trace t;
  tl_replay r;
  setup(&t, &r);
  reversed_streams(&t, &r);
  tl_replay_costs c;
  build(&t, &r, &c);
  /* (stream 4, 0): 5, 7; (9, 0): 10, 20; (9, 1): 20, 10. Task sums 35 and 37 */
  ck_assert_uint_eq(c.aggregates.n, 3);
  check_aggregate(&c.aggregates.v[0], 2, 2, 5, 6, 7, 12, 72);
  check_aggregate(&c.aggregates.v[1], 0, 2, 10, 15, 20, 30, 72);
  check_aggregate(&c.aggregates.v[2], 1, 2, 10, 15, 20, 30, 72);
  static const uint32_t aggregate[6] = {1, 2, 0, 1, 2, 0};
  static const uint32_t contributor[6] = {0, 0, 0, 1, 1, 1};
  check_members(&c, aggregate, contributor, 6);
  for (size_t k = 0; k < 3; k++) ck_assert_int_eq(c.aggregates.v[k].lane_mixed, 0);
  teardown(&t, &r, &c);
}
END_TEST

/* The same by the general path: a third launch of the group with one more task on stream 4
** (members 6-9, start 300) makes the group non-uniform. */
START_TEST(aggregates_by_stream_general_path) {
  tl_trace t;
  tl_replay r;
  setup(&t, &r);
  reversed_streams(&t, &r);
  static const int64_t x[4][5] = {
      {0, 0, 300, 301, 9}, {0, 1, 301, 302, 9}, {1, 0, 300, 303, 4}, {1, 1, 303, 304, 4}};
  launch(&t, &r, TL_SLOT_LAYER, 1, 4, x);
  tl_replay_costs c;
  build(&t, &r, &c);
  /* (4, 0): 5, 7, 3; (4, 1): 1; (9, 0): 10, 20, 1; (9, 1): 20, 10, 1. Task sums 35, 37, 6 */
  ck_assert_uint_eq(c.aggregates.n, 4);
  check_aggregate(&c.aggregates.v[0], 2, 3, 5, 5, 7, 15, 78);
  check_aggregate(&c.aggregates.v[1], 9, 1, 1, 1, 1, 1, 6);
  check_aggregate(&c.aggregates.v[2], 0, 3, 10, 10, 20, 31, 78);
  check_aggregate(&c.aggregates.v[3], 1, 3, 10, 10, 20, 31, 78);
  static const uint32_t aggregate[10] = {2, 3, 0, 2, 3, 0, 2, 3, 0, 1};
  static const uint32_t contributor[10] = {0, 0, 0, 1, 1, 1, 2, 2, 2, 0};
  check_members(&c, aggregate, contributor, 10);
  teardown(&t, &r, &c);
}
END_TEST

/* Layer slots of one role on different streams (each layer of a replay on its own stream):
** a position per stream, not one collapsed over the role. Launches 0 and 2 on stream 5, 1 on
** stream 7, one member each. */
START_TEST(layer_slots_on_two_streams) {
  tl_trace t;
  tl_replay r;
  setup(&t, &r);
  static const int64_t a[1][5] = {{0, 0, 100, 110, 5}};
  static const int64_t b[1][5] = {{0, 0, 200, 230, 7}};
  static const int64_t x[1][5] = {{0, 0, 300, 320, 5}};
  launch(&t, &r, TL_SLOT_LAYER, 1, 1, a);
  launch(&t, &r, TL_SLOT_LAYER, 1, 1, b);
  launch(&t, &r, TL_SLOT_LAYER, 1, 1, x);
  tl_replay_costs c;
  build(&t, &r, &c);
  ck_assert_uint_eq(c.aggregates.n, 2);
  check_aggregate(&c.aggregates.v[0], 0, 2, 10, 15, 20, 30, 30);
  check_aggregate(&c.aggregates.v[1], 1, 1, 30, 30, 30, 30, 30);
  teardown(&t, &r, &c);
}
END_TEST

/* One body whose two lanes swap streams between launches: a stream's position gathers a lane
** 0 and a lane 1 member, so it is lane-inconsistent (publication then withholds its
** distribution). Launch 0: lane 0 stream 5, lane 1 stream 7; launch 1 the other way. */
START_TEST(swapped_lanes_are_lane_mixed) {
  tl_trace t;
  tl_replay r;
  setup(&t, &r);
  static const int64_t a[2][5] = {{0, 0, 100, 110, 5}, {1, 0, 100, 104, 7}};
  static const int64_t b[2][5] = {{0, 0, 200, 220, 7}, {1, 0, 200, 202, 5}};
  launch(&t, &r, TL_SLOT_LAYER, 1, 2, a);
  launch(&t, &r, TL_SLOT_LAYER, 1, 2, b);
  tl_replay_costs c;
  build(&t, &r, &c);
  /* (5, 0): members 0 (10) and 3 (2); (7, 0): 1 (4) and 2 (20). Task sums 14 and 22 */
  ck_assert_uint_eq(c.aggregates.n, 2);
  check_aggregate(&c.aggregates.v[0], 0, 2, 2, 6, 10, 12, 36);
  check_aggregate(&c.aggregates.v[1], 1, 2, 4, 12, 20, 24, 36);
  ck_assert_int_eq(c.aggregates.v[0].lane_mixed, 1);
  ck_assert_int_eq(c.aggregates.v[1].lane_mixed, 1);
  teardown(&t, &r, &c);
}
END_TEST

/* Slot roles order by their names, as the reference's key sorts its slot_role text: a generic
** slot (generic_slot) before a head, though the head's role number is the smaller. Launch 0
** is the head (member 0), launch 1 the generic slot (member 1). */
START_TEST(slot_roles_by_name) {
  tl_trace t;
  tl_replay r;
  setup(&t, &r);
  static const int64_t a[1][5] = {{0, 0, 100, 110, 5}};
  static const int64_t b[1][5] = {{0, 0, 200, 203, 5}};
  launch(&t, &r, TL_SLOT_HEAD, 1, 1, a);
  launch(&t, &r, TL_SLOT_GENERIC, 2, 1, b);
  tl_replay_costs c;
  build(&t, &r, &c);
  ck_assert_uint_eq(c.aggregates.n, 2);
  check_aggregate(&c.aggregates.v[0], 1, 1, 3, 3, 3, 3, 3);
  check_aggregate(&c.aggregates.v[1], 0, 1, 10, 10, 10, 10, 10);
  teardown(&t, &r, &c);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("costmap");
  TCase *tc = tcase_create("aggregates");
  tcase_add_test(tc, uniform_bodies);
  tcase_add_test(tc, mixed_body_layouts);
  tcase_add_test(tc, two_samples_median_floors);
  tcase_add_test(tc, aggregates_by_stream_not_lane);
  tcase_add_test(tc, aggregates_by_stream_general_path);
  tcase_add_test(tc, layer_slots_on_two_streams);
  tcase_add_test(tc, swapped_lanes_are_lane_mixed);
  tcase_add_test(tc, slot_roles_by_name);
  suite_add_tcase(s, tc);
  return s;
}

TL_CHECK_MAIN(suite)
