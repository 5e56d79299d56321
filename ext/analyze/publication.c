/*
** publication.c: the savepoint of one analysis (see publication.h). Its rollback, also after
** sqlite3_interrupt() stopped any statement, is the guard's (ext/publish/guard.h).
*/
#include "analyze/publication.h"

int tl_txn_begin(tl_analysis_txn *tx, sqlite3 *db, tl_err *e) {
  tx->publishing = 0;
  int rc = tl_guard_begin(&tx->guard, db, "traceloom_analysis", e);
  if (rc == TL_OK) rc = tl_publish_open(&tx->pub, db, &tx->guard, e);
  tx->publishing = rc == TL_OK;
  return rc;
}

int tl_txn_stats(tl_analysis_txn *tx, tl_err *e) {
  return tl_publish_planner_stats(tx->guard.db, e);
}

int tl_txn_end(tl_analysis_txn *tx, int rc, tl_err *e) {
  if (tx->publishing) tl_publish_abort(&tx->pub);
  tx->publishing = 0;
  return tl_guard_end(&tx->guard, rc, e);
}
