/*
** sqlite-traceloom.h: the public entry point of the TraceLoom SQLite extension.
**
** Loaded at run time, SQLite finds the entry point by itself:
**
**   .load build/traceloom                       (sqlite3 shell)
**   sqlite3_load_extension(db, "build/traceloom", NULL, &err);
**
** Linked into a program (compiled with -DSQLITE_CORE, as the traceloom CLI is), register it
** on each connection, or for every new connection:
**
**   #include "sqlite-traceloom.h"
**   sqlite3_traceloom_init(db, &err, NULL);
**   sqlite3_auto_extension((void (*)(void))sqlite3_traceloom_init);
**
** It registers the functions traceloom_version(), traceloom_debug(), traceloom_analyze(),
** traceloom_loop_tree(), traceloom_export_perfetto() and the table-valued functions
** traceloom_profile(), traceloom_events(), traceloom_host_calls() (README.md).
*/
#ifndef SQLITE_TRACELOOM_H
#define SQLITE_TRACELOOM_H

#include "sqlite3.h"

#define TRACELOOM_VERSION "0.1.0"
#define TRACELOOM_SCHEMA_VERSION "1"

/* The oldest SQLite the extension runs in, and that can read an analysis database: the
** extension calls sqlite3_txn_state() (3.34.0) and the published views use NOT MATERIALIZED
** common table expressions (3.35.0). In an older SQLite the first would call past the end of
** its API table and the second would fail half-way through a publication, so the entry
** point refuses to load there (SQLITE_ERROR and a message naming both versions). */
#define TRACELOOM_MIN_SQLITE_VERSION_NUMBER 3035000
#define TRACELOOM_MIN_SQLITE_VERSION "3.35.0"

#ifdef __cplusplus
extern "C" {
#endif

/* Registers every TraceLoom function and module on db. Returns SQLITE_OK or an error code;
** *pzErrMsg is set (sqlite3_malloc'ed) only when the SQLite in use is older than
** TRACELOOM_MIN_SQLITE_VERSION. */
int sqlite3_traceloom_init(sqlite3 *db, char **pzErrMsg, const sqlite3_api_routines *pApi);

/* NULL when SQLite version_number (sqlite3_libversion_number()'s form) can run TraceLoom;
** otherwise the reason, sqlite3_malloc'ed, naming the version found (version, as
** sqlite3_libversion() spells it) and the one needed. */
char *traceloom_unsupported_sqlite(int version_number, const char *version);

#ifdef __cplusplus
}
#endif

#endif
