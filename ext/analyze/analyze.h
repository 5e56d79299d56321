/*
** analyze.h: the analysis driver behind traceloom_analyze() and the CLI.
**
**   discover -> read (trace) -> relate -> replay -> context -> classify -> anchors
**     -> cost -> recover -> publish        (the stage table of analyze.c)
**
** Options arrive as a JSON object (options.h: unknown keys are an error) and are recorded
** in canonical form in traceloom_metadata.analysis_options.
*/
#ifndef TL_ANALYZE_H
#define TL_ANALYZE_H

#include "util/sqlite_api.h"
#include "util/err.h"
#include "analyze/options.h"

#include <stddef.h>

/* Analyses the profile at path and publishes into db's main database. On success
** *summary (malloc'd) is a one-line summary. On error nothing changed in db. */
int tl_analyze(sqlite3 *db, const char *path, const char *options_json, char **summary,
               tl_err *e);

#endif
