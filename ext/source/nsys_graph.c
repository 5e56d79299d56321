/*
** nsys_graph.c: what CUDA graph replay reconstruction (ext/replay/cudagraph.c, recovery.md
** 7.2) needs from an Nsight Systems export beyond its event rows (see source.h,
** tl_cuda_graph_facts):
**   - whether CUDA_GRAPH_NODE_EVENTS has rows (the node-level path);
**   - the capability gate over the other tables: a table holding rows with a graphNodeId
**     must be KERNEL, MEMCPY or MEMSET with their identity columns, and no graph row may
**     lack one (the kernel table's NULLs are checked on the events instead: every kernel
**     row is an event);
**   - graphNodeId -> originalGraphNodeId, kept only when unique;
**   - GRAPH_TRACE graphId / graphExecId by rowid (the trace keeps them only in the label).
*/
#include "source/readers.h"
#include "source/sqlsrc.h"
#include "util/buf.h"

#include <stdlib.h>
#include <string.h>

#define NODE_TABLE "CUDA_GRAPH_NODE_EVENTS"
#define KERNEL_TABLE "CUPTI_ACTIVITY_KIND_KERNEL"
#define MEMCPY_TABLE "CUPTI_ACTIVITY_KIND_MEMCPY"
#define MEMSET_TABLE "CUPTI_ACTIVITY_KIND_MEMSET"
#define GRAPH_TRACE_TABLE "CUPTI_ACTIVITY_KIND_GRAPH_TRACE"

/* 1 when "SELECT 1 FROM table WHERE <where> LIMIT 1" finds a row, 0 when not, -1 on error. */
static int sql_any(sqlite3 *db, const char *path, const char *table, const char *where,
                   tl_err *e) {
  char *qt = tl_sql_quote_ident(table);
  char *sql = qt ? tl_mprintf("SELECT 1 FROM %s WHERE %s LIMIT 1", qt, where) : NULL;
  free(qt);
  if (!sql) return tl_nomem(e), -1;
  sqlite3_stmt *st;
  int rc = tl_sql_prepare(db, path, sql, &st, e);
  free(sql);
  if (rc) return -1;
  rc = sqlite3_step(st);
  sqlite3_finalize(st);
  if (rc == SQLITE_ROW) return 1;
  if (rc == SQLITE_DONE) return 0;
  tl_fail(e, "failed to read table %s in '%s': %s", table, path, sqlite3_errmsg(db));
  return -1;
}

/* "<q(graphNodeId)> IS NOT NULL [AND (<q(c)> IS NULL OR ...)]", or NULL on OOM. */
static char *graph_node_where(const char *node_col, const char *const *cols, int n) {
  tl_buf b = {0};
  char *q = tl_sql_quote_ident(node_col);
  if (!q) return NULL;
  tl_buf_printf(&b, "%s IS NOT NULL", q);
  free(q);
  for (int i = 0; i < n; i++) {
    q = tl_sql_quote_ident(cols[i]);
    if (!q) b.oom = 1;
    tl_buf_printf(&b, "%s%s IS NULL", i ? " OR " : " AND (", q ? q : "");
    free(q);
  }
  if (n) tl_buf_puts(&b, ")");
  if (b.oom) {
    tl_buf_free(&b);
    return NULL;
  }
  return b.p;
}

/* Whether one table passes the capability gate: 1 yes, 0 no, -1 error. The kernel table
** is the big one; its NULL identity columns are checked on the trace events instead
** (every kernel row is an event), so only its columns are looked at here. */
static int table_capable(sqlite3 *db, const char *path, const char *table, tl_err *e) {
  static const char *const kernel_need[] = {"contextId", "correlationId", NULL};
  static const char *const memcpy_need[] = {"contextId", "correlationId", "bytes", "copyKind",
                                            NULL};
  static const char *const memset_need[] = {"contextId", "correlationId", "bytes", NULL};
  if (strcmp(table, NODE_TABLE) == 0) return 1;
  tl_columns cols;
  if (tl_sql_columns(db, path, table, &cols, e)) return -1;
  int node = tl_columns_find(&cols, "graphNodeId", 1);
  if (node < 0) {
    tl_columns_free(&cols);
    return 1;
  }
  const char *const *need = NULL;
  if (strcmp(table, KERNEL_TABLE) == 0) need = kernel_need;
  else if (strcmp(table, MEMCPY_TABLE) == 0) need = memcpy_need;
  else if (strcmp(table, MEMSET_TABLE) == 0) need = memset_need;
  const char *actual[8];
  int n = 0, missing = 0;
  for (int i = 0; need && need[i]; i++) {
    int k = tl_columns_find(&cols, need[i], 1);
    if (k < 0) missing = 1;
    else actual[n++] = cols.names[k];
  }
  int rc;
  if (need == kernel_need && !missing) {
    rc = 1;
  } else {
    /* Unsupported table, or a child table lacking a column: any graph row fails the gate;
    ** a complete child table fails on a graph row with a NULL required column. */
    char *where = graph_node_where(cols.names[node], actual, need && !missing ? n : 0);
    if (!where) {
      tl_nomem(e);
      rc = -1;
    } else {
      rc = sql_any(db, path, table, where, e);
    }
    free(where);
    if (rc >= 0) rc = !rc;
  }
  tl_columns_free(&cols);
  return rc;
}

/* graphNodeId -> originalGraphNodeId over rows where both are present; a node listed with
** two different originals maps to TL_ORIGINAL_AMBIGUOUS. A table without either column
** gives an empty map (original ids stay absent). */
static int read_original_nodes(sqlite3 *db, const char *path, tl_i64map *out, tl_err *e) {
  tl_columns cols;
  if (tl_sql_columns(db, path, NODE_TABLE, &cols, e)) return TL_ERROR;
  int g = tl_columns_find(&cols, "graphNodeId", 1);
  int o = tl_columns_find(&cols, "originalGraphNodeId", 1);
  char *qg = g >= 0 ? tl_sql_quote_ident(cols.names[g]) : NULL;
  char *qo = o >= 0 ? tl_sql_quote_ident(cols.names[o]) : NULL;
  tl_columns_free(&cols);
  if (g < 0 || o < 0) {
    free(qg), free(qo);
    return TL_OK;
  }
  char *sql = qg && qo ? tl_mprintf("SELECT %s, %s FROM \"%s\" WHERE %s IS NOT NULL AND %s IS "
                                    "NOT NULL ORDER BY rowid",
                                    qg, qo, NODE_TABLE, qg, qo)
                       : NULL;
  free(qg), free(qo);
  if (!sql) return tl_nomem(e);
  sqlite3_stmt *st;
  int rc = tl_sql_prepare(db, path, sql, &st, e);
  free(sql);
  if (rc) return rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    int64_t node = tl_col_i64(st, 0, TL_ABSENT), orig = tl_col_i64(st, 1, TL_ABSENT);
    int64_t *have = tl_i64map_get(out, node);
    if (have) {
      if (*have != orig) *have = TL_ORIGINAL_AMBIGUOUS;
    } else if (tl_i64map_put(out, node, orig)) {
      sqlite3_finalize(st);
      return tl_nomem(e);
    }
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE)
    return tl_fail(e, "failed to read table %s in '%s': %s", NODE_TABLE, path,
                   sqlite3_errmsg(db));
  return TL_OK;
}

/* GRAPH_TRACE rowid -> graphId / graphExecId (the trace keeps them only in the label). */
static int read_graph_trace_ids(sqlite3 *db, const char *path, tl_cuda_graph_facts *f,
                                tl_err *e) {
  tl_columns cols;
  if (tl_sql_columns(db, path, GRAPH_TRACE_TABLE, &cols, e)) return TL_ERROR;
  int g = tl_columns_find(&cols, "graphId", 1), x = tl_columns_find(&cols, "graphExecId", 1);
  char *qg = g >= 0 ? tl_sql_quote_ident(cols.names[g]) : tl_strdup("NULL");
  char *qx = x >= 0 ? tl_sql_quote_ident(cols.names[x]) : tl_strdup("NULL");
  int exists = cols.exists;
  tl_columns_free(&cols);
  char *sql = exists && qg && qx
                  ? tl_mprintf("SELECT rowid, %s, %s FROM \"%s\"", qg, qx, GRAPH_TRACE_TABLE)
                  : NULL;
  int oom = !qg || !qx;
  free(qg), free(qx);
  if (oom || (exists && !sql)) return free(sql), tl_nomem(e);
  if (!exists) return TL_OK;
  sqlite3_stmt *st;
  int rc = tl_sql_prepare(db, path, sql, &st, e);
  free(sql);
  if (rc) return rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    int64_t rowid = sqlite3_column_int64(st, 0);
    if (tl_i64map_put(&f->graph_id, rowid, tl_col_i64(st, 1, TL_ABSENT)) ||
        tl_i64map_put(&f->exec_id, rowid, tl_col_i64(st, 2, TL_ABSENT))) {
      sqlite3_finalize(st);
      return tl_nomem(e);
    }
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE)
    return tl_fail(e, "failed to read table %s in '%s': %s", GRAPH_TRACE_TABLE, path,
                   sqlite3_errmsg(db));
  return TL_OK;
}

/* Everything CUDA graph reconstruction needs from one Nsight input (tl_family_def's
** cuda_graph_facts). want_trace: the trace holds GRAPH_TRACE events of this input. */
int tl_nsys_cuda_graph_facts(const tl_profile *p, int db_idx, int want_trace,
                             tl_cuda_graph_facts *f, tl_err *e) {
  const char *path = p->inputs.v[db_idx].path;
  sqlite3 *db;
  if (tl_sql_open_ro(path, &db, e)) return TL_ERROR;
  int rc = TL_OK;
  f->node_level = tl_sql_nonempty(db, NODE_TABLE);
  if (f->node_level < 0) {
    if (sqlite3_errcode(db) == SQLITE_OK) tl_nomem(e);
    else tl_fail(e, "cannot read table %s of %s: %s", NODE_TABLE, path, sqlite3_errmsg(db));
    tl_sql_close(db);
    return TL_ERROR;
  }
  f->capable = 1;
  if (f->node_level) {
    tl_names tables = {0};
    rc = tl_sql_tables(db, path, &tables, e);
    for (size_t i = 0; rc == TL_OK && f->capable && i < tables.n; i++) {
      int ok = table_capable(db, path, tables.v[i], e);
      if (ok < 0) rc = TL_ERROR;
      else f->capable = ok;
    }
    tl_names_free(&tables);
    if (rc == TL_OK) rc = read_original_nodes(db, path, &f->original, e);
  }
  if (rc == TL_OK && want_trace) rc = read_graph_trace_ids(db, path, f, e);
  tl_sql_close(db);
  return rc;
}

void tl_cuda_graph_facts_free(tl_cuda_graph_facts *f) {
  tl_i64map_free(&f->original);
  tl_i64map_free(&f->graph_id);
  tl_i64map_free(&f->exec_id);
}
