/*
** profile.c: the traceloom_profile(path) table-valued function.
**
**   SELECT item, path, table_name, row_count FROM traceloom_profile('run_dir');
**   SELECT capability, usable, detail FROM traceloom_profile('msprof_0.db')
**    WHERE item = 'capability';
**
** The inventory of a profile file or directory: each input (db_idx) with its detected
** kind, each file and table with its row count, each capability (device tasks, compute
** and communication identity, host API, capture streams, graph node identity, ...) with
** `usable` and, when not usable, the reason (absent table, missing columns by name), and
** discovery warnings such as the split-layout fallback.
**
** xBestIndex contract: `profile = ?` (the hidden first argument) is required.
*/
#include "vtab/vtab_common.h"
#include "source/source.h"

#include <string.h>

enum {
  COL_DB_IDX, COL_ITEM, COL_SOURCE_KIND, COL_PATH, COL_TABLE_NAME, COL_ROW_COUNT,
  COL_CAPABILITY, COL_USABLE, COL_DETAIL, COL_PROFILE
};

static const char schema[] =
    "CREATE TABLE x(db_idx INTEGER, item TEXT, source_kind TEXT, path TEXT, table_name TEXT, "
    "row_count INTEGER, capability TEXT, usable INTEGER, detail TEXT, profile HIDDEN)";

typedef struct profile_cursor {
  sqlite3_vtab_cursor base;
  tl_inventory inv;
  size_t i;
} profile_cursor;

/* xConnect: declares the columns; eponymous-only. */
static int pr_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
                      sqlite3_vtab **out, char **err) {
  (void)aux, (void)argc, (void)argv;
  return tl_vtab_connect(db, schema, out, err);
}

/* xBestIndex: the profile argument is required. */
static int pr_best_index(sqlite3_vtab *vt, sqlite3_index_info *info) {
  (void)vt;
  int rc = tl_vtab_require_path(info, COL_PROFILE);
  info->estimatedCost = 100;
  return rc;
}

static int pr_open(sqlite3_vtab *vt, sqlite3_vtab_cursor **out) {
  (void)vt;
  return tl_vtab_open_cursor(sizeof(profile_cursor), out);
}

static int pr_close(sqlite3_vtab_cursor *cur) {
  profile_cursor *c = (profile_cursor *)cur;
  tl_inventory_free(&c->inv);
  sqlite3_free(c);
  return SQLITE_OK;
}

/* xFilter: discovers the profile and builds the whole inventory (it is small). */
static int pr_filter(sqlite3_vtab_cursor *cur, int idxNum, const char *idxStr, int argc,
                     sqlite3_value **argv) {
  (void)idxNum, (void)idxStr;
  profile_cursor *c = (profile_cursor *)cur;
  tl_inventory_free(&c->inv);
  c->i = 0;
  const char *path = tl_vtab_path_arg("traceloom_profile", argc, argv, cur->pVtab);
  if (!path) return SQLITE_ERROR;
  tl_err e = {0};
  tl_profile p;
  if (tl_profile_discover(path, NULL, &p, &e) == TL_OK) {
    tl_profile_inventory(&p, &c->inv, &e);
    tl_profile_free(&p);
  }
  if (e.msg) {
    tl_vtab_error(cur->pVtab, e.msg);
    tl_err_clear(&e);
    return SQLITE_ERROR;
  }
  return SQLITE_OK;
}

static int pr_next(sqlite3_vtab_cursor *cur) {
  ((profile_cursor *)cur)->i++;
  return SQLITE_OK;
}

static int pr_eof(sqlite3_vtab_cursor *cur) {
  profile_cursor *c = (profile_cursor *)cur;
  return c->i >= c->inv.n;
}

static void result_text(sqlite3_context *ctx, const char *s) {
  if (s)
    sqlite3_result_text(ctx, s, -1, SQLITE_TRANSIENT);
  else
    sqlite3_result_null(ctx);
}

/* xColumn: -1 counts and flags are NULL ("not applicable"). */
static int pr_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col) {
  profile_cursor *c = (profile_cursor *)cur;
  const tl_inventory_row *r = &c->inv.v[c->i];
  switch (col) {
    case COL_DB_IDX:
      if (r->db_idx < 0) sqlite3_result_null(ctx); else sqlite3_result_int(ctx, r->db_idx);
      break;
    case COL_ITEM: result_text(ctx, r->item); break;
    case COL_SOURCE_KIND: result_text(ctx, r->source_kind); break;
    case COL_PATH: result_text(ctx, r->path); break;
    case COL_TABLE_NAME: result_text(ctx, r->table_name); break;
    case COL_ROW_COUNT:
      if (r->row_count < 0) sqlite3_result_null(ctx); else sqlite3_result_int64(ctx, r->row_count);
      break;
    case COL_CAPABILITY: result_text(ctx, r->capability); break;
    case COL_USABLE:
      if (r->usable < 0) sqlite3_result_null(ctx); else sqlite3_result_int(ctx, r->usable);
      break;
    case COL_DETAIL: result_text(ctx, r->detail); break;
    default: sqlite3_result_null(ctx); break;
  }
  return SQLITE_OK;
}

static int pr_rowid(sqlite3_vtab_cursor *cur, sqlite_int64 *rowid) {
  *rowid = (sqlite_int64)((profile_cursor *)cur)->i;
  return SQLITE_OK;
}

const sqlite3_module tl_profile_module = {
    .xConnect = pr_connect,
    .xBestIndex = pr_best_index,
    .xDisconnect = tl_vtab_disconnect,
    .xOpen = pr_open,
    .xClose = pr_close,
    .xFilter = pr_filter,
    .xNext = pr_next,
    .xEof = pr_eof,
    .xColumn = pr_column,
    .xRowid = pr_rowid,
};
