/*
** guard.h: one transaction of the calling connection that an interrupt can always undo.
**
** traceloom_analyze and traceloom_compare write inside the statement that called them, in one
** savepoint. Once sqlite3_interrupt() was called, until that statement ends, SQLite prepares no
** statement (ROLLBACK TO included) and stops every statement stepped before its first opcode. A
** read-only statement stopped so does nothing; a write makes SQLite roll the whole transaction
** back (sqlite3_interrupt's documented reaction). So the rollback after an interrupt steps a
** write that exists already. A prepared statement is not enough on its own: CREATE INDEX (the
** index builds of sql/views), ANALYZE, ATTACH and TEMP schema changes expire every prepared
** statement of the connection, and an expired one must be prepared again, which the interrupt
** refuses. A statement that is running does not expire. The guard keeps one of two writes at
** every moment from the savepoint to its end:
**
**   canary  "DELETE FROM main.sqlite_stat1 WHERE 0", prepared before the savepoint and again
**           just before the commit;
**   held    an INSERT ... RETURNING into sqlite_stat1, stepped once and kept running from
**           tl_guard_hold (after any DROP TABLE, which a running statement blocks) to the
**           commit (a running write blocks SAVEPOINT and RELEASE). Its row is deleted before
**           the commit: the transaction commits exactly what its writers wrote.
**
**   tl_txn_guard g;
**   int rc = tl_guard_begin(&g, db, "traceloom_analysis", e);  sqlite_stat1, canary, SAVEPOINT
**   ... drops of earlier tables ...
**   if (rc == TL_OK) rc = tl_guard_hold(&g, e);
**   ... tables, rows, index builds ...
**   rc = tl_guard_end(&g, rc, e);             commit (RELEASE) when TL_OK, else roll back
**
** sqlite_stat1 is created before the savepoint where the database has none (ANALYZE
** sqlite_schema: CREATE TABLE may not name it): the one change a failed run can leave, an
** empty planner table. tests/unit/test_publish_abort.c interrupts a whole analysis at every
** hundredth VM step and checks that each run leaves no transaction open.
*/
#ifndef TL_PUBLISH_GUARD_H
#define TL_PUBLISH_GUARD_H

#include "util/sqlite_api.h"
#include "util/err.h"

typedef struct tl_txn_guard {
  sqlite3 *db;
  const char *savepoint;  /* its name (a string literal) */
  int open;               /* the savepoint is open */
  sqlite3_stmt *canary;   /* the prepared no-op write */
  sqlite3_stmt *held;     /* the running write, or NULL */
  sqlite3_int64 held_row; /* the sqlite_stat1 rowid it inserted */
} tl_txn_guard;

/* Creates sqlite_stat1 where missing, prepares the canary, opens the savepoint. */
int tl_guard_begin(tl_txn_guard *g, sqlite3 *db, const char *savepoint, tl_err *e);
/* Starts the held write. */
int tl_guard_hold(tl_txn_guard *g, tl_err *e);
/* rc: how the run went. TL_OK: deletes the held row and releases the savepoint (the commit
** when it is the outermost); otherwise, or when that fails, rolls everything back. Returns
** the outcome; a no-op after a failed or no tl_guard_begin when g was zeroed. */
int tl_guard_end(tl_txn_guard *g, int rc, tl_err *e);

#endif
