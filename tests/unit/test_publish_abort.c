/*
** test_publish_abort.c: an analysis interrupted between its publication steps leaves no
** transaction open and the previous analysis exactly as it was.
**
** traceloom_analyze publishes in steps (tl_publish_open and the runtime calls, then the
** events, then the rest) and computes in between; an interrupt noticed there is the hard case:
** sqlite3_interrupt() keeps the connection from preparing anything (ROLLBACK TO included)
** until the calling statement ends. A test SQL function reproduces it deterministically:
** it opens the publication and writes the runtime calls, interrupts its own connection, notices the interrupt with a
** read-only statement (as the progress probe does) and aborts.
*/
#include "tl_check.h"
#include "sqlite-traceloom.h"
#include "util/sqlite_api.h"
#include "publish/publish.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>


static void begin_interrupt_abort(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  (void)argc, (void)argv;
  sqlite3 *db = sqlite3_context_db_handle(ctx);
  tl_profile profile;
  tl_trace trace;
  tl_relations relations = {0};
  tl_inventory inventory = {0};
  memset(&profile, 0, sizeof profile);
  memset(&trace, 0, sizeof trace);
  trace.profile = &profile;
  tl_runtime_input rt = {.trace = &trace, .relations = &relations};
  tl_inventory_input inv = {.profile = &profile, .trace = &trace, .inventory = &inventory};
  tl_err e = {0};
  tl_publication pub;
  int rc = tl_publish_open(&pub, db, &e);
  if (rc == TL_OK) rc = tl_publish_runtime(&pub, &rt, &e);
  if (rc == TL_OK) rc = tl_publish_inventory(db, &inv, &e);
  ck_assert_msg(rc == TL_OK, "begin: %s", e.msg ? e.msg : "?");
  ck_assert_int_eq(sqlite3_get_autocommit(db), 0); /* the savepoint's transaction is open */
  sqlite3_interrupt(db);
  /* The probe sees the interrupt; so would ROLLBACK TO. */
  ck_assert_int_eq(sqlite3_exec(db, "SELECT 1", NULL, NULL, NULL), SQLITE_INTERRUPT);
  tl_publish_abort(&pub);
  ck_assert_int_eq(sqlite3_get_autocommit(db), 1); /* rolled back, nothing left open */
  ck_assert_ptr_null(pub.canary);
  tl_err_clear(&e);
  sqlite3_result_error(ctx, "interrupted (test)", -1);
}

START_TEST(interrupted_between_publication_steps_rolls_back) {
  char path[] = "/tmp/tl-abort-XXXXXX";
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  close(fd);
  sqlite3 *db = NULL;
  ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
  char *err = NULL;
  ck_assert_int_eq(sqlite3_traceloom_init(db, &err, NULL), SQLITE_OK);
  /* A previous analysis: the minimal fixture. */
  char *fixture = tl_fixture("minimal_smoke/mono");
  char *sql = sqlite3_mprintf("SELECT traceloom_analyze(%Q)", fixture);
  ck_assert_int_eq(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
  sqlite3_free(sql);
  free(fixture);
  ck_assert_int_eq(sqlite3_create_function(db, "begin_interrupt_abort", 0, SQLITE_UTF8, NULL,
                                           begin_interrupt_abort, NULL, NULL),
                   SQLITE_OK);
  ck_assert_int_ne(sqlite3_exec(db, "SELECT begin_interrupt_abort()", NULL, NULL, NULL), SQLITE_OK);
  ck_assert_int_eq(sqlite3_get_autocommit(db), 1);
  /* The previous analysis is intact: its 3 events and its metadata. */
  sqlite3_stmt *st;
  ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT (SELECT count(*) FROM traceloom_event), "
                                          "(SELECT value FROM traceloom_metadata WHERE key = 'event_count')",
                                      -1, &st, NULL),
                   SQLITE_OK);
  ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
  ck_assert_int_eq(sqlite3_column_int(st, 0), 3);
  ck_assert_str_eq((const char *)sqlite3_column_text(st, 1), "3");
  sqlite3_finalize(st);
  /* And another connection can write: no lock was left behind. */
  sqlite3 *other = NULL;
  ck_assert_int_eq(sqlite3_open(path, &other), SQLITE_OK);
  ck_assert_int_eq(sqlite3_exec(other, "BEGIN IMMEDIATE; ROLLBACK", NULL, NULL, NULL), SQLITE_OK);
  sqlite3_close(other);
  ck_assert_int_eq(sqlite3_close(db), SQLITE_OK);
  unlink(path);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("publish_abort");
  TCase *tc = tcase_create("publish_abort");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, interrupted_between_publication_steps_rolls_back);
  suite_add_tcase(s, tc);
  return s;
}

TL_CHECK_MAIN(suite)
