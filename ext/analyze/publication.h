/*
** publication.h: the one atomic write of an analysis.
**
** Everything an analysis writes is one savepoint, traceloom_analysis, around the
** publisher's own steps (ext/publish: tl_publish_begin, tl_publish_events,
** tl_publish_finish) and the writers whose rows derive from the published tables (the
** scheduler context):
**
**   tl_analysis_txn tx;
**   rc = tl_txn_begin(&tx, db, &in, e);           SAVEPOINT; calls, relations, inventory
**   ... compute ...
**   if (rc == TL_OK) rc = tl_txn_events(&tx, &in, e);   the events
**   ... compute ...
**   if (rc == TL_OK) rc = tl_txn_finish(&tx, &in, e);   the rest, views, metadata
**   if (rc == TL_OK) rc = tl_context_publish(db, ...);  writers over the published tables
**   if (rc == TL_OK) rc = tl_txn_stats(&tx, e);    table sizes for the planner, last
**   rc = tl_txn_end(&tx, rc, e);                   RELEASE (the commit), or roll back
**
** Whatever fails, wherever (a step, the computation between steps, an interrupt, the
** commit itself), tl_txn_end leaves the database exactly as it was before tl_txn_begin.
*/
#ifndef TL_PUBLICATION_H
#define TL_PUBLICATION_H

#include "publish/publish.h"

typedef struct tl_analysis_txn {
  sqlite3 *db;
  tl_publication pub;
  int open;             /* SAVEPOINT traceloom_analysis is open */
  int publishing;       /* between tl_publish_begin and tl_publish_finish */
  sqlite3_stmt *canary; /* a no-op write for rolling back after an interrupt (see .c) */
} tl_analysis_txn;

int tl_txn_begin(tl_analysis_txn *tx, sqlite3 *db, const tl_publish_input *in, tl_err *e);
int tl_txn_events(tl_analysis_txn *tx, const tl_publish_input *in, tl_err *e);
int tl_txn_finish(tl_analysis_txn *tx, const tl_publish_input *in, tl_err *e);
/* Every table written: their row counts into sqlite_stat1 (tl_publish_planner_stats). */
int tl_txn_stats(tl_analysis_txn *tx, tl_err *e);
/* rc: how the analysis went so far. Commits when TL_OK (and returns the commit's result),
** rolls everything back otherwise; returns the outcome. Safe to call after a failed or no
** tl_txn_begin when tx was zeroed. */
int tl_txn_end(tl_analysis_txn *tx, int rc, tl_err *e);

#endif
