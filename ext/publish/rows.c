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
**
** Keys SQLite would choose itself. A table's INTEGER PRIMARY KEY given as a value costs the
** insert a NotExists probe that descends the B-tree from its root for every row (the cursor
** forgets its key after each insert); given as NULL, SQLite takes the table's largest rowid
** + 1 from the cursor at the table's end, and its probe of that key returns at once. The
** core tables are written in key order with dense keys, so tl_rows_insert finds the table's
** rowid column and its largest rowid, and the cursor yields NULL for a key exactly when it is
** that largest rowid + 1 (1 in an empty table), the rowid SQLite then assigns: the same rows,
** the same B-tree, 0.12-0.19 s less CPU a million rows (bench/RESULTS.md). Any other key
** (the first of a range, a gap, keys out of order) is given as it is.
*/
#include "publish/rows.h"
#include "publish/publish.h"
#include "util/buf.h"
#include "vtab/vtab_common.h"

#include <stdlib.h>
#include <string.h>

/* The declared columns: c0 .. c(TL_ROWS_MAX_COLS-1), then the hidden source. */
static const char schema[] =
    "CREATE TABLE x(c0,c1,c2,c3,c4,c5,c6,c7,c8,c9,c10,c11,c12,c13,c14,c15,c16,c17,c18,c19,"
    "c20,c21,c22,c23,c24,c25,c26,c27,c28,c29,c30,c31,src HIDDEN)";
#define COL_SRC TL_ROWS_MAX_COLS

/* What tl_rows_insert binds: the producer, and the target table's rowid column in the
** select list (-1: none) with the table's largest rowid before the insert. */
typedef struct rows_source {
  const tl_rows *src;
  int key_col;
  int has_max;     /* the table had a row */
  int64_t max_key; /* its largest rowid */
} rows_source;

typedef struct rows_cursor {
  sqlite3_vtab_cursor base;
  const tl_rows *src;
  size_t row;
  int64_t v[TL_ROWS_MAX_COLS];
  unsigned char null[TL_ROWS_MAX_COLS];
  int key_col;          /* -1: no rowid column among the inserted ones */
  int has_max;          /* the largest rowid of the table so far, as SQLite will see it */
  int64_t max_key;
  unsigned char key_auto; /* the current row's key is the one SQLite assigns: yield NULL */
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

/* Whether the current row's key is the rowid SQLite assigns to a NULL one (the table's
** largest + 1, or 1 in an empty table), and the table's largest rowid once the row is in. */
static void track_key(rows_cursor *c) {
  c->key_auto = 0;
  if (c->key_col < 0) return;
  int64_t next = c->has_max ? c->max_key + 1 : 1;
  if (c->null[c->key_col]) { /* SQLite assigns the key anyway */
    if (c->has_max && c->max_key == INT64_MAX) c->key_col = -1; /* a random rowid follows */
    else c->max_key = next, c->has_max = 1;
    return;
  }
  int64_t k = c->v[c->key_col];
  if ((!c->has_max || c->max_key < INT64_MAX) && k == next) c->key_auto = 1;
  if (!c->has_max || k > c->max_key) c->max_key = k, c->has_max = 1;
}

/* Fills the current row; SQLITE_NOMEM when the producer could not. */
static int fill(rows_cursor *c) {
  if (c->src && c->row < c->src->nrows) {
    if (c->src->fill(c->src->ctx, c->row, c->v, c->null)) return SQLITE_NOMEM;
    track_key(c);
  }
  return SQLITE_OK;
}

/* xFilter: take the bound producer (NULL when SQL passed anything else: no rows). */
static int rows_filter(sqlite3_vtab_cursor *cur, int idx, const char *idxstr, int argc,
                       sqlite3_value **argv) {
  (void)idx, (void)idxstr;
  rows_cursor *c = (rows_cursor *)cur;
  const rows_source *rs = argc > 0 ? sqlite3_value_pointer(argv[0], TL_ROWS_POINTER_TYPE) : NULL;
  c->src = rs ? rs->src : NULL;
  c->key_col = rs && rs->key_col < (rs->src ? rs->src->ncols : 0) ? rs->key_col : -1;
  c->has_max = rs ? rs->has_max : 0;
  c->max_key = rs ? rs->max_key : 0;
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
  if (col < 0 || col >= c->src->ncols || c->null[col] || (col == c->key_col && c->key_auto)) {
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

/* The position of `name` in the comma-separated column list, or -1. */
static int column_position(const char *columns, const char *name) {
  size_t len = strlen(name);
  int k = 0;
  for (const char *p = columns; *p; k++) {
    while (*p == ' ') p++;
    const char *end = strchr(p, ',');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    while (n && p[n - 1] == ' ') n--;
    if (n == len && sqlite3_strnicmp(p, name, (int)len) == 0) return k;
    if (!end) break;
    p = end + 1;
  }
  return -1;
}

/* Prepares one of find_rowid's probes: 1 prepared, 0 not (a host whose SQLite cannot: the keys
** are then given as they are), -1 out of memory (e filled), an error like any other. */
static int probe_prepare(sqlite3 *db, const char *sql, sqlite3_stmt **st, tl_err *e) {
  *st = NULL;
  if (sqlite3_prepare_v2(db, sql, -1, st, NULL) == SQLITE_OK) return 1;
  sqlite3_finalize(*st);
  *st = NULL;
  if (sqlite3_errcode(db) == SQLITE_NOMEM) return tl_nomem(e), -1;
  return 0;
}

/* Whether temp holds a table of that name, which the INSERT would name (*has; 1 when it
** cannot be told: keys as given). Naming temp in a query opens a temp database on the caller's
** connection; one that is not open (absent from pragma_database_list) has no table, so it is
** asked only when open. (Not sqlite3_table_column_metadata: hosts built without
** SQLITE_ENABLE_COLUMN_METADATA, the default, give a loaded extension no such function.) A
** probe that SQLite fails to step is an error (TL_ERROR, e filled), not an answer: the
** failure may have rolled the analysis's transaction back (tl_pub_probe). */
static int temp_has(sqlite3 *db, const char *table, int *has, tl_err *e) {
  sqlite3_stmt *st;
  *has = 1;
  int p = probe_prepare(db, "SELECT count(*) FROM pragma_database_list WHERE name = 'temp'", &st,
                        e);
  if (p <= 0) return p < 0 ? TL_ERROR : TL_OK;
  int row = tl_pub_probe(db, st, "the database list", e);
  int open = row != 1 || sqlite3_column_int(st, 0) != 0;
  sqlite3_finalize(st);
  if (row < 0) return TL_ERROR;
  if (!open) {
    *has = 0;
    return TL_OK;
  }
  p = probe_prepare(db, "SELECT count(*) FROM temp.sqlite_schema WHERE name = ?1", &st, e);
  if (p <= 0) return p < 0 ? TL_ERROR : TL_OK;
  if (sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC) != SQLITE_OK) {
    sqlite3_finalize(st);
    return tl_nomem(e);
  }
  row = tl_pub_probe(db, st, "the temp schema", e);
  if (row == 1) *has = sqlite3_column_int(st, 0) != 0;
  sqlite3_finalize(st);
  return row < 0 ? TL_ERROR : TL_OK;
}

/* The target's rowid column among `columns` (-1: none, or not found out) and its largest
** rowid. A column is the rowid when it is the table's only primary key column, declared
** INTEGER, and the key has no index of its own (SQLite's rule, lang_createtable.html#rowid:
** not in a WITHOUT ROWID table, not INTEGER PRIMARY KEY DESC, which get one). Only
** main's schema is read (the table the INSERT names resolves there unless temp has one of
** that name): reading an attached staging file would hold its lock until the analysis
** commits (analyze/staging.h). Tables named with a schema are left alone; any doubt leaves
** every key as given. TL_ERROR (e filled) when SQLite fails a probe (see temp_has). */
static int find_rowid(sqlite3 *db, const char *table, const char *columns, rows_source *rs,
                      tl_err *e) {
  rs->key_col = -1, rs->has_max = 0, rs->max_key = 0;
  if (strchr(table, '.')) return TL_OK;
  int has = 1;
  if (temp_has(db, table, &has, e) != TL_OK) return TL_ERROR;
  if (has) return TL_OK;
  /* a primary key that is not the rowid (WITHOUT ROWID, INTEGER PRIMARY KEY DESC, INT, several
  ** columns) has an index of origin 'pk'; the rowid has none */
  sqlite3_stmt *st;
  int p = probe_prepare(db,
                        "SELECT (SELECT count(*) FROM pragma_table_info(?1, 'main') WHERE pk > 0), "
                        "(SELECT name FROM pragma_table_info(?1, 'main') WHERE pk = 1 "
                        "AND upper(type) = 'INTEGER'), "
                        "EXISTS (SELECT 1 FROM pragma_index_list(?1, 'main') WHERE origin = 'pk')",
                        &st, e);
  if (p <= 0) return p < 0 ? TL_ERROR : TL_OK;
  if (sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC) != SQLITE_OK) {
    sqlite3_finalize(st);
    return tl_nomem(e);
  }
  char *name = NULL;
  int row = tl_pub_probe(db, st, "the table's columns", e);
  if (row == 1 && sqlite3_column_int(st, 0) == 1 && sqlite3_column_text(st, 1) &&
      !sqlite3_column_int(st, 2))
    name = sqlite3_mprintf("%s", (const char *)sqlite3_column_text(st, 1));
  sqlite3_finalize(st);
  if (row < 0) return TL_ERROR;
  if (!name) return TL_OK;
  int k = column_position(columns, name);
  sqlite3_free(name);
  if (k < 0) return TL_OK;
  char *max = sqlite3_mprintf("SELECT max(rowid) FROM main.\"%w\"", table);
  if (!max) return tl_nomem(e);
  p = probe_prepare(db, max, &st, e);
  sqlite3_free(max);
  if (p <= 0) return p < 0 ? TL_ERROR : TL_OK;
  row = tl_pub_probe(db, st, table, e);
  if (row == 1) {
    rs->key_col = k;
    rs->has_max = sqlite3_column_type(st, 0) != SQLITE_NULL;
    rs->max_key = sqlite3_column_int64(st, 0);
  }
  sqlite3_finalize(st);
  return row < 0 ? TL_ERROR : TL_OK;
}

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
  rows_source rs = {src, -1, 0, 0};
  if (find_rowid(db, table, columns, &rs, e) != TL_OK) {
    sqlite3_finalize(st);
    return TL_ERROR;
  }
  sqlite3_bind_pointer(st, 1, &rs, TL_ROWS_POINTER_TYPE, NULL);
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
