/*
** facts.c: the trace's own facts, written by the publication (see publish.h): runtime calls
** and their relations to device work, events (with what classification and anchor selection
** decided per event), the inventory of the profile and the metadata of the analysis.
**
** The three large ones are core-and-shape tables (docs/ARCHITECTURE.md, Publication): the
** text of a row is interned once per distinct combination (shape_pass), and the integers go
** in with one INSERT ... SELECT from traceloom_rows (rows.h); every table's columns are a
** static descriptor array next to the enum its fill or bind function indexes.
*/
#include "publish/publish.h"
#include "publish/rows.h"
#include "util/timing.h"
#include "publish/shapes.h"
#include "util/buf.h"
#include "util/sort.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ tables */

/* The event words of the reference TraceLoom 0.1.4 (docs/PARITY.md), so that SQL written
** against its traceloom_event reads the same values here. They are derived from the label at
** publication only: classification, anchors and recovery read the label itself (tl_label),
** and `kind` keeps the finer normalized kind (inputs.md 9.1) these words fold together. */
typedef struct event_words {
  const char *family;                     /* category, role and family alike */
  uint32_t label, op_type, compute_task_type;
} event_words;

static int str_is(const tl_strpool *pool, uint32_t id, const char *s) {
  return id != TL_STR_NONE && strcmp(tl_strpool_str(pool, id), s) == 0;
}

static int str_ends(const tl_strpool *pool, uint32_t id, const char *suffix) {
  if (id == TL_STR_NONE) return 0;
  size_t n = tl_strpool_len(pool, id), k = strlen(suffix);
  return n >= k && memcmp(tl_strpool_str(pool, id) + n - k, suffix, k) == 0;
}

static event_words event_words_of(const tl_label *l, tl_provider provider, const tl_strpool *pool) {
  event_words w = {.op_type = l->op_type, .compute_task_type = l->compute_task_type};
  int cuda_aux = provider == TL_PROVIDER_CUDA && str_ends(pool, l->task_type, "_AUX");
  /* A communication-op envelope's operation type is communication identity, published as
  ** comm_task_type; op_type is compute identity (inputs.md 9.1), which it has none of. */
  if (str_is(pool, l->task_type, "COMMUNICATION_OP")) w.op_type = TL_STR_NONE;
  /* CUDA and Hygon have no compute task type of their own: the reference repeats the task
  ** type there. */
  if (provider == TL_PROVIDER_CUDA || provider == TL_PROVIDER_HYGON)
    if (w.compute_task_type == TL_STR_NONE) w.compute_task_type = l->task_type;
  /* The label is the operator's short name: the collective, else the compute identity
  ** (MatMulV2, not the full aclnnMm_MatMulCommon_MatMulV2 of op_name), else for a CUDA
  ** auxiliary row (a copy, fill, sync or event: no operator) its task type, else the raw name.
  ** op_type itself stays compute identity (NULL for a copy), which replay identities and the
  ** observed symbol's source read. */
  w.label = l->comm_name != TL_STR_NONE ? l->comm_name
            : w.op_type != TL_STR_NONE  ? w.op_type
            : cuda_aux                  ? l->task_type
                                        : l->name;
  /* The role family: comm for communication, aux for a CUDA auxiliary row (task type
  ** ..._AUX: copies, fills, syncs, events, helper kernels), comm for a Hygon copy (the
  ** reference's word), compute for the rest, every Ascend task (NOTIFY_*, MODEL_EXECUTE,
  ** MEMCPY_ASYNC) included. */
  if (l->kind == TL_KIND_COMMUNICATION) w.family = "comm";
  else if (cuda_aux) w.family = "aux";
  else if (provider == TL_PROVIDER_HYGON && l->kind == TL_KIND_DATA_MOVE) w.family = "comm";
  else w.family = "compute";
  return w;
}


/* The shape pass before a bulk insert: the shape key of each of n rows, interned, and each
** shape met for the first time written into `table` (columns[0] is the shape id, the rest
** bound by bind, parameter TL_PARAM(k) for column k). Returns the shape id of every row
** (free() it), or NULL with e set. */
#define SHAPE_KEY_MAX 12
typedef struct shape_pass {
  size_t n;
  int width; /* words of key, at most SHAPE_KEY_MAX */
  const char *table;
  const tl_rows_column *columns;
  int ncols;
  void (*key)(const void *ctx, size_t i, uint64_t *key);
  void (*bind)(const void *ctx, sqlite3_stmt *st, size_t i);
  const void *ctx;
} shape_pass;

/* The pass itself into `shapes` (initialized by the caller); shape_of: each row's id, or NULL
** where the rows look their shape up again (tl_shapes_intern of a known key). */
static int intern_shapes(sqlite3 *db, const shape_pass *p, tl_shapes *shapes, uint32_t *shape_of,
                         tl_err *e) {
  sqlite3_stmt *st;
  if (tl_rows_prepare(db, "INSERT", p->table, p->columns, p->ncols, &st, e)) return TL_ERROR;
  int rc = TL_OK;
  uint64_t key[SHAPE_KEY_MAX];
  for (size_t i = 0; i < p->n && rc == TL_OK; i++) {
    p->key(p->ctx, i, key);
    int fresh;
    int64_t id = tl_shapes_intern(shapes, key, &fresh);
    if (id < 0) {
      rc = tl_nomem(e);
      break;
    }
    if (fresh) {
      sqlite3_bind_int64(st, TL_PARAM(0), id);
      p->bind(p->ctx, st, i);
      rc = tl_pub_step(db, st, p->table, e);
    }
    if (shape_of) shape_of[i] = (uint32_t)id;
  }
  sqlite3_finalize(st);
  return rc;
}

static uint32_t *assign_shapes(sqlite3 *db, const shape_pass *p, tl_err *e) {
  uint32_t *shape_of = malloc((p->n ? p->n : 1) * sizeof *shape_of);
  if (!shape_of) return tl_nomem(e), NULL;
  tl_shapes shapes;
  tl_shapes_init(&shapes, (size_t)p->width);
  int rc = intern_shapes(db, p, &shapes, shape_of, e);
  tl_shapes_free(&shapes);
  if (rc != TL_OK) {
    free(shape_of);
    return NULL;
  }
  return shape_of;
}

/* The text columns of event i, stored once per distinct combination (traceloom_event_shape). */
enum {
  ES_ID, ES_SOURCE_TABLE, ES_KIND, ES_CATEGORY, ES_ROLE, ES_SEMANTIC_ROLE, ES_SEMANTIC_REASON,
  ES_SYMBOL, ES_ROLE_CLASS, ES_LABEL, ES_RAW_LABEL, ES_OP_NAME, ES_OP_TYPE, ES_COMPUTE_TASK_TYPE,
  ES_COMM_NAME, ES_COMM_TASK_TYPE, ES_FAMILY, ES_TASK_TYPE, ES_SOURCE_ID, ES_CONTEXT, ES_MODEL,
  ES_GRAPH_NODE, ES_NCOLS
};
static const tl_rows_column event_shape_columns[ES_NCOLS] = {
    [ES_ID] = {"shape_id", 0},
    [ES_SOURCE_TABLE] = {"source_table", 1},
    [ES_KIND] = {"kind", 1},
    [ES_CATEGORY] = {"category", 1},
    [ES_ROLE] = {"role", 1},
    [ES_SEMANTIC_ROLE] = {"semantic_role", 1},
    [ES_SEMANTIC_REASON] = {"semantic_role_reason", 1},
    [ES_SYMBOL] = {"symbol", 1},
    [ES_ROLE_CLASS] = {"role_class_id", 0},
    [ES_LABEL] = {"label", 1},
    [ES_RAW_LABEL] = {"raw_label", 1},
    [ES_OP_NAME] = {"op_name", 1},
    [ES_OP_TYPE] = {"op_type", 1},
    [ES_COMPUTE_TASK_TYPE] = {"compute_task_type", 1},
    [ES_COMM_NAME] = {"comm_name", 1},
    [ES_COMM_TASK_TYPE] = {"comm_task_type", 1},
    [ES_FAMILY] = {"family", 1},
    [ES_TASK_TYPE] = {"task_type", 1},
    [ES_SOURCE_ID] = {"source_id", 0},
    [ES_CONTEXT] = {"context_id", 0},
    [ES_MODEL] = {"model_id", 0},
    [ES_GRAPH_NODE] = {"graph_node_id", 0},
};

/* The provider ids an event's shape holds (see traceloom_event_shape): its column, and the
** events' column it comes from. */
static const struct {
  int col;
  size_t field; /* offsetof a tl_i64col of tl_events */
} event_shape_ids[] = {
    {ES_CONTEXT, offsetof(tl_events, context_id)},
    {ES_MODEL, offsetof(tl_events, model_id)},
    {ES_GRAPH_NODE, offsetof(tl_events, graph_node_id)},
};
#define EVENT_SHAPE_IDS (int)(sizeof event_shape_ids / sizeof *event_shape_ids)

static int64_t event_shape_id(const tl_events *ev, size_t j, int k) {
  return tl_i64col_get((const tl_i64col *)((const char *)ev + event_shape_ids[k].field), j);
}

static void bind_event_shape(const void *ctx, sqlite3_stmt *st, size_t i) {
  const tl_event_input *in = ctx;
  const tl_trace *t = in->trace;
  const tl_derived *d = in->derived;
  size_t j = i;
  const tl_events *ev = tl_events_of(t, d, &j);
  const tl_label *l = tl_label_at(t, d, ev->label[j]);
  const tl_source_ref *ref = tl_source_ref_at(t, d, tl_events_source_ref(ev, j));
  sqlite3_bind_int64(st, TL_PARAM(ES_SOURCE_ID), ref->source_id);
  tl_bind_str(st, TL_PARAM(ES_SOURCE_TABLE), t->pool, ref->table);
  const tl_family_def *family = t->profile->inputs.v[tl_events_db_idx(ev, j)].family;
  event_words w = event_words_of(l, tl_family_provider(family), t->pool);
  sqlite3_bind_text(st, TL_PARAM(ES_KIND), tl_kind_name((tl_kind)l->kind), -1, SQLITE_STATIC);
  sqlite3_bind_text(st, TL_PARAM(ES_CATEGORY), w.family, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, TL_PARAM(ES_ROLE), w.family, -1, SQLITE_STATIC);
  /* Role strings are static literals: bound without a copy. */
  const char *role = in->semantic ? in->semantic_role_name[in->semantic[i]] : NULL;
  const char *reason = in->semantic ? in->semantic_reason_name[in->semantic[i]] : NULL;
  if (role) sqlite3_bind_text(st, TL_PARAM(ES_SEMANTIC_ROLE), role, -1, SQLITE_STATIC);
  else sqlite3_bind_null(st, TL_PARAM(ES_SEMANTIC_ROLE));
  if (reason) sqlite3_bind_text(st, TL_PARAM(ES_SEMANTIC_REASON), reason, -1, SQLITE_STATIC);
  else sqlite3_bind_null(st, TL_PARAM(ES_SEMANTIC_REASON));
  if (in->symbol) tl_bind_str(st, TL_PARAM(ES_SYMBOL), t->pool, in->symbol[i]);
  else sqlite3_bind_null(st, TL_PARAM(ES_SYMBOL));
  if (in->role_class) sqlite3_bind_int64(st, TL_PARAM(ES_ROLE_CLASS), in->role_class[i]);
  else sqlite3_bind_null(st, TL_PARAM(ES_ROLE_CLASS));
  tl_bind_str(st, TL_PARAM(ES_LABEL), t->pool, w.label);
  tl_bind_str(st, TL_PARAM(ES_RAW_LABEL), t->pool, l->name);
  tl_bind_str(st, TL_PARAM(ES_OP_NAME), t->pool, l->op_name);
  tl_bind_str(st, TL_PARAM(ES_OP_TYPE), t->pool, w.op_type);
  tl_bind_str(st, TL_PARAM(ES_COMPUTE_TASK_TYPE), t->pool, w.compute_task_type);
  tl_bind_str(st, TL_PARAM(ES_COMM_NAME), t->pool, l->comm_name);
  tl_bind_str(st, TL_PARAM(ES_COMM_TASK_TYPE), t->pool, l->comm_task_type);
  sqlite3_bind_text(st, TL_PARAM(ES_FAMILY), w.family, -1, SQLITE_STATIC);
  tl_bind_str(st, TL_PARAM(ES_TASK_TYPE), t->pool, l->task_type);
  for (int k = 0; k < EVENT_SHAPE_IDS; k++) {
    int64_t id = event_shape_id(ev, j, k);
    if (id == TL_ABSENT) sqlite3_bind_null(st, TL_PARAM(event_shape_ids[k].col));
    else sqlite3_bind_int64(st, TL_PARAM(event_shape_ids[k].col), id);
  }
}

/* Everything the event shape row is a function of (see bind_event_shape). */
static void event_shape_key(const void *ctx, size_t i, uint64_t *key) {
  const tl_event_input *in = ctx;
  const tl_trace *t = in->trace;
  size_t j = i;
  const tl_events *ev = tl_events_of(t, in->derived, &j);
  key[0] = ev->label[j];
  key[1] = tl_events_source_ref(ev, j);
  key[2] = (uint64_t)(uintptr_t)t->profile->inputs.v[tl_events_db_idx(ev, j)].family;
  key[3] = in->symbol ? in->symbol[i] : TL_STR_NONE;
  key[4] = in->semantic ? (uint64_t)in->semantic[i] + 1 : 0; /* names role and reason */
  key[5] = 0;
  key[6] = in->role_class ? (uint64_t)in->role_class[i] + 1 : 0;
  for (int k = 0; k < EVENT_SHAPE_IDS; k++) key[7 + k] = (uint64_t)event_shape_id(ev, j, k);
}

/* The integer columns of event i, for the bulk insert (rows.h). */
typedef struct event_rows {
  const tl_trace *t;
  const tl_derived *d;
  const uint32_t *shape_id;
  const int32_t *relation;     /* per trace event: its relation_n (event_relations), or -1 */
  size_t ncall;                /* events relation covers (the trace's; derived ones after) */
  const int32_t *anchor;       /* per event: its anchor_n, or -1 (4 bytes an event) */
  size_t first;                /* event_n of the producer's row 0 (a range of the events) */
} event_rows;

static void opt_i64(int64_t *v, unsigned char *null, int k, int64_t x, int64_t absent) {
  null[k] = x == absent;
  v[k] = x;
}

enum {
  EV_N, EV_DB, EV_DEVICE, EV_STREAM, EV_START, EV_DUR, EV_SHAPE, EV_TASK,
  EV_GLOBAL_TASK, EV_CORRELATION, EV_OP, EV_RELATION, EV_ANCHOR, EV_NCOLS
};
static const tl_rows_column event_columns[EV_NCOLS] = {
    [EV_N] = {"event_n", 0},          [EV_DB] = {"db_idx", 0},
    [EV_DEVICE] = {"device_id", 0},   [EV_STREAM] = {"stream_id", 0},
    [EV_START] = {"start_ns", 0},
    [EV_DUR] = {"dur_ns", 0},         [EV_SHAPE] = {"shape_id", 0},
    [EV_TASK] = {"task_id", 0},       [EV_GLOBAL_TASK] = {"global_task_id", 0},
    [EV_CORRELATION] = {"correlation_id", 0},
    [EV_OP] = {"op_id", 0},           [EV_RELATION] = {"relation_n", 0},
    [EV_ANCHOR] = {"anchor_n", 0},
};

static int fill_event(void *ctx, size_t row, int64_t *v, unsigned char *null) {
  const event_rows *r = ctx;
  size_t i = r->first + row, j = i;
  const tl_events *ev = tl_events_of(r->t, r->d, &j);
  memset(null, 0, EV_NCOLS);
  v[EV_N] = tl_event_stored_n(r->t, i);
  v[EV_DB] = tl_events_db_idx(ev, j);
  v[EV_DEVICE] = tl_events_device_id(ev, j);
  /* (its source rowid: publish_source_offsets) */
  opt_i64(v, null, EV_STREAM, tl_events_stream_id(ev, j), TL_NO_STREAM);
  v[EV_START] = ev->start_ns[j];
  v[EV_DUR] = tl_events_end(ev, j) - ev->start_ns[j];
  v[EV_SHAPE] = r->shape_id[i];
  opt_i64(v, null, EV_TASK, tl_i64col_get(&ev->task_id, j), TL_ABSENT);
  opt_i64(v, null, EV_GLOBAL_TASK, tl_i64col_get(&ev->global_task_id, j), TL_ABSENT);
  opt_i64(v, null, EV_CORRELATION, tl_i64col_get(&ev->correlation_id, j), TL_ABSENT);
  opt_i64(v, null, EV_OP, tl_i64col_get(&ev->op_id, j), TL_ABSENT);
  /* Relations name the trace's events only: a derived launch event has no launch call. */
  opt_i64(v, null, EV_RELATION, r->relation && i < r->ncall ? r->relation[i] : -1, -1);
  opt_i64(v, null, EV_ANCHOR, r->anchor ? r->anchor[i] : -1, -1);
  return 0;
}

/* The source rowid offsets (sql/schema/10_events.sql, source_key): row k of n, in the order
** of its n, is row i of the shapes' shape_of, has key n and offset `offset` (its source rowid
** minus its index among the rows). A shape whose rows all have one offset stores it
** (shape_table.source_rowid_offset: the rows of one source table are consecutive rows with
** consecutive rowids, one offset, wherever the reader keeps every row, Ascend and Nsight);
** the rows of any other shape (the reader skipped rows between them: Kineto) each store
** their source key, n + offset, in key_table by n. */
typedef void (*source_row_fn)(const void *ctx, size_t k, size_t *i, int64_t *n, int64_t *offset);

static int publish_source_offsets(sqlite3 *db, const char *shape_table, const char *key_table,
                                  const char *key_column, size_t nrows, const uint32_t *shape_of,
                                  source_row_fn row, const void *ctx, tl_err *e) {
  uint32_t nshapes = 0;
  for (size_t i = 0; i < nrows; i++)
    if (shape_of[i] >= nshapes) nshapes = shape_of[i] + 1;
  int64_t *offset = malloc((nshapes ? nshapes : 1) * sizeof *offset);
  unsigned char *state = calloc(nshapes ? nshapes : 1, 1); /* 0 none, 1 one offset, 2 more */
  if (!offset || !state) {
    free(offset), free(state);
    return tl_nomem(e);
  }
  for (size_t k = 0; k < nrows; k++) {
    size_t i;
    int64_t n, off;
    row(ctx, k, &i, &n, &off);
    uint32_t sh = shape_of[i];
    if (!state[sh]) state[sh] = 1, offset[sh] = off;
    else if (offset[sh] != off) state[sh] = 2;
  }
  sqlite3_stmt *upd = NULL, *ins = NULL;
  char *sql = sqlite3_mprintf("UPDATE main.\"%w\" SET source_rowid_offset = ?2 WHERE shape_id = ?1",
                              shape_table);
  int rc = sql ? tl_pub_prepare(db, sql, &upd, e) : tl_nomem(e);
  sqlite3_free(sql);
  if (rc == TL_OK) {
    sql = sqlite3_mprintf("INSERT INTO main.\"%w\"(\"%w\", source_key) VALUES (?1, ?2)",
                          key_table, key_column);
    rc = sql ? tl_pub_prepare(db, sql, &ins, e) : tl_nomem(e);
    sqlite3_free(sql);
  }
  for (uint32_t sh = 0; rc == TL_OK && sh < nshapes; sh++) {
    if (state[sh] != 1) continue;
    sqlite3_bind_int64(upd, 1, sh);
    sqlite3_bind_int64(upd, 2, offset[sh]);
    rc = tl_pub_step(db, upd, shape_table, e);
  }
  for (size_t k = 0; rc == TL_OK && k < nrows; k++) {
    size_t i;
    int64_t n, off;
    row(ctx, k, &i, &n, &off);
    if (state[shape_of[i]] != 2) continue;
    sqlite3_bind_int64(ins, 1, n);
    sqlite3_bind_int64(ins, 2, off + n);
    rc = tl_pub_step(db, ins, key_table, e);
  }
  sqlite3_finalize(upd), sqlite3_finalize(ins);
  free(offset), free(state);
  return rc;
}

/* Event row k in event_n order: the derived rows first (negative event_n, the last derived
** row the most negative: tl_event_stored_n), then the trace's. The offset is the source
** rowid minus the event's index among all (not its event_n: a derived row's source_key is
** that sum, as it always was). */
static void event_source_row(const void *ctx, size_t k, size_t *pi, int64_t *n, int64_t *offset) {
  const tl_event_input *in = ctx;
  const tl_trace *t = in->trace;
  size_t total = tl_event_count(t, in->derived), nderived = total - t->ev.n;
  size_t i = k < nderived ? total - 1 - k : k - nderived, j = i;
  const tl_events *ev = tl_events_of(t, in->derived, &j);
  *pi = i;
  *n = tl_event_stored_n(t, i);
  *offset = tl_i64col_get(&ev->source_rowid, j) - (int64_t)i;
}

static void call_source_row(const void *ctx, size_t k, size_t *i, int64_t *n, int64_t *offset) {
  const tl_calls *ca = ctx;
  *i = k;
  *n = (int64_t)k;
  *offset = tl_i64col_get(&ca->source_rowid, k) - (int64_t)k;
}

/* What every event row reads besides the trace: shape ids and anchors, one per event. */
struct tl_event_rows {
  event_rows ctx;
  size_t n;
  uint32_t *shape_of;
  int32_t *anchor;
};

void tl_event_rows_free(tl_event_rows *r) {
  if (!r) return;
  free(r->shape_of), free(r->anchor);
  free(r);
}

size_t tl_event_rows_count(const tl_event_rows *r) { return r->n; }

const char *const tl_event_tables[] = {"traceloom_event_core", NULL};

int tl_event_rows_prepare(tl_publication *pub, const tl_event_input *in, tl_event_rows **out,
                          tl_err *e) {
  const tl_trace *t = in->trace;
  size_t n = tl_event_count(t, in->derived);
  tl_event_rows *r = calloc(1, sizeof *r);
  *out = r;
  if (!r) return tl_nomem(e);
  r->n = n;
  /* The shapes first (few rows, written as they are met), then the events in one
  ** INSERT ... SELECT per range (rows.h). */
  shape_pass sp = {
      .n = n, .width = 7 + EVENT_SHAPE_IDS, .table = "traceloom_event_shape",
      .columns = event_shape_columns, .ncols = ES_NCOLS,
      .key = event_shape_key, .bind = bind_event_shape, .ctx = in};
  if (!(r->shape_of = assign_shapes(pub->db, &sp, e))) return TL_ERROR;
  if (publish_source_offsets(pub->db, "traceloom_event_shape", "traceloom_event_source_key",
                             "event_n", n, r->shape_of, event_source_row, in, e))
    return TL_ERROR;
  /* The anchor of each event (derived launch events included), from the anchors' events. */
  if (in->anchor_event) {
    if (in->nanchors > INT32_MAX)
      return tl_fail(e, "%zu anchors: more than an event row can number", in->nanchors);
    if (!(r->anchor = malloc((n ? n : 1) * sizeof *r->anchor))) return tl_nomem(e);
    for (size_t i = 0; i < n; i++) r->anchor[i] = -1;
    for (size_t k = 0; k < in->nanchors; k++) r->anchor[in->anchor_event[k]] = (int32_t)k;
  }
  r->ctx = (event_rows){.t = t, .d = in->derived, .shape_id = r->shape_of,
                        .relation = pub->event_relation, .ncall = t->ev.n, .anchor = r->anchor};
  return TL_OK;
}

int tl_event_rows_write(sqlite3 *db, const tl_event_rows *r, size_t lo, size_t hi, tl_err *e) {
  event_rows ctx = r->ctx;
  ctx.first = lo;
  return tl_rows_publish(db, "traceloom_event_core", event_columns, EV_NCOLS, hi - lo, fill_event,
                         NULL, &ctx, e);
}

static const char *call_match_policy(tl_provider p) {
  switch (p) {
    case TL_PROVIDER_ASCEND: return "ascend_connection_id";
    case TL_PROVIDER_CUDA: return "cuda_correlation_id";
    default: return "unsupported";
  }
}

/* Relations are published call-major (sorted by call, then device work; the rows without a
** call last), so the relations of a call are a range of relation_n that the call row
** records: no index on the call is needed to find them. */
/* The relations are published call-major (no call last), so a call's first relation_n is the
** sum of the counts of the calls before it: fill_call adds them up as it goes instead of
** keeping 8 bytes a call (60 MB at 10M rows, at the peak of the analysis). */
typedef struct relation_order {
  uint32_t *order;        /* relation index of each published row */
  uint32_t *count;        /* per call: its relations */
} relation_order;

static void relation_order_free(relation_order *o) {
  free(o->order), free(o->count);
  memset(o, 0, sizeof *o);
}

/* The sort key of relation i: call-major (no call last), then device work (none last). */
static uint64_t relation_key(const tl_relation *r) {
  uint64_t call = r->call >= 0 ? (uint64_t)r->call : (uint64_t)INT32_MAX + 1;
  uint64_t work = r->work >= 0 ? (uint64_t)r->work : UINT32_MAX;
  return call << 32 | work;
}

/* Places the relations by call with one counting pass (stable: index order within a call),
** which is the (call, work) order whenever each call's relations come in work order, as
** tl_relate makes them. Returns 1 when the result is that order, 0 when it is not (the
** caller sorts then), -1 on out-of-memory. Needs no key array: 4 bytes a call beside. */
static int relation_order_count(const tl_runtime_input *in, relation_order *o) {
  size_t n = in->relations->n, nc = in->trace->calls.n;
  const tl_relation *r = in->relations->v;
  uint32_t *next = malloc((nc ? nc : 1) * sizeof *next); /* per call: its next row */
  if (!next) return -1;
  size_t with_call = 0;
  for (size_t i = 0; i < n; i++)
    if (r[i].call >= 0) o->count[r[i].call]++, with_call++;
  size_t at = 0;
  for (size_t c = 0; c < nc; c++) {
    next[c] = (uint32_t)at;
    at += o->count[c];
  }
  size_t tail = with_call;
  for (size_t i = 0; i < n; i++) o->order[r[i].call >= 0 ? next[r[i].call]++ : tail++] = (uint32_t)i;
  free(next);
  for (size_t k = 1; k < n; k++)
    if (relation_key(&r[o->order[k - 1]]) > relation_key(&r[o->order[k]])) return 0;
  return 1;
}

static int relation_order_build(const tl_runtime_input *in, relation_order *o, tl_err *e) {
  size_t n = in->relations->n, nc = in->trace->calls.n;
  const tl_relation *r = in->relations->v;
  memset(o, 0, sizeof *o);
  o->order = malloc((n ? n : 1) * sizeof *o->order);
  o->count = calloc(nc ? nc : 1, sizeof *o->count);
  if (!o->order || !o->count || n > UINT32_MAX) {
    relation_order_free(o);
    return tl_nomem(e);
  }
  int placed = relation_order_count(in, o);
  if (placed == 1) return TL_OK;
  uint64_t *keys = placed == 0 ? malloc((n ? n : 1) * sizeof *keys) : NULL;
  if (!keys) {
    relation_order_free(o);
    return tl_nomem(e);
  }
  /* Not in (call, work) order by calls alone: the stable radix sort of the keys. */
  for (size_t i = 0; i < n; i++) keys[i] = relation_key(&r[i]), o->order[i] = (uint32_t)i;
  int bad = tl_radix_sort_u64(keys, o->order, n);
  free(keys);
  if (bad) {
    relation_order_free(o);
    return tl_nomem(e);
  }
  return TL_OK;
}

/* Per trace event, the relation_n its row records (kept for tl_publish_events): its
** supported relation where it has one, else its first. Only a synchronization event under
** a reused correlation id has more than one (one per candidate call, tl_relate); the others
** are found by their partial index (sql/views/60_host_activity.sql). */
static int event_relations(tl_publication *pub, const tl_runtime_input *in,
                           const relation_order *rel, tl_err *e) {
  size_t nev = in->trace->ev.n;
  const tl_relation *r = in->relations->v;
  pub->event_relation = malloc((nev ? nev : 1) * sizeof *pub->event_relation);
  if (!pub->event_relation) return tl_nomem(e);
  for (size_t i = 0; i < nev; i++) pub->event_relation[i] = -1;
  for (size_t k = 0; k < in->relations->n; k++) {
    const tl_relation *x = &r[rel->order[k]];
    if (x->work < 0 || (size_t)x->work >= nev) continue;
    int supported = x->state == TL_SUPPORTED_EXACT || x->state == TL_SUPPORTED_DETERMINISTIC;
    if (pub->event_relation[x->work] < 0 || supported) pub->event_relation[x->work] = (int32_t)k;
  }
  return TL_OK;
}

/* The integer columns of call i, for the bulk insert. */
typedef struct call_rows {
  const tl_trace *t;
  const uint32_t *shape_id;
  const relation_order *rel;
  int64_t next_relation; /* relation_n of the next call's first relation (rows come in order) */
} call_rows;

enum {
  CA_N, CA_DB, CA_START, CA_DUR, CA_SHAPE, CA_CONTEXT, CA_DEVICE, CA_CORRELATION,
  CA_FIRST_RELATION, CA_RELATIONS, CA_NCOLS
};
static const tl_rows_column call_columns[CA_NCOLS] = {
    [CA_N] = {"call_n", 0},             [CA_DB] = {"db_idx", 0},
    [CA_START] = {"start_ns", 0},
    [CA_DUR] = {"dur_ns", 0},           [CA_SHAPE] = {"shape_id", 0},
    [CA_CONTEXT] = {"context_id", 0},   [CA_DEVICE] = {"device_id", 0},
    [CA_CORRELATION] = {"correlation_id", 0}, [CA_FIRST_RELATION] = {"first_relation_n", 0},
    [CA_RELATIONS] = {"relation_count", 0},
};

static int fill_call(void *ctx, size_t i, int64_t *v, unsigned char *null) {
  call_rows *r = ctx;
  const tl_calls *ca = &r->t->calls;
  memset(null, 0, CA_NCOLS);
  v[CA_N] = (int64_t)i;
  v[CA_DB] = ca->db_idx[i];
  /* (its source rowid: publish_source_offsets) */
  v[CA_START] = ca->start_ns[i];
  v[CA_DUR] = ca->end_ns[i] - ca->start_ns[i];
  v[CA_SHAPE] = r->shape_id[i];
  uint32_t count = r->rel->count[i];
  opt_i64(v, null, CA_FIRST_RELATION, count ? r->next_relation : -1, -1);
  r->next_relation += count;
  v[CA_RELATIONS] = count;
  opt_i64(v, null, CA_CONTEXT, tl_i64col_get(&ca->context_id, i), TL_ABSENT);
  opt_i64(v, null, CA_DEVICE, tl_i64col_get(&ca->device_id, i), TL_ABSENT);
  opt_i64(v, null, CA_CORRELATION, tl_i64col_get(&ca->correlation_id, i), TL_ABSENT);
  return 0;
}

/* A call's shape: its text and the ids of its thread, which a profile repeats on every call
** of the thread (a few distinct values over hundreds of thousands of calls). The trace's call
** shape stands for its source, API type and thread ids (one index per distinct value). */
static void call_shape_key(const void *ctx, size_t i, uint64_t *key) {
  const tl_calls *ca = &((const tl_trace *)ctx)->calls;
  key[0] = ca->provider[i], key[1] = ca->api_name[i], key[2] = ca->shape[i];
}

enum {
  CS_ID, CS_PROVIDER, CS_CLOCK_DOMAIN, CS_SOURCE_TABLE, CS_API_NAME, CS_API_TYPE,
  CS_MATCH_POLICY, CS_SOURCE_ID, CS_PROCESS, CS_THREAD, CS_GLOBAL_TID, CS_NCOLS
};
static const tl_rows_column call_shape_columns[CS_NCOLS] = {
    [CS_ID] = {"shape_id", 0},           [CS_PROVIDER] = {"provider", 1},
    [CS_CLOCK_DOMAIN] = {"clock_domain", 1}, [CS_SOURCE_TABLE] = {"source_table", 1},
    [CS_API_NAME] = {"api_name", 1},     [CS_API_TYPE] = {"api_type", 1},
    [CS_MATCH_POLICY] = {"match_policy", 1}, [CS_SOURCE_ID] = {"source_id", 0},
    [CS_PROCESS] = {"process_id", 0},    [CS_THREAD] = {"thread_id", 0},
    [CS_GLOBAL_TID] = {"global_tid", 0},
};

static void bind_call_shape(const void *ctx, sqlite3_stmt *st, size_t i) {
  const tl_trace *t = ctx;
  const tl_calls *ca = &t->calls;
  const tl_call_shape *cs = tl_call_shape_of(t, i);
  tl_provider prov = (tl_provider)ca->provider[i];
  sqlite3_bind_text(st, TL_PARAM(CS_PROVIDER), tl_provider_name(prov), -1, SQLITE_STATIC);
  sqlite3_bind_text(st, TL_PARAM(CS_CLOCK_DOMAIN),
                    prov == TL_PROVIDER_UNKNOWN ? "unknown" : "profiler_host", -1, SQLITE_STATIC);
  tl_bind_str(st, TL_PARAM(CS_SOURCE_TABLE), t->pool, t->source_refs.v[cs->source_ref].table);
  sqlite3_bind_int64(st, TL_PARAM(CS_SOURCE_ID), t->source_refs.v[cs->source_ref].source_id);
  tl_bind_i64_or_null(st, TL_PARAM(CS_PROCESS), cs->process_id, TL_ABSENT);
  tl_bind_i64_or_null(st, TL_PARAM(CS_THREAD), cs->thread_id, TL_ABSENT);
  tl_bind_i64_or_null(st, TL_PARAM(CS_GLOBAL_TID), cs->global_tid, TL_ABSENT);
  tl_bind_str(st, TL_PARAM(CS_API_NAME), t->pool, ca->api_name[i]);
  tl_bind_str(st, TL_PARAM(CS_API_TYPE), t->pool, cs->api_type);
  sqlite3_bind_text(st, TL_PARAM(CS_MATCH_POLICY), call_match_policy(prov), -1, SQLITE_STATIC);
}

static int publish_calls(sqlite3 *db, const tl_runtime_input *in, const relation_order *rel,
                         tl_err *e) {
  const tl_trace *t = in->trace;
  shape_pass sp = {
      .n = t->calls.n, .width = 3, .table = "traceloom_runtime_call_shape",
      .columns = call_shape_columns, .ncols = CS_NCOLS,
      .key = call_shape_key, .bind = bind_call_shape, .ctx = t};
  uint32_t *shape_of = assign_shapes(db, &sp, e);
  if (!shape_of) return TL_ERROR;
  if (publish_source_offsets(db, "traceloom_runtime_call_shape",
                             "traceloom_runtime_call_source_key", "call_n", t->calls.n, shape_of,
                             call_source_row, &t->calls, e)) {
    free(shape_of);
    return TL_ERROR;
  }
  call_rows ctx = {.t = t, .shape_id = shape_of, .rel = rel};
  int rc = tl_rows_publish(db, "traceloom_runtime_call_core", call_columns, CA_NCOLS, t->calls.n,
                           fill_call, NULL, &ctx, e);
  free(shape_of);
  return rc;
}

/* The integer columns of relation row k (call-major order), for the bulk insert. */
typedef struct relation_rows {
  const tl_runtime_input *in;
  const uint32_t *order;
  tl_shapes *shapes; /* every relation's shape key interned (a handful of shapes) */
} relation_rows;

enum { RE_N, RE_DB, RE_CALL, RE_EVENT, RE_SHAPE, RE_CALLS, RE_WORKS, RE_NCOLS };
static const tl_rows_column relation_columns[RE_NCOLS] = {
    [RE_N] = {"relation_n", 0},       [RE_DB] = {"db_idx", 0},
    [RE_CALL] = {"call_n", 0},        [RE_EVENT] = {"event_n", 0},
    [RE_SHAPE] = {"shape_id", 0},     [RE_CALLS] = {"runtime_candidate_count", 0},
    [RE_WORKS] = {"device_candidate_count", 0},
};

static void relation_shape_key(const void *ctx, size_t i, uint64_t *key);

static int fill_relation(void *ctx, size_t k, int64_t *v, unsigned char *null) {
  const relation_rows *x = ctx;
  uint32_t i = x->order[k];
  const tl_relation *r = &x->in->relations->v[i];
  memset(null, 0, RE_NCOLS);
  v[RE_N] = (int64_t)k;
  v[RE_DB] = r->db_idx;
  opt_i64(v, null, RE_CALL, r->call, -1);
  opt_i64(v, null, RE_EVENT, r->work, -1);
  /* the shape pass interned this key: its id again, no 4-byte id held per relation */
  uint64_t key[4];
  int fresh;
  relation_shape_key(x->in, i, key);
  v[RE_SHAPE] = tl_shapes_intern(x->shapes, key, &fresh);
  v[RE_CALLS] = r->call_candidates;
  v[RE_WORKS] = r->work_candidates;
  return v[RE_SHAPE] > 0 && !fresh ? 0 : -1;
}

/* The four strings of a relation's shape are static literals: their addresses identify them. */
static void relation_shape_key(const void *ctx, size_t i, uint64_t *key) {
  const tl_runtime_input *in = ctx;
  const tl_relation *r = &in->relations->v[i];
  key[0] = (uint64_t)(uintptr_t)tl_relation_match_policy(in->trace, r);
  key[1] = (uint64_t)(uintptr_t)tl_relation_evidence_level(r);
  key[2] = r->state;
  key[3] = (uint64_t)(uintptr_t)tl_relation_cardinality(r);
}

enum { RS_ID, RS_KIND, RS_POLICY, RS_EVIDENCE, RS_STATE, RS_CARDINALITY, RS_NCOLS };
static const tl_rows_column relation_shape_columns[RS_NCOLS] = {
    [RS_ID] = {"shape_id", 0},          [RS_KIND] = {"relation_kind", 1},
    [RS_POLICY] = {"match_policy", 1},  [RS_EVIDENCE] = {"evidence_level", 1},
    [RS_STATE] = {"support_state", 1},  [RS_CARDINALITY] = {"cardinality", 1},
};

static void bind_relation_shape(const void *ctx, sqlite3_stmt *st, size_t i) {
  const tl_runtime_input *in = ctx;
  const tl_relation *r = &in->relations->v[i];
  sqlite3_bind_text(st, TL_PARAM(RS_KIND), "provider_correlation", -1, SQLITE_STATIC);
  sqlite3_bind_text(st, TL_PARAM(RS_POLICY), tl_relation_match_policy(in->trace, r), -1,
                    SQLITE_STATIC);
  sqlite3_bind_text(st, TL_PARAM(RS_EVIDENCE), tl_relation_evidence_level(r), -1, SQLITE_STATIC);
  sqlite3_bind_text(st, TL_PARAM(RS_STATE), tl_support_state_name((tl_support_state)r->state), -1,
                    SQLITE_STATIC);
  sqlite3_bind_text(st, TL_PARAM(RS_CARDINALITY), tl_relation_cardinality(r), -1, SQLITE_STATIC);
}

static int publish_relations(sqlite3 *db, const tl_runtime_input *in, const relation_order *rel,
                             tl_err *e) {
  size_t n = in->relations->n;
  shape_pass sp = {
      .n = n, .width = 4, .table = "traceloom_runtime_device_relation_shape",
      .columns = relation_shape_columns, .ncols = RS_NCOLS,
      .key = relation_shape_key, .bind = bind_relation_shape, .ctx = in};
  tl_shapes shapes;
  tl_shapes_init(&shapes, 4);
  int rc = intern_shapes(db, &sp, &shapes, NULL, e);
  relation_rows ctx = {.in = in, .order = rel->order, .shapes = &shapes};
  if (rc == TL_OK)
    rc = tl_rows_publish(db, "traceloom_runtime_device_relation_core", relation_columns,
                         RE_NCOLS, n, fill_relation, NULL, &ctx, e);
  tl_shapes_free(&shapes);
  return rc;
}

static const char *file_role(tl_file_role r) {
  switch (r) {
    case TL_FILE_PRIMARY: return "primary";
    case TL_FILE_SPLIT_PART: return "split_part";
    default: return "companion";
  }
}

/* The inventory's four tables, as column descriptors (rows.h). */
enum {
  IN_DB, IN_KIND, IN_PROVIDER, IN_PATH, IN_STREAM_PATH, IN_STREAM_STATUS, IN_STREAM_DETAIL,
  IN_EVENTS, IN_CALLS, IN_NCOLS
};
static const tl_rows_column input_columns[IN_NCOLS] = {
    [IN_DB] = {"db_idx", 0},
    [IN_KIND] = {"source_kind", 1},
    [IN_PROVIDER] = {"provider", 1},
    [IN_PATH] = {"path", 1},
    [IN_STREAM_PATH] = {"stream_info_path", 1},
    [IN_STREAM_STATUS] = {"stream_info_status", 1},
    [IN_STREAM_DETAIL] = {"stream_info_detail", 1},
    [IN_EVENTS] = {"event_count", 0},
    [IN_CALLS] = {"runtime_call_count", 0},
};

enum { SF_ID, SF_ORDINAL, SF_PATH, SF_MODE, SF_SIZE, SF_SHA256, SF_DB, SF_ROLE, SF_NCOLS };
static const tl_rows_column source_file_columns[SF_NCOLS] = {
    [SF_ID] = {"source_id", 0},         [SF_ORDINAL] = {"source_ordinal", 0},
    [SF_PATH] = {"source_path", 1},     [SF_MODE] = {"embedded_mode", 1},
    [SF_SIZE] = {"size_bytes", 0},      [SF_SHA256] = {"sha256", 1},
    [SF_DB] = {"db_idx", 0},            [SF_ROLE] = {"source_role", 1},
};

enum {
  PI_DB, PI_ITEM, PI_KIND, PI_PATH, PI_TABLE, PI_ROWS, PI_CAPABILITY, PI_USABLE, PI_DETAIL,
  PI_NCOLS
};
static const tl_rows_column inventory_columns[PI_NCOLS] = {
    [PI_DB] = {"db_idx", 0},            [PI_ITEM] = {"item", 1},
    [PI_KIND] = {"source_kind", 1},     [PI_PATH] = {"path", 1},
    [PI_TABLE] = {"table_name", 1},     [PI_ROWS] = {"row_count", 0},
    [PI_CAPABILITY] = {"capability", 1}, [PI_USABLE] = {"usable", 0},
    [PI_DETAIL] = {"detail", 1},
};

/* embedded_table_name and source_rowid_column stay NULL: embed.c fills them. */
enum { RT_SOURCE, RT_PATH, RT_TABLE, RT_ROWS, RT_NCOLS };
static const tl_rows_column raw_table_columns[RT_NCOLS] = {
    [RT_SOURCE] = {"source_id", 0},     [RT_PATH] = {"source_path", 1},
    [RT_TABLE] = {"source_table", 1},   [RT_ROWS] = {"row_count", 0},
};

int tl_publish_inventory(sqlite3 *db, const tl_inventory_input *in, tl_err *e) {
  const tl_profile *p = in->profile;
  sqlite3_stmt *st = NULL;
  int rc = tl_rows_prepare(db, "INSERT", "traceloom_input", input_columns, IN_NCOLS, &st, e);
  /* Rows per input, counted here rather than by scanning what was just published. */
  int64_t *counts = calloc(2 * (p->inputs.n ? p->inputs.n : 1), sizeof *counts);
  if (rc == TL_OK && !counts) rc = tl_nomem(e);
  const tl_trace *t = in->trace;
  const tl_derived *d = in->derived;
  for (size_t i = 0; rc == TL_OK && i < tl_event_count(t, d); i++) {
    size_t j = i;
    const tl_events *ej = tl_events_of(t, d, &j);
    uint16_t db = tl_events_db_idx(ej, j);
    if (db < p->inputs.n) counts[2 * db]++;
  }
  for (size_t i = 0; rc == TL_OK && i < t->calls.n; i++)
    if (t->calls.db_idx[i] < p->inputs.n) counts[2 * t->calls.db_idx[i] + 1]++;
  for (size_t i = 0; rc == TL_OK && i < p->inputs.n; i++) {
    const tl_input *inp = &p->inputs.v[i];
    sqlite3_bind_int64(st, TL_PARAM(IN_DB), (int64_t)i);
    sqlite3_bind_text(st, TL_PARAM(IN_KIND), tl_family_source_kind(inp->family), -1,
                      SQLITE_STATIC);
    sqlite3_bind_text(st, TL_PARAM(IN_PROVIDER), tl_provider_name(tl_family_provider(inp->family)),
                      -1, SQLITE_STATIC);
    tl_bind_text(st, TL_PARAM(IN_PATH), inp->path);
    tl_bind_text(st, TL_PARAM(IN_STREAM_PATH), inp->stream_info_path);
    tl_bind_text(st, TL_PARAM(IN_STREAM_STATUS),
                 inp->family->capture_companion ? inp->stream_info_status : NULL);
    tl_bind_text(st, TL_PARAM(IN_STREAM_DETAIL), inp->stream_info_detail);
    sqlite3_bind_int64(st, TL_PARAM(IN_EVENTS), counts[2 * i]);
    sqlite3_bind_int64(st, TL_PARAM(IN_CALLS), counts[2 * i + 1]);
    rc = tl_pub_step(db, st, "traceloom_input", e);
  }
  free(counts);
  sqlite3_finalize(st);
  st = NULL;
  if (rc == TL_OK)
    rc = tl_rows_prepare(db, "INSERT", "traceloom_raw_source_database", source_file_columns,
                         SF_NCOLS, &st, e);
  for (size_t i = 0; rc == TL_OK && i < p->files.n; i++) {
    sqlite3_bind_int64(st, TL_PARAM(SF_ID), (int64_t)i);
    sqlite3_bind_int64(st, TL_PARAM(SF_ORDINAL), (int64_t)i);
    tl_bind_text(st, TL_PARAM(SF_PATH), p->files.v[i].path);
    sqlite3_bind_text(st, TL_PARAM(SF_MODE), "referenced", -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, TL_PARAM(SF_SIZE), in->digests[i].size);
    tl_bind_text(st, TL_PARAM(SF_SHA256), in->digests[i].sha256);
    sqlite3_bind_int(st, TL_PARAM(SF_DB), p->files.v[i].db_idx);
    sqlite3_bind_text(st, TL_PARAM(SF_ROLE), file_role(p->files.v[i].role), -1, SQLITE_STATIC);
    rc = tl_pub_step(db, st, "traceloom_raw_source_database", e);
  }
  sqlite3_finalize(st);
  st = NULL;
  sqlite3_stmt *raw = NULL;
  if (rc == TL_OK)
    rc = tl_rows_prepare(db, "INSERT", "traceloom_profile_inventory", inventory_columns, PI_NCOLS,
                         &st, e);
  if (rc == TL_OK)
    rc = tl_rows_prepare(db, "INSERT OR IGNORE", "traceloom_raw_table", raw_table_columns,
                         RT_NCOLS, &raw, e);
  for (size_t i = 0; rc == TL_OK && i < in->inventory->n; i++) {
    const tl_inventory_row *r = &in->inventory->v[i];
    tl_bind_i64_or_null(st, TL_PARAM(PI_DB), r->db_idx, -1);
    sqlite3_bind_text(st, TL_PARAM(PI_ITEM), r->item, -1, SQLITE_STATIC);
    tl_bind_text(st, TL_PARAM(PI_KIND), r->source_kind);
    tl_bind_text(st, TL_PARAM(PI_PATH), r->path);
    tl_bind_text(st, TL_PARAM(PI_TABLE), r->table_name);
    tl_bind_i64_or_null(st, TL_PARAM(PI_ROWS), r->row_count, -1);
    tl_bind_text(st, TL_PARAM(PI_CAPABILITY), r->capability);
    tl_bind_i64_or_null(st, TL_PARAM(PI_USABLE), r->usable, -1);
    tl_bind_text(st, TL_PARAM(PI_DETAIL), r->detail);
    rc = tl_pub_step(db, st, "traceloom_profile_inventory", e);
    if (rc == TL_OK && strcmp(r->item, "table") == 0 && r->path) {
      for (size_t f = 0; f < p->files.n; f++) {
        if (strcmp(p->files.v[f].path, r->path) != 0) continue;
        sqlite3_bind_int64(raw, TL_PARAM(RT_SOURCE), (int64_t)f);
        tl_bind_text(raw, TL_PARAM(RT_PATH), r->path);
        tl_bind_text(raw, TL_PARAM(RT_TABLE), r->table_name);
        tl_bind_i64_or_null(raw, TL_PARAM(RT_ROWS), r->row_count, -1);
        rc = tl_pub_step(db, raw, "traceloom_raw_table", e);
        break;
      }
    }
  }
  sqlite3_finalize(st);
  sqlite3_finalize(raw);
  return rc;
}

/* ------------------------------------------------------------------ metadata */

static int put_meta(sqlite3_stmt *st, sqlite3 *db, const char *key, const char *value,
                    tl_err *e) {
  sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
  tl_bind_text(st, 2, value);
  return tl_pub_step(db, st, "traceloom_metadata", e);
}

int tl_publish_metadata(sqlite3 *db, const tl_metadata_input *in, tl_err *e) {
  const tl_profile *p = in->profile;
  const tl_trace *t = in->trace;
  sqlite3_stmt *st;
  if (tl_pub_prepare(db, "INSERT OR REPLACE INTO traceloom_metadata(key, value) VALUES (?1, ?2)",
                     &st, e))
    return TL_ERROR;
  /* A single family reports its own kind; mixed inputs list each. */
  tl_buf kind = {0}, paths = {0}, sizes = {0}, hashes = {0}, warnings = {0};
  int mixed = 0;
  for (size_t i = 1; i < p->inputs.n; i++)
    if (p->inputs.v[i].family != p->inputs.v[0].family) mixed = 1;
  if (!mixed) {
    tl_buf_puts(&kind, tl_family_source_kind(p->inputs.v[0].family));
  } else {
    tl_buf_puts(&kind, "[");
    for (size_t i = 0; i < p->inputs.n; i++) {
      if (i) tl_buf_puts(&kind, ",");
      const char *k = tl_family_source_kind(p->inputs.v[i].family);
      tl_buf_json_string(&kind, k, strlen(k));
    }
    tl_buf_puts(&kind, "]");
  }
  tl_buf_puts(&paths, "[");
  for (size_t i = 0; i < p->inputs.n; i++) {
    if (i) tl_buf_puts(&paths, ",");
    tl_buf_json_string(&paths, p->inputs.v[i].path, strlen(p->inputs.v[i].path));
  }
  tl_buf_puts(&paths, "]");
  if (p->files.n == 1) {
    tl_buf_i64(&sizes, in->digests[0].size);
    tl_buf_puts(&hashes, in->digests[0].sha256);
  } else {
    tl_buf_puts(&sizes, "["), tl_buf_puts(&hashes, "[");
    for (size_t i = 0; i < p->files.n; i++) {
      if (i) tl_buf_puts(&sizes, ","), tl_buf_puts(&hashes, ",");
      tl_buf_i64(&sizes, in->digests[i].size);
      tl_buf_json_string(&hashes, in->digests[i].sha256, strlen(in->digests[i].sha256));
    }
    tl_buf_puts(&sizes, "]"), tl_buf_puts(&hashes, "]");
  }
  tl_buf_puts(&warnings, "[");
  for (size_t i = 0; i < p->warnings.n; i++) {
    if (i) tl_buf_puts(&warnings, ",");
    tl_buf_json_string(&warnings, p->warnings.v[i], strlen(p->warnings.v[i]));
  }
  tl_buf_puts(&warnings, "]");
  char n_events[24], n_launch_events[24], n_calls[24], n_rel[24], n_drop_e[24], n_drop_c[24];
  /* event_count counts the reader's events; exact launch anchor events are counted apart */
  const tl_derived *d = in->derived;
  snprintf(n_events, sizeof n_events, "%zu", t->ev.n);
  snprintf(n_launch_events, sizeof n_launch_events, "%zu", d ? d->ev.n : 0);
  snprintf(n_calls, sizeof n_calls, "%zu", t->calls.n);
  snprintf(n_rel, sizeof n_rel, "%zu", in->nrelations);
  snprintf(n_drop_e, sizeof n_drop_e, "%lld", (long long)t->dropped_event_rows);
  snprintf(n_drop_c, sizeof n_drop_c, "%lld", (long long)t->dropped_call_rows);
  int rc = TL_OK;
  if (kind.oom || paths.oom || sizes.oom || hashes.oom || warnings.oom) rc = tl_nomem(e);
  const char *kv[][2] = {
      {"schema_version", TRACELOOM_SCHEMA_VERSION},
      {"tool_version", TRACELOOM_VERSION},
      {"artifact_kind", "queryable_database_timeline"},
      {"source_kind", kind.p},
      {"source_path", p->inputs.v[0].path},
      {"source_paths", paths.p},
      {"source_size_bytes", sizes.p},
      {"source_sha256", hashes.p},
      {"source_embedded", in->embed_raw ? "1" : "0"},
      {"analysis_options", in->options_json},
      {"analysis_status", "complete"},
      {"operator_audit_status", "observed_inventory"},
      {"event_count", n_events},
      {"graph_launch_event_count", n_launch_events},
      {"runtime_call_count", n_calls},
      {"runtime_device_relation_count", n_rel},
      {"dropped_event_rows", n_drop_e},
      {"dropped_runtime_call_rows", n_drop_c},
      {"warnings", warnings.p},
      {"candidate_partition_by", in->partition_by ? in->partition_by : "none"},
  };
  for (size_t i = 0; rc == TL_OK && i < sizeof kv / sizeof kv[0]; i++)
    rc = put_meta(st, db, kv[i][0], kv[i][1], e);
  tl_buf_free(&kind), tl_buf_free(&paths), tl_buf_free(&sizes), tl_buf_free(&hashes),
      tl_buf_free(&warnings);
  sqlite3_finalize(st);
  return rc;
}

/* ------------------------------------------------------------------ entry */

/* The input (a copy: a worker thread reads it after the caller's frame) and the order. */
struct tl_runtime_rows {
  tl_runtime_input in;
  relation_order rel;
};

int tl_runtime_rows_prepare(const tl_runtime_input *in, tl_runtime_rows **out, tl_err *e) {
  tl_runtime_rows *r = calloc(1, sizeof *r);
  *out = r;
  if (!r) return tl_nomem(e);
  r->in = *in;
  return relation_order_build(&r->in, &r->rel, e);
}

/* One writer of the runtime rows, with its TRACELOOM_TIMING line. */
static int runtime_part(sqlite3 *db, const tl_runtime_rows *r, const char *label,
                        int (*write)(sqlite3 *, const tl_runtime_input *, const relation_order *,
                                     tl_err *),
                        tl_err *e) {
  tl_timer tm;
  tl_timer_start(&tm, "runtime");
  int rc = write(db, &r->in, &r->rel, e);
  tl_timer_mark(&tm, label);
  return rc;
}

int tl_runtime_rows_calls(sqlite3 *db, const tl_runtime_rows *r, tl_err *e) {
  return runtime_part(db, r, "calls", publish_calls, e);
}

const char *const tl_runtime_relation_tables[] = {"traceloom_runtime_device_relation_shape",
                                                  "traceloom_runtime_device_relation_core", NULL};

int tl_runtime_rows_relations(sqlite3 *db, const tl_runtime_rows *r, tl_err *e) {
  return runtime_part(db, r, "relations", publish_relations, e);
}

int tl_runtime_rows_finish(tl_publication *pub, const tl_runtime_rows *r, tl_err *e) {
  return event_relations(pub, &r->in, &r->rel, e);
}

void tl_runtime_rows_free(tl_runtime_rows *r) {
  if (!r) return;
  relation_order_free(&r->rel);
  free(r);
}

int tl_publish_runtime(tl_publication *pub, const tl_runtime_input *in, tl_err *e) {
  tl_runtime_rows *r = NULL;
  int rc = tl_runtime_rows_prepare(in, &r, e);
  if (rc == TL_OK) rc = tl_runtime_rows_calls(pub->db, r, e);
  if (rc == TL_OK) rc = tl_runtime_rows_relations(pub->db, r, e);
  if (rc == TL_OK) rc = tl_runtime_rows_finish(pub, r, e);
  tl_runtime_rows_free(r);
  return rc;
}

int tl_publish_events(tl_publication *pub, const tl_event_input *in, tl_err *e) {
  tl_event_rows *r = NULL;
  int rc = tl_event_rows_prepare(pub, in, &r, e);
  if (rc == TL_OK) rc = tl_event_rows_write(pub->db, r, 0, r->n, e);
  tl_event_rows_free(r);
  tl_publish_events_done(pub);
  return rc;
}

void tl_publish_events_done(tl_publication *pub) {
  free(pub->event_relation);
  pub->event_relation = NULL;
}
