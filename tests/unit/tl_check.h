/*
** tl_check.h: glue for the check unit tests.
**
** Each tests/unit/test_*.c is its own program: it defines `static Suite *suite(void)` and
** ends with TL_CHECK_MAIN(suite). Tests run with the working directory at the build
** folder's parent (the repository root), and fixture profiles live under
** $TRACELOOM_BUILD/fixtures (default build/fixtures), see tl_fixture().
*/
#ifndef TL_CHECK_H
#define TL_CHECK_H

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "source/source.h"
#include "util/sqlite_api.h"

/* Path of a materialized fixture, e.g. tl_fixture("minimal_smoke/mono"). Static buffer
** per call site is not needed: the result is malloc'd and freed at exit by the OS in tests,
** so tests free() it for LeakSanitizer. */
static inline char *tl_fixture(const char *rel) {
  const char *b = getenv("TRACELOOM_BUILD");
  if (!b || !*b) b = "build";
  size_t n = snprintf(NULL, 0, "%s/fixtures/%s", b, rel) + 1;
  char *p = malloc(n);
  if (p) snprintf(p, n, "%s/fixtures/%s", b, rel);
  return p;
}

/* Discovers a materialized fixture profile, failing the test with the reader's message. */
static inline void tl_discover_fixture(const char *rel, tl_profile *p) {
  char *path = tl_fixture(rel);
  tl_err e = {0};
  memset(p, 0, sizeof *p);
  int rc = tl_profile_discover(path, "auto", p, &e);
  ck_assert_msg(rc == TL_OK, "discover %s: %s", path, e.msg ? e.msg : "?");
  free(path);
}

/* The first column of the one row a query returns, failing the test when there is none. */
static inline int64_t tl_scalar(sqlite3 *db, const char *sql) {
  sqlite3_stmt *st;
  ck_assert_msg(sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK, "%s: %s", sql,
                sqlite3_errmsg(db));
  ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
  int64_t v = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  return v;
}

#define TL_CHECK_MAIN(suite_fn)                                   \
  int main(void) {                                                \
    SRunner *sr = srunner_create(suite_fn());                     \
    srunner_run_all(sr, CK_NORMAL);                               \
    int failed = srunner_ntests_failed(sr);                       \
    srunner_free(sr);                                             \
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;             \
  }

#endif
