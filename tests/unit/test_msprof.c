/*
** test_msprof.c: discovery, the Ascend monolithic reader and the relation stage on the
** real-schema fixtures, through the C API (the SQL tests cover the same through SQL).
*/
#include "tl_check.h"
#include "source/source.h"
#include "trace/trace.h"
#include "relate/relate.h"

#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static tl_trace load(const char *fixture, tl_profile *p) {
  char *path = tl_fixture(fixture);
  tl_err e = {0};
  ck_assert_msg(tl_profile_discover(path, NULL, p, &e) == TL_OK, "%s", e.msg);
  tl_trace t;
  ck_assert_msg(tl_trace_load(p, &t, NULL, NULL, &e) == TL_OK, "%s", e.msg);
  free(path);
  return t;
}

START_TEST(minimal_smoke_events) {
  tl_profile p;
  tl_trace t = load("minimal_smoke/mono", &p);
  ck_assert_uint_eq(t.ev.n, 3);
  const tl_label *l0 = tl_event_label(&t, 0), *l1 = tl_event_label(&t, 1), *l2 = tl_event_label(&t, 2);
  ck_assert_int_eq(l0->kind, TL_KIND_COMPUTE);
  ck_assert_str_eq(tl_str(&t, l0->op_type), "MatMul");
  ck_assert_str_eq(tl_str(&t, l0->compute_task_type), "MIX_AIC");
  ck_assert_int_eq(l1->kind, TL_KIND_COMMUNICATION);
  ck_assert_str_eq(tl_str(&t, l1->comm_name), "comm_task_hccl_allreduce");
  ck_assert_int_eq(l2->kind, TL_KIND_COMMUNICATION);
  ck_assert_str_eq(tl_str(&t, l2->name), "hcclAllReduce");
  ck_assert_int_eq(t.ev.start_ns[2], 165);
  ck_assert_uint_eq(tl_events_stream_id(&t.ev, 2), 3);
  ck_assert_int_eq(tl_i64col_get(&t.ev.op_id, 2), 55);
  ck_assert_str_eq(tl_trace_source_table(&t, tl_events_source_ref(&t.ev, 2)), "COMMUNICATION_OP");
  ck_assert_uint_eq(t.calls.n, 0);
  tl_trace_free(&t);
  tl_profile_free(&p);
}
END_TEST

START_TEST(exact_hlt_labels_are_shared) {
  tl_profile p;
  tl_trace t = load("exact_hlt/mono", &p);
  ck_assert_uint_eq(t.ev.n, 70);
  /* MODEL_EXECUTE, NOTIFY_WAIT, NOTIFY_RECORD and 7 distinct body ops. */
  ck_assert_uint_eq(t.labels.n, 10);
  ck_assert_uint_eq(t.calls.n, 15);
  ck_assert_str_eq(tl_str(&t, t.calls.api_name[14]), "aclrtSynchronizeStreamWithTimeout");
  ck_assert_int_eq(tl_i64col_get(&t.calls.correlation_id, 14), 9999);
  ck_assert_int_eq(t.calls.start_ns[0], 90);
  tl_trace_free(&t);
  tl_profile_free(&p);
}
END_TEST

START_TEST(exact_hlt_relations) {
  tl_profile p;
  tl_trace t = load("exact_hlt/mono", &p);
  tl_relations r;
  tl_err e = {0};
  ck_assert_int_eq(tl_relate(&t, &r, &e), TL_OK);
  size_t exact = 0, unmatched_work = 0, unmatched_call = 0;
  for (size_t i = 0; i < r.n; i++) {
    if (r.v[i].state == TL_SUPPORTED_EXACT) {
      exact++;
      /* Each exact link pairs one aclmdlRIExecuteAsync with MODEL_EXECUTE or NOTIFY_WAIT. */
      ck_assert_str_eq(tl_str(&t, t.calls.api_name[r.v[i].call]), "aclmdlRIExecuteAsync");
      ck_assert_int_eq(tl_i64col_get(&t.calls.correlation_id, r.v[i].call),
                       tl_i64col_get(&t.ev.correlation_id, r.v[i].work));
      ck_assert_uint_eq(r.v[i].work_candidates, 2);
      ck_assert_str_eq(tl_relation_cardinality(&r.v[i]), "one_to_many");
    }
    unmatched_work += r.v[i].state == TL_UNMATCHED_DEVICE_WORK;
    unmatched_call += r.v[i].state == TL_UNMATCHED_RUNTIME_CALL;
  }
  ck_assert_uint_eq(exact, 28);
  ck_assert_uint_eq(unmatched_work, 42);
  ck_assert_uint_eq(unmatched_call, 1);
  TL_VEC_FREE(&r);
  tl_trace_free(&t);
  tl_profile_free(&p);
}
END_TEST

START_TEST(discovery_errors_name_the_file) {
  tl_profile p;
  tl_err e = {0};
  char *path = tl_fixture("split_golden/neg_incompatible_monolithic");
  ck_assert_int_eq(tl_profile_discover(path, NULL, &p, &e), TL_ERROR);
  ck_assert_ptr_nonnull(strstr(e.msg, "incompatible TASK schema"));
  ck_assert_ptr_nonnull(strstr(e.msg, "neg_incompatible_monolithic/PROF_0/msprof_0.db"));
  ck_assert_ptr_nonnull(strstr(e.msg, "endNs"));
  tl_err_clear(&e);
  free(path);
  ck_assert_int_eq(tl_profile_discover("/definitely/not/here", NULL, &p, &e), TL_ERROR);
  ck_assert_str_eq(e.msg, "profile path does not exist: /definitely/not/here");
  tl_err_clear(&e);
}
END_TEST

START_TEST(two_ranks_are_two_inputs) {
  tl_profile p;
  tl_trace t = load("two_ranks", &p);
  ck_assert_uint_eq(p.inputs.n, 2);
  ck_assert_uint_eq(t.ev.n, 73);
  ck_assert_uint_eq(tl_events_db_idx(&t.ev, 0), 0);
  ck_assert_uint_eq(tl_events_db_idx(&t.ev, 3), 1);
  /* The second rank's companion is a file of db_idx 1. */
  ck_assert_str_eq(p.inputs.v[1].stream_info_status, "stream_info_adjacent");
  tl_trace_free(&t);
  tl_profile_free(&p);
}
END_TEST

/* A profile of n ranks in a new directory (dir: a mkdtemp template): PROF_<r>/msprof_<r>.db
** made by sql[r]; paths[r] its file. */
static void write_ranks(char *dir, int n, const char *const *sql, char (*paths)[128]) {
  ck_assert_ptr_nonnull(mkdtemp(dir));
  for (int r = 0; r < n; r++) {
    char prof[96];
    snprintf(prof, sizeof prof, "%s/PROF_%d", dir, r);
    ck_assert_int_eq(mkdir(prof, 0700), 0);
    snprintf(paths[r], 128, "%s/msprof_%d.db", prof, r);
    sqlite3 *db;
    ck_assert_int_eq(sqlite3_open(paths[r], &db), SQLITE_OK);
    char *err = NULL;
    ck_assert_msg(sqlite3_exec(db, sql[r], NULL, NULL, &err) == SQLITE_OK, "%s", err);
    sqlite3_close(db);
  }
}

static void remove_ranks(const char *dir, int n, char (*paths)[128]) {
  for (int r = 0; r < n; r++) {
    remove(paths[r]);
    char prof[96];
    snprintf(prof, sizeof prof, "%s/PROF_%d", dir, r);
    rmdir(prof);
  }
  rmdir(dir);
}

/* A communication op's event takes the stream its tasks overlap longest, the smaller stream
** id on a tie, and no stream when no task overlaps it (inputs.md 9.2). Op 1 (connection 7,
** [100, 200)): stream 5 overlaps 30 ns, stream 7 20 + 30 = 50 ns, stream 3 50 ns: stream 3.
** Op 2 (connection 8, [300, 400)): one task on stream 9, partly outside: stream 9. Op 3
** (connection 9): its only task is on another device: no stream. */
START_TEST(comm_op_primary_stream) {
  const char *sql =
      "CREATE TABLE TASK(startNs INT, endNs INT, deviceId INT, streamId INT, taskId INT, "
      "  globalTaskId INT, connectionId INT, taskType TEXT);"
      "CREATE TABLE COMMUNICATION_OP(opName TEXT, startNs INT, endNs INT, connectionId INT, "
      "  opId INT, deviceId INT, opType TEXT);"
      "INSERT INTO TASK VALUES (100, 130, 0, 5, 1, 1, 7, 'COMMUNICATION'),"
      "  (120, 140, 0, 7, 2, 2, 7, 'COMMUNICATION'), (150, 180, 0, 7, 3, 3, 7, 'COMMUNICATION'),"
      "  (150, 200, 0, 3, 4, 4, 7, 'COMMUNICATION'), (350, 450, 0, 9, 5, 5, 8, 'COMMUNICATION'),"
      "  (500, 600, 1, 4, 6, 6, 9, 'COMMUNICATION');"
      "INSERT INTO COMMUNICATION_OP VALUES ('hcclAllReduce', 100, 200, 7, 1, 0, 'allreduce'),"
      "  ('hcclAllGather', 300, 400, 8, 2, 0, 'allgather'),"
      "  ('hcclBroadcast', 500, 600, 9, 3, 0, 'broadcast');";
  char dir[] = "/tmp/tl-msprof-XXXXXX", db_path[1][128];
  write_ranks(dir, 1, &sql, db_path);
  tl_profile p;
  tl_err e = {0};
  ck_assert_msg(tl_profile_discover(dir, NULL, &p, &e) == TL_OK, "%s", e.msg);
  tl_trace t;
  ck_assert_msg(tl_trace_load(&p, &t, NULL, NULL, &e) == TL_OK, "%s", e.msg);
  ck_assert_uint_eq(t.ev.n, 9); /* 6 tasks, then the 3 ops in rowid order */
  ck_assert_str_eq(tl_trace_source_table(&t, tl_events_source_ref(&t.ev, 6)), "COMMUNICATION_OP");
  ck_assert_uint_eq(tl_events_stream_id(&t.ev, 6), 3);
  ck_assert_uint_eq(tl_events_stream_id(&t.ev, 7), 9);
  ck_assert_uint_eq(tl_events_stream_id(&t.ev, 8), TL_NO_STREAM);
  tl_trace_free(&t);
  tl_profile_free(&p);
  remove_ranks(dir, 1, db_path);
}
END_TEST

/* ------------------------------------------------------------------ threads */

/* Two traces are the same id for id: strings, labels, provenance, events, calls, shapes. */
static void assert_same_trace(const tl_trace *a, const tl_trace *b) {
  ck_assert_uint_eq(tl_strpool_count(a->pool), tl_strpool_count(b->pool));
  for (uint32_t i = 0; i < tl_strpool_count(a->pool); i++)
    ck_assert_str_eq(tl_strpool_str(a->pool, i), tl_strpool_str(b->pool, i));
  ck_assert_uint_eq(a->labels.n, b->labels.n);
  for (size_t i = 0; i < a->labels.n; i++) {
    const tl_label *x = &a->labels.v[i], *y = &b->labels.v[i];
    ck_assert(x->kind == y->kind && x->name == y->name && x->op_name == y->op_name &&
              x->op_type == y->op_type && x->task_type == y->task_type &&
              x->compute_task_type == y->compute_task_type && x->comm_name == y->comm_name &&
              x->comm_task_type == y->comm_task_type);
  }
  ck_assert_uint_eq(a->source_refs.n, b->source_refs.n);
  for (size_t i = 0; i < a->source_refs.n; i++) {
    ck_assert_int_eq(a->source_refs.v[i].source_id, b->source_refs.v[i].source_id);
    ck_assert_uint_eq(a->source_refs.v[i].table, b->source_refs.v[i].table);
  }
  ck_assert_uint_eq(a->ev.n, b->ev.n);
  const tl_i64col *ea[] = {&a->ev.source_rowid, &a->ev.task_id, &a->ev.global_task_id,
                           &a->ev.correlation_id, &a->ev.context_id, &a->ev.model_id,
                           &a->ev.graph_node_id, &a->ev.op_id};
  const tl_i64col *eb[] = {&b->ev.source_rowid, &b->ev.task_id, &b->ev.global_task_id,
                           &b->ev.correlation_id, &b->ev.context_id, &b->ev.model_id,
                           &b->ev.graph_node_id, &b->ev.op_id};
  for (size_t i = 0; i < a->ev.n; i++) {
    ck_assert_int_eq(a->ev.start_ns[i], b->ev.start_ns[i]);
    ck_assert_int_eq(tl_events_end(&a->ev, i), tl_events_end(&b->ev, i));
    ck_assert_uint_eq(a->ev.label[i], b->ev.label[i]);
    ck_assert_uint_eq(a->ev.place[i], b->ev.place[i]);
    for (size_t k = 0; k < sizeof ea / sizeof ea[0]; k++)
      ck_assert_int_eq(tl_i64col_get(ea[k], i), tl_i64col_get(eb[k], i));
  }
  ck_assert_uint_eq(a->ev.places.n, b->ev.places.n);
  ck_assert_uint_eq(a->calls.n, b->calls.n);
  const tl_i64col *ca[] = {&a->calls.source_rowid, &a->calls.context_id, &a->calls.device_id,
                           &a->calls.correlation_id};
  const tl_i64col *cb[] = {&b->calls.source_rowid, &b->calls.context_id, &b->calls.device_id,
                           &b->calls.correlation_id};
  for (size_t i = 0; i < a->calls.n; i++) {
    ck_assert_int_eq(a->calls.start_ns[i], b->calls.start_ns[i]);
    ck_assert_int_eq(a->calls.end_ns[i], b->calls.end_ns[i]);
    ck_assert_uint_eq(a->calls.api_name[i], b->calls.api_name[i]);
    ck_assert_uint_eq(a->calls.shape[i], b->calls.shape[i]);
    ck_assert_uint_eq(a->calls.provider[i], b->calls.provider[i]);
    ck_assert_uint_eq(a->calls.db_idx[i], b->calls.db_idx[i]);
    for (size_t k = 0; k < sizeof ca / sizeof ca[0]; k++)
      ck_assert_int_eq(tl_i64col_get(ca[k], i), tl_i64col_get(cb[k], i));
  }
  ck_assert_uint_eq(a->calls.shapes.n, b->calls.shapes.n);
  for (size_t i = 0; i < a->calls.shapes.n; i++) {
    const tl_call_shape *x = &a->calls.shapes.v[i], *y = &b->calls.shapes.v[i];
    ck_assert(x->process_id == y->process_id && x->thread_id == y->thread_id &&
              x->global_tid == y->global_tid && x->api_type == y->api_type &&
              x->source_ref == y->source_ref);
  }
  ck_assert_int_eq(a->dropped_event_rows, b->dropped_event_rows);
  ck_assert_int_eq(a->dropped_call_rows, b->dropped_call_rows);
}

/* Loads path with `threads`; on error returns TL_ERROR with the message in *msg. */
static int load_threads(const char *path, int threads, tl_profile *p, tl_trace *t, char **msg) {
  tl_err e = {0};
  ck_assert_msg(tl_profile_discover(path, NULL, p, &e) == TL_OK, "%s", e.msg);
  int rc = tl_trace_load_threads(p, t, threads, NULL, NULL, &e);
  *msg = tl_err_take(&e);
  return rc;
}

/* Loads dir with 1 and 2 threads into p[0], t[0] and p[1], t[1]: the same trace. */
static void load_one_and_two(const char *dir, tl_profile p[2], tl_trace t[2]) {
  for (int i = 0; i < 2; i++) {
    char *msg;
    ck_assert_msg(load_threads(dir, i + 1, &p[i], &t[i], &msg) == TL_OK, "threads %d: %s",
                  i + 1, msg);
  }
  assert_same_trace(&t[0], &t[1]);
}

static void free_one_and_two(tl_profile p[2], tl_trace t[2]) {
  tl_trace_free(&t[0]), tl_trace_free(&t[1]);
  tl_profile_free(&p[0]), tl_profile_free(&p[1]);
}

/* Loading dir fails with the message want, with 1 thread and with 2. */
static void assert_same_error(const char *dir, const char *want) {
  for (int threads = 1; threads <= 2; threads++) {
    tl_profile p;
    tl_trace t;
    char *msg;
    ck_assert_int_eq(load_threads(dir, threads, &p, &t, &msg), TL_ERROR);
    ck_assert_msg(msg && strcmp(msg, want) == 0, "threads %d: got '%s', want '%s'", threads,
                  msg ? msg : "(none)", want);
    free(msg);
    tl_profile_free(&p);
  }
}

/* With threads >= 2 an input's runtime calls are read on a second thread with its own string
** pool (cursor.c, trace.c beside_*): the trace is the one of a read in turn, id for id. */
START_TEST(threads_give_the_same_trace) {
  static const char *const fixtures[] = {
      "minimal_smoke/mono",  "exact_hlt/mono",          "two_ranks",
      "gen/ascend_s5_l3_k6", "gen/ascend_s3_l6_k8",     "exact_hlt/split",
      "split_golden/split",  "nsys/nsys_basic.sqlite",  "gen/nsys_s5_l3_k6",
      "hygon/hipprof.db",    "kineto/gpu_basic.pt.trace.json"};
  for (size_t f = 0; f < sizeof fixtures / sizeof fixtures[0]; f++) {
    char *path = tl_fixture(fixtures[f]);
    tl_profile p1, p2;
    tl_trace t1, t2;
    char *m1, *m2;
    ck_assert_msg(load_threads(path, 1, &p1, &t1, &m1) == TL_OK, "%s: %s", fixtures[f], m1);
    ck_assert_msg(load_threads(path, 2, &p2, &t2, &m2) == TL_OK, "%s: %s", fixtures[f], m2);
    assert_same_trace(&t1, &t2);
    tl_trace_free(&t1), tl_trace_free(&t2);
    tl_profile_free(&p1), tl_profile_free(&p2);
    free(path);
  }
}
END_TEST

#define RANK_TABLES                                                                          \
  "CREATE TABLE STRING_IDS(id INTEGER PRIMARY KEY, value TEXT);"                            \
  "CREATE TABLE TASK(startNs INT, endNs INT, deviceId INT, streamId INT, taskId INT, "       \
  "  globalTaskId INT, connectionId INT, taskType INT);"                                    \
  "CREATE TABLE CANN_API(startNs INT, endNs INT, type INT, globalTid INT, connectionId INT, " \
  "  name INT);"

/* Strings the calls' thread meets first (an unknown id's decimal text, a text name, the
** default type) and strings the events interned already: their ids are those of a read in
** turn, also for the second rank, whose calls come after the first rank's. */
START_TEST(threads_keep_string_ids_of_new_call_names) {
  const char *const sql[2] = {
      RANK_TABLES
      "INSERT INTO STRING_IDS VALUES (1, 'AI_CORE'), (2, 'aclnnAdd'), (3, 'ACL_OP');"
      "INSERT INTO TASK VALUES (10, 20, 0, 1, 1, 1, 1, 1), (30, 40, 0, 1, 2, 2, 2, 777);"
      "INSERT INTO CANN_API VALUES (5, 9, NULL, 4294967301, 1, 2),"
      "  (21, 29, 3, 4294967301, 2, 888), (41, 49, 999, 4294967302, 3, 'textName'),"
      "  (51.5, 59, 3, 4294967301, 4, 2), (61, 69, 3, 4294967301, 5, 777);",
      RANK_TABLES
      "INSERT INTO STRING_IDS VALUES (1, 'AIV'), (5, 'aclnnMul');"
      "INSERT INTO TASK VALUES (10, 20, 1, 1, 1, 1, 1, 1);"
      "INSERT INTO CANN_API VALUES (5, 9, 6, 4294967303, 1, 5), (11, 19, NULL, 4294967303, 2, 888),"
      "  (21, 29, 3, 4294967303, 3, 'otherText');"};
  char dir[] = "/tmp/tl-threads-XXXXXX", paths[2][128];
  write_ranks(dir, 2, sql, paths);
  tl_profile p[2];
  tl_trace t[2];
  load_one_and_two(dir, p, t);
  tl_trace t2 = t[1];
  /* the calls as the profile has them (inputs.md 9.2), read with two threads */
  static const char *const names[] = {"aclnnAdd", "888", "textName", "777",
                                      "aclnnMul", "888", "otherText"};
  static const char *const types[] = {"cann_api", "ACL_OP", "999", "ACL_OP",
                                      "6", "cann_api", "3"};
  ck_assert_uint_eq(t2.calls.n, 7);
  for (size_t i = 0; i < t2.calls.n; i++) {
    ck_assert_str_eq(tl_str(&t2, t2.calls.api_name[i]), names[i]);
    ck_assert_str_eq(tl_str(&t2, tl_call_shape_of(&t2, i)->api_type), types[i]);
    ck_assert_uint_eq(t2.calls.db_idx[i], i < 4 ? 0 : 1);
  }
  ck_assert_str_eq(tl_trace_source_table(&t2, tl_call_shape_of(&t2, 6)->source_ref),
                   "CANN_API");
  ck_assert_int_eq(t2.dropped_call_rows, 1); /* the fractional startNs */
  free_one_and_two(p, t);
  remove_ranks(dir, 2, paths);
}
END_TEST

/* An error in a table the calls' thread reads is the error of a read in turn: it names the
** file, the table and (where the schema is at fault) the column. */
START_TEST(threads_report_call_table_errors) {
  static const char *const cases[][2] = {
      /* a CANN_API view over a column that does not exist: its schema cannot be read */
      {"CREATE TABLE C(startNs INT, endNs INT, connectionId INT, name INT);"
       "CREATE VIEW CANN_API AS SELECT startNs, endNs, connectionId, name, lostColumn FROM C;",
       "failed to prepare SQLite profile query: no such column: lostColumn; "
       "sql=PRAGMA table_info(\"CANN_API\"); file=%s"},
      /* a CANN_API view whose rows fail while read */
      {"CREATE TABLE C(startNs INT, endNs INT, connectionId INT, name INT);"
       "INSERT INTO C VALUES (1, 2, 1, 1);"
       "CREATE VIEW CANN_API AS SELECT startNs, endNs, abs(-9223372036854775807 - connectionId) "
       "  AS connectionId, name FROM C;",
       "failed to read CANN_API in '%s': integer overflow"}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    char sql0[1024];
    snprintf(sql0, sizeof sql0, "%s%s", RANK_TABLES,
             "INSERT INTO TASK VALUES (10, 20, 0, 1, 1, 1, 1, 1);");
    /* rank 0 is sound; rank 1's CANN_API is the case (its other tables sound) */
    char sql1[1024];
    snprintf(sql1, sizeof sql1,
             "CREATE TABLE STRING_IDS(id INTEGER PRIMARY KEY, value TEXT);"
             "CREATE TABLE TASK(startNs INT, endNs INT, deviceId INT, streamId INT, taskId INT, "
             "  globalTaskId INT, connectionId INT, taskType INT);"
             "INSERT INTO TASK VALUES (10, 20, 1, 1, 1, 1, 1, 1);%s",
             cases[c][0]);
    const char *const sql[2] = {sql0, sql1};
    char dir[] = "/tmp/tl-threads-XXXXXX", paths[2][128];
    write_ranks(dir, 2, sql, paths);
    char want[512];
    snprintf(want, sizeof want, cases[c][1], paths[1]);
    assert_same_error(dir, want);
    remove_ranks(dir, 2, paths);
  }
}
END_TEST

/* A task's communication identity is MIN(name), MIN(taskType) over its rows of
** COMMUNICATION_TASK_INFO, NULLs left out, integers before text (SQLite's order): read by one
** scan when the rows come grouped by ascending globalTaskId, by a query otherwise; the same
** identities either way. Task 1: names 5, 4 and type 7 -> hcclA, typeX; task 2: name 6 (and
** 'zz' text in one case) and type 8 -> hcclB, typeY; task 3: only NULLs -> none. */
START_TEST(comm_identity_is_the_minimum_per_task) {
  static const char *const rows[] = {
      /* grouped, ascending */
      "(5, 1, 7), (4, 1, NULL), (NULL, NULL, 9), (6, 2, 8), (NULL, 3, NULL)",
      /* out of order */
      "(6, 2, 8), (5, 1, 7), (NULL, 3, NULL), (4, 1, NULL)",
      /* a text name */
      "(5, 1, 7), (4, 1, NULL), ('zz', 2, NULL), (6, 2, 8), (NULL, 3, NULL)",
      /* a run interrupted by another task */
      "(5, 1, 7), (6, 2, 8), (4, 1, NULL), (NULL, 3, NULL)"};
  for (size_t c = 0; c < sizeof rows / sizeof rows[0]; c++) {
    char sql[2048];
    snprintf(sql, sizeof sql,
             "CREATE TABLE STRING_IDS(id INTEGER PRIMARY KEY, value TEXT);"
             "INSERT INTO STRING_IDS VALUES (4, 'hcclA'), (5, 'hcclZ'), (6, 'hcclB'),"
             "  (7, 'typeX'), (8, 'typeY');"
             "CREATE TABLE TASK(startNs INT, endNs INT, deviceId INT, streamId INT, taskId INT, "
             "  globalTaskId INT, connectionId INT, taskType TEXT);"
             "INSERT INTO TASK VALUES (10, 20, 0, 1, 1, 1, 1, 'SDMA'), (30, 40, 0, 1, 2, 2, 2, "
             "  'SDMA'), (50, 60, 0, 1, 3, 3, 3, 'SDMA');"
             "CREATE TABLE COMMUNICATION_TASK_INFO(name INTEGER, globalTaskId INTEGER, "
             "  taskType INTEGER);"
             "INSERT INTO COMMUNICATION_TASK_INFO VALUES %s;",
             rows[c]);
    const char *sqls[1] = {sql};
    char dir[] = "/tmp/tl-comm-XXXXXX", db_path[1][128];
    write_ranks(dir, 1, sqls, db_path);
    /* with 2 threads COMMUNICATION_TASK_INFO is read on the events reader's helper thread */
    for (int threads = 1; threads <= 2; threads++) {
    tl_profile p;
    tl_trace t;
    char *msg;
    ck_assert_msg(load_threads(dir, threads, &p, &t, &msg) == TL_OK, "%s", msg);
    ck_assert_uint_eq(t.ev.n, 3);
    const tl_label *l0 = tl_event_label(&t, 0), *l1 = tl_event_label(&t, 1),
                   *l2 = tl_event_label(&t, 2);
    ck_assert_msg(strcmp(tl_str(&t, l0->comm_name), "hcclA") == 0, "case %zu", c);
    ck_assert_str_eq(tl_str(&t, l0->comm_task_type), "typeX");
    ck_assert_int_eq(l0->kind, TL_KIND_COMMUNICATION);
    ck_assert_str_eq(tl_str(&t, l1->comm_name), "hcclB");
    ck_assert_str_eq(tl_str(&t, l1->comm_task_type), "typeY");
    ck_assert_uint_eq(l2->comm_name, TL_STR_NONE);
    ck_assert_uint_eq(l2->comm_task_type, TL_STR_NONE);
    ck_assert_int_eq(l2->kind, TL_KIND_DATA_MOVE); /* SDMA, no identity */
    tl_trace_free(&t);
    tl_profile_free(&p);
    }
    remove_ranks(dir, 1, db_path);
  }
}
END_TEST

#define COMM_SIDE_TABLES                                                                     \
  "CREATE TABLE STRING_IDS(id INTEGER PRIMARY KEY, value TEXT);"                            \
  "INSERT INTO STRING_IDS VALUES (1, 'AI_CORE'), (2, 'HCCL'), (4, 'hcclA');"                 \
  "CREATE TABLE TASK(startNs INT, endNs INT, deviceId INT, streamId INT, taskId INT, "       \
  "  globalTaskId INT, connectionId INT, taskType INT);"                                    \
  "INSERT INTO TASK VALUES (10, 20, 0, 1, 1, 1, 1, 1), (30, 40, 0, 2, 2, 2, 2, 2),"         \
  "  (50, 60, 0, 2, 3, 3, 2, 2), (70, 80, 0, 2, 4, 4, 3, 2);"                               \
  "CREATE TABLE COMPUTE_TASK_INFO(globalTaskId INT, name, opType, taskType);"

/* With 2 threads the events reader loads COMMUNICATION_TASK_INFO and COMMUNICATION_OP on a
** helper thread with a string pool of its own (msprof.c, comm_helper): strings it meets first
** (text names, unknown ids' decimal text) and strings COMPUTE_TASK_INFO interned meanwhile
** ('MatMul') get the ids of a read in turn, and the rows are the profile's. */
START_TEST(threads_keep_string_ids_of_communication_names) {
  const char *const sql[1] = {
      COMM_SIDE_TABLES
      "INSERT INTO COMPUTE_TASK_INFO VALUES (1, 'MatMul', 555, 1);"
      /* text: the GROUP BY query, on the helper's connection */
      "CREATE TABLE COMMUNICATION_TASK_INFO(name, globalTaskId INT, taskType);"
      "INSERT INTO COMMUNICATION_TASK_INFO VALUES (4, 2, 'ringText'), ('allReduceText', 3, 777),"
      "  ('MatMul', 4, NULL);"
      "CREATE TABLE COMMUNICATION_OP(opName, startNs INT, endNs INT, connectionId INT, "
      "  opId INT, deviceId INT, opType);"
      "INSERT INTO COMMUNICATION_OP VALUES ('opText', 25, 65, 2, 1, 0, 888),"
      "  (4, 70, 80, 3, 2, 0, 'MatMul');"};
  char dir[] = "/tmp/tl-threads-XXXXXX", paths[1][128];
  write_ranks(dir, 1, sql, paths);
  tl_profile p[2];
  tl_trace t[2];
  load_one_and_two(dir, p, t);
  tl_trace t2 = t[1];
  /* 4 tasks, then the 2 ops (inputs.md 9.1, 9.2) */
  static const char *const comm_names[] = {"", "hcclA", "allReduceText", "MatMul", "opText",
                                           "hcclA"};
  static const char *const comm_types[] = {"", "ringText", "777", "", "888", "MatMul"};
  ck_assert_uint_eq(t2.ev.n, 6);
  for (size_t i = 0; i < t2.ev.n; i++) {
    const tl_label *l = tl_event_label(&t2, i);
    ck_assert_str_eq(tl_str(&t2, l->comm_name), comm_names[i]);
    ck_assert_str_eq(tl_str(&t2, l->comm_task_type), comm_types[i]);
    ck_assert_int_eq(l->kind, i ? TL_KIND_COMMUNICATION : TL_KIND_COMPUTE);
  }
  ck_assert_str_eq(tl_str(&t2, tl_event_label(&t2, 0)->op_name), "MatMul");
  ck_assert_str_eq(tl_str(&t2, tl_event_label(&t2, 0)->op_type), "555");
  /* the first op overlaps tasks 2 and 3 on stream 2 */
  ck_assert_uint_eq(tl_events_stream_id(&t2.ev, 4), 2);
  free_one_and_two(p, t);
  remove_ranks(dir, 1, paths);
}
END_TEST

/* An error in a table the helper thread reads is the error of a read in turn (file, table,
** column); an error of COMPUTE_TASK_INFO, which the opening thread reads meanwhile, comes
** first, as a read in turn never reaches the communication tables then. */
START_TEST(threads_report_communication_table_errors) {
  static const char *const cases[][2] = {
      {"INSERT INTO COMPUTE_TASK_INFO VALUES (1, 1, 1, 1);"
       "CREATE TABLE C(name INT, globalTaskId INT);"
       "CREATE VIEW COMMUNICATION_TASK_INFO AS SELECT name, globalTaskId, lostColumn FROM C;",
       "failed to prepare SQLite profile query: no such column: lostColumn; "
       "sql=PRAGMA table_info(\"COMMUNICATION_TASK_INFO\"); file=%s"},
      {"CREATE TABLE O(opName INT, startNs INT, endNs INT, connectionId INT, opId INT, "
       "  deviceId INT);"
       "INSERT INTO O VALUES (1, 10, 20, 1, 1, 0);"
       "CREATE VIEW COMMUNICATION_OP AS SELECT opName, startNs, endNs, "
       "  abs(-9223372036854775807 - connectionId) AS connectionId, opId, deviceId FROM O;",
       "failed to read COMMUNICATION_OP in '%s': integer overflow"},
      /* both fail: COMPUTE_TASK_INFO's error */
      {"DROP TABLE COMPUTE_TASK_INFO;"
       "CREATE TABLE X(globalTaskId INT, name INT, opType INT, taskType INT);"
       "INSERT INTO X VALUES (1, 1, 1, 1);"
       "CREATE VIEW COMPUTE_TASK_INFO AS SELECT abs(-9223372036854775807 - globalTaskId) AS "
       "  globalTaskId, name, opType, taskType FROM X;"
       "CREATE TABLE C(name INT, globalTaskId INT);"
       "CREATE VIEW COMMUNICATION_TASK_INFO AS SELECT name, globalTaskId, lostColumn FROM C;",
       "failed to read identity rows from '%s': integer overflow (sql: SELECT globalTaskId, "
       "name, opType, taskType FROM COMPUTE_TASK_INFO ORDER BY rowid)"}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    char sql0[2048];
    snprintf(sql0, sizeof sql0, "%s%s", COMM_SIDE_TABLES, cases[c][0]);
    const char *const sql[1] = {sql0};
    char dir[] = "/tmp/tl-threads-XXXXXX", paths[1][128];
    write_ranks(dir, 1, sql, paths);
    char want[512];
    snprintf(want, sizeof want, cases[c][1], paths[0]);
    assert_same_error(dir, want);
    remove_ranks(dir, 1, paths);
  }
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("msprof");
  TCase *tc = tcase_create("msprof");
  tcase_add_test(tc, minimal_smoke_events);
  tcase_add_test(tc, exact_hlt_labels_are_shared);
  tcase_add_test(tc, exact_hlt_relations);
  tcase_add_test(tc, discovery_errors_name_the_file);
  tcase_add_test(tc, two_ranks_are_two_inputs);
  tcase_add_test(tc, comm_op_primary_stream);
  tcase_add_test(tc, threads_give_the_same_trace);
  tcase_add_test(tc, threads_keep_string_ids_of_new_call_names);
  tcase_add_test(tc, threads_report_call_table_errors);
  tcase_add_test(tc, comm_identity_is_the_minimum_per_task);
  tcase_add_test(tc, threads_keep_string_ids_of_communication_names);
  tcase_add_test(tc, threads_report_communication_table_errors);
  suite_add_tcase(s, tc);
  return s;
}

TL_CHECK_MAIN(suite)
