/*
** cursor.c: whole-profile cursors and the inventory, on top of the family readers.
**
** tl_events_open() chains the event cursors of every input in db_idx order;
** tl_calls_open() does the same for host runtime calls. tl_profile_inventory() lists
** inputs, files, tables (with row counts), warnings, and asks each family for its
** capability rows.
*/
#include "source/source.h"
#include "source/sqlsrc.h"

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

int tl_profile_read(const tl_profile *p, tl_strpool *pool, tl_row_sink *sink, tl_err *e) {
  for (size_t i = 0; i < p->inputs.n; i++) {
    const tl_family_def *f = p->inputs.v[i].family;
    tl_cursor *c;
    if (f->read) {
      if (f->read(p, (int)i, pool, sink, e)) return TL_ERROR;
      continue;
    }
    if (f->events_open(p, (int)i, NULL, pool, &c, e) || drain(c, 0, sink, e)) return TL_ERROR;
    if (f->calls_open(p, (int)i, pool, &c, e) || drain(c, 1, sink, e)) return TL_ERROR;
  }
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

int tl_profile_inventory(tl_profile *p, tl_inventory *inv, tl_err *e) {
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
