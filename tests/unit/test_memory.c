/*
** test_memory.c: the compact layouts of the trace and the publication give the rows the
** wide ones did (docs/ARCHITECTURE.md, Memory).
**
**   - a runtime call keeps the index of its shape (source table, API type, process, thread,
**     global thread id), interned in first-appearance order, instead of those columns;
**   - an event keeps a 4-byte duration, with the ones that do not fit (over 2^32 - 1 ns,
**     negative) in an overflow map, and the index of its interned place (device, stream,
**     input, provenance); ends and places read back exactly;
**   - relations are published call-major, then by device work, whether the counting
**     placement by call already gives that order or the relations need the sort.
** Inputs are built by hand over the minimal fixture's profile (one Ascend input); every
** expected value below is worked out from those inputs.
*/
#include "tl_check.h"
#include "sqlite-traceloom.h"
#include "util/sqlite_api.h"
#include "publish/publish.h"
#include "relate/relate.h"

#include <stdlib.h>
#include <string.h>

enum { PID = 4242, TID_A = 4250, TID_B = 4251 };

static void add_call(tl_trace *t, int64_t tid, uint32_t api_name, uint32_t api_type,
                     int64_t start) {
  tl_call_row r;
  memset(&r, 0, sizeof r);
  r.db_idx = 0, r.source_id = 0, r.source_table = "CANN_API", r.source_rowid = start;
  r.provider = TL_PROVIDER_ASCEND, r.api_name = api_name, r.api_type = api_type;
  r.start_ns = start, r.end_ns = start + 5;
  r.process_id = PID, r.thread_id = tid, r.global_tid = (int64_t)PID << 32 | tid;
  r.context_id = r.device_id = r.correlation_id = TL_ABSENT;
  ck_assert_int_eq(tl_trace_add_call(t, &r), 0);
}

static void add_event(tl_trace *t, uint32_t name, int64_t start) {
  tl_event_row r;
  memset(&r, 0, sizeof r);
  r.db_idx = 0, r.source_id = 0, r.source_table = "TASK", r.source_rowid = start;
  r.stream_id = 1, r.start_ns = start, r.end_ns = start + 10, r.kind = TL_KIND_COMPUTE;
  r.name = name;
  r.task_id = r.global_task_id = r.correlation_id = r.context_id = TL_ABSENT;
  r.model_id = r.graph_node_id = r.op_id = TL_ABSENT;
  ck_assert_int_eq(tl_trace_add_event(t, &r), 0);
}

/* Four calls: thread A api x, thread B api x, thread A api y, thread A api x (type "rt"
** for all); three events. */
static void build_trace(tl_profile *p, tl_trace *t) {
  tl_err e = {0};
  tl_discover_fixture("minimal_smoke/mono", p);
  ck_assert_int_eq(tl_trace_init(t, p, &e), TL_OK);
  uint32_t x = tl_strpool_intern_cstr(t->pool, "aclnnAdd");
  uint32_t y = tl_strpool_intern_cstr(t->pool, "aclnnMul");
  uint32_t rt = tl_strpool_intern_cstr(t->pool, "rt");
  add_call(t, TID_A, x, rt, 100);
  add_call(t, TID_B, x, rt, 110);
  add_call(t, TID_A, y, rt, 120);
  add_call(t, TID_A, x, rt, 130);
  uint32_t k = tl_strpool_intern_cstr(t->pool, "AI_CORE");
  for (int i = 0; i < 3; i++) add_event(t, k, 200 + 20 * i);
}

START_TEST(calls_keep_one_shape_per_thread_and_type) {
  tl_profile p;
  tl_trace t;
  build_trace(&p, &t);
  /* threads A and B, one API type: two shapes, A's first (call 0), B's second (call 1) */
  ck_assert_uint_eq(t.calls.shapes.n, 2);
  const uint32_t want[4] = {0, 1, 0, 0};
  for (size_t i = 0; i < 4; i++) ck_assert_uint_eq(t.calls.shape[i], want[i]);
  const tl_call_shape *b = tl_call_shape_of(&t, 1), *a = tl_call_shape_of(&t, 3);
  ck_assert_int_eq(b->thread_id, TID_B);
  ck_assert_int_eq(a->thread_id, TID_A);
  ck_assert_int_eq(a->process_id, PID);
  ck_assert_int_eq(a->global_tid, (int64_t)PID << 32 | TID_A);
  ck_assert_str_eq(tl_str(&t, a->api_type), "rt");
  ck_assert_str_eq(tl_trace_source_table(&t, a->source_ref), "CANN_API");
  tl_trace_release_calls(&t);
  ck_assert_uint_eq(t.calls.n, 4); /* the count stays for the summary */
  ck_assert_uint_eq(t.calls.shapes.n, 0);
  tl_trace_free(&t);
  tl_profile_free(&p);
}
END_TEST

/* One event of the given place and times, on the minimal fixture's trace. */
static void add_placed_event(tl_trace *t, const char *table, uint32_t device, uint32_t stream,
                             int64_t start, int64_t end) {
  tl_event_row r;
  memset(&r, 0, sizeof r);
  r.db_idx = 0, r.source_id = 0, r.source_table = table, r.source_rowid = start;
  r.device_id = device, r.stream_id = stream, r.start_ns = start, r.end_ns = end;
  r.kind = TL_KIND_COMPUTE, r.name = tl_strpool_intern_cstr(t->pool, "AI_CORE");
  r.task_id = r.global_task_id = r.correlation_id = r.context_id = TL_ABSENT;
  r.model_id = r.graph_node_id = r.op_id = TL_ABSENT;
  ck_assert_int_eq(tl_trace_add_event(t, &r), 0);
}

START_TEST(events_keep_duration_and_place) {
  tl_profile p;
  tl_trace t;
  tl_err e = {0};
  tl_discover_fixture("minimal_smoke/mono", &p);
  ck_assert_int_eq(tl_trace_init(&t, &p, &e), TL_OK);
  /* durations: 10, the largest that fits (2^32 - 2), the first that does not (2^32 - 1),
  ** 5 s, negative (-7), and an end at INT64_MAX from a negative start (the difference
  ** overflows int64: it is kept as its unsigned bits) */
  const int64_t start[6] = {100, 200, 300, 400, 500, -1000};
  const int64_t end[6] = {110, 200 + 4294967294LL, 300 + 4294967295LL, 400 + 5000000000LL,
                          493, INT64_MAX};
  /* places: (dev 0, stream 1, TASK), (0, 2, TASK), (0, 1, TASK), (1, 1, TASK),
  ** (0, 1, COMMUNICATION_OP), (0, 1, TASK): four distinct, in this order of appearance */
  const uint32_t dev[6] = {0, 0, 0, 1, 0, 0}, stream[6] = {1, 2, 1, 1, 1, 1};
  const char *table[6] = {"TASK", "TASK", "TASK", "TASK", "COMMUNICATION_OP", "TASK"};
  const uint32_t place[6] = {0, 1, 0, 2, 3, 0};
  for (int i = 0; i < 6; i++) add_placed_event(&t, table[i], dev[i], stream[i], start[i], end[i]);
  ck_assert_uint_eq(t.ev.places.n, 4);
  ck_assert_uint_eq(t.ev.long_dur.n, 4); /* all but the first two */
  for (size_t i = 0; i < 6; i++) {
    ck_assert_int_eq(tl_events_end(&t.ev, i), end[i]);
    ck_assert_int_eq(tl_event_end(&t, NULL, i), end[i]);
    ck_assert_uint_eq(t.ev.place[i], place[i]);
    ck_assert_uint_eq(tl_events_device_id(&t.ev, i), dev[i]);
    ck_assert_uint_eq(tl_events_stream_id(&t.ev, i), stream[i]);
    ck_assert_uint_eq(tl_events_db_idx(&t.ev, i), 0);
    ck_assert_str_eq(tl_trace_source_table(&t, tl_events_source_ref(&t.ev, i)), table[i]);
  }
  tl_trace_free(&t);
  tl_profile_free(&p);
}
END_TEST

/* Publishes the calls and these relations; returns the rows "relation_n:call_n:event_n"
** joined by spaces (call or event "-" when NULL), and the calls' "first:count" likewise. */
static void publish(const tl_relation *rel, size_t n, char *rels, char *calls, char *shapes) {
  tl_profile p;
  tl_trace t;
  build_trace(&p, &t);
  sqlite3 *db = NULL;
  char *err = NULL;
  ck_assert_int_eq(sqlite3_open(":memory:", &db), SQLITE_OK);
  ck_assert_int_eq(sqlite3_traceloom_init(db, &err, NULL), SQLITE_OK);
  tl_relations relations = {0};
  for (size_t i = 0; i < n; i++) ck_assert_int_eq(TL_VEC_PUSH(&relations, rel[i]), 0);
  tl_runtime_input rt = {.trace = &t, .relations = &relations};
  tl_err e = {0};
  tl_publication pub;
  int rc = tl_publish_open(&pub, db, NULL, &e);
  if (rc == TL_OK) rc = tl_publish_runtime(&pub, &rt, &e);
  ck_assert_msg(rc == TL_OK, "publish: %s", e.msg ? e.msg : "?");
  static const char *const sql[3] = {
      "SELECT group_concat(relation_n || ':' || ifnull(call_n, '-') || ':' || "
      "ifnull(event_n, '-'), ' ') FROM (SELECT * FROM traceloom_runtime_device_relation_core "
      "ORDER BY relation_n)",
      "SELECT group_concat(ifnull(first_relation_n, '-') || ':' || relation_count, ' ') "
      "FROM (SELECT * FROM traceloom_runtime_call_core ORDER BY call_n)",
      "SELECT group_concat(c.shape_id || ':' || s.thread_id || ':' || s.api_name, ' ') FROM "
      "(SELECT * FROM traceloom_runtime_call_core ORDER BY call_n) c "
      "JOIN traceloom_runtime_call_shape s USING (shape_id)"};
  char *out[3] = {rels, calls, shapes};
  for (int q = 0; q < 3; q++) {
    sqlite3_stmt *st;
    ck_assert_int_eq(sqlite3_prepare_v2(db, sql[q], -1, &st, NULL), SQLITE_OK);
    ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
    snprintf(out[q], 256, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
  }
  tl_publish_abort(&pub);
  ck_assert_int_eq(sqlite3_close(db), SQLITE_OK);
  TL_VEC_FREE(&relations);
  tl_trace_free(&t);
  tl_profile_free(&p);
}

#define REL(c, w) {(c), (w), 1, 1, 0, TL_SUPPORTED_EXACT, 0}

START_TEST(relations_in_call_order_by_counting) {
  /* each call's relations already come in work order: placed by call, unsorted */
  const tl_relation rel[] = {REL(0, 0), REL(-1, 1), REL(1, 1), REL(1, 2)};
  char rels[256], calls[256], shapes[256];
  publish(rel, 4, rels, calls, shapes);
  ck_assert_str_eq(rels, "0:0:0 1:1:1 2:1:2 3:-:1");
  ck_assert_str_eq(calls, "0:1 1:2 -:0 -:0");
  /* shape ids from 1 by (provider, API name, thread shape): A x, B x, A y, A x again */
  ck_assert_str_eq(shapes, "1:4250:aclnnAdd 2:4251:aclnnAdd 3:4250:aclnnMul 1:4250:aclnnAdd");
}
END_TEST

START_TEST(relations_in_call_order_by_sorting) {
  /* call 3's relations come against work order, and so do the ones without a call */
  const tl_relation rel[] = {REL(3, 2), REL(-1, 2), REL(0, 1), REL(3, 0), REL(-1, 0)};
  char rels[256], calls[256], shapes[256];
  publish(rel, 5, rels, calls, shapes);
  ck_assert_str_eq(rels, "0:0:1 1:3:0 2:3:2 3:-:0 4:-:2");
  ck_assert_str_eq(calls, "0:1 -:0 -:0 1:2");
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("memory");
  TCase *tc = tcase_create("memory");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, calls_keep_one_shape_per_thread_and_type);
  tcase_add_test(tc, events_keep_duration_and_place);
  tcase_add_test(tc, relations_in_call_order_by_counting);
  tcase_add_test(tc, relations_in_call_order_by_sorting);
  suite_add_tcase(s, tc);
  return s;
}

TL_CHECK_MAIN(suite)
