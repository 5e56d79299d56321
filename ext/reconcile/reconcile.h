/*
** reconcile.h: event reconciliation (recovery.md S2), a stage of its own between graph replay
** and anchor selection. Duplicate observations of one device action (a generic envelope and
** its detail task, an MC2 communication op and its task) are decided by the rules of the
** effective event-reconciliation policy (rules/event_reconciliation.yaml), from the trace in
** memory (its provider ids, before tl_trace_release_event_ids) and the exact replays:
**
**   tl_reconcile_decide(&trace, &replay, rules, &rec, e);    after graph replay
**   tl_reconcile_merges(rec, nevents, &merges, e);           what anchor selection folds
**   ... anchor input .merges = &merges; tl_anchors_build ...
**   tl_reconcile_publish(db, rec, &trace, &anchors, e);      the decisions' rows, inside the
**                                                            publication (ext/reports calls it)
**   tl_reconciliation_free(rec);
**
** A reconciled pair is one anchor, the canonical event's, with the envelope's interval; its
** other members are never anchors, aux links or cost (ext/anchor/anchors.c folds them).
*/
#ifndef TL_RECONCILE_H
#define TL_RECONCILE_H

#include "util/sqlite_api.h"
#include "util/err.h"
#include "trace/trace.h"
#include "anchor/anchors.h"
#include "replay/replay.h"
#include "classify/rules.h"

typedef struct tl_reconciliation tl_reconciliation;

int tl_reconcile_decide(const tl_trace *t, const tl_replay *r, const tl_rules *rules,
                        tl_reconciliation **out, tl_err *e);
/* Empty (all NULL, n 0) when no pair is reconciled; else out->member has nevents entries. */
int tl_reconcile_merges(const tl_reconciliation *x, size_t nevents, tl_anchor_merges *out, tl_err *e);
/* The decision and member rows and each merged anchor's extent (sql/schema/65 and
** traceloom_anchor_extent_core); x NULL (no policy): nothing. */
int tl_reconcile_publish(sqlite3 *db, const tl_reconciliation *x, const tl_trace *t,
                         const tl_anchors *an, tl_err *e);
void tl_reconciliation_free(tl_reconciliation *x);

#endif
