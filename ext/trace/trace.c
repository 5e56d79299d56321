/*
** trace.c: loading a profile into the struct-of-arrays trace (see trace.h).
*/
#include "trace/trace.h"

#include <malloc.h>
#include <stdlib.h>
#include <string.h>

#define GROW(arr, cap) \
  do { \
    void *p_ = realloc((arr), (cap) * sizeof *(arr)); \
    if (!p_) return -1; \
    (arr) = p_; \
  } while (0)
#define GROW_ID(col, cap) \
  do { \
    if (tl_i64col_grow(&(col), (cap))) return -1; \
  } while (0)

static int events_grow(tl_events *v) {
  size_t cap = v->cap ? v->cap * 2 : 4096;
  GROW(v->start_ns, cap); GROW(v->dur_ns, cap); GROW_ID(v->source_rowid, cap);
  GROW_ID(v->task_id, cap); GROW_ID(v->global_task_id, cap); GROW_ID(v->correlation_id, cap);
  GROW_ID(v->context_id, cap); GROW_ID(v->model_id, cap); GROW_ID(v->graph_node_id, cap);
  GROW_ID(v->op_id, cap); GROW(v->label, cap); GROW(v->place, cap);
  v->cap = cap;
  return 0;
}

static int calls_grow(tl_calls *v) {
  size_t cap = v->cap ? v->cap * 2 : 1024;
  GROW(v->start_ns, cap); GROW(v->end_ns, cap); GROW_ID(v->source_rowid, cap);
  GROW_ID(v->context_id, cap); GROW_ID(v->device_id, cap); GROW_ID(v->correlation_id, cap);
  GROW(v->api_name, cap); GROW(v->shape, cap); GROW(v->provider, cap); GROW(v->db_idx, cap);
  v->cap = cap;
  return 0;
}

/* Every id column starts empty, reading TL_ABSENT. */
static void event_ids_init(tl_events *v) {
  tl_i64col *cols[] = {&v->source_rowid, &v->task_id, &v->global_task_id, &v->correlation_id,
                       &v->context_id, &v->model_id, &v->graph_node_id, &v->op_id};
  for (size_t k = 0; k < sizeof cols / sizeof cols[0]; k++) tl_i64col_init(cols[k], TL_ABSENT);
}

static void call_ids_init(tl_calls *v) {
  tl_i64col *cols[] = {&v->source_rowid, &v->context_id, &v->device_id, &v->correlation_id};
  for (size_t k = 0; k < sizeof cols / sizeof cols[0]; k++) tl_i64col_init(cols[k], TL_ABSENT);
}

static void event_ids_free(tl_events *v) {
  tl_i64col_free(&v->source_rowid), tl_i64col_free(&v->task_id);
  tl_i64col_free(&v->global_task_id), tl_i64col_free(&v->correlation_id);
  tl_i64col_free(&v->context_id), tl_i64col_free(&v->model_id);
  tl_i64col_free(&v->graph_node_id), tl_i64col_free(&v->op_id);
}

static void events_free(tl_events *v) {
  free(v->start_ns); free(v->dur_ns); tl_i64map_free(&v->long_dur); event_ids_free(v);
  free(v->label); free(v->place);
  TL_VEC_FREE(&v->places);
  free(v->place_slots);
  memset(v, 0, sizeof *v);
  event_ids_init(v);
}

static void calls_free(tl_calls *v) {
  free(v->start_ns); free(v->end_ns); tl_i64col_free(&v->source_rowid);
  tl_i64col_free(&v->context_id); tl_i64col_free(&v->device_id);
  tl_i64col_free(&v->correlation_id); free(v->api_name); free(v->shape); free(v->provider);
  free(v->db_idx);
  TL_VEC_FREE(&v->shapes);
  free(v->shape_slots);
  memset(v, 0, sizeof *v);
  call_ids_init(v);
}

void tl_trace_release_calls(tl_trace *t) {
  size_t n = t->calls.n;
  int beside = t->calls_beside;
  calls_free(&t->calls);
  t->calls.n = n;
#ifdef __GLIBC__
  /* Calls read beside the events grew in the reading thread's malloc arena, which this
  ** thread's later allocations do not reuse: its free pages go back now, or the analysis's
  ** peak (in recovery) carries them. */
  if (beside) malloc_trim(0);
#endif
}

void tl_trace_release_event_ids(tl_trace *t) {
  event_ids_free(&t->ev);
}

void tl_trace_free(tl_trace *t) {
  if (!t) return;
  tl_strpool_free(t->pool);
  TL_VEC_FREE(&t->labels);
  TL_VEC_FREE(&t->source_refs);
  events_free(&t->ev);
  calls_free(&t->calls);
  free(t->label_slots);
  TL_VEC_FREE(&t->scopes);
  free(t->plane_tid);
  memset(t, 0, sizeof *t);
}

/* ------------------------------------------------------------------ interning */

/* Open addressing over the items of an array (labels, call shapes): a slot holds an item's
** index + 1, 0 when empty; the table is at most half full. */
typedef struct intern_ops {
  uint64_t (*hash)(const void *items, size_t i);                 /* of item i */
  int (*eq)(const void *items, size_t i, const void *key);       /* item i equals key */
  size_t first_slots;                                            /* a power of two */
} intern_ops;

static int slots_rehash(uint32_t **slots, size_t *nslots, const void *items, size_t n,
                        const intern_ops *ops) {
  size_t m = *nslots ? *nslots * 2 : ops->first_slots;
  uint32_t *s = calloc(m, sizeof *s);
  if (!s) return -1;
  for (size_t i = 0; i < n; i++) {
    size_t j = (size_t)ops->hash(items, i) & (m - 1);
    while (s[j]) j = (j + 1) & (m - 1);
    s[j] = (uint32_t)i + 1;
  }
  free(*slots);
  *slots = s, *nslots = m;
  return 0;
}

/* The slot holding an item equal to key (key_hash its hash), else the empty slot where it
** would go. nslots must not be 0. */
static size_t slots_find(const uint32_t *slots, size_t nslots, uint64_t key_hash,
                         const void *items, const void *key, const intern_ops *ops) {
  size_t j = (size_t)key_hash & (nslots - 1);
  while (slots[j] && !ops->eq(items, slots[j] - 1, key)) j = (j + 1) & (nslots - 1);
  return j;
}

/* Interns key (hash key_hash) among the items of a TL_VEC (its v, n and cap; elem bytes an
** item) with their slot table: returns its index, or UINT32_MAX on out-of-memory. */
static uint32_t intern(void **items, size_t *n, size_t *cap, size_t elem, uint32_t **slots,
                       size_t *nslots, const void *key, uint64_t key_hash, const intern_ops *ops) {
  if ((*n + 1) * 2 > *nslots && slots_rehash(slots, nslots, *items, *n, ops)) return UINT32_MAX;
  size_t j = slots_find(*slots, *nslots, key_hash, *items, key, ops);
  if ((*slots)[j]) return (*slots)[j] - 1;
  if (*n >= UINT32_MAX - 1 || tl_vec_reserve_(items, cap, *n + 1, elem)) return UINT32_MAX;
  memcpy((char *)*items + *n * elem, key, elem);
  (*slots)[j] = (uint32_t)++*n;
  return (uint32_t)*n - 1;
}
#define INTERN(vec, slots, nslots, key, key_hash, ops)                                        \
  intern((void **)&(vec)->v, &(vec)->n, &(vec)->cap, sizeof *(vec)->v, (slots), (nslots), (key), \
         (key_hash), (ops))

/* A hash of n words, seeded with h. */
static uint64_t mix_words(uint64_t h, const uint64_t *f, int n) {
  for (int i = 0; i < n; i++) {
    h ^= f[i];
    h *= 0x9E3779B97F4A7C15ull;
    h ^= h >> 29;
  }
  return h;
}

static uint64_t label_hash(const tl_label *l) {
  const uint64_t f[7] = {l->name, l->op_name, l->op_type, l->task_type, l->compute_task_type,
                         l->comm_name, l->comm_task_type};
  return mix_words(l->kind, f, 7);
}

static int label_eq(const tl_label *a, const tl_label *b) {
  return a->kind == b->kind && a->name == b->name && a->op_name == b->op_name &&
         a->op_type == b->op_type && a->task_type == b->task_type &&
         a->compute_task_type == b->compute_task_type && a->comm_name == b->comm_name &&
         a->comm_task_type == b->comm_task_type;
}

static uint64_t label_hash_at(const void *items, size_t i) {
  return label_hash(&((const tl_label *)items)[i]);
}
static int label_eq_at(const void *items, size_t i, const void *key) {
  return label_eq(&((const tl_label *)items)[i], key);
}
static const intern_ops LABEL_OPS = {label_hash_at, label_eq_at, 1024};

/* Interns a label; returns its index or UINT32_MAX on out-of-memory. */
static uint32_t label_intern(tl_trace *t, const tl_label *l) {
  return INTERN(&t->labels, &t->label_slots, &t->label_nslots, l, label_hash(l), &LABEL_OPS);
}

/* Index of a (source_id, table) pair among refs (table names in pool); the last one is
** cached since rows come in runs. */
static int source_ref_of(tl_strpool *pool, tl_source_refs *refs, int source_id,
                         const char *table, uint16_t *out) {
  uint32_t tid = tl_strpool_intern_cstr(pool, table);
  if (tid == TL_STR_NOMEM) return -1;
  for (size_t i = refs->n; i-- > 0;)
    if (refs->v[i].source_id == source_id && refs->v[i].table == tid) {
      *out = (uint16_t)i;
      return 0;
    }
  if (refs->n >= UINT16_MAX) return -1;
  tl_source_ref r = {source_id, tid};
  if (TL_VEC_PUSH(refs, r)) return -1;
  *out = (uint16_t)(refs->n - 1);
  return 0;
}

/* source_ref_of for rows that come in runs of one table: looked up once per run. */
static int cached_source_ref(tl_strpool *pool, tl_source_refs *refs, tl_source_cache *c,
                             int source_id, const char *table) {
  if (c->table == table && c->source_id == source_id) return 0;
  if (source_ref_of(pool, refs, source_id, table, &c->ref)) return -1;
  c->table = table, c->source_id = source_id;
  return 0;
}

const char *tl_trace_source_path(const tl_trace *t, uint16_t ref) {
  if (!t->profile) return "";
  int sid = t->source_refs.v[ref].source_id;
  return sid >= 0 && (size_t)sid < t->profile->files.n ? t->profile->files.v[sid].path : "";
}

const char *tl_trace_source_table(const tl_trace *t, uint16_t ref) {
  return tl_strpool_str(t->pool, t->source_refs.v[ref].table);
}

int tl_trace_init(tl_trace *t, tl_profile *profile, tl_err *e) {
  memset(t, 0, sizeof *t);
  event_ids_init(&t->ev);
  call_ids_init(&t->calls);
  t->profile = profile;
  if (profile && profile->inputs.n > UINT16_MAX)
    return tl_fail(e, "too many inputs (%zu)", profile->inputs.n);
  t->pool = tl_strpool_new();
  return t->pool ? TL_OK : tl_nomem(e);
}

/* Appends the columns of one event whose label and provenance indices are known. */
static uint64_t place_hash(const tl_event_place *p) {
  const uint64_t f[3] = {p->device_id, p->stream_id, ((uint64_t)p->db_idx << 16) | p->source_ref};
  return mix_words(0, f, 3);
}
static int place_eq(const tl_event_place *a, const tl_event_place *b) {
  return a->device_id == b->device_id && a->stream_id == b->stream_id &&
         a->db_idx == b->db_idx && a->source_ref == b->source_ref;
}
static uint64_t place_hash_at(const void *items, size_t i) {
  return place_hash(&((const tl_event_place *)items)[i]);
}
static int place_eq_at(const void *items, size_t i, const void *key) {
  return place_eq(&((const tl_event_place *)items)[i], key);
}
static const intern_ops PLACE_OPS = {place_hash_at, place_eq_at, 64};

/* Interns an event place; returns its index or UINT32_MAX on out-of-memory. */
static uint32_t place_intern(tl_events *v, const tl_event_place *p) {
  return INTERN(&v->places, &v->place_slots, &v->place_nslots, p, place_hash(p), &PLACE_OPS);
}

static int events_push(tl_events *v, const tl_event_row *r, uint32_t label, uint16_t ref) {
  if (v->n == v->cap && events_grow(v)) return -1;
  size_t i = v->n;
  tl_event_place pl = {r->device_id, r->stream_id, (uint16_t)r->db_idx, ref};
  /* consecutive events of one stream share the place: look it up once per run */
  uint32_t place = i && place_eq(&v->places.v[v->place[i - 1]], &pl) ? v->place[i - 1]
                                                                       : place_intern(v, &pl);
  if (place == UINT32_MAX) return -1;
  if (tl_i64col_set(&v->source_rowid, i, r->source_rowid) ||
      tl_i64col_set(&v->task_id, i, r->task_id) ||
      tl_i64col_set(&v->global_task_id, i, r->global_task_id) ||
      tl_i64col_set(&v->correlation_id, i, r->correlation_id) ||
      tl_i64col_set(&v->context_id, i, r->context_id) ||
      tl_i64col_set(&v->model_id, i, r->model_id) ||
      tl_i64col_set(&v->graph_node_id, i, r->graph_node_id) ||
      tl_i64col_set(&v->op_id, i, r->op_id))
    return -1;
  /* unsigned: the difference of any two int64 reads back exactly (tl_events_end) */
  uint64_t dur = (uint64_t)r->end_ns - (uint64_t)r->start_ns;
  if (dur >= TL_DUR_LONG && tl_i64map_put(&v->long_dur, (int64_t)i, (int64_t)dur)) return -1;
  v->start_ns[i] = r->start_ns, v->dur_ns[i] = dur < TL_DUR_LONG ? (uint32_t)dur : TL_DUR_LONG;
  v->label[i] = label, v->place[i] = place;
  v->n = i + 1;
  return 0;
}

static tl_label label_of_row(const tl_event_row *r) {
  tl_label l = {(uint8_t)r->kind, r->name, r->op_name, r->op_type, r->task_type,
                r->compute_task_type, r->comm_name, r->comm_task_type};
  return l;
}

int tl_trace_add_event(tl_trace *t, const tl_event_row *r) {
  if (cached_source_ref(t->pool, &t->source_refs, &t->event_source, r->source_id,
                        r->source_table))
    return -1;
  tl_label l = label_of_row(r);
  uint32_t li = label_intern(t, &l);
  if (li == UINT32_MAX) return -1;
  return events_push(&t->ev, r, li, t->event_source.ref);
}

uint32_t tl_trace_find_label(const tl_trace *t, const tl_label *l) {
  if (!t->label_nslots) return UINT32_MAX;
  size_t j = slots_find(t->label_slots, t->label_nslots, label_hash(l), t->labels.v, l, &LABEL_OPS);
  return t->label_slots[j] ? t->label_slots[j] - 1 : UINT32_MAX;
}

/* ------------------------------------------------------------------ derived events */

void tl_derived_init(tl_derived *d) {
  memset(d, 0, sizeof *d);
  event_ids_init(&d->ev);
}

void tl_derived_free(tl_derived *d) {
  events_free(&d->ev);
  TL_VEC_FREE(&d->labels);
  TL_VEC_FREE(&d->source_refs);
  memset(d, 0, sizeof *d);
  event_ids_init(&d->ev);
}

int tl_derived_add(tl_derived *d, const tl_trace *t, const tl_event_row *r) {
  /* Provenance: a (source, table) pair of the derived events, numbered after the trace's. */
  uint32_t table = tl_strpool_intern_cstr(t->pool, r->source_table);
  if (table == TL_STR_NOMEM) return -1;
  size_t ref = d->source_refs.n;
  for (size_t k = 0; k < d->source_refs.n; k++)
    if (d->source_refs.v[k].source_id == r->source_id && d->source_refs.v[k].table == table) {
      ref = k;
      break;
    }
  if (t->source_refs.n + ref >= UINT16_MAX) return -1;
  if (ref == d->source_refs.n) {
    tl_source_ref sr = {r->source_id, table};
    if (TL_VEC_PUSH(&d->source_refs, sr)) return -1;
  }
  /* Label: the trace's when it has it, else a derived one. */
  tl_label l = label_of_row(r);
  uint32_t li = tl_trace_find_label(t, &l);
  for (size_t k = 0; li == UINT32_MAX && k < d->labels.n; k++)
    if (label_eq(&d->labels.v[k], &l)) li = (uint32_t)(t->labels.n + k);
  if (li == UINT32_MAX) {
    if (TL_VEC_PUSH(&d->labels, l)) return -1;
    li = (uint32_t)(t->labels.n + d->labels.n - 1);
  }
  return events_push(&d->ev, r, li, (uint16_t)(t->source_refs.n + ref));
}

static uint64_t call_shape_hash(const tl_call_shape *s) {
  const uint64_t f[5] = {(uint64_t)s->process_id, (uint64_t)s->thread_id, (uint64_t)s->global_tid,
                         s->api_type, s->source_ref};
  return mix_words(0, f, 5);
}

static int call_shape_eq(const tl_call_shape *a, const tl_call_shape *b) {
  return a->process_id == b->process_id && a->thread_id == b->thread_id &&
         a->global_tid == b->global_tid && a->api_type == b->api_type &&
         a->source_ref == b->source_ref;
}

static uint64_t call_shape_hash_at(const void *items, size_t i) {
  return call_shape_hash(&((const tl_call_shape *)items)[i]);
}
static int call_shape_eq_at(const void *items, size_t i, const void *key) {
  return call_shape_eq(&((const tl_call_shape *)items)[i], key);
}
static const intern_ops CALL_SHAPE_OPS = {call_shape_hash_at, call_shape_eq_at, 64};

/* Interns a call shape; returns its index or UINT32_MAX on out-of-memory. */
static uint32_t call_shape_intern(tl_calls *v, const tl_call_shape *s) {
  return INTERN(&v->shapes, &v->shape_slots, &v->shape_nslots, s, call_shape_hash(s),
                &CALL_SHAPE_OPS);
}

/* Appends one call to v, its provenance ref known, its shape interned among the shapes of
** h: v's own, or those of a reading thread beside (whose calls begin at row first). */
static int calls_push(tl_calls *v, tl_calls *h, size_t first, const tl_call_row *r,
                      uint16_t ref) {
  if (v->n == v->cap && calls_grow(v)) return -1;
  size_t i = v->n;
  tl_call_shape sh = {r->process_id, r->thread_id, r->global_tid, r->api_type, ref};
  /* consecutive calls of one thread and API type share the shape: look it up once per run */
  uint32_t shape = i > first && call_shape_eq(&h->shapes.v[v->shape[i - 1]], &sh)
                       ? v->shape[i - 1]
                       : call_shape_intern(h, &sh);
  if (shape == UINT32_MAX) return -1;
  if (tl_i64col_set(&v->source_rowid, i, r->source_rowid) ||
      tl_i64col_set(&v->context_id, i, r->context_id) ||
      tl_i64col_set(&v->device_id, i, r->device_id) ||
      tl_i64col_set(&v->correlation_id, i, r->correlation_id))
    return -1;
  v->start_ns[i] = r->start_ns, v->end_ns[i] = r->end_ns;
  v->api_name[i] = r->api_name, v->shape[i] = shape;
  v->provider[i] = (uint8_t)r->provider, v->db_idx[i] = (uint16_t)r->db_idx;
  v->n = i + 1;
  return 0;
}

int tl_trace_add_call(tl_trace *t, const tl_call_row *r) {
  if (cached_source_ref(t->pool, &t->source_refs, &t->call_source, r->source_id,
                        r->source_table))
    return -1;
  return calls_push(&t->calls, &t->calls, 0, r, t->call_source.ref);
}

/* ------------------------------------------------------------------ calls beside */

typedef struct loader {
  tl_trace *t;
  tl_progress_fn progress;
  void *ctx;
} loader;

/* An input's calls read on a second thread (tl_row_sink.beside_begin): appended to t->calls,
** which no other thread touches meanwhile, with the strings of that thread's pool and their
** own provenance refs and shapes; taken in on the calling thread afterwards. */
typedef struct beside_calls {
  tl_trace *t;
  tl_strpool *pool;      /* the reading thread's */
  size_t first;          /* t->calls.n when it began */
  tl_calls own;          /* only its shapes: strings of pool, refs into refs */
  tl_source_refs refs;   /* (source, table name in pool) in order of first use */
  tl_source_cache cache;
} beside_calls;

static void *beside_begin(void *ctx, tl_strpool *pool) {
  tl_trace *t = ((loader *)ctx)->t;
  beside_calls *b = calloc(1, sizeof *b);
  if (!b) return NULL;
  b->t = t, b->pool = pool, b->first = t->calls.n;
  return b;
}

static int beside_call(void *bctx, const tl_call_row *r, tl_err *e) {
  beside_calls *b = bctx;
  if (cached_source_ref(b->pool, &b->refs, &b->cache, r->source_id, r->source_table) ||
      calls_push(&b->t->calls, &b->own, b->first, r, b->cache.ref))
    return tl_nomem(e);
  return TL_OK;
}

/* Renames the thread's strings, refs and shapes to the trace's, each in its order of first
** use: the order a read in turn would have met them, so the ids are the same. */
static int beside_take(tl_trace *t, beside_calls *b, const uint32_t *remap) {
  tl_calls *v = &t->calls;
  uint16_t *ref = malloc((b->refs.n ? b->refs.n : 1) * sizeof *ref);
  uint32_t *shape = malloc((b->own.shapes.n ? b->own.shapes.n : 1) * sizeof *shape);
  int rc = ref && shape ? 0 : -1;
  for (size_t k = 0; rc == 0 && k < b->refs.n; k++)
    rc = source_ref_of(t->pool, &t->source_refs, b->refs.v[k].source_id,
                       tl_strpool_str(t->pool, remap[b->refs.v[k].table]), &ref[k]);
  for (size_t k = 0; rc == 0 && k < b->own.shapes.n; k++) {
    tl_call_shape sh = b->own.shapes.v[k];
    sh.api_type = remap[sh.api_type], sh.source_ref = ref[sh.source_ref];
    if ((shape[k] = call_shape_intern(v, &sh)) == UINT32_MAX) rc = -1;
  }
  for (size_t i = b->first; rc == 0 && i < v->n; i++)
    v->api_name[i] = remap[v->api_name[i]], v->shape[i] = shape[v->shape[i]];
  /* the cache names a table by its pointer, which the closed cursor may have owned */
  t->call_source.table = NULL;
  free(ref), free(shape);
  return rc;
}

static int beside_end(void *ctx, void *bctx, const uint32_t *remap, tl_err *e) {
  beside_calls *b = bctx;
  int rc = remap && beside_take(b->t, b, remap) ? tl_nomem(e) : TL_OK;
  b->t->calls_beside = 1;
  TL_VEC_FREE(&b->own.shapes);
  free(b->own.shape_slots);
  TL_VEC_FREE(&b->refs);
  free(b);
  return rc;
}

static int load_event(void *vctx, const tl_event_row *r, tl_err *e) {
  loader *l = vctx;
  tl_trace *t = l->t;
  if (tl_trace_add_event(t, r)) return tl_nomem(e);
  if (l->progress && (t->ev.n & 0xFFFF) == 0 && l->progress(l->ctx, "events", (int64_t)t->ev.n))
    return tl_fail_code(e, TL_ERR_INTERRUPTED,
                        "interrupted while reading events; nothing was published");
  return TL_OK;
}

static int load_call(void *vctx, const tl_call_row *r, tl_err *e) {
  return tl_trace_add_call(((loader *)vctx)->t, r) ? tl_nomem(e) : TL_OK;
}

static int load_scope(void *vctx, const tl_host_scope *s, tl_err *e) {
  return TL_VEC_PUSH(&((loader *)vctx)->t->scopes, *s) ? tl_nomem(e) : TL_OK;
}

static int load_plane(void *vctx, int db_idx, int64_t global_tid, tl_err *e) {
  tl_trace *t = ((loader *)vctx)->t;
  if (db_idx < 0 || (size_t)db_idx >= t->profile->inputs.n) return tl_fail(e, "no input %d", db_idx);
  t->plane_tid[db_idx] = global_tid;
  return TL_OK;
}

int tl_trace_load(tl_profile *profile, tl_trace *t, tl_progress_fn progress, void *ctx,
                  tl_err *e) {
  return tl_trace_load_threads(profile, t, 1, progress, ctx, e);
}

int tl_trace_load_threads(tl_profile *profile, tl_trace *t, int threads, tl_progress_fn progress,
                          void *ctx, tl_err *e) {
  if (tl_trace_init(t, profile, e)) return TL_ERROR;
  size_t ninputs = profile->inputs.n;
  t->plane_tid = malloc((ninputs ? ninputs : 1) * sizeof *t->plane_tid);
  if (!t->plane_tid) {
    tl_trace_free(t);
    return tl_nomem(e);
  }
  for (size_t i = 0; i < ninputs; i++) t->plane_tid[i] = TL_ABSENT;
  loader l = {t, progress, ctx};
  tl_row_sink sink = {.ctx = &l, .event = load_event, .call = load_call, .scope = load_scope,
                      .plane = load_plane, .threads = threads};
  if (threads >= 2)
    sink.beside_begin = beside_begin, sink.beside_call = beside_call, sink.beside_end = beside_end;
  t->event_source.table = t->call_source.table = NULL;
  if (tl_profile_read(profile, t->pool, &sink, e)) {
    tl_trace_free(t);
    return TL_ERROR;
  }
  t->dropped_event_rows = sink.dropped_events;
  t->dropped_call_rows = sink.dropped_calls;
  return TL_OK;
}
