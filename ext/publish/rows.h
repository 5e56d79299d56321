/*
** rows.h: inserting many integer rows from C arrays with one INSERT ... SELECT (rows.c).
*/
#ifndef TL_PUBLISH_ROWS_H
#define TL_PUBLISH_ROWS_H

#include "util/sqlite_api.h"
#include "util/err.h"

#include <stddef.h>
#include <stdint.h>

#define TL_ROWS_MAX_COLS 32
#define TL_ROWS_POINTER_TYPE "tl_rows"

/* A producer of nrows rows of ncols columns: fill writes row `row` (0-based, asked for in
** order, once each) into v[0..ncols) and sets null[k] for the columns that are SQL NULL;
** it returns 0, or -1 when it cannot (out of memory), which fails the insert. Columns whose
** bit is set in text_cols are text: text() gives the bytes of column col of the row last
** filled (copied by SQLite at once). */
typedef struct tl_rows {
  size_t nrows;
  int ncols;
  int (*fill)(void *ctx, size_t row, int64_t *v, unsigned char *null);
  void *ctx;
  uint32_t text_cols;
  void (*text)(void *ctx, int col, const char **p, int *n);
} tl_rows;

/* A table's columns as a static descriptor array, so that column lists, counts and text
** masks are written once, next to an enum of the same columns that the fill function
** indexes v[] and null[] with:
**
**   enum { NODE_N, NODE_PATH, NODE_NCOLS };
**   static const tl_rows_column node_columns[NODE_NCOLS] = {
**       [NODE_N] = {"node_n", 0}, [NODE_PATH] = {"path", 1}};
**   tl_rows_publish(db, "traceloom_node_core", node_columns, NODE_NCOLS, nrows, fill, text,
**                   ctx, e);
*/
typedef struct tl_rows_column {
  const char *name;
  unsigned char text; /* 1: the column's value comes from text(), not v[] */
  /* tl_rows_prepare only: the value as SQL, `?` standing for the column's parameter
  ** ("json_object('detail', ?)"); a constant ("'exact_direct'") binds nothing. NULL: the
  ** parameter itself. */
  const char *expr;
} tl_rows_column;

/* INSERT INTO table(<names of cols>) SELECT ... FROM traceloom_rows: tl_rows_insert with the
** column list and text mask taken from the descriptors. */
int tl_rows_publish(sqlite3 *db, const char *table, const tl_rows_column *cols, int ncols,
                    size_t nrows, int (*fill)(void *, size_t, int64_t *, unsigned char *),
                    void (*text)(void *, int, const char **, int *), void *ctx, tl_err *e);

/* The same descriptors for a table written row by row: `verb` (INSERT, INSERT OR IGNORE, ...)
** INTO table(<names of cols>) VALUES (?1, .., ?ncols), so that column k of the enum is bound
** as parameter TL_PARAM(k) (a column with an expr has it in place of its parameter):
**
**   tl_rows_prepare(db, "INSERT", "traceloom_node_shape", shape_columns, NS_NCOLS, &st, e);
**   sqlite3_bind_int64(st, TL_PARAM(NS_ID), id);
*/
#define TL_PARAM(col) ((col) + 1)
int tl_rows_prepare(sqlite3 *db, const char *verb, const char *table, const tl_rows_column *cols,
                    int ncols, sqlite3_stmt **st, tl_err *e);

/* The eponymous virtual table traceloom_rows (registered with the extension). */
extern const sqlite3_module tl_rows_module;

/* INSERT INTO table(columns) SELECT c0, .., c(ncols-1) FROM traceloom_rows(src). */
int tl_rows_insert(sqlite3 *db, const char *table, const char *columns, const tl_rows *src,
                   tl_err *e);

#endif
