/*
** compare.h: comparing two analyses by structure (docs/COMPARE.md).
**
**   SELECT traceloom_compare('base.db');                 -- run in the new analysis
**   SELECT traceloom_compare('base.db', '{"top": 30, "noise_z": 3}');
**   SELECT traceloom_compare('base.db', '{"new": "new.db"}');   -- into any database
**   SELECT * FROM traceloom_compare_summary;               -- read this first
**   SELECT traceloom_compare_report();                     -- the Markdown report
*/
#ifndef TL_COMPARE_H
#define TL_COMPARE_H

#include "util/sqlite_api.h"
#include "util/err.h"

/* Compares the analysis at base_path (opened read-only) with the analysis in db's main
** database (or the file named by the "new" option, also read-only) and publishes the
** traceloom_compare_* relations into db's main database, replacing an earlier comparison, in
** one savepoint. *summary (malloc'd; NULL when out of memory after publishing) is one line:
** end-to-end delta and the top change. */
int tl_compare(sqlite3 *db, const char *base_path, const char *options_json, char **summary,
               tl_err *e);

/* The published comparison in db as Markdown; *out is malloc'd. Options: {"top": N} changes
** listed per pair (default: every ranked one), {"symbols": N} kernel rows (default 10). */
int tl_compare_report(sqlite3 *db, const char *options_json, char **out, tl_err *e);

#endif
