/*
** host_calls.c: the traceloom_host_calls(path) table-valued function.
**
**   SELECT api_name, count(*) FROM traceloom_host_calls('PROF_0/msprof_0.db') GROUP BY 1;
**
** The normalized host runtime calls of a profile (inputs.md section 9.2), streamed from
** the source through the analysis' own reader cursor. call_id is the dense index of the
** call in reader order: the n of `runtime-call-<n>` in traceloom_runtime_call.
**
** xBestIndex contract: `profile = ?` (the hidden first argument) is required; no other
** constraint is pushed down.
*/
#include "vtab/vtab_common.h"
#include "source/source.h"

#include <string.h>

enum {
  COL_CALL_ID, COL_DB_IDX, COL_SOURCE_PATH, COL_SOURCE_TABLE, COL_SOURCE_ROWID, COL_PROVIDER,
  COL_API_NAME, COL_API_TYPE, COL_PROCESS_ID, COL_THREAD_ID, COL_GLOBAL_TID, COL_START_NS,
  COL_END_NS, COL_CORRELATION_ID, COL_CONTEXT_ID, COL_DEVICE_ID, COL_PROFILE
};

static const char schema[] =
    "CREATE TABLE x(call_id INTEGER, db_idx INTEGER, source_path TEXT, source_table TEXT, "
    "source_rowid INTEGER, provider TEXT, api_name TEXT, api_type TEXT, process_id INTEGER, "
    "thread_id INTEGER, global_tid INTEGER, start_ns INTEGER, end_ns INTEGER, "
    "correlation_id INTEGER, context_id INTEGER, device_id INTEGER, profile HIDDEN)";

typedef struct calls_cursor {
  sqlite3_vtab_cursor base;
  tl_profile profile;
  int have_profile;
  tl_strpool *pool;
  tl_cursor *cur;
  tl_call_row row;
  int64_t call_id;
  int eof;
} calls_cursor;

/* xConnect: declares the columns; eponymous-only. */
static int hc_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
                      sqlite3_vtab **out, char **err) {
  (void)aux, (void)argc, (void)argv;
  return tl_vtab_connect(db, schema, out, err);
}

/* xBestIndex: the profile argument is required. */
static int hc_best_index(sqlite3_vtab *vt, sqlite3_index_info *info) {
  (void)vt;
  int rc = tl_vtab_require_path(info, COL_PROFILE);
  info->estimatedCost = 1e5;
  return rc;
}

static int hc_open(sqlite3_vtab *vt, sqlite3_vtab_cursor **out) {
  (void)vt;
  return tl_vtab_open_cursor(sizeof(calls_cursor), out);
}

static void hc_reset(calls_cursor *c) {
  if (c->cur) c->cur->close(c->cur);
  c->cur = NULL;
  if (c->have_profile) tl_profile_free(&c->profile);
  c->have_profile = 0;
  tl_strpool_free(c->pool);
  c->pool = NULL;
}

static int hc_close(sqlite3_vtab_cursor *cur) {
  calls_cursor *c = (calls_cursor *)cur;
  hc_reset(c);
  sqlite3_free(c);
  return SQLITE_OK;
}

static int hc_next(sqlite3_vtab_cursor *cur) {
  calls_cursor *c = (calls_cursor *)cur;
  tl_err e = {0};
  int rc = c->cur->next(c->cur, &c->row, &e);
  if (rc < 0) {
    tl_vtab_error(cur->pVtab, e.msg);
    tl_err_clear(&e);
    return SQLITE_ERROR;
  }
  if (rc == 0) c->eof = 1;
  c->call_id++;
  return SQLITE_OK;
}

/* xFilter: argv[0] is the profile path. */
static int hc_filter(sqlite3_vtab_cursor *cur, int idxNum, const char *idxStr, int argc,
                     sqlite3_value **argv) {
  (void)idxNum, (void)idxStr;
  calls_cursor *c = (calls_cursor *)cur;
  hc_reset(c);
  c->eof = 0;
  c->call_id = -1;
  const char *path = tl_vtab_path_arg("traceloom_host_calls", argc, argv, cur->pVtab);
  if (!path) return SQLITE_ERROR;
  tl_err e = {0};
  c->pool = tl_strpool_new();
  if (!c->pool) return SQLITE_NOMEM;
  if (tl_profile_discover(path, NULL, &c->profile, &e) == TL_OK) {
    c->have_profile = 1;
    tl_calls_open(&c->profile, c->pool, &c->cur, &e);
  }
  if (e.msg) {
    tl_vtab_error(cur->pVtab, e.msg);
    tl_err_clear(&e);
    return SQLITE_ERROR;
  }
  return hc_next(cur);
}

static int hc_eof(sqlite3_vtab_cursor *cur) { return ((calls_cursor *)cur)->eof; }

/* xColumn: absent values are SQL NULL. */
static int hc_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col) {
  calls_cursor *c = (calls_cursor *)cur;
  const tl_call_row *r = &c->row;
  switch (col) {
    case COL_CALL_ID: sqlite3_result_int64(ctx, c->call_id); break;
    case COL_DB_IDX: sqlite3_result_int(ctx, r->db_idx); break;
    case COL_SOURCE_PATH:
      sqlite3_result_text(ctx, c->profile.files.v[r->source_id].path, -1, SQLITE_STATIC);
      break;
    case COL_SOURCE_TABLE: sqlite3_result_text(ctx, r->source_table, -1, SQLITE_TRANSIENT); break;
    case COL_SOURCE_ROWID: sqlite3_result_int64(ctx, r->source_rowid); break;
    case COL_PROVIDER: sqlite3_result_text(ctx, tl_provider_name(r->provider), -1, SQLITE_STATIC); break;
    case COL_API_NAME: tl_result_pool_str(ctx, c->pool, r->api_name); break;
    case COL_API_TYPE: tl_result_pool_str(ctx, c->pool, r->api_type); break;
    case COL_PROCESS_ID: tl_result_opt_i64(ctx, r->process_id); break;
    case COL_THREAD_ID: tl_result_opt_i64(ctx, r->thread_id); break;
    case COL_GLOBAL_TID: tl_result_opt_i64(ctx, r->global_tid); break;
    case COL_START_NS: sqlite3_result_int64(ctx, r->start_ns); break;
    case COL_END_NS: sqlite3_result_int64(ctx, r->end_ns); break;
    case COL_CORRELATION_ID: tl_result_opt_i64(ctx, r->correlation_id); break;
    case COL_CONTEXT_ID: tl_result_opt_i64(ctx, r->context_id); break;
    case COL_DEVICE_ID: tl_result_opt_i64(ctx, r->device_id); break;
    default: sqlite3_result_null(ctx); break;
  }
  return SQLITE_OK;
}

static int hc_rowid(sqlite3_vtab_cursor *cur, sqlite_int64 *rowid) {
  *rowid = ((calls_cursor *)cur)->call_id;
  return SQLITE_OK;
}

const sqlite3_module tl_host_calls_module = {
    .xConnect = hc_connect,
    .xBestIndex = hc_best_index,
    .xDisconnect = tl_vtab_disconnect,
    .xOpen = hc_open,
    .xClose = hc_close,
    .xFilter = hc_filter,
    .xNext = hc_next,
    .xEof = hc_eof,
    .xColumn = hc_column,
    .xRowid = hc_rowid,
};
