/*
** dbopen.c: read-only SQLite databases, and private scratch ones (see dbopen.h).
*/
#include "util/dbopen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* file: URI for a path: characters with a meaning in URIs are percent-encoded. */
static char *path_uri(const char *path) {
  size_t n = strlen(path);
  char *u = malloc(n * 3 + 32);
  if (!u) return NULL;
  char *w = u;
  w += sprintf(w, "file:");
  for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
    if (*p == '%' || *p == '?' || *p == '#' || *p <= ' ' || *p >= 0x7f)
      w += sprintf(w, "%%%02X", *p);
    else
      *w++ = (char)*p;
  }
  strcpy(w, "?mode=ro");
  return u;
}

int tl_db_open_ro(const char *path, const char *what, sqlite3 **out, tl_err *e) {
  *out = NULL;
  char *uri = path_uri(path);
  if (!uri) return tl_nomem(e);
  sqlite3 *db = NULL;
  int rc = sqlite3_open_v2(uri, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, NULL);
  free(uri);
  if (rc != SQLITE_OK) {
    tl_fail(e, "failed to open read-only %s '%s': %s", what, path,
            db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
    sqlite3_close(db);
    return TL_ERROR;
  }
  /* Reading the schema now turns "not a database" and corruption into an error here,
  ** with the path, rather than at the first query. */
  rc = sqlite3_exec(db, "SELECT count(*) FROM sqlite_schema", NULL, NULL, NULL);
  if (rc != SQLITE_OK) {
    tl_fail(e, "failed to open read-only %s '%s': %s (expected a SQLite database)", what, path,
            sqlite3_errmsg(db));
    sqlite3_close(db);
    return TL_ERROR;
  }
  *out = db;
  return TL_OK;
}

const char *tl_db_worker_path(sqlite3 *db) {
  const char *env = getenv("TRACELOOM_EXPORT_THREADS");
  if ((env && atoi(env) == 1) || !sqlite3_threadsafe() || !sqlite3_get_autocommit(db))
    return NULL;
  /* A statement that writes (a trigger's INSERT, say) may hold changes a second connection
  ** cannot see; a database of another VFS (memdb, an application's own) is not the file its
  ** name would open. */
  if (sqlite3_txn_state(db, "main") == SQLITE_TXN_WRITE) return NULL;
  sqlite3_vfs *vfs = NULL;
  if (sqlite3_file_control(db, "main", SQLITE_FCNTL_VFS_POINTER, &vfs) != SQLITE_OK ||
      vfs != sqlite3_vfs_find(NULL))
    return NULL;
  const char *path = sqlite3_db_filename(db, "main");
  return path && *path ? path : NULL;
}

int tl_db_open_scratch(const char *path, sqlite3 **out, tl_err *e) {
  *out = NULL;
  sqlite3 *db = NULL;
  int rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
  /* private until deleted: nothing to recover after a crash, so no journal and no fsync; the
  ** CLI's pages (16 KiB) for the same appends */
  if (rc == SQLITE_OK)
    rc = sqlite3_exec(db,
                      "PRAGMA page_size=16384; PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF",
                      NULL, NULL, NULL);
  if (rc != SQLITE_OK) {
    tl_fail(e, "failed to open the scratch database '%s': %s", path,
            db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
    sqlite3_close(db);
    return TL_ERROR;
  }
  *out = db;
  return TL_OK;
}
