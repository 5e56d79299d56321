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

/* A communication op's event takes the stream its tasks overlap longest, the smaller stream
** id on a tie, and no stream when no task overlaps it (inputs.md 9.2). Op 1 (connection 7,
** [100, 200)): stream 5 overlaps 30 ns, stream 7 20 + 30 = 50 ns, stream 3 50 ns: stream 3.
** Op 2 (connection 8, [300, 400)): one task on stream 9, partly outside: stream 9. Op 3
** (connection 9): its only task is on another device: no stream. */
START_TEST(comm_op_primary_stream) {
  char dir[] = "/tmp/tl-msprof-XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(dir));
  char prof[64], db_path[96];
  snprintf(prof, sizeof prof, "%s/PROF_0", dir);
  ck_assert_int_eq(mkdir(prof, 0700), 0);
  snprintf(db_path, sizeof db_path, "%s/msprof_0.db", prof);
  sqlite3 *db;
  ck_assert_int_eq(sqlite3_open(db_path, &db), SQLITE_OK);
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
  ck_assert_int_eq(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
  sqlite3_close(db);
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
  remove(db_path), rmdir(prof), rmdir(dir);
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
  suite_add_tcase(s, tc);
  return s;
}

TL_CHECK_MAIN(suite)
