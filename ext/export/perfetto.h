/*
** perfetto.h: the Perfetto / Chrome JSON timeline export of a published analysis.
**
**   SELECT traceloom_export_perfetto('timeline.perfetto.json.gz');
**   SELECT traceloom_export_perfetto('t.json', '{"ranks":[{"rank":0,"db":"r0.db"}]}');
*/
#ifndef TL_PERFETTO_H
#define TL_PERFETTO_H

#include <stdint.h>

#include "util/sqlite_api.h"
#include "util/err.h"

/* Exports the analysis in db's main database to path (".gz" suffix: gzip). Sets *events to
** the number of trace events written. On error nothing is left at path's temporary sibling
** and an existing file at path is untouched. */
int tl_export_perfetto(sqlite3 *db, const char *path, const char *options_json, int64_t *events,
                       tl_err *e);

#endif
