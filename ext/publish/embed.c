/*
** embed.c: copying the raw source tables into the analysis database (option embed_raw).
**
** With {"embed_raw": true} every table of every source file is copied, rows and rowids
** unchanged, so the analysis database is self-contained: traceloom_v_event_source_locator
** then resolves each event to its raw row in this database (embedded_raw). A single-file
** profile keeps the original table names (TASK, STRING_IDS, ...); several files get
** collision-free names raw_s<source_id>_<table>. The names are recorded in
** traceloom_raw_table.embedded_table_name, which is also how a later analysis finds and
** drops them before publishing its own.
*/
#include "publish/publish.h"
#include "source/sqlsrc.h"
#include "util/buf.h"

#include <stdlib.h>
#include <string.h>

/* Drops the raw tables an earlier embedded analysis published (if any). */
int tl_drop_previous_embedded(sqlite3 *db, tl_err *e) {
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(db,
                         "SELECT DISTINCT embedded_table_name FROM main.traceloom_raw_table "
                         "WHERE embedded_table_name IS NOT NULL",
                         -1, &st, NULL) != SQLITE_OK)
    return TL_OK; /* no earlier analysis, or one without embedded tables */
  TL_VEC(char *) names = {0};
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    char *q = tl_sql_quote_ident((const char *)sqlite3_column_text(st, 0));
    if (!q || TL_VEC_PUSH(&names, q)) {
      free(q);
      rc = SQLITE_NOMEM;
      break;
    }
  }
  sqlite3_finalize(st);
  int out = rc == SQLITE_DONE ? TL_OK : rc == SQLITE_NOMEM ? tl_nomem(e)
                                                             : tl_fail(e, "failed to list earlier embedded tables: %s", sqlite3_errmsg(db));
  for (size_t i = 0; out == TL_OK && i < names.n; i++) {
    char *sql = tl_mprintf("DROP TABLE IF EXISTS main.%s", names.v[i]);
    out = sql ? tl_pub_exec(db, sql, e) : tl_nomem(e);
    free(sql);
  }
  for (size_t i = 0; i < names.n; i++) free(names.v[i]);
  TL_VEC_FREE(&names);
  return out;
}

/* 1 when main has a table of that name, 0 when not, -1 (e filled) when SQLite failed to say
** (tl_pub_probe: the failure may have ended the transaction). */
static int table_exists(sqlite3 *db, const char *name, tl_err *e) {
  sqlite3_stmt *st;
  if (tl_pub_prepare(db, "SELECT 1 FROM main.sqlite_schema WHERE name = ?1 COLLATE NOCASE", &st,
                     e) != TL_OK)
    return -1;
  sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
  int found = tl_pub_probe(db, st, "the schema", e);
  sqlite3_finalize(st);
  return found;
}

/* Copies the current table of c; rowids are kept so (source table, rowid) provenance stays
** exact. */
static int copy_table(sqlite3 *db, tl_raw_cursor *c, const tl_columns *cols, const char *target,
                      tl_err *e) {
  tl_buf create = {0}, insert = {0};
  char *qt = tl_sql_quote_ident(target);
  int rc = TL_OK;
  if (!qt) rc = tl_nomem(e);
  if (rc == TL_OK) {
    tl_buf_printf(&create, "CREATE TABLE main.%s(", qt);
    tl_buf_printf(&insert, "INSERT INTO main.%s(rowid", qt);
    for (int i = 0; i < cols->n; i++) {
      char *qc = tl_sql_quote_ident(cols->names[i]);
      if (!qc) {
        rc = tl_nomem(e);
        break;
      }
      tl_buf_printf(&create, "%s%s", i ? ", " : "", qc);
      tl_buf_printf(&insert, ", %s", qc);
      free(qc);
    }
    tl_buf_puts(&create, ")");
    tl_buf_puts(&insert, ") VALUES (?");
    for (int i = 0; i < cols->n; i++) tl_buf_puts(&insert, ", ?");
    tl_buf_puts(&insert, ")");
    if (create.oom || insert.oom) rc = tl_nomem(e);
  }
  if (rc == TL_OK) rc = tl_pub_exec(db, create.p, e);
  sqlite3_stmt *wr = NULL;
  if (rc == TL_OK) rc = tl_pub_prepare(db, insert.p, &wr, e);
  while (rc == TL_OK) {
    int s = tl_raw_next_row(c, e);
    if (s == 0) break;
    if (s < 0) {
      rc = TL_ERROR;
      break;
    }
    for (int i = 0; i <= cols->n; i++) sqlite3_bind_value(wr, i + 1, tl_raw_value(c, i));
    rc = tl_pub_step(db, wr, target, e);
  }
  sqlite3_finalize(wr);
  tl_buf_free(&create), tl_buf_free(&insert);
  free(qt);
  return rc;
}

int tl_publish_embed_raw(sqlite3 *db, const tl_profile *p, tl_err *e) {
  sqlite3_stmt *mark_table = NULL, *mark_file = NULL;
  int rc = tl_pub_prepare(db,
                          "UPDATE traceloom_raw_table SET embedded_table_name = ?3 "
                          "WHERE source_id = ?1 AND source_table = ?2",
                          &mark_table, e);
  if (rc == TL_OK)
    rc = tl_pub_prepare(db,
                        "UPDATE traceloom_raw_source_database SET embedded_mode = 'embedded' "
                        "WHERE source_id = ?1",
                        &mark_file, e);
  int keep_names = p->files.n == 1;
  for (size_t f = 0; rc == TL_OK && f < p->files.n; f++) {
    const char *path = p->files.v[f].path;
    /* Only SQLite sources have tables to copy; a JSON trace stays referenced. */
    if (!p->inputs.v[p->files.v[f].db_idx].family->sqlite_files) continue;
    tl_raw_cursor *c = NULL;
    rc = tl_raw_open(p, f, &c, e);
    const char *table;
    const tl_columns *cols;
    int more = 0;
    while (rc == TL_OK && (more = tl_raw_next_table(c, &table, &cols, e)) == 1) {
      char *target = keep_names ? tl_strdup(table) : tl_mprintf("raw_s%zu_%s", f, table);
      if (!target) {
        rc = tl_nomem(e);
        break;
      }
      int exists = table_exists(db, target, e);
      if (exists < 0)
        rc = TL_ERROR;
      else if (exists || strncmp(target, "traceloom", 9) == 0)
        rc = tl_fail(e,
                     "cannot embed table %s of '%s': a table named %s already exists in the "
                     "analysis database (embed into a fresh database, or drop it first)",
                     table, path, target);
      if (rc == TL_OK) rc = copy_table(db, c, cols, target, e);
      if (rc == TL_OK) {
        sqlite3_bind_int64(mark_table, 1, (int64_t)f);
        sqlite3_bind_text(mark_table, 2, table, -1, SQLITE_STATIC);
        sqlite3_bind_text(mark_table, 3, target, -1, SQLITE_STATIC);
        rc = tl_pub_step(db, mark_table, "traceloom_raw_table", e);
      }
      free(target);
    }
    if (rc == TL_OK && more < 0) rc = TL_ERROR;
    if (rc == TL_OK) {
      sqlite3_bind_int64(mark_file, 1, (int64_t)f);
      rc = tl_pub_step(db, mark_file, "traceloom_raw_source_database", e);
    }
    tl_raw_close(c);
  }
  sqlite3_finalize(mark_table), sqlite3_finalize(mark_file);
  return rc;
}
