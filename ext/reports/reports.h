/*
** reports.h: the facts behind the report surfaces (docs/REPORTS.md) that a view cannot
** compute cheaply, computed in C and published inside the analysis savepoint.
**
**   tl_reports_input in = {&trace, &anchors, &packets, &replay, rules, idle_options};
**   tl_reports_publish(db, &in, e);   once, after the publication's own savepoint is
**                                     released, inside the driver's outer SAVEPOINT (a
**                                     failure rolls the whole analysis back with it)
**
** It writes the tables of sql/schema/60_reports.sql; the readable relations are the views
** of sql/views/60_*.sql and later, created by tl_publish_views. What it needs that the
** driver has already freed (the runtime calls and their relations, the provider ids of the
** events) it reads back from the public relations published earlier in the same savepoint:
**
**   host windows   (host_window.c) per pair of adjacent anchors of a device, the ordered host
**                  interval between their supported runtime endpoints, its typed support
**                  state, and the runtime calls observed inside it (found before the calls
**                  are freed: tl_host_windows_find below; this stage only writes them);
**   units          (units.c) the partition of each device's anchors into exact graph units,
**                  the structural units between them and the open trace prefix and suffix;
**   envelopes      (envelopes.c) the device events temporally inside each graph envelope;
**   placements     (placements.c) the anchor that represents each communication task;
**   reconciliation the decisions of ext/reconcile (taken before the anchors) and the merged
**                  anchors' extents, written here (tl_reconcile_publish);
**   structure rows (structure_rows.c) traceloom_v_evidence_role_structure's rows, stored
**                  (only with the analyze option "evidence_role_structure");
**   idle evidence  (ext/idle, only with the analyze option "idle_evidence").
*/
#ifndef TL_REPORTS_H
#define TL_REPORTS_H

#include "util/sqlite_api.h"
#include "util/err.h"
#include "trace/trace.h"
#include "anchor/anchors.h"
#include "cost/packets.h"
#include "replay/replay.h"
#include "classify/rules.h"
#include "reconcile/reconcile.h"

typedef struct tl_host_windows tl_host_windows;

typedef struct tl_reports_input {
  const tl_trace *trace;
  const tl_anchors *anchors;
  const tl_packets *packets;
  const tl_replay *replay;          /* may be NULL or empty */
  const tl_rules *rules;            /* the event-reconciliation policy */
  const char *idle_evidence_json;   /* the analyze option "idle_evidence" (JSON text) or NULL */
  const uint32_t *anchor_call;      /* per anchor: its runtime endpoint (tl_reports_anchor_
                                       endpoints), UINT32_MAX for none */
  const tl_host_windows *host_windows; /* tl_host_windows_find's; NULL: no windows */
  const tl_reconciliation *reconciliation; /* tl_reconcile_decide's; NULL: no policy */
  int evidence_role_structure;      /* the analyze option: store the evidence roles'
                                       structure rows (structure_rows.c) */
  int threads;                      /* the analysis's threads: SQLite's sorter may use
                                       threads - 1 helpers (the same rows for any count) */
} tl_reports_input;

/* Each anchor's runtime endpoint: the call of its event's supported relation (event_call,
** per trace event, -1 for none), or for the launch anchor of an exact graph replay (a
** derived event) the launch's host call; UINT32_MAX where it has none. An anchor has one
** endpoint at most: a device event has at most one supported relation (tl_relate) and a
** derived launch event none but its launch's. *out is malloc'd; it is published as
** traceloom_anchor_core.host_call_n, from which traceloom_anchor_host_window (a view) derives
** each window's state and scope, and tl_reports_host_windows its observed calls. */
int tl_reports_anchor_endpoints(const tl_anchors *an, const tl_replay *r, const int32_t *event_call,
                                size_t ntrace_events, uint32_t **out, tl_err *e);

/* The host windows' runtime calls (host_window.c) are found while the driver still holds
** the calls, and beside a staging copy with threads >= 2 (ext/analyze), not read back at the
** report stage:
**
**   tl_host_calls_take(&trace, &calls, e);   before tl_trace_release_calls: the start, end,
**                                            shape and input columns move out of the trace
**                                            (24 bytes a call with each call's domain code)
**   tl_host_windows_find(calls, &anchors, anchor_call, &windows, e);  arrays only, no SQL
**   tl_host_calls_free(calls);
**   ... in.host_windows = windows; tl_reports_publish(db, &in, e) writes them ...
**   tl_host_windows_free(windows);
**
** With in.host_windows NULL (the driver kept no calls: over its budget of memory) the report
** stage reads the published calls back (traceloom_runtime_call's core and shape) and finds
** the windows itself.
*/
typedef struct tl_host_calls tl_host_calls;
int tl_host_calls_take(tl_trace *t, tl_host_calls **out, tl_err *e);
void tl_host_calls_free(tl_host_calls *c);
int tl_host_windows_find(const tl_host_calls *c, const tl_anchors *an, const uint32_t *anchor_call,
                         tl_host_windows **out, tl_err *e);
void tl_host_windows_free(tl_host_windows *w);

int tl_reports_publish(sqlite3 *db, const tl_reports_input *in, tl_err *e);

/* The parts, for tests and for reports.c (each inside the caller's savepoint). */
int tl_reports_host_windows(sqlite3 *db, const tl_reports_input *in, tl_err *e);
int tl_reports_units(sqlite3 *db, const tl_reports_input *in, tl_err *e);
int tl_reports_envelopes(sqlite3 *db, const tl_reports_input *in, tl_err *e);
int tl_reports_placements(sqlite3 *db, const tl_reports_input *in, tl_err *e);
int tl_reports_structure_rows(sqlite3 *db, const tl_reports_input *in, tl_err *e);

#endif
