/*
** perfetto.h: the Perfetto timeline export of a published analysis (docs/PERFETTO.md).
**
**   SELECT traceloom_export_perfetto('timeline.perfetto.json.gz');   -- Chrome JSON
**   SELECT traceloom_export_perfetto('timeline.perfetto-trace');     -- Perfetto protobuf
**   SELECT traceloom_export_perfetto('t.pftrace', '{"ranks":[{"rank":0,"db":"r0.db"}]}');
*/
#ifndef TL_PERFETTO_H
#define TL_PERFETTO_H

#include <stdint.h>

#include "util/sqlite_api.h"
#include "util/err.h"

/* Exports the analysis in db's main database to path: protobuf for ".perfetto-trace" and
** ".pftrace", Chrome JSON otherwise (the "format" option overrides), gzip for a ".gz" suffix.
** Sets *events to the number of slices and flows drawn. On error nothing is left at path's
** temporary sibling and an existing file at path is untouched. */
int tl_export_perfetto(sqlite3 *db, const char *path, const char *options_json, int64_t *events,
                       tl_err *e);

#endif
