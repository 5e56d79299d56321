/*
** vtab_common.c: shared table-valued function plumbing (see vtab_common.h).
*/
#include "vtab_common.h"

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

int tl_vtab_find_eq(const sqlite3_index_info *info, int col) {
  for (int i = 0; i < info->nConstraint; i++) {
    const struct sqlite3_index_constraint *c = &info->aConstraint[i];
    if (c->iColumn == col && c->op == SQLITE_INDEX_CONSTRAINT_EQ && c->usable) return i;
  }
  return -1;
}

int tl_vtab_require_path(sqlite3_index_info *info, int col) {
  int i = tl_vtab_find_eq(info, col);
  if (i < 0) {
    /* A profile constraint exists but is not usable in this plan: make SQLite pick another. */
    for (int k = 0; k < info->nConstraint; k++)
      if (info->aConstraint[k].iColumn == col) return SQLITE_CONSTRAINT;
    return SQLITE_CONSTRAINT;
  }
  info->aConstraintUsage[i].argvIndex = 1;
  info->aConstraintUsage[i].omit = 1;
  return SQLITE_OK;
}

void tl_vtab_error(sqlite3_vtab *vt, const char *msg) {
  sqlite3_free(vt->zErrMsg);
  vt->zErrMsg = sqlite3_mprintf("%s", msg ? msg : "unknown error");
}
