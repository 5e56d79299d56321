/*
** cursor.c: whole-profile cursors and the inventory, on top of the family readers.
**
** tl_events_open() chains the event cursors of every input in db_idx order;
** tl_calls_open() does the same for host runtime calls. tl_profile_read() drains them into a
** sink, an input's calls on a second thread beside its events where the sink and the family
** take it (source.h, beside_begin; ARCHITECTURE.md Threads). tl_profile_inventory() lists
** inputs, files, tables (with row counts), warnings, and asks each family for its
** capability rows.
*/
#include "source/source.h"
#include "source/sqlsrc.h"

#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ chained cursor */

typedef struct chain_cursor {
  tl_cursor base;
  const tl_profile *p;
  tl_strpool *pool;
  tl_event_filter filter;
  int calls;          /* 1 = host calls, 0 = device events */
  size_t next_input;  /* the input to open after the current one */
  tl_cursor *cur;     /* the current family cursor, or NULL */
} chain_cursor;

static int chain_next(tl_cursor *c, void *row, tl_err *e) {
  chain_cursor *cc = (chain_cursor *)c;
  for (;;) {
    if (cc->cur) {
      int rc = cc->cur->next(cc->cur, row, e);
      if (rc != 0) return rc;
      cc->base.dropped_rows += cc->cur->dropped_rows;
      cc->cur->close(cc->cur);
      cc->cur = NULL;
    }
    if (cc->next_input >= cc->p->inputs.n) return 0;
    int db_idx = (int)cc->next_input++;
    const tl_family_def *ops = cc->p->inputs.v[db_idx].family;
    int rc = cc->calls ? ops->calls_open(cc->p, db_idx, cc->pool, &cc->cur, e)
                       : ops->events_open(cc->p, db_idx, &cc->filter, cc->pool, &cc->cur, e);
    if (rc != TL_OK) {
      cc->cur = NULL;
      return -1;
    }
  }
}

static void chain_close(tl_cursor *c) {
  chain_cursor *cc = (chain_cursor *)c;
  if (cc->cur) cc->cur->close(cc->cur);
  free(cc);
}

static int chain_open(const tl_profile *p, const tl_event_filter *f, tl_strpool *pool,
                      int calls, tl_cursor **out, tl_err *e) {
  chain_cursor *cc = calloc(1, sizeof *cc);
  if (!cc) return tl_nomem(e);
  cc->base.next = chain_next;
  cc->base.close = chain_close;
  cc->p = p;
  cc->pool = pool;
  cc->calls = calls;
  if (f) cc->filter = *f;
  *out = &cc->base;
  return TL_OK;
}

int tl_events_open(const tl_profile *p, const tl_event_filter *f, tl_strpool *pool,
                   tl_cursor **out, tl_err *e) {
  return chain_open(p, f, pool, 0, out, e);
}

int tl_calls_open(const tl_profile *p, tl_strpool *pool, tl_cursor **out, tl_err *e) {
  return chain_open(p, NULL, pool, 1, out, e);
}

/* ------------------------------------------------------------------ whole-profile read */

static int drain(tl_cursor *c, int calls, tl_row_sink *sink, tl_err *e) {
  union {
    tl_event_row ev;
    tl_call_row call;
  } row;
  int rc;
  while ((rc = c->next(c, &row, e)) == 1)
    if (calls ? sink->call(sink->ctx, &row.call, e) : sink->event(sink->ctx, &row.ev, e)) {
      rc = -1;
      break;
    }
  if (calls) sink->dropped_calls += c->dropped_rows;
  else sink->dropped_events += c->dropped_rows;
  c->close(c);
  return rc == 0 ? TL_OK : TL_ERROR;
}

/* An input's calls read on a second thread (source.h, tl_row_sink.beside_begin): its own
** connection (the family's calls cursor opens one) and its own string pool; the rows go to
** the sink's beside_call on that thread. */
typedef struct beside {
  const tl_profile *p;
  int db_idx;
  tl_row_sink *sink;
  void *bctx;          /* the sink's context for beside_call */
  tl_strpool *pool;    /* the thread's */
  atomic_int stop;     /* set by the calling thread when it fails or is interrupted */
  int rc;
  int64_t dropped;
  tl_err err;
  pthread_t thread;
} beside;

static void *beside_run(void *arg) {
  beside *b = arg;
  const tl_family_def *f = b->p->inputs.v[b->db_idx].family;
  tl_cursor *c;
  b->rc = TL_ERROR;
  if (f->calls_open(b->p, b->db_idx, b->pool, &c, &b->err)) return NULL;
  tl_call_row row;
  int rc;
  size_t n = 0;
  while ((rc = c->next(c, &row, &b->err)) == 1) {
    if (b->sink->beside_call(b->bctx, &row, &b->err)) {
      rc = -1;
      break;
    }
    /* The calling thread's failure or interrupt ends this one soon: its result is unused. */
    if ((++n & 4095) == 0 && atomic_load(&b->stop)) {
      tl_fail_code(&b->err, TL_ERR_INTERRUPTED, "stopped");
      rc = -1;
      break;
    }
  }
  b->dropped = c->dropped_rows;
  c->close(c);
  b->rc = rc == 0 ? TL_OK : TL_ERROR;
  return NULL;
}

/* Starts reading input db_idx's calls on a second thread; NULL when the sink or the family
** does not take it, or no thread (or memory) can be had: then they are read in turn. */
static beside *beside_start(const tl_profile *p, int db_idx, tl_row_sink *sink) {
  if (!sink->beside_begin || !p->inputs.v[db_idx].family->calls_beside) return NULL;
  beside *b = calloc(1, sizeof *b);
  if (!b) return NULL;
  b->p = p, b->db_idx = db_idx, b->sink = sink;
  atomic_init(&b->stop, 0);
  b->pool = tl_strpool_new();
  if (b->pool) b->bctx = sink->beside_begin(sink->ctx, b->pool);
  if (b->bctx && pthread_create(&b->thread, NULL, beside_run, b) == 0) return b;
  if (b->bctx) sink->beside_end(sink->ctx, b->bctx, NULL, NULL);
  tl_strpool_free(b->pool);
  free(b);
  return NULL;
}

/* Waits for the thread (stopping it first when rc != TL_OK) and hands its calls to the sink:
** the thread's strings are interned into pool in the order it interned them, so every id is
** the one a read in turn gives (the calls come right after the input's events). */
static int beside_join(beside *b, int rc, tl_strpool *pool, tl_row_sink *sink, tl_err *e) {
  if (rc != TL_OK) atomic_store(&b->stop, 1);
  pthread_join(b->thread, NULL);
  if (rc == TL_OK && b->rc != TL_OK)
    rc = tl_err_pass(e, &b->err, "reading the runtime calls failed");
  uint32_t *remap = rc == TL_OK ? tl_strpool_merge(pool, b->pool) : NULL;
  if (rc == TL_OK && !remap) rc = tl_nomem(e);
  if (sink->beside_end(sink->ctx, b->bctx, rc == TL_OK ? remap : NULL, e) && rc == TL_OK)
    rc = TL_ERROR;
  if (rc == TL_OK) sink->dropped_calls += b->dropped;
  free(remap);
  tl_err_clear(&b->err);
  tl_strpool_free(b->pool);
  free(b);
  return rc;
}

int tl_profile_read(const tl_profile *p, tl_strpool *pool, tl_row_sink *sink, tl_err *e) {
  int beside_ran = 0;
  for (size_t i = 0; i < p->inputs.n; i++) {
    const tl_family_def *f = p->inputs.v[i].family;
    tl_cursor *c;
    if (f->read) {
      if (f->read(p, (int)i, pool, sink, e)) return TL_ERROR;
      continue;
    }
    beside *b = beside_start(p, (int)i, sink);
    tl_event_filter all = {.threads = sink->threads};
    int rc = f->events_open(p, (int)i, &all, pool, &c, e) || drain(c, 0, sink, e) ? TL_ERROR
                                                                                   : TL_OK;
    if (b) rc = beside_join(b, rc, pool, sink, e), beside_ran = 1;
    else if (rc == TL_OK && (f->calls_open(p, (int)i, pool, &c, e) || drain(c, 1, sink, e)))
      rc = TL_ERROR;
    if (rc) return TL_ERROR;
  }
#ifdef __GLIBC__
  /* The calls grew while the events' identity maps were held (read in turn, they reuse that
  ** memory), and the second thread allocated from its own arena: hand the free pages of both
  ** back, or the later stages' peak carries them. */
  if (beside_ran) malloc_trim(0);
#endif
  return TL_OK;
}

/* ------------------------------------------------------------------ inventory */

int tl_inventory_add(tl_inventory *inv, int db_idx, const char *item, const char *source_kind,
                     const char *path, const char *table, int64_t row_count,
                     const char *capability, int usable, const char *detail, tl_err *e) {
  tl_inventory_row r = {db_idx,
                        item,
                        source_kind ? tl_strdup(source_kind) : NULL,
                        path ? tl_strdup(path) : NULL,
                        table ? tl_strdup(table) : NULL,
                        row_count,
                        capability ? tl_strdup(capability) : NULL,
                        usable,
                        detail ? tl_strdup(detail) : NULL};
  if ((source_kind && !r.source_kind) || (path && !r.path) || (table && !r.table_name) ||
      (capability && !r.capability) || (detail && !r.detail) || TL_VEC_PUSH(inv, r)) {
    free(r.source_kind), free(r.path), free(r.table_name), free(r.capability), free(r.detail);
    return tl_nomem(e);
  }
  return TL_OK;
}

void tl_inventory_free(tl_inventory *inv) {
  for (size_t i = 0; i < inv->n; i++) {
    tl_inventory_row *r = &inv->v[i];
    free(r->source_kind), free(r->path), free(r->table_name), free(r->capability),
        free(r->detail);
  }
  TL_VEC_FREE(inv);
}

static const char *role_name(tl_file_role r) {
  switch (r) {
    case TL_FILE_PRIMARY: return "primary";
    case TL_FILE_SPLIT_PART: return "split_part";
    default: return "companion";
  }
}

static int inventory_file_tables(const tl_profile *p, size_t fi, tl_inventory *inv, tl_err *e) {
  const tl_source_file *f = &p->files.v[fi];
  const char *kind = tl_family_source_kind(p->inputs.v[f->db_idx].family);
  sqlite3 *db;
  if (tl_sql_open_ro(f->path, &db, e)) return TL_ERROR;
  tl_names tables;
  int rc = tl_sql_tables(db, f->path, &tables, e);
  if (rc == TL_OK && tables.n == 0)
    rc = tl_inventory_add(inv, f->db_idx, "table", kind, f->path, "sqlite_schema", 0, NULL, -1,
                          "no schema objects", e);
  for (size_t i = 0; rc == TL_OK && i < tables.n; i++) {
    int64_t n = tl_sql_count(db, f->path, tables.v[i], e);
    if (n < 0) {
      rc = TL_ERROR;
      break;
    }
    rc = tl_inventory_add(inv, f->db_idx, "table", kind, f->path, tables.v[i], n, NULL, -1, NULL,
                          e);
  }
  tl_names_free(&tables);
  tl_sql_close(db);
  return rc;
}

int tl_profile_inventory(const tl_profile *p, tl_inventory *inv, tl_err *e) {
  memset(inv, 0, sizeof *inv);
  int rc = TL_OK;
  for (size_t i = 0; rc == TL_OK && i < p->warnings.n; i++)
    rc = tl_inventory_add(inv, -1, "warning", NULL, p->path, NULL, -1, NULL, -1, p->warnings.v[i],
                          e);
  for (size_t d = 0; rc == TL_OK && d < p->inputs.n; d++) {
    const tl_input *in = &p->inputs.v[d];
    const char *kind = tl_family_source_kind(in->family);
    rc = tl_inventory_add(inv, (int)d, "input", kind, in->path, NULL, -1, NULL, -1, NULL, e);
    if (rc == TL_OK && in->family->capture_companion)
      rc = tl_inventory_add(inv, (int)d, "capability", kind, in->stream_info_path, NULL, -1,
                            "capture_stream_companion", in->stream_info_path != NULL,
                            in->stream_info_detail ? in->stream_info_detail
                                                   : in->stream_info_status,
                            e);
    for (size_t fi = 0; rc == TL_OK && fi < p->files.n; fi++) {
      if (p->files.v[fi].db_idx != (int)d) continue;
      rc = tl_inventory_add(inv, (int)d, "file", kind, p->files.v[fi].path, NULL, -1,
                            role_name(p->files.v[fi].role), -1, NULL, e);
      /* A JSON trace is not SQLite: its reader lists its own "tables" (Kineto: traceEvents). */
      if (rc == TL_OK && in->family->sqlite_files) rc = inventory_file_tables(p, fi, inv, e);
    }
    if (rc == TL_OK) rc = in->family->inventory(p, (int)d, inv, e);
  }
  if (rc) tl_inventory_free(inv);
  return rc;
}
