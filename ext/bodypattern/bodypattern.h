/*
** bodypattern.h: repeated structure inside exact replay bodies (docs/PARITY.md).
**
** A replay body is the ordered member kernels of one graph launch; the replay cost map
** (traceloom_replay_cost_aggregate) has one aggregate per body position across every
** launch of the same template, slot and body. A *domain* is the aggregates of one
** (db_idx, device_id, graph template, slot role, aggregation scope, body template, stream):
** one stream lane, so no order across streams is invented. Its positions, in task order,
** are tokens (identity and kind); the nested repeat recovery of ext/recover runs over
** them, and the result is published as the traceloom_replay_body_* tables: one run per
** input, the domains, the positions with their duration quantiles and scheduled-work share,
** one pattern (node) per structural place of the body's tree and its occurrences.
**
**   tl_replay_body_patterns(db, &domains, e);   -- the analysis' publish stage (analyze.c)
**   SELECT traceloom_replay_body_patterns();     -- again, on demand
**
** It reads the published replay relations of the connection, so it runs inside the
** analysis' publication, once the replay relations and views exist; it replaces the earlier
** rows of its tables and returns the number of supported domains.
*/
#ifndef TL_BODYPATTERN_H
#define TL_BODYPATTERN_H

#include "util/sqlite_api.h"
#include "util/err.h"

#include <stdint.h>

int tl_replay_body_patterns(sqlite3 *db, int64_t *supported_domains, tl_err *e);

#endif
