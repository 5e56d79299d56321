/*
** msprof_marks.c: the host rows of Ascend profile files that the scheduler context's
** identity chain starts from (context-observer.md 5; tl_family_def.host_marks, source.h):
**
**   markers      PYTORCH_API rows named <prefix><execution id> (the observer's
**                traceloom.execution.<id>), in rowid order;
**   queue rows   PYTORCH_API rows of type 50002 named Enqueue@... / Dequeue@..., with the
**                connectionId of their CONNECTION_IDS row, in (rowid, connectionId) order.
**
** Names are text or STRING_IDS ids (only the ids of such names are loaded). Rows are kept
** only with canonical timestamps and thread (section 5.1: startNs and endNs integers or their
** exact decimal text, 0 <= startNs <= endNs, globalTid an INTEGER >= 0), and only from a
** PYTORCH_API that is a rowid table (its rows are audited by rowid). A file without these
** tables has no rows.
*/
#include "source/readers.h"
#include "source/sqlsrc.h"
#include "source/strtab.h"

#include <stdlib.h>
#include <string.h>

#define QUEUE_API_TYPE 50002

void tl_host_marks_free(tl_host_marks *m) {
  TL_VEC_FREE(&m->markers);
  TL_VEC_FREE(&m->queue);
  tl_buf_free(&m->text);
}

typedef struct file_scan {
  const char *path;
  sqlite3 *db;
  const char *prefix;
  size_t prefix_len;
  tl_strtab names;       /* STRING_IDS: the marker and queue names only */
  tl_host_marks *out;
} file_scan;

/* The decoded name of column col: inline text, or a STRING_IDS id among the loaded ones. */
static const char *row_name(file_scan *f, sqlite3_stmt *st, int col) {
  int type = sqlite3_column_type(st, col);
  if (type == SQLITE_TEXT) return (const char *)sqlite3_column_text(st, col);
  if (type != SQLITE_INTEGER) return NULL;
  return tl_strtab_text(&f->names, sqlite3_column_int64(st, col));
}

/* Only the STRING_IDS values the chain can use: marker and queue names. */
static int load_names(file_scan *f, tl_err *e) {
  char *where = tl_mprintf("typeof(id) = 'integer' AND (substr(value, 1, %zu) = '%s' OR "
                           "substr(value, 1, 8) IN ('Enqueue@', 'Dequeue@'))",
                           f->prefix_len, f->prefix);
  if (!where) return tl_nomem(e);
  tl_strtab_spec spec = {"STRING_IDS", "id", "value", 0, 0, 0, 0, where, NULL};
  int rc = tl_strtab_load(f->db, f->path, &spec, NULL, &f->names, e);
  free(where);
  return rc;
}

/* Canonical-timestamp checks of section 5.1, shared by marker and queue rows. */
#define ROW_OK                                                                              \
  "(p.startNs IS NOT NULL AND p.endNs IS NOT NULL AND "                                     \
  "CAST(CAST(p.startNs AS INTEGER) AS TEXT) = CAST(p.startNs AS TEXT) AND "                 \
  "CAST(CAST(p.endNs AS INTEGER) AS TEXT) = CAST(p.endNs AS TEXT) AND "                     \
  "CAST(p.startNs AS INTEGER) >= 0 AND CAST(p.endNs AS INTEGER) >= CAST(p.startNs AS INTEGER) " \
  "AND typeof(p.globalTid) = 'integer' AND p.globalTid >= 0)"

static int push_row(file_scan *f, int queue, sqlite3_stmt *st, const char *name, int dequeue,
                    tl_err *e) {
  tl_host_mark m = {sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 2),
                    sqlite3_column_int64(st, 3), sqlite3_column_int64(st, 4),
                    queue ? sqlite3_column_int64(st, 6) : TL_ABSENT, f->out->text.n,
                    (uint8_t)dequeue};
  tl_buf_append(&f->out->text, name, strlen(name) + 1);
  if (f->out->text.oom || (queue ? TL_VEC_PUSH(&f->out->queue, m) : TL_VEC_PUSH(&f->out->markers, m)))
    return tl_nomem(e);
  return TL_OK;
}

/* Runs sql (column 0 rowid, 1 name, 2 start, 3 end, 4 globalTid, 5 canonical, 6 the
** connection id of queue rows) and keeps its canonical rows with a decoded name: markers, or
** queue rows named Enqueue@ / Dequeue@. sql is freed. */
static int scan(file_scan *f, char *sql, int queue, tl_err *e) {
  if (!sql) return tl_nomem(e);
  sqlite3_stmt *st;
  int rc = tl_sql_prepare(f->db, f->path, sql, &st, e);
  free(sql);
  if (rc) return TL_ERROR;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    if (!sqlite3_column_int(st, 5)) continue; /* not canonical */
    const char *name = row_name(f, st, 1);
    if (!name) continue;
    int deq = queue && strncmp(name, "Dequeue@", 8) == 0;
    if (queue && !deq && strncmp(name, "Enqueue@", 8) != 0) continue;
    if (push_row(f, queue, st, name, deq, e)) {
      sqlite3_finalize(st);
      return TL_ERROR;
    }
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE)
    return tl_fail(e, "failed to read %s in '%s': %s",
                   queue ? "the task-queue rows of PYTORCH_API" : "PYTORCH_API", f->path,
                   sqlite3_errmsg(f->db));
  return TL_OK;
}

static int scan_markers(file_scan *f, tl_err *e) {
  char *by_id = f->names.present
                    ? tl_mprintf(" OR (typeof(p.name) = 'integer' AND p.name IN (SELECT id FROM "
                                 "STRING_IDS WHERE substr(value, 1, %zu) = '%s'))",
                                 f->prefix_len, f->prefix)
                    : tl_strdup("");
  char *sql = by_id ? tl_mprintf("SELECT p.rowid, p.name, CAST(p.startNs AS INTEGER), "
                                 "CAST(p.endNs AS INTEGER), p.globalTid, " ROW_OK
                                 " FROM PYTORCH_API p WHERE (typeof(p.name) = 'text' AND "
                                 "substr(p.name, 1, %zu) = '%s')%s ORDER BY p.rowid",
                                 f->prefix_len, f->prefix, by_id)
                    : NULL;
  free(by_id);
  return scan(f, sql, 0, e);
}

static int scan_queue(file_scan *f, tl_err *e) {
  char *sql = tl_mprintf(
      "SELECT p.rowid, p.name, CAST(p.startNs AS INTEGER), CAST(p.endNs AS INTEGER), "
      "p.globalTid, " ROW_OK " AND typeof(ci.connectionId) = 'integer' AND ci.connectionId >= 0, "
      "ci.connectionId FROM PYTORCH_API p JOIN CONNECTION_IDS ci ON ci.id = p.connectionId "
      "WHERE p.type = %d AND ((typeof(p.name) = 'text' AND substr(p.name, 1, 8) IN "
      "('Enqueue@', 'Dequeue@'))%s) ORDER BY p.rowid, ci.connectionId",
      QUEUE_API_TYPE,
      f->names.present ? " OR (typeof(p.name) = 'integer' AND p.name IN (SELECT id FROM "
                         "STRING_IDS WHERE substr(value, 1, 8) IN ('Enqueue@', 'Dequeue@')))"
                       : "");
  return scan(f, sql, 1, e);
}

/* 1 when PYTORCH_API is a rowid table: its rows can be audited by rowid. */
static int has_auditable_rowid(file_scan *f, const tl_columns *cols, tl_err *e) {
  static const char *const aliases[] = {"rowid", "_rowid_", "oid"};
  for (int i = 0; i < 3; i++)
    if (tl_columns_find(cols, aliases[i], 1) >= 0) return 0; /* a column shadows the rowid */
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(f->db,
                         "SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = 'PYTORCH_API' "
                         "AND sql NOT LIKE '%WITHOUT%ROWID%'",
                         -1, &st, NULL) != SQLITE_OK)
    return tl_fail(e, "failed to read the schema of '%s': %s", f->path, sqlite3_errmsg(f->db)), -1;
  int ok = sqlite3_step(st) == SQLITE_ROW;
  sqlite3_finalize(st);
  return ok;
}

int tl_msprof_host_marks(const tl_profile *p, size_t file, const char *marker_prefix,
                         tl_host_marks *out, tl_err *e) {
  static const char *const marker_cols[] = {"name", "startNs", "endNs", "globalTid", NULL};
  static const char *const queue_cols[] = {"type", "connectionId", NULL};
  static const char *const conn_cols[] = {"id", "connectionId", NULL};
  memset(out, 0, sizeof *out);
  /* The prefix becomes SQL text: a constant of the caller's, never profile data. */
  if (strchr(marker_prefix, '\'') || strchr(marker_prefix, '%'))
    return tl_fail(e, "internal error: marker prefix %s", marker_prefix);
  file_scan f = {p->files.v[file].path, NULL, marker_prefix, strlen(marker_prefix), {0}, out};
  tl_columns cols = {0};
  int rc = tl_sql_open_ro(f.path, &f.db, e);
  if (rc == TL_OK) rc = tl_sql_columns(f.db, f.path, "PYTORCH_API", &cols, e);
  if (rc == TL_OK && cols.exists && tl_columns_have(&cols, marker_cols, 0, NULL)) {
    int auditable = has_auditable_rowid(&f, &cols, e);
    if (auditable < 0) rc = TL_ERROR;
    if (rc == TL_OK && auditable > 0) {
      rc = load_names(&f, e);
      if (rc == TL_OK) rc = scan_markers(&f, e);
      int conn = rc == TL_OK && tl_columns_have(&cols, queue_cols, 0, NULL)
                     ? tl_sql_capability(f.db, f.path, "CONNECTION_IDS", conn_cols, 0, NULL, e)
                     : 0;
      if (conn < 0) rc = TL_ERROR;
      if (rc == TL_OK && conn) rc = scan_queue(&f, e);
    }
  }
  tl_columns_free(&cols);
  tl_sql_close(f.db);
  tl_strtab_free(&f.names);
  if (rc != TL_OK) tl_host_marks_free(out);
  return rc;
}
