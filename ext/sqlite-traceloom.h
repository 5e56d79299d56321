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

#ifdef __cplusplus
extern "C" {
#endif

/* Registers every TraceLoom function and module on db. Returns SQLITE_OK or an error code;
** *pzErrMsg is not set. */
int sqlite3_traceloom_init(sqlite3 *db, char **pzErrMsg, const sqlite3_api_routines *pApi);

#ifdef __cplusplus
}
#endif

#endif
