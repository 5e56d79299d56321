/*
** publication.h: the one atomic write of an analysis.
**
** Everything an analysis writes is one savepoint of the calling connection,
** traceloom_analysis, kept by a rollback guard (ext/publish/guard.h: an interrupt that stops
** any statement still rolls it all back): the publisher's writers (ext/publish) and the
** writers whose rows derive from the published tables (the scheduler context, the reports).
** The writers themselves are the driver's table `publishers` (analyze.c):
**
**   tl_analysis_txn tx;
**   rc = tl_txn_begin(&tx, db, e);                 SAVEPOINT; earlier analysis dropped, schema
**   ... writers (tx.pub), computation in between ...
**   if (rc == TL_OK) rc = tl_txn_stats(&tx, e);    table sizes for the planner, last
**   rc = tl_txn_end(&tx, rc, e);                   RELEASE (the commit), or roll back
**
** Whatever fails, wherever (a writer, the computation between writers, an interrupt, the
** commit itself), tl_txn_end leaves the analysis tables exactly as they were before
** tl_txn_begin.
*/
#ifndef TL_PUBLICATION_H
#define TL_PUBLICATION_H

#include "publish/publish.h"

typedef struct tl_analysis_txn {
  tl_txn_guard guard;   /* the savepoint and its rollback */
  tl_publication pub;
  int publishing;       /* tl_publish_open succeeded: tl_txn_end frees what it holds */
} tl_analysis_txn;

int tl_txn_begin(tl_analysis_txn *tx, sqlite3 *db, tl_err *e);
/* Every table written: their row counts into sqlite_stat1 (tl_publish_planner_stats). */
int tl_txn_stats(tl_analysis_txn *tx, tl_err *e);
/* rc: how the analysis went so far. Commits when TL_OK (and returns the commit's result),
** rolls everything back otherwise; returns the outcome. Safe to call after a failed or no
** tl_txn_begin when tx was zeroed. */
int tl_txn_end(tl_analysis_txn *tx, int rc, tl_err *e);

#endif
