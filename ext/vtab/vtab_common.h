/*
** vtab_common.h: the parts every TraceLoom table-valued function shares.
**
** Each is an eponymous-only virtual table whose first HIDDEN column, `profile`, takes
** the profile path: SELECT * FROM traceloom_events('profile.db'). They read files, so
** xConnect marks them SQLITE_VTAB_DIRECTONLY: a view or trigger in some other database
** cannot make them read a file.
*/
#ifndef TL_VTAB_COMMON_H
#define TL_VTAB_COMMON_H

#include "util/sqlite_api.h"
#include "util/strpool.h"

/* xConnect body: declares the schema and sets DIRECTONLY. */
int tl_vtab_connect(sqlite3 *db, const char *schema, sqlite3_vtab **out, char **err);
int tl_vtab_disconnect(sqlite3_vtab *vt);
/* xOpen body: a zeroed cursor of `size` bytes (a struct whose first member is the
** sqlite3_vtab_cursor). */
int tl_vtab_open_cursor(size_t size, sqlite3_vtab_cursor **out);

/* Finds the usable EQ constraint on column `col`; returns its index in aConstraint or -1. */
int tl_vtab_find_eq(const sqlite3_index_info *info, int col);
/* Requires `profile = ?` (column col): assigns it argv slot 1 and omits the re-check.
** Returns SQLITE_OK, or SQLITE_CONSTRAINT when the argument is missing so SQLite tries
** another plan (and finally reports "no query solution"). */
int tl_vtab_require_path(sqlite3_index_info *info, int col);
/* The profile path given to xFilter, or NULL after setting an error that names the
** function and shows its use. */
const char *tl_vtab_path_arg(const char *function, int argc, sqlite3_value **argv,
                             sqlite3_vtab *vt);
/* Column results shared by the cursors: a pool string (NULL for the empty string, which
** means absent) and an optional int64 (NULL for TL_ABSENT). */
void tl_result_pool_str(sqlite3_context *ctx, const tl_strpool *pool, uint32_t id);
void tl_result_opt_i64(sqlite3_context *ctx, int64_t v);
/* Sets a cursor/vtab error message (sqlite3_mprintf'd copy of msg). */
void tl_vtab_error(sqlite3_vtab *vt, const char *msg);

#endif
