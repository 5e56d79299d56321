/*
** scope.h: what a trace's own host hierarchy says about its structure: the step markers that
** partition it (Kineto's ProfilerStep#N, or any record_function / user_annotation name
** pattern) and the names of repeats (an nn.Module, Python function or record_function range
** that encloses exactly each iteration: "LlamaDecoderLayer x4"). The ranges are the trace's
** host scopes (trace.h tl_trace.scopes, read by ext/source); nothing here reads a profile.
**
**   tl_scopes sc;
**   tl_scope_link(&trace, &relations, "ProfilerStep#*", &sc, e);
**        after relate, while the calls and relations are held: each event's host point (its
**        own start on a CPU operator plane; the start of its launching runtime call, through
**        its supported relation, otherwise) and the steps: the annotation ranges whose name
**        matches the pattern, the outermost of each thread, in (db_idx, start) order
**   tl_scope_partition(&sc, anchors.event, anchors.n, &part, e);
**        the step of each anchor, the anchor_partition of tl_forest_constraints (a stretch
**        of anchors outside every step is a partition of its own); *part NULL when the
**        trace has no step
**   tl_scope_hints(&sc, &anchors, &hints, e);
**        how many scopes begin at each anchor: where a Repeat's iterations should begin
**   tl_scope_names(&sc, &trace, &anchors, &forest, &names, e);
**        after recovery: per tree, per node, the name that encloses each of its iterations
**   tl_scope_publish(db, &sc, &trace, &anchors, e);
**        traceloom_profiler_step, inside the publication savepoint
**   tl_scope_names_free(names, ntrees), tl_scopes_free(&sc);
**
** Containment is by time within one thread: host ranges of one thread nest, and a range
** holds what starts in [start, end) on its thread. A device event reaches a thread only
** through the runtime call that launched it (provider identity), never by its own time.
*/
#ifndef TL_SCOPE_H
#define TL_SCOPE_H

#include "util/err.h"
#include "util/vec.h"
#include "util/sqlite_api.h"
#include "trace/trace.h"
#include "relate/relate.h"
#include "anchor/anchors.h"
#include "recover/recover.h"
#include "structure/structure.h"

#define TL_SCOPE_NONE UINT32_MAX

/* The default step marker pattern (option step_markers; fnmatch syntax). */
#define TL_SCOPE_DEFAULT_STEPS "ProfilerStep#*"

typedef struct tl_scope_thread {
  uint16_t db_idx;
  int64_t global_tid;
} tl_scope_thread;

/* One step: a partition of the structure, from its marker's start to the next marker of its
** thread (never past the range enclosing the marker, never short of the marker's end). */
typedef struct tl_step {
  int64_t start_ns, end_ns;
  int64_t marker_end_ns; /* the marker range's own end */
  int64_t ordinal;  /* the number the name ends with (ProfilerStep#7: 7), TL_ABSENT if none */
  uint32_t name;    /* strpool id */
  uint32_t thread;  /* index into tl_scopes.threads */
  uint16_t db_idx;
} tl_step;

typedef struct tl_scopes {
  tl_host_scope *v;      /* the trace's scopes by (thread, start, end descending): outer first */
  uint32_t *thread_of;   /* per scope of v: its thread */
  size_t n;
  TL_VEC(tl_scope_thread) threads; /* by (db_idx, global_tid) */
  size_t nevents;        /* the trace's events (derived events have no host point) */
  int64_t *host_ns;      /* per event: its host point, when host_thread is not TL_SCOPE_NONE */
  uint32_t *host_thread;
  TL_VEC(tl_step) steps; /* by (db_idx, start, thread); step k is partition k */
  uint32_t *event_step;  /* per event: its step, TL_SCOPE_NONE outside; NULL without steps */
  char *pattern;         /* the step marker pattern; "" = no steps */
} tl_scopes;

int tl_scope_link(const tl_trace *t, const tl_relations *rel, const char *pattern, tl_scopes *sc,
                  tl_err *e);
int tl_scope_partition(const tl_scopes *sc, const uint32_t *anchor_event, size_t n,
                       uint32_t **out, tl_err *e);
/* The scopes that begin at each anchor (their first anchor on their thread), with how many
** anchors each spans (first to last on its thread) and its weight (a module or an
** annotation 4096, a Python function 1): the anchor_hint of tl_forest_constraints, as
** tl_recover_hints over all anchors. Empty (off NULL) when the trace has no scope. */
typedef struct tl_scope_hint_table {
  uint32_t *off, *span, *weight;
  tl_recover_hints h; /* the three arrays, for recovery */
} tl_scope_hint_table;
int tl_scope_hints(const tl_scopes *sc, const tl_anchors *a, tl_scope_hint_table *out, tl_err *e);
void tl_scope_hints_free(tl_scope_hint_table *t);
/* (*names)[k][node]: the strpool id of the name of node `node` of forest tree k, 0 = none.
** Names are interned into the trace's pool ("LlamaDecoderLayer", "ProfilerStep"). */
int tl_scope_names(const tl_scopes *sc, const tl_trace *t, const tl_anchors *a,
                   const tl_forest *f, uint32_t ***names, tl_err *e);
void tl_scope_names_free(uint32_t **names, size_t ntrees);
int tl_scope_publish(sqlite3 *db, const tl_scopes *sc, const tl_trace *t, const tl_anchors *a,
                     tl_err *e);
void tl_scopes_free(tl_scopes *sc);

#endif
