/*
** vtab_common.c: shared table-valued function plumbing (see vtab_common.h).
*/
#include "vtab/vtab_common.h"

#include <string.h>
#include "traceloom.h"

#include <stddef.h>

int tl_vtab_connect(sqlite3 *db, const char *schema, sqlite3_vtab **out, char **err) {
  int rc = sqlite3_declare_vtab(db, schema);
  if (rc != SQLITE_OK) return rc;
  sqlite3_vtab *vt = sqlite3_malloc(sizeof *vt);
  if (!vt) return SQLITE_NOMEM;
  *vt = (sqlite3_vtab){0};
  sqlite3_vtab_config(db, SQLITE_VTAB_DIRECTONLY);
  (void)err;
  *out = vt;
  return SQLITE_OK;
}

int tl_vtab_disconnect(sqlite3_vtab *vt) {
  sqlite3_free(vt);
  return SQLITE_OK;
}

int tl_vtab_open_cursor(size_t size, sqlite3_vtab_cursor **out) {
  sqlite3_vtab_cursor *c = sqlite3_malloc64(size);
  if (!c) return SQLITE_NOMEM;
  memset(c, 0, size);
  *out = c;
  return SQLITE_OK;
}

int tl_vtab_find_eq(const sqlite3_index_info *info, int col) {
  for (int i = 0; i < info->nConstraint; i++) {
    const struct sqlite3_index_constraint *c = &info->aConstraint[i];
    if (c->iColumn == col && c->op == SQLITE_INDEX_CONSTRAINT_EQ && c->usable) return i;
  }
  return -1;
}

int tl_vtab_require_path(sqlite3_index_info *info, int col) {
  int i = tl_vtab_find_eq(info, col);
  if (i >= 0) {
    info->aConstraintUsage[i].argvIndex = 1;
    info->aConstraintUsage[i].omit = 1;
    return SQLITE_OK;
  }
  /* The argument exists but is not usable in this join order: ask for another plan. */
  for (int k = 0; k < info->nConstraint; k++)
    if (info->aConstraint[k].iColumn == col) return SQLITE_CONSTRAINT;
  /* No argument at all: accept the plan so xFilter can say what is missing (SQLite's own
  ** "no query solution" would not). */
  info->estimatedCost = 1e300;
  return SQLITE_OK;
}

const char *tl_vtab_path_arg(const char *function, int argc, sqlite3_value **argv,
                             sqlite3_vtab *vt) {
  const char *path = argc > 0 ? (const char *)sqlite3_value_text(argv[0]) : NULL;
  if (!path) {
    sqlite3_free(vt->zErrMsg);
    vt->zErrMsg = sqlite3_mprintf(
        "%s(profile) needs the profile path as its argument, e.g. "
        "SELECT * FROM %s('PROF_0/msprof_0.db')",
        function, function);
  }
  return path;
}

void tl_vtab_error(sqlite3_vtab *vt, const char *msg) {
  sqlite3_free(vt->zErrMsg);
  vt->zErrMsg = sqlite3_mprintf("%s", msg ? msg : "unknown error");
}

void tl_result_pool_str(sqlite3_context *ctx, const tl_strpool *pool, uint32_t id) {
  if (id == TL_STR_NONE)
    sqlite3_result_null(ctx);
  else
    sqlite3_result_text(ctx, tl_strpool_str(pool, id), (int)tl_strpool_len(pool, id),
                        SQLITE_STATIC);
}

void tl_result_opt_i64(sqlite3_context *ctx, int64_t v) {
  if (v == TL_ABSENT)
    sqlite3_result_null(ctx);
  else
    sqlite3_result_int64(ctx, v);
}
