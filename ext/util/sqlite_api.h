/*
** sqlite_api.h: the one way TraceLoom sources reach SQLite.
**
** In the loadable extension (build/traceloom.so) every sqlite3_* call goes through the
** sqlite3_api routine table that SQLite hands to sqlite3_traceloom_init(); the .so never
** links libsqlite3 (the Makefile checks). The CLI and the unit tests compile the same
** sources with -DSQLITE_CORE, where sqlite3ext.h maps the calls to direct ones.
*/
#ifndef TL_SQLITE_API_H
#define TL_SQLITE_API_H

#include "sqlite3ext.h"
SQLITE_EXTENSION_INIT3

#endif
