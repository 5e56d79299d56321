/*
** raw.c: the raw tables of a profile's SQLite files, as they are, for the analysis option
** embed_raw (ext/publish/embed.c copies them; see source.h).
**
**   tl_raw_cursor *c;
**   tl_raw_open(profile, file, &c, e);
**   while ((rc = tl_raw_next_table(c, &table, &cols, e)) == 1)     tables by name; views and
**     while ((rc = tl_raw_next_row(c, e)) == 1)                    sqlite_* left out
**       ... tl_raw_value(c, 0) is the rowid, tl_raw_value(c, 1 + k) column k ...
**   tl_raw_close(c);
*/
#include "source/source.h"
#include "source/sqlsrc.h"

#include <stdlib.h>
#include <string.h>

struct tl_raw_cursor {
  sqlite3 *db;
  const char *path;
  tl_names tables;
  size_t next;          /* the table after the current one */
  tl_columns cols;      /* of the current table */
  sqlite3_stmt *rows;   /* SELECT rowid, <columns> of the current table */
  char *table;          /* name of the current table */
};

int tl_raw_open(const tl_profile *p, size_t file, tl_raw_cursor **out, tl_err *e) {
  *out = NULL;
  tl_raw_cursor *c = calloc(1, sizeof *c);
  if (!c) return tl_nomem(e);
  c->path = p->files.v[file].path;
  /* Only SQLite files have tables to copy; a JSON trace has none. */
  if (p->inputs.v[p->files.v[file].db_idx].family->sqlite_files &&
      (tl_sql_open_ro(c->path, &c->db, e) || tl_sql_tables(c->db, c->path, &c->tables, e))) {
    tl_raw_close(c);
    return TL_ERROR;
  }
  *out = c;
  return TL_OK;
}

static int is_view(sqlite3 *db, const char *table) {
  sqlite3_stmt *st = NULL;
  int view = 0;
  if (sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_schema WHERE type = 'view' AND name = ?1",
                         -1, &st, NULL) == SQLITE_OK) {
    sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
    view = sqlite3_step(st) == SQLITE_ROW;
  }
  sqlite3_finalize(st);
  return view;
}

static void end_table(tl_raw_cursor *c) {
  sqlite3_finalize(c->rows);
  c->rows = NULL;
  tl_columns_free(&c->cols);
  free(c->table);
  c->table = NULL;
}

int tl_raw_next_table(tl_raw_cursor *c, const char **table, const tl_columns **cols, tl_err *e) {
  end_table(c);
  while (c->next < c->tables.n) {
    const char *name = c->tables.v[c->next++];
    if (strncmp(name, "sqlite_", 7) == 0) continue;
    if (tl_sql_columns(c->db, c->path, name, &c->cols, e)) return -1;
    /* Views are definitions, not rows: nothing to embed. */
    if (is_view(c->db, name)) {
      tl_columns_free(&c->cols);
      continue;
    }
    tl_buf select = {0};
    tl_buf_puts(&select, "SELECT rowid");
    for (int i = 0; i < c->cols.n; i++) {
      char *qc = tl_sql_quote_ident(c->cols.names[i]);
      if (!qc) select.oom = 1;
      tl_buf_printf(&select, ", %s", qc ? qc : "");
      free(qc);
    }
    char *qt = tl_sql_quote_ident(name);
    tl_buf_printf(&select, " FROM %s", qt ? qt : "");
    c->table = tl_strdup(name);
    int rc = select.oom || !qt || !c->table ? tl_nomem(e)
                                           : tl_sql_prepare(c->db, c->path, select.p, &c->rows, e);
    free(qt);
    tl_buf_free(&select);
    if (rc) return -1;
    *table = c->table;
    *cols = &c->cols;
    return 1;
  }
  return 0;
}

int tl_raw_next_row(tl_raw_cursor *c, tl_err *e) {
  int s = sqlite3_step(c->rows);
  if (s == SQLITE_ROW) return 1;
  if (s == SQLITE_DONE) return 0;
  tl_fail(e, "failed to read table %s of '%s' for embedding: %s", c->table, c->path,
          sqlite3_errmsg(c->db));
  return -1;
}

sqlite3_value *tl_raw_value(tl_raw_cursor *c, int i) { return sqlite3_column_value(c->rows, i); }

void tl_raw_close(tl_raw_cursor *c) {
  if (!c) return;
  end_table(c);
  tl_names_free(&c->tables);
  tl_sql_close(c->db);
  free(c);
}
