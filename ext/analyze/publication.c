/*
** publication.c: the savepoint of one analysis (see publication.h).
**
** After sqlite3_interrupt() the connection prepares no statement (ROLLBACK TO included)
** until the calling statement ends, and a transaction-control statement stepped then does
** nothing. A write statement stopped by an interrupt inside a transaction makes SQLite roll
** the whole transaction back: so a no-op write prepared beforehand (the canary, as the
** publisher's own tl_publish_abort does) undoes the analysis even then, and never leaves a
** transaction open holding the write lock.
*/
#include "analyze/publication.h"

static int exec(sqlite3 *db, const char *sql) { return sqlite3_exec(db, sql, NULL, NULL, NULL); }

int tl_txn_begin(tl_analysis_txn *tx, sqlite3 *db, tl_err *e) {
  tx->db = db, tx->open = 0, tx->publishing = 0, tx->canary = NULL;
  if (tl_pub_exec(db, "SAVEPOINT traceloom_analysis", e)) return TL_ERROR;
  tx->open = 1;
  int rc = tl_publish_open(&tx->pub, db, e);
  if (rc != TL_OK) tl_publish_abort(&tx->pub);
  tx->publishing = rc == TL_OK;
  return rc;
}

int tl_txn_release(tl_analysis_txn *tx, tl_err *e) {
  int rc = tl_publish_close(&tx->pub, e);
  if (rc != TL_OK) return rc; /* still publishing: tl_txn_end aborts */
  tx->publishing = 0;
  /* The schema is complete: the canary stays valid until the end. */
  return tl_pub_prepare(tx->db, "DELETE FROM main.traceloom_metadata WHERE key = ''",
                        &tx->canary, e);
}

int tl_txn_stats(tl_analysis_txn *tx, tl_err *e) {
  int rc = tl_publish_planner_stats(tx->db, e);
  /* the stat table may be new schema, and the reload expires statements: a fresh canary */
  sqlite3_finalize(tx->canary);
  tx->canary = NULL;
  if (rc == TL_OK)
    rc = tl_pub_prepare(tx->db, "DELETE FROM main.traceloom_metadata WHERE key = ''", &tx->canary, e);
  return rc;
}

static void rollback(tl_analysis_txn *tx) {
  if (tx->publishing) tl_publish_abort(&tx->pub);
  tx->publishing = 0;
  if (exec(tx->db, "ROLLBACK TO traceloom_analysis") == SQLITE_INTERRUPT && tx->canary)
    sqlite3_step(tx->canary), sqlite3_reset(tx->canary);
  else
    exec(tx->db, "RELEASE traceloom_analysis");
}

int tl_txn_end(tl_analysis_txn *tx, int rc, tl_err *e) {
  if (tx->open) {
    if (rc == TL_OK) rc = tl_pub_exec(tx->db, "RELEASE traceloom_analysis", e);
    if (rc != TL_OK) rollback(tx);
  }
  sqlite3_finalize(tx->canary);
  tx->canary = NULL;
  tx->open = 0;
  return rc;
}
