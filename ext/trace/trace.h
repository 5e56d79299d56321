/*
** trace.h: the in-memory trace every analysis stage works on.
**
** Struct of arrays, one entry per normalized device event (in reader order, so index i
** is event-<i>) and per host runtime call (index i is runtime-call-<i+1>... see
** tl_call_public_id). Strings are interned ids into one tl_strpool. The repeated part of
** an event's identity (kind and its seven name fields) is interned once as a "label",
** so millions of events share a few thousand labels and stages that classify by name
** (roles, symbols) work per label rather than per event.
**
** Loading (tl_trace_load) is the only place that calls the source cursors and fills the
** trace; later stages read these arrays and add their own. Events a later stage derives
** (the launch anchors of exact graph replays) are a tl_derived of that stage, numbered
** after the trace's events (tl_derived below): the trace never changes once read.
*/
#ifndef TL_TRACE_H
#define TL_TRACE_H

#include "traceloom.h"
#include "util/err.h"
#include "util/strpool.h"
#include "util/vec.h"
#include "util/i64map.h"
#include "util/i64col.h"
#include "source/source.h"

/* The identity part of an event, shared by many events. */
typedef struct tl_label {
  uint8_t kind; /* tl_kind */
  uint32_t name, op_name, op_type, task_type, compute_task_type, comm_name, comm_task_type;
} tl_label;

/* (source_id, source_table) pairs: events name their provenance by a small index. */
typedef struct tl_source_ref {
  int source_id;
  uint32_t table; /* strpool id of the table name */
} tl_source_ref;
typedef TL_VEC(tl_source_ref) tl_source_refs;

/* Provider ids are tl_i64col columns (i64col.h) with base TL_ABSENT: read them with
** tl_i64col_get; a column no source fills costs nothing, one whose values fit 32 bits
** costs 4 bytes per row. */
_Static_assert(TL_ABSENT == TL_I64COL_ABSENT, "absent ids read back as TL_ABSENT");

/* The (source, table) of the last row added, and its source_ref index. */
typedef struct tl_source_cache {
  const char *table;
  int source_id;
  uint16_t ref;
} tl_source_cache;

/* An event's end is its start plus a 4-byte duration (tl_events_end); the rare duration
** outside [0, TL_DUR_LONG) -- a kernel over 4.29 s, a negative span a reader kept -- reads
** from an overflow map by event index, so ends read back exactly. */
#define TL_DUR_LONG UINT32_MAX

/* Where an event ran and came from: its device, stream, input and provenance pair (a few
** hundred distinct places over millions of events). An event keeps the index of its place
** (4 bytes) instead of these 12 bytes; read them with tl_events_device_id() and siblings. */
typedef struct tl_event_place {
  uint32_t device_id, stream_id;
  uint16_t db_idx, source_ref;
} tl_event_place;

typedef struct tl_events {
  size_t n, cap;
  int64_t *start_ns;
  uint32_t *dur_ns;   /* end - start, TL_DUR_LONG: see long_dur */
  tl_i64map long_dur; /* event index -> end - start (as uint64 bits) for TL_DUR_LONG */
  tl_i64col source_rowid;
  tl_i64col task_id, global_task_id, correlation_id, context_id, model_id;
  tl_i64col graph_node_id, op_id;
  uint32_t *label;
  uint32_t *place;                /* index into places */
  TL_VEC(tl_event_place) places;  /* in order of first appearance */
  uint32_t *place_slots;          /* open-addressing table of place index + 1 */
  size_t place_nslots;
} tl_events;

/* What a profile repeats on every call of a thread: its provenance, API type and thread
** ids (a handful of distinct values over millions of calls). A call keeps the index of its
** shape (4 bytes) instead of the 22 bytes of these columns. */
typedef struct tl_call_shape {
  int64_t process_id, thread_id, global_tid; /* TL_ABSENT when the source has none */
  uint32_t api_type;
  uint16_t source_ref;
} tl_call_shape;

typedef struct tl_calls {
  size_t n, cap;
  int64_t *start_ns, *end_ns;
  tl_i64col source_rowid;
  tl_i64col context_id, device_id, correlation_id;
  uint32_t *api_name;
  uint32_t *shape;              /* index into shapes (tl_call_shape_of) */
  uint8_t *provider;
  uint16_t *db_idx;
  TL_VEC(tl_call_shape) shapes; /* in order of first appearance */
  uint32_t *shape_slots;        /* open-addressing table of shape index + 1 */
  size_t shape_nslots;
} tl_calls;

typedef struct tl_trace {
  tl_profile *profile;          /* borrowed */
  tl_strpool *pool;             /* owned */
  TL_VEC(tl_label) labels;
  tl_source_refs source_refs;
  tl_events ev;
  tl_calls calls;
  int64_t dropped_event_rows;   /* source rows skipped by documented rules */
  int64_t dropped_call_rows;
  int calls_beside;             /* some calls were read on a second thread (its malloc arena) */
  uint32_t *label_slots;        /* open-addressing table of label index + 1 */
  size_t label_nslots;
  /* provenance caches of tl_trace_add_event / _add_call: rows come in runs of one table */
  tl_source_cache event_source, call_source;
  /* Host scopes of every input (source.h: Kineto annotation, module and Python ranges), in
  ** the order read; and per input, the thread whose host operators are its events (a CPU
  ** operator plane), TL_ABSENT otherwise. Filled by tl_trace_load only. */
  TL_VEC(tl_host_scope) scopes;
  int64_t *plane_tid;
} tl_trace;

/* Reads every event, call and host scope of a discovered profile. progress (may be NULL) is called
** every 2^16 rows with the number read so far; a non-zero return stops the load with
** "interrupted". */
typedef int (*tl_progress_fn)(void *ctx, const char *stage, int64_t done);
int tl_trace_load(tl_profile *profile, tl_trace *t, tl_progress_fn progress, void *ctx,
                  tl_err *e);
/* The same; with threads >= 2 an input's runtime calls may be read on a second thread while
** this one reads its events (source.h, tl_row_sink.beside_begin): the same trace, id for id. */
int tl_trace_load_threads(tl_profile *profile, tl_trace *t, int threads, tl_progress_fn progress,
                          void *ctx, tl_err *e);
void tl_trace_free(tl_trace *t);
/* Frees the runtime calls' columns once nothing reads them any more (after publication of
** the calls and relations); calls.n stays, for the counts. */
void tl_trace_release_calls(tl_trace *t);
/* Frees the event columns only traceloom_event_core needs (provider ids and the source
** rowid) once it is written; times, labels, streams and places stay. */
void tl_trace_release_event_ids(tl_trace *t);
/* The index of label l among the trace's labels, UINT32_MAX when it has none equal. */
uint32_t tl_trace_find_label(const tl_trace *t, const tl_label *l);
/* An empty trace over profile (which may be NULL in tests); then add rows one by one. */
int tl_trace_init(tl_trace *t, tl_profile *profile, tl_err *e);
/* Appends one normalized event (strings are ids of t->pool). 0, or -1 on out-of-memory. */
int tl_trace_add_event(tl_trace *t, const tl_event_row *r);
/* Appends one host runtime call (strings are ids of t->pool). 0, or -1 on out-of-memory. */
int tl_trace_add_call(tl_trace *t, const tl_call_row *r);

/* ---------------------------------------------------------------- derived events */

/* Events a later stage derives from the trace's (ext/replay: one launch anchor per promoted
** graph launch), numbered after the trace's own: event number t->ev.n + k is derived event
** k. Their labels and provenance pairs continue the trace's numbering the same way (label
** index t->labels.n + j is labels.v[j]; a derived event whose label the trace already has
** uses the trace's index). Stages that index events by number read both through the
** tl_event_*() accessors below, with d NULL when there are none. */
typedef struct tl_derived {
  tl_events ev;
  TL_VEC(tl_label) labels;
  TL_VEC(tl_source_ref) source_refs;
} tl_derived;

void tl_derived_init(tl_derived *d);
/* Appends a derived event (strings are ids of t->pool; source_table is interned there, the
** one thing a derived event adds to the trace's shared string pool). -1 on out-of-memory. */
int tl_derived_add(tl_derived *d, const tl_trace *t, const tl_event_row *r);
void tl_derived_free(tl_derived *d);

static inline size_t tl_event_count(const tl_trace *t, const tl_derived *d) {
  return t->ev.n + (d ? d->ev.n : 0);
}
/* The stored key of event i (traceloom_event_core.event_n, event-<n>): a trace event's is
** its number; derived event k's is -1 - k. A derived launch event is its launch anchor's
** interval, not an event of the profile: the published events are those with a key >= 0
** (traceloom_event), and the numbers after the trace's are the replay units' events, as the
** reference numbers them (ext/replay/publish_replay.c). */
static inline int64_t tl_event_stored_n(const tl_trace *t, size_t i) {
  return i < t->ev.n ? (int64_t)i : -1 - (int64_t)(i - t->ev.n);
}
/* The end of event i of block v (start plus duration, exactly). */
static inline int64_t tl_events_end(const tl_events *v, size_t i) {
  uint64_t d = v->dur_ns[i];
  if (d == TL_DUR_LONG) d = (uint64_t)*tl_i64map_get(&v->long_dur, (int64_t)i);
  return (int64_t)((uint64_t)v->start_ns[i] + d);
}

/* The place of event i of block v, and its fields. */
static inline const tl_event_place *tl_events_place(const tl_events *v, size_t i) {
  return &v->places.v[v->place[i]];
}
static inline uint32_t tl_events_device_id(const tl_events *v, size_t i) {
  return tl_events_place(v, i)->device_id;
}
static inline uint32_t tl_events_stream_id(const tl_events *v, size_t i) {
  return tl_events_place(v, i)->stream_id;
}
static inline uint16_t tl_events_db_idx(const tl_events *v, size_t i) {
  return tl_events_place(v, i)->db_idx;
}
static inline uint16_t tl_events_source_ref(const tl_events *v, size_t i) {
  return tl_events_place(v, i)->source_ref;
}

/* The column block holding event *i, and *i made an index into it. */
static inline const tl_events *tl_events_of(const tl_trace *t, const tl_derived *d, size_t *i) {
  if (*i < t->ev.n) return &t->ev;
  *i -= t->ev.n;
  return &d->ev;
}
static inline const tl_label *tl_label_at(const tl_trace *t, const tl_derived *d, uint32_t l) {
  return l < t->labels.n ? &t->labels.v[l] : &d->labels.v[l - t->labels.n];
}
static inline const tl_source_ref *tl_source_ref_at(const tl_trace *t, const tl_derived *d,
                                                    uint16_t r) {
  return r < t->source_refs.n ? &t->source_refs.v[r] : &d->source_refs.v[r - t->source_refs.n];
}
static inline int64_t tl_event_start(const tl_trace *t, const tl_derived *d, size_t i) {
  return i < t->ev.n ? t->ev.start_ns[i] : d->ev.start_ns[i - t->ev.n];
}
static inline int64_t tl_event_end(const tl_trace *t, const tl_derived *d, size_t i) {
  return i < t->ev.n ? tl_events_end(&t->ev, i) : tl_events_end(&d->ev, i - t->ev.n);
}
static inline int64_t tl_event_correlation(const tl_trace *t, const tl_derived *d, size_t i) {
  return i < t->ev.n ? tl_i64col_get(&t->ev.correlation_id, i)
                     : tl_i64col_get(&d->ev.correlation_id, i - t->ev.n);
}
static inline uint32_t tl_event_label_index(const tl_trace *t, const tl_derived *d, size_t i) {
  return i < t->ev.n ? t->ev.label[i] : d->ev.label[i - t->ev.n];
}
static inline const tl_label *tl_event_label_of(const tl_trace *t, const tl_derived *d,
                                                size_t i) {
  return tl_label_at(t, d, tl_event_label_index(t, d, i));
}

/* The label an event is shown by: the operator, else the collective, else the raw name. */
static inline uint32_t tl_label_display(const tl_label *l) {
  return l->op_name ? l->op_name : l->comm_name ? l->comm_name : l->name;
}

static inline const tl_label *tl_event_label(const tl_trace *t, size_t i) {
  return &t->labels.v[t->ev.label[i]];
}
static inline const char *tl_str(const tl_trace *t, uint32_t id) {
  return tl_strpool_str(t->pool, id);
}
/* The shape of call i: its source_ref, api_type, process, thread and global thread ids. */
static inline const tl_call_shape *tl_call_shape_of(const tl_trace *t, size_t i) {
  return &t->calls.shapes.v[t->calls.shape[i]];
}

/* Source path / table of an event or call provenance index. */
const char *tl_trace_source_path(const tl_trace *t, uint16_t source_ref);
const char *tl_trace_source_table(const tl_trace *t, uint16_t source_ref);

#endif
