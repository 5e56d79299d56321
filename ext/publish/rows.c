/*
** rows.c: traceloom_rows, the internal row source the publisher inserts from.
**
**   INSERT INTO traceloom_event_core(event_n, db_idx, ...)
**   SELECT c0, c1, ... FROM traceloom_rows(?1);      -- ?1 bound with sqlite3_bind_pointer
**
** Publishing millions of rows with one prepared INSERT stepped and reset per row spends
** half its time in the per-statement work of sqlite3_step and sqlite3_reset (measured: 2M
** rows of 11 integers, 1.39 s bound row by row, 0.85 s as one INSERT ... SELECT from a
** virtual table, 0.62 s for CREATE TABLE AS SELECT). This module lets one INSERT ... SELECT
** pull the rows from C arrays instead: a tl_rows producer fills the integer columns of row
** k on demand, and hands over its text columns (occurrence paths) when SQLite reads them.
**
** The producer is a C pointer passed with sqlite3_bind_pointer under the type "tl_rows",
** which SQL cannot forge (sqlite3_value_pointer returns NULL for anything else), so the
** module is inert from SQL: without a pointer it yields no rows. It reads no file.
**
** xBestIndex contract: `src = ?` (the hidden column) is consumed; without it the table is
** empty (any other constraint is left to SQLite). Rows come in producer order, rowid = row index.
*/
#include "publish/rows.h"
#include "util/buf.h"
#include "vtab/vtab_common.h"

#include <stdlib.h>
#include <string.h>

/* The declared columns: c0 .. c(TL_ROWS_MAX_COLS-1), then the hidden source. */
static const char schema[] =
    "CREATE TABLE x(c0,c1,c2,c3,c4,c5,c6,c7,c8,c9,c10,c11,c12,c13,c14,c15,c16,c17,c18,c19,"
    "c20,c21,c22,c23,c24,c25,c26,c27,c28,c29,c30,c31,src HIDDEN)";
#define COL_SRC TL_ROWS_MAX_COLS

typedef struct rows_cursor {
  sqlite3_vtab_cursor base;
  const tl_rows *src;
  size_t row;
  int64_t v[TL_ROWS_MAX_COLS];
  unsigned char null[TL_ROWS_MAX_COLS];
} rows_cursor;

/* xConnect: declare the columns. The table reads no file, but it is for our own statements
** only, so it is DIRECTONLY like the others (vtab_common.h). */
static int rows_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
                        sqlite3_vtab **out, char **err) {
  (void)aux, (void)argc, (void)argv;
  return tl_vtab_connect(db, schema, out, err);
}

/* xBestIndex: a usable `src = ?` goes to xFilter as argv[0]. Without one (plain
** `SELECT count(*) FROM traceloom_rows`) the plan is still valid but costly, so SQLite
** prefers any plan that binds the source; xFilter then sees no argument and yields no rows,
** as the header promises (failing with "no query solution" would not). */
static int rows_best_index(sqlite3_vtab *vt, sqlite3_index_info *info) {
  (void)vt;
  int i = tl_vtab_find_eq(info, COL_SRC);
  if (i < 0) {
    info->estimatedCost = 1e12;
    info->estimatedRows = 0;
    return SQLITE_OK;
  }
  info->aConstraintUsage[i].argvIndex = 1;
  info->aConstraintUsage[i].omit = 1;
  info->estimatedCost = 1.0;
  return SQLITE_OK;
}

/* xOpen: a cursor with no source yet. */
static int rows_open(sqlite3_vtab *vt, sqlite3_vtab_cursor **out) {
  (void)vt;
  return tl_vtab_open_cursor(sizeof(rows_cursor), out);
}

/* xClose: free the cursor (the source belongs to the caller). */
static int rows_close(sqlite3_vtab_cursor *cur) {
  sqlite3_free(cur);
  return SQLITE_OK;
}

/* Fills the current row; SQLITE_NOMEM when the producer could not. */
static int fill(rows_cursor *c) {
  if (c->src && c->row < c->src->nrows && c->src->fill(c->src->ctx, c->row, c->v, c->null))
    return SQLITE_NOMEM;
  return SQLITE_OK;
}

/* xFilter: take the bound producer (NULL when SQL passed anything else: no rows). */
static int rows_filter(sqlite3_vtab_cursor *cur, int idx, const char *idxstr, int argc,
                       sqlite3_value **argv) {
  (void)idx, (void)idxstr;
  rows_cursor *c = (rows_cursor *)cur;
  c->src = argc > 0 ? sqlite3_value_pointer(argv[0], TL_ROWS_POINTER_TYPE) : NULL;
  c->row = 0;
  return fill(c);
}

/* xNext: the next row, filled once for all its columns. */
static int rows_next(sqlite3_vtab_cursor *cur) {
  rows_cursor *c = (rows_cursor *)cur;
  c->row++;
  return fill(c);
}

/* xEof: past the producer's last row (or no producer). */
static int rows_eof(sqlite3_vtab_cursor *cur) {
  const rows_cursor *c = (const rows_cursor *)cur;
  return !c->src || c->row >= c->src->nrows;
}

/* xColumn: the filled value, NULL where the producer said so or past its columns. */
static int rows_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col) {
  const rows_cursor *c = (const rows_cursor *)cur;
  if (col < 0 || col >= c->src->ncols || c->null[col]) {
    sqlite3_result_null(ctx);
  } else if (c->src->text_cols >> col & 1) {
    const char *p = NULL;
    int n = 0;
    c->src->text(c->src->ctx, col, &p, &n);
    sqlite3_result_text(ctx, p ? p : "", n, SQLITE_TRANSIENT);
  } else {
    sqlite3_result_int64(ctx, c->v[col]);
  }
  return SQLITE_OK;
}

/* xRowid: the row index. */
static int rows_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *rowid) {
  *rowid = (sqlite3_int64)((const rows_cursor *)cur)->row;
  return SQLITE_OK;
}

const sqlite3_module tl_rows_module = {
    .iVersion = 0,
    .xCreate = NULL, /* eponymous-only: traceloom_rows(?) */
    .xConnect = rows_connect,
    .xBestIndex = rows_best_index,
    .xDisconnect = tl_vtab_disconnect,
    .xOpen = rows_open,
    .xClose = rows_close,
    .xFilter = rows_filter,
    .xNext = rows_next,
    .xEof = rows_eof,
    .xColumn = rows_column,
    .xRowid = rows_rowid,
};

int tl_rows_insert(sqlite3 *db, const char *table, const char *columns, const tl_rows *src,
                   tl_err *e) {
  if (src->ncols < 1 || src->ncols > TL_ROWS_MAX_COLS)
    return tl_fail(e, "internal error: %d columns for %s", src->ncols, table);
  char select[TL_ROWS_MAX_COLS * 5 + 1];
  size_t n = 0;
  for (int k = 0; k < src->ncols; k++) {
    if (k) select[n++] = ',';
    select[n++] = 'c';
    if (k >= 10) select[n++] = (char)('0' + k / 10);
    select[n++] = (char)('0' + k % 10);
  }
  select[n] = '\0';
  char *sql = sqlite3_mprintf("INSERT INTO %s(%s) SELECT %s FROM traceloom_rows(?1)", table,
                              columns, select);
  if (!sql) return tl_nomem(e);
  sqlite3_stmt *st;
  int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
  sqlite3_free(sql);
  if (rc != SQLITE_OK)
    return tl_fail(e, "failed to prepare the insert into %s: %s", table, sqlite3_errmsg(db));
  sqlite3_bind_pointer(st, 1, (void *)src, TL_ROWS_POINTER_TYPE, NULL);
  rc = sqlite3_step(st);
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) return tl_fail(e, "failed to write %s: %s", table, sqlite3_errmsg(db));
  return TL_OK;
}

/* "name0, name1, ..." of the descriptors (malloc'd), or NULL when out of memory. */
static char *column_names(const tl_rows_column *cols, int ncols) {
  size_t len = 0;
  for (int k = 0; k < ncols; k++) len += strlen(cols[k].name) + 2;
  char *names = malloc(len + 1);
  if (!names) return NULL;
  size_t n = 0;
  for (int k = 0; k < ncols; k++) {
    size_t m = strlen(cols[k].name);
    if (k) names[n++] = ',', names[n++] = ' ';
    memcpy(names + n, cols[k].name, m);
    n += m;
  }
  names[n] = '\0';
  return names;
}

int tl_rows_publish(sqlite3 *db, const char *table, const tl_rows_column *cols, int ncols,
                    size_t nrows, int (*fill)(void *, size_t, int64_t *, unsigned char *),
                    void (*text)(void *, int, const char **, int *), void *ctx, tl_err *e) {
  if (ncols < 1 || ncols > TL_ROWS_MAX_COLS)
    return tl_fail(e, "internal error: %d columns for %s", ncols, table);
  for (int k = 0; k < ncols; k++)
    if (cols[k].expr) return tl_fail(e, "internal error: an expression column of %s", table);
  if (nrows == 0) return TL_OK;
  tl_rows rows = {.nrows = nrows, .ncols = ncols, .fill = fill, .ctx = ctx, .text = text};
  for (int k = 0; k < ncols; k++)
    if (cols[k].text) rows.text_cols |= 1u << k;
  if (rows.text_cols && !text)
    return tl_fail(e, "internal error: text columns of %s without a text producer", table);
  char *names = column_names(cols, ncols);
  if (!names) return tl_nomem(e);
  int rc = tl_rows_insert(db, table, names, &rows, e);
  free(names);
  return rc;
}

int tl_rows_prepare(sqlite3 *db, const char *verb, const char *table, const tl_rows_column *cols,
                    int ncols, sqlite3_stmt **st, tl_err *e) {
  *st = NULL;
  char *names = column_names(cols, ncols);
  tl_buf sql = {0};
  if (names) {
    tl_buf_printf(&sql, "%s INTO %s(%s) VALUES (", verb, table, names);
    for (int k = 0; k < ncols; k++) {
      if (k) tl_buf_puts(&sql, ", ");
      const char *x = cols[k].expr, *q = x ? strchr(x, '?') : NULL;
      if (!x) {
        tl_buf_printf(&sql, "?%d", TL_PARAM(k));
      } else if (!q) {
        tl_buf_puts(&sql, x);
      } else {
        tl_buf_append(&sql, x, (size_t)(q - x));
        tl_buf_printf(&sql, "?%d%s", TL_PARAM(k), q + 1);
      }
    }
    tl_buf_puts(&sql, ")");
  }
  int oom = !names || sql.oom;
  free(names);
  if (oom) {
    tl_buf_free(&sql);
    return tl_nomem(e);
  }
  int rc = TL_OK;
  if (sqlite3_prepare_v2(db, sql.p, -1, st, NULL) != SQLITE_OK)
    rc = tl_fail(e, "failed to prepare the insert into %s: %s", table, sqlite3_errmsg(db));
  tl_buf_free(&sql);
  return rc;
}
