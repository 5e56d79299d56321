/*
** guard.c: one transaction that an interrupt can always undo (see guard.h).
*/
#include "publish/guard.h"
#include "publish/publish.h"

/* "SAVEPOINT x" and friends, for a name from a string literal. */
static int exec_savepoint(tl_txn_guard *g, const char *verb, tl_err *e) {
  char *sql = sqlite3_mprintf("%s %s", verb, g->savepoint);
  int rc = sql ? tl_pub_exec(g->db, sql, e) : tl_nomem(e);
  sqlite3_free(sql);
  return rc;
}

static int prepare_canary(tl_txn_guard *g, tl_err *e) {
  sqlite3_finalize(g->canary);
  g->canary = NULL;
  int rc = tl_pub_prepare(g->db, "DELETE FROM main.sqlite_stat1 WHERE 0", &g->canary, e);
  if (rc == TL_OK && sqlite3_stmt_readonly(g->canary))
    rc = tl_fail(e, "internal error: the rollback canary is not a write");
  return rc;
}

int tl_guard_begin(tl_txn_guard *g, sqlite3 *db, const char *savepoint, tl_err *e) {
  *g = (tl_txn_guard){.db = db, .savepoint = savepoint};
  int rc = tl_publish_planner_table(db, e);
  if (rc == TL_OK) rc = prepare_canary(g, e);
  if (rc == TL_OK) rc = exec_savepoint(g, "SAVEPOINT", e);
  g->open = rc == TL_OK;
  return rc;
}

int tl_guard_hold(tl_txn_guard *g, tl_err *e) {
  int rc = tl_pub_prepare(g->db,
                          "INSERT INTO main.sqlite_stat1(tbl, idx, stat) "
                          "VALUES ('traceloom guard', NULL, '0') RETURNING rowid",
                          &g->held, e);
  if (rc != TL_OK) return rc;
  if (sqlite3_step(g->held) != SQLITE_ROW) {
    rc = tl_fail(e, "failed to publish the analysis: %s", sqlite3_errmsg(g->db));
    sqlite3_finalize(g->held);
    g->held = NULL;
    return rc;
  }
  g->held_row = sqlite3_column_int64(g->held, 0);
  return TL_OK;
}

/* The held write ends; its row is deleted. A fresh canary first, so that whatever stops
** this leaves one of the two. */
static int unhold(tl_txn_guard *g, tl_err *e) {
  if (!g->held) return TL_OK;
  sqlite3_stmt *del = NULL;
  int rc = prepare_canary(g, e);
  if (rc == TL_OK)
    rc = tl_pub_prepare(g->db, "DELETE FROM main.sqlite_stat1 WHERE rowid = ?1", &del, e);
  if (rc != TL_OK) return rc;
  sqlite3_finalize(g->held);
  g->held = NULL;
  sqlite3_bind_int64(del, 1, g->held_row);
  rc = tl_pub_step(g->db, del, "sqlite_stat1", e);
  sqlite3_finalize(del);
  return rc;
}

/* ROLLBACK TO and RELEASE undo everything since the savepoint. After an interrupt ROLLBACK TO
** is refused: then a write stepped (the held one where it runs, else the canary) stops at
** the interrupt and makes SQLite roll the whole transaction back. */
static void rollback(tl_txn_guard *g) {
  char *sql = sqlite3_mprintf("ROLLBACK TO %s", g->savepoint);
  int rc = sql ? sqlite3_exec(g->db, sql, NULL, NULL, NULL) : SQLITE_NOMEM;
  sqlite3_free(sql);
  if (rc == SQLITE_OK) {
    sqlite3_finalize(g->held); /* a running write would block RELEASE */
    g->held = NULL;
    sql = sqlite3_mprintf("RELEASE %s", g->savepoint);
    if (sql) sqlite3_exec(g->db, sql, NULL, NULL, NULL);
    sqlite3_free(sql);
    return;
  }
  sqlite3_stmt *write = g->held ? g->held : g->canary;
  if (write) sqlite3_step(write), sqlite3_reset(write);
}

int tl_guard_end(tl_txn_guard *g, int rc, tl_err *e) {
  if (g->open) {
    if (rc == TL_OK) rc = unhold(g, e);
    if (rc == TL_OK) rc = exec_savepoint(g, "RELEASE", e);
    if (rc != TL_OK) rollback(g);
  }
  sqlite3_finalize(g->held);
  sqlite3_finalize(g->canary);
  g->held = g->canary = NULL;
  g->open = 0;
  return rc;
}
