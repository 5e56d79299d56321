/*
** dbopen.h: opening a SQLite database read-only, on a private connection.
**
**   sqlite3 *db;
**   if (tl_db_open_ro(path, "analysis database", &db, e)) return TL_ERROR;
**   ...
**   sqlite3_close(db);
**
** The path goes through a `file:...?mode=ro` URI, so the file is never written and the
** caller's connection and locks are not involved; the schema is read at once, so "not a
** database" and corruption fail here with the path. Profiles are opened by ext/source only
** (source/sqlsrc.h, tl_sql_open_ro: "SQLite profile"); the exporter opens other ranks'
** analysis databases with this (tools/check_layering.py checks both). tl_db_open_scratch
** opens a private file read-write (the analysis' staging database).
*/
#ifndef TL_DBOPEN_H
#define TL_DBOPEN_H

#include "util/sqlite_api.h"
#include "util/err.h"

/* what names the kind of database in messages: "failed to open read-only <what> '<path>'". */
int tl_db_open_ro(const char *path, const char *what, sqlite3 **out, tl_err *e);

/* The file of db's main database, when a second read-only connection on a worker thread sees
** what db sees: a file of the default VFS (not in memory or temporary), no transaction open
** on db (autocommit, and no write in progress), a thread-safe SQLite, and
** TRACELOOM_EXPORT_THREADS not 1. NULL otherwise: read on db itself. */
const char *tl_db_worker_path(sqlite3 *db);

/* A private scratch database the caller created (an empty file, or one it alone writes):
** read-write, no journal, no fsync, 16 KiB pages while it is empty; never a profile. The
** staged writer of the analysis (ext/analyze/staging.c) writes its tables into one. */
int tl_db_open_scratch(const char *path, sqlite3 **out, tl_err *e);

#endif
