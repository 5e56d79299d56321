/*
** test_staging.c: the publication's second writer (ext/analyze/staging.c).
**
** The staging module on its own: rows a worker wrote into the staging file arrive in the
** analysis database by SQLite's transfer path (no MakeRecord in the copy's program); a
** worker that fails, or is stopped, fails the step, the savepoint rolls back to the earlier
** rows, and the staging file is gone; no staging inside a transaction, beside a reading
** statement or on another VFS. Then whole analyses: threads 2 (staged) publishes exactly the rows of threads 1
** (every traceloom_* table, storage included), and a failure in the staging step (the copy,
** interrupted) leaves the earlier analysis as it was and no staging file behind.
*/
#include "tl_check.h"
#include "sqlite-traceloom.h"
#include "util/sqlite_api.h"
#include "analyze/staging.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

static void exec_ok(sqlite3 *db, const char *sql) {
  char *msg = NULL;
  ck_assert_msg(sqlite3_exec(db, sql, NULL, NULL, &msg) == SQLITE_OK, "%s: %s", sql,
                msg ? msg : "?");
}

/* A fresh directory with an empty database file "out.db" in it. */
static sqlite3 *open_out(char *dir, char *path, size_t cap) {
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(path, cap, "%s/out.db", dir);
  sqlite3 *db = NULL;
  ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
  return db;
}

/* The files of dir other than out.db (the staging file would be one). */
static int other_files(const char *dir) {
  DIR *d = opendir(dir);
  ck_assert_ptr_nonnull(d);
  int n = 0;
  for (struct dirent *f; (f = readdir(d));)
    if (strcmp(f->d_name, ".") && strcmp(f->d_name, "..") && strcmp(f->d_name, "out.db")) n++;
  closedir(d);
  return n;
}

static void remove_dir(const char *dir) {
  char p[512];
  snprintf(p, sizeof p, "%s/out.db", dir);
  unlink(p);
  ck_assert_int_eq(rmdir(dir), 0); /* fails when anything else is left */
}

#define DECL "CREATE TABLE t(n INTEGER PRIMARY KEY, a INTEGER NOT NULL, b TEXT)"
static const char *const tables[] = {"t", NULL};

static int write_rows(sqlite3 *db, void *arg, tl_err *e) {
  (void)arg;
  char *msg = NULL;
  if (sqlite3_exec(db,
                   "WITH RECURSIVE k(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM k WHERE n < 5000) "
                   "INSERT INTO t SELECT n, n * 7, 'row ' || n FROM k",
                   NULL, NULL, &msg) != SQLITE_OK) {
    tl_fail(e, "write_rows: %s", msg ? msg : "?");
    sqlite3_free(msg);
    return TL_ERROR;
  }
  return TL_OK;
}

static int write_then_fail(sqlite3 *db, void *arg, tl_err *e) {
  if (write_rows(db, arg, e)) return TL_ERROR;
  return tl_fail(e, "the staged writer failed (test)");
}

/* Runs until stopped (its connection's progress handler ends it). */
static int write_forever(sqlite3 *db, void *arg, tl_err *e) {
  (void)arg;
  char *msg = NULL;
  int rc = sqlite3_exec(db,
                        "WITH RECURSIVE k(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM k) "
                        "INSERT INTO t SELECT n, n, NULL FROM k",
                        NULL, NULL, &msg);
  tl_fail(e, "write_forever: %s", msg ? msg : sqlite3_errstr(rc));
  sqlite3_free(msg);
  return TL_ERROR;
}

static int always(void *ctx) { return *(int *)ctx; }

START_TEST(staged_rows_arrive_by_the_transfer_path) {
  char dir[] = "/tmp/tl-staging-XXXXXX", path[512];
  sqlite3 *db = open_out(dir, path, sizeof path);
  tl_staging *s = tl_staging_attach(db, TL_STAGING_SCHEMA);
  ck_assert_ptr_nonnull(s);
  char *stage = strdup(tl_staging_path(s));
  ck_assert_int_eq(access(stage, F_OK), 0);
  exec_ok(db, "SAVEPOINT a; " DECL);
  tl_err e = {0};
  ck_assert_int_eq(tl_staging_start(s, tables, write_rows, NULL, &e), TL_OK);
  int rc = tl_staging_finish(s, TL_OK, NULL, NULL, &e);
  ck_assert_msg(rc == TL_OK, "%s", e.msg ? e.msg : "?");
  /* the copy's program moves records as they are */
  char *sql = tl_staging_copy_sql(TL_STAGING_SCHEMA, "t");
  char *explain = sqlite3_mprintf("EXPLAIN %s", sql);
  sqlite3_stmt *st;
  ck_assert_int_eq(sqlite3_prepare_v2(db, explain, -1, &st, NULL), SQLITE_OK);
  int makerecord = 0, rowdata = 0;
  while (sqlite3_step(st) == SQLITE_ROW) {
    const char *op = (const char *)sqlite3_column_text(st, 1);
    makerecord += strcmp(op, "MakeRecord") == 0;
    rowdata += strcmp(op, "RowData") == 0;
  }
  sqlite3_finalize(st);
  sqlite3_free(explain), sqlite3_free(sql);
  ck_assert_int_eq(makerecord, 0);
  ck_assert_int_eq(rowdata, 1);
  exec_ok(db, "RELEASE a");
  tl_staging_close(s);
  ck_assert_int_ne(access(stage, F_OK), 0); /* deleted */
  ck_assert_int_eq(tl_scalar(db, "SELECT count(*) FROM pragma_database_list"), 1); /* detached */
  /* the rows a plain insert gives (values worked out from the writer's SQL) */
  ck_assert_int_eq(tl_scalar(db, "SELECT count(*) FROM t"), 5000);
  ck_assert_int_eq(tl_scalar(db, "SELECT sum(a) FROM t"), 7 * 5000 * 5001 / 2);
  ck_assert_int_eq(tl_scalar(db, "SELECT count(*) FROM t WHERE b = 'row ' || n"), 5000);
  free(stage);
  sqlite3_close(db);
  remove_dir(dir);
}
END_TEST

/* Count of the opcodes `op` in the program of sql on db. */
static int opcodes(sqlite3 *db, const char *sql, const char *op) {
  char *explain = sqlite3_mprintf("EXPLAIN %s", sql);
  sqlite3_stmt *st;
  ck_assert_int_eq(sqlite3_prepare_v2(db, explain, -1, &st, NULL), SQLITE_OK);
  int n = 0;
  while (sqlite3_step(st) == SQLITE_ROW) n += strcmp((const char *)sqlite3_column_text(st, 1), op) == 0;
  sqlite3_finalize(st);
  sqlite3_free(explain);
  return n;
}

/* A staging file attached as schema, t declared inside SAVEPOINT a, the worker started. */
static tl_staging *start_staged(sqlite3 *db, const char *schema,
                                int (*write)(sqlite3 *, void *, tl_err *), tl_err *e) {
  tl_staging *s = tl_staging_attach(db, schema);
  ck_assert_ptr_nonnull(s);
  exec_ok(db, "SAVEPOINT a; " DECL);
  ck_assert_int_eq(tl_staging_start(s, tables, write, NULL, e), TL_OK);
  return s;
}

/* The events' split: the analysis connection wrote the lower rowids itself, the staged rows
** (larger rowids) are appended by the transfer path all the same. */
START_TEST(staged_rows_append_after_smaller_rowids) {
  char dir[] = "/tmp/tl-staging-XXXXXX", path[512];
  sqlite3 *db = open_out(dir, path, sizeof path);
  tl_err e = {0};
  tl_staging *s = start_staged(db, TL_STAGING_EVENTS_SCHEMA, write_rows, &e);
  /* beside the worker: rows -99 .. 0 */
  exec_ok(db, "WITH RECURSIVE k(n) AS (SELECT -99 UNION ALL SELECT n + 1 FROM k WHERE n < 0) "
              "INSERT INTO t SELECT n, 1, NULL FROM k");
  int rc = tl_staging_finish(s, TL_OK, NULL, NULL, &e);
  ck_assert_msg(rc == TL_OK, "%s", e.msg ? e.msg : "?");
  char *sql = tl_staging_copy_sql(TL_STAGING_EVENTS_SCHEMA, "t");
  ck_assert_int_eq(opcodes(db, sql, "MakeRecord"), 0);
  ck_assert_int_eq(opcodes(db, sql, "RowData"), 1);
  sqlite3_free(sql);
  exec_ok(db, "RELEASE a");
  tl_staging_close(s);
  ck_assert_int_eq(tl_scalar(db, "SELECT count(*) FROM pragma_database_list"), 1);
  ck_assert_int_eq(tl_scalar(db, "SELECT count(*) FROM t"), 5100);
  ck_assert_int_eq(tl_scalar(db, "SELECT count(*) FROM t WHERE n <= 0 AND a = 1"), 100);
  ck_assert_int_eq(tl_scalar(db, "SELECT sum(a) FROM t WHERE n > 0"), 7 * 5000 * 5001 / 2);
  ck_assert_int_eq(other_files(dir), 0);
  sqlite3_close(db);
  remove_dir(dir);
}
END_TEST

/* The step in two calls: nothing is copied at the join (the caller frees the worker's input
** and starts other work there), the copy then moves every staged row. */
START_TEST(join_then_copy_moves_the_rows_at_the_copy) {
  char dir[] = "/tmp/tl-staging-XXXXXX", path[512];
  sqlite3 *db = open_out(dir, path, sizeof path);
  tl_err e = {0};
  tl_staging *s = start_staged(db, TL_STAGING_RUNTIME_SCHEMA, write_rows, &e);
  int rc = tl_staging_join(s, TL_OK, NULL, NULL, &e);
  ck_assert_msg(rc == TL_OK, "%s", e.msg ? e.msg : "?");
  ck_assert_int_eq(tl_scalar(db, "SELECT count(*) FROM t"), 0);
  rc = tl_staging_copy(s, rc, &e);
  ck_assert_msg(rc == TL_OK, "%s", e.msg ? e.msg : "?");
  ck_assert_int_eq(tl_scalar(db, "SELECT count(*) FROM t"), 5000);
  ck_assert_int_eq(tl_scalar(db, "SELECT sum(a) FROM t"), 7 * 5000 * 5001 / 2);
  /* once copied, a second copy does nothing */
  ck_assert_int_eq(tl_staging_copy(s, TL_OK, &e), TL_OK);
  ck_assert_int_eq(tl_scalar(db, "SELECT count(*) FROM t"), 5000);
  exec_ok(db, "RELEASE a");
  tl_staging_close(s);
  ck_assert_int_eq(tl_scalar(db, "SELECT count(*) FROM pragma_database_list"), 1);
  /* a failed writer: the join fails, and the copy after it copies nothing */
  exec_ok(db, "DROP TABLE t");
  s = start_staged(db, TL_STAGING_RUNTIME_SCHEMA, write_then_fail, &e);
  rc = tl_staging_join(s, TL_OK, NULL, NULL, &e);
  ck_assert_int_eq(rc, TL_ERROR);
  ck_assert_msg(e.msg && strstr(e.msg, "failed (test)"), "%s", e.msg ? e.msg : "?");
  ck_assert_int_eq(tl_staging_copy(s, rc, &e), TL_ERROR);
  ck_assert_int_eq(tl_scalar(db, "SELECT count(*) FROM t"), 0);
  exec_ok(db, "ROLLBACK TO a; RELEASE a");
  tl_staging_close(s);
  ck_assert_int_eq(other_files(dir), 0);
  tl_err_clear(&e);
  sqlite3_close(db);
  remove_dir(dir);
}
END_TEST

/* Earlier rows in t; the new analysis replaces t inside a savepoint; the staged writer
** fails (or is stopped): the step fails, the rollback leaves the earlier rows. */
static void failed_step_keeps_earlier_rows(int (*write)(sqlite3 *, void *, tl_err *),
                                           int interrupt, const char *message) {
  char dir[] = "/tmp/tl-staging-XXXXXX", path[512];
  sqlite3 *db = open_out(dir, path, sizeof path);
  exec_ok(db, DECL "; INSERT INTO t VALUES (1, 11, 'earlier'), (2, 22, 'earlier')");
  tl_staging *s = tl_staging_attach(db, TL_STAGING_SCHEMA);
  ck_assert_ptr_nonnull(s);
  exec_ok(db, "SAVEPOINT a; DROP TABLE t; " DECL);
  tl_err e = {0};
  ck_assert_int_eq(tl_staging_start(s, tables, write, NULL, &e), TL_OK);
  int rc = tl_staging_finish(s, TL_OK, always, &interrupt, &e);
  ck_assert_int_eq(rc, TL_ERROR);
  ck_assert_msg(e.msg && strstr(e.msg, message), "%s", e.msg ? e.msg : "?");
  ck_assert_int_eq(tl_scalar(db, "SELECT count(*) FROM t"), 0); /* nothing copied */
  exec_ok(db, "ROLLBACK TO a; RELEASE a");
  tl_staging_close(s);
  ck_assert_int_eq(tl_scalar(db, "SELECT count(*) FROM t WHERE b = 'earlier'"), 2);
  ck_assert_int_eq(tl_scalar(db, "SELECT sum(a) FROM t"), 33);
  ck_assert_int_eq(other_files(dir), 0);
  tl_err_clear(&e);
  sqlite3_close(db);
  remove_dir(dir);
}

START_TEST(failed_writer_fails_the_step) {
  failed_step_keeps_earlier_rows(write_then_fail, 0, "the staged writer failed (test)");
}
END_TEST

START_TEST(interrupt_stops_the_writer) {
  failed_step_keeps_earlier_rows(write_forever, 1, "interrupted");
}
END_TEST

START_TEST(no_staging_inside_a_transaction_beside_a_reader_or_on_another_vfs) {
  char dir[] = "/tmp/tl-staging-XXXXXX", path[512];
  sqlite3 *db = open_out(dir, path, sizeof path);
  exec_ok(db, DECL "; INSERT INTO t VALUES (1, 1, NULL), (2, 2, NULL)");
  exec_ok(db, "BEGIN");
  ck_assert_ptr_null(tl_staging_attach(db, TL_STAGING_SCHEMA));
  exec_ok(db, "COMMIT");
  sqlite3_stmt *reader;
  ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT n FROM t", -1, &reader, NULL), SQLITE_OK);
  ck_assert_int_eq(sqlite3_step(reader), SQLITE_ROW);
  ck_assert_ptr_null(tl_staging_attach(db, TL_STAGING_SCHEMA)); /* DETACH would be refused after the commit */
  sqlite3_finalize(reader);
  ck_assert_int_eq(other_files(dir), 0);
  tl_staging *s = tl_staging_attach(db, TL_STAGING_SCHEMA);
  ck_assert_ptr_nonnull(s);
  tl_staging_close(s); /* never started */
  ck_assert_int_eq(other_files(dir), 0);
  sqlite3_close(db);
  remove_dir(dir);
  /* another VFS: the worker's connection would not open the same file */
  sqlite3 *mem = NULL;
  ck_assert_int_eq(sqlite3_open_v2("file:/tl-staging-memdb?vfs=memdb", &mem,
                                   SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_URI,
                                   NULL),
                   SQLITE_OK);
  exec_ok(mem, DECL);
  ck_assert_ptr_null(tl_staging_attach(mem, TL_STAGING_SCHEMA));
  sqlite3_close(mem);
}
END_TEST

/* ------------------------------------------------------------------ whole analyses */

typedef struct seen {
  int copies;          /* statements that read the trees' staging database */
  int runtime_copies;  /* statements that read the runtime relations' staging database */
  int event_copies;    /* statements that read the events' staging database */
  const char *trigger; /* interrupt the connection when a statement starting so runs */
  sqlite3 *db;
  int fired;
} seen;

static int on_statement(unsigned type, void *ctx, void *p, void *x) {
  (void)type, (void)x;
  seen *s = ctx;
  const char *sql = sqlite3_sql((sqlite3_stmt *)p);
  if (!sql) return 0;
  if (strstr(sql, "FROM \"" TL_STAGING_SCHEMA "\".")) s->copies++;
  if (strstr(sql, "FROM \"" TL_STAGING_RUNTIME_SCHEMA "\".")) s->runtime_copies++;
  if (strstr(sql, "FROM \"" TL_STAGING_EVENTS_SCHEMA "\".")) s->event_copies++;
  if (s->trigger && !s->fired && strncmp(sql, s->trigger, strlen(s->trigger)) == 0) {
    s->fired = 1;
    sqlite3_interrupt(s->db);
  }
  return 0;
}

static sqlite3 *open_analysis(const char *path, seen *sn) {
  sqlite3 *db = NULL;
  ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
  char *err = NULL;
  ck_assert_msg(sqlite3_traceloom_init(db, &err, NULL) == SQLITE_OK, "init: %s", err ? err : "?");
  sn->db = db;
  sqlite3_trace_v2(db, SQLITE_TRACE_STMT, on_statement, sn);
  return db;
}

static int analyze(sqlite3 *db, const char *fixture, const char *options) {
  char *path = tl_fixture(fixture);
  sqlite3_stmt *st;
  ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT traceloom_analyze(?1, ?2)", -1, &st, NULL),
                   SQLITE_OK);
  sqlite3_bind_text(st, 1, path, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(st, 2, options, -1, SQLITE_TRANSIENT);
  int rc = sqlite3_step(st);
  sqlite3_finalize(st);
  free(path);
  return rc;
}

/* Every traceloom_* table of `a` has exactly the rows of the same table of `b` (attached). */
static void same_tables(sqlite3 *a, const char *b_path) {
  sqlite3_stmt *att;
  ck_assert_int_eq(sqlite3_prepare_v2(a, "ATTACH ?1 AS b", -1, &att, NULL), SQLITE_OK);
  sqlite3_bind_text(att, 1, b_path, -1, SQLITE_STATIC);
  ck_assert_int_eq(sqlite3_step(att), SQLITE_DONE);
  sqlite3_finalize(att);
  ck_assert_int_eq(tl_scalar(a, "SELECT count(*) FROM main.sqlite_schema WHERE type = 'table' AND "
                             "name LIKE 'traceloom%' AND name NOT IN (SELECT name FROM "
                             "b.sqlite_schema WHERE type = 'table')"),
                   0);
  sqlite3_stmt *names;
  ck_assert_int_eq(sqlite3_prepare_v2(a,
                                      "SELECT name FROM main.sqlite_schema WHERE type = 'table' "
                                      "AND name LIKE 'traceloom\\_%' ESCAPE '\\'",
                                      -1, &names, NULL),
                   SQLITE_OK);
  int ntables = 0;
  while (sqlite3_step(names) == SQLITE_ROW) {
    const char *t = (const char *)sqlite3_column_text(names, 0);
    char *sql = sqlite3_mprintf(
        "SELECT (SELECT count(*) FROM (SELECT * FROM main.\"%w\" EXCEPT SELECT * FROM b.\"%w\")) + "
        "(SELECT count(*) FROM (SELECT * FROM b.\"%w\" EXCEPT SELECT * FROM main.\"%w\")) + "
        "abs((SELECT count(*) FROM main.\"%w\") - (SELECT count(*) FROM b.\"%w\"))",
        t, t, t, t, t, t);
    int64_t differ = tl_scalar(a, sql);
    ck_assert_msg(differ == 0, "%s: %lld rows differ between threads 2 and 1", t,
                  (long long)differ);
    sqlite3_free(sql);
    ntables++;
  }
  sqlite3_finalize(names);
  ck_assert_int_gt(ntables, 20);
  exec_ok(a, "DETACH b");
}

START_TEST(threads_two_publish_the_rows_of_threads_one) {
  static const char *const fixtures[] = {"exact_hlt/mono", "minimal_smoke/mono",
                                         "nsys/nsys_graph.sqlite", "kineto/gpu_steps.pt.trace.json",
                                         "two_ranks"};
  for (size_t i = 0; i < sizeof fixtures / sizeof fixtures[0]; i++) {
    char *fx = tl_fixture(fixtures[i]);
    ck_assert_msg(access(fx, F_OK) == 0, "fixture %s is missing", fx);
    free(fx);
    char d1[] = "/tmp/tl-staging-XXXXXX", d2[] = "/tmp/tl-staging-XXXXXX", p1[512], p2[512];
    ck_assert_ptr_nonnull(mkdtemp(d1));
    ck_assert_ptr_nonnull(mkdtemp(d2));
    snprintf(p1, sizeof p1, "%s/out.db", d1);
    snprintf(p2, sizeof p2, "%s/out.db", d2);
    seen s1 = {0}, s2 = {0};
    sqlite3 *one = open_analysis(p1, &s1), *two = open_analysis(p2, &s2);
    ck_assert_msg(analyze(one, fixtures[i], "{\"threads\": 1}") == SQLITE_ROW, "%s: %s",
                  fixtures[i], sqlite3_errmsg(one));
    ck_assert_msg(analyze(two, fixtures[i], "{\"threads\": 2}") == SQLITE_ROW, "%s: %s",
                  fixtures[i], sqlite3_errmsg(two));
    ck_assert_int_eq(s1.copies, 0);
    ck_assert_int_eq(s1.runtime_copies, 0);
    ck_assert_int_eq(s1.event_copies, 0);
    ck_assert_int_gt(s2.copies, 0); /* the trees came from the staging database */
    ck_assert_int_eq(s2.runtime_copies, 2); /* the relations' shapes and core from the other */
    ck_assert_int_eq(s2.event_copies, 1);   /* the upper half of the events from the third */
    ck_assert_int_eq(other_files(d2), 0);
    ck_assert_int_eq(tl_scalar(two, "SELECT count(*) FROM pragma_database_list"), 1);
    same_tables(two, p1);
    sqlite3_close(one), sqlite3_close(two);
    remove_dir(d1), remove_dir(d2);
  }
}
END_TEST

/* A failure in the staging step of a whole analysis: the copy interrupted (or, first, the
** anchors written beside the staged writer), after a complete earlier analysis. */
static void staged_analysis_fails(const char *trigger) {
  char dir[] = "/tmp/tl-staging-XXXXXX", path[512];
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/out.db", dir);
  seen sn = {0};
  sqlite3 *db = open_analysis(path, &sn);
  ck_assert_int_eq(analyze(db, "minimal_smoke/mono", "{\"threads\": 1}"), SQLITE_ROW);
  int64_t nodes = tl_scalar(db, "SELECT count(*) FROM traceloom_node_core");
  int64_t events = tl_scalar(db, "SELECT count(*) FROM traceloom_event_core");
  ck_assert_int_gt(nodes, 0);
  char *before = sqlite3_mprintf("%lld", (long long)tl_scalar(db, "SELECT total(start_ns) + "
                                                              "total(dur_ns) FROM traceloom_event_core"));
  sn.trigger = trigger;
  ck_assert_int_eq(analyze(db, "exact_hlt/mono", "{\"threads\": 2}"), SQLITE_INTERRUPT);
  ck_assert_int_eq(sn.fired, 1);
  ck_assert_int_eq(sqlite3_get_autocommit(db), 1); /* nothing left open */
  ck_assert_int_eq(tl_scalar(db, "SELECT count(*) FROM traceloom_node_core"), nodes);
  ck_assert_int_eq(tl_scalar(db, "SELECT count(*) FROM traceloom_event_core"), events);
  char *after = sqlite3_mprintf("%lld", (long long)tl_scalar(db, "SELECT total(start_ns) + "
                                                             "total(dur_ns) FROM traceloom_event_core"));
  ck_assert_str_eq(before, after);
  ck_assert_int_eq(other_files(dir), 0); /* the staging file is deleted */
  /* the next analysis detaches what the interrupted one could not, and succeeds */
  sn.trigger = NULL;
  sn.copies = sn.runtime_copies = sn.event_copies = 0;
  ck_assert_msg(analyze(db, "exact_hlt/mono", "{\"threads\": 2}") == SQLITE_ROW, "%s",
                sqlite3_errmsg(db));
  ck_assert_int_gt(sn.copies, 0);
  ck_assert_int_eq(sn.runtime_copies, 2);
  ck_assert_int_eq(sn.event_copies, 1);
  ck_assert_int_eq(tl_scalar(db, "SELECT count(*) FROM pragma_database_list"), 1);
  ck_assert_int_eq(other_files(dir), 0);
  sqlite3_free(before), sqlite3_free(after);
  sqlite3_close(db);
  remove_dir(dir);
}

START_TEST(failed_copy_keeps_the_earlier_analysis) {
  staged_analysis_fails("INSERT INTO main.\"traceloom_node_core\" SELECT * FROM");
}
END_TEST

START_TEST(interrupt_beside_the_staged_writer_keeps_the_earlier_analysis) {
  staged_analysis_fails("INSERT INTO traceloom_anchor_core");
}
END_TEST

/* The same for the runtime step: the relations' copy, the calls written beside their writer. */
START_TEST(failed_runtime_copy_keeps_the_earlier_analysis) {
  staged_analysis_fails("INSERT INTO main.\"traceloom_runtime_device_relation_core\" SELECT * FROM");
}
END_TEST

START_TEST(interrupt_beside_the_relations_writer_keeps_the_earlier_analysis) {
  staged_analysis_fails("INSERT INTO traceloom_runtime_call_core");
}
END_TEST

/* And for the events: their copy (an append), the lower half written beside its writer. */
START_TEST(failed_events_copy_keeps_the_earlier_analysis) {
  staged_analysis_fails("INSERT INTO main.\"traceloom_event_core\" SELECT * FROM");
}
END_TEST

START_TEST(interrupt_beside_the_events_writer_keeps_the_earlier_analysis) {
  staged_analysis_fails("INSERT INTO traceloom_event_core");
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("staging");
  TCase *tc = tcase_create("staging");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, staged_rows_arrive_by_the_transfer_path);
  tcase_add_test(tc, join_then_copy_moves_the_rows_at_the_copy);
  tcase_add_test(tc, failed_writer_fails_the_step);
  tcase_add_test(tc, interrupt_stops_the_writer);
  tcase_add_test(tc, no_staging_inside_a_transaction_beside_a_reader_or_on_another_vfs);
  tcase_add_test(tc, threads_two_publish_the_rows_of_threads_one);
  tcase_add_test(tc, failed_copy_keeps_the_earlier_analysis);
  tcase_add_test(tc, interrupt_beside_the_staged_writer_keeps_the_earlier_analysis);
  tcase_add_test(tc, failed_runtime_copy_keeps_the_earlier_analysis);
  tcase_add_test(tc, interrupt_beside_the_relations_writer_keeps_the_earlier_analysis);
  tcase_add_test(tc, failed_events_copy_keeps_the_earlier_analysis);
  tcase_add_test(tc, interrupt_beside_the_events_writer_keeps_the_earlier_analysis);
  tcase_add_test(tc, staged_rows_append_after_smaller_rowids);
  suite_add_tcase(s, tc);
  return s;
}

TL_CHECK_MAIN(suite)
