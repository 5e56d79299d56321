/*
** progress.h: what an analysis tells the terminal while it runs, and how it notices that
** it was interrupted.
**
**   tl_progress pr;
**   tl_progress_init(&pr, db, on);            on: progress lines on stderr
**   if (tl_progress_stage(&pr, "relating", e)) fails when sqlite3_interrupt() was called
**     return TL_ERROR;
**   tl_trace_load(..., tl_progress_rows, &pr, e);   row counts while reading
**   tl_progress_end(&pr);
**
** With TRACELOOM_TIMING=1 every stage also prints its duration (util/timing.h).
*/
#ifndef TL_PROGRESS_H
#define TL_PROGRESS_H

#include "util/sqlite_api.h"
#include "util/err.h"
#include "util/timing.h"

#include <stdint.h>

typedef struct tl_progress {
  int on;              /* progress lines on stderr */
  double t0;           /* start of the analysis (tl_now_s) */
  tl_timer stages;     /* TRACELOOM_TIMING=1: one line per stage */
  sqlite3 *db;         /* the analysis connection, probed for sqlite3_interrupt() */
  sqlite3_stmt *probe;
  int interrupted;     /* sticky: once seen, every later probe says so */
} tl_progress;

void tl_progress_init(tl_progress *p, sqlite3 *db, int on);
/* Marks the start of a stage; fails (TL_ERR_INTERRUPTED) when the connection was interrupted. */
int tl_progress_stage(tl_progress *p, const char *stage, tl_err *e);
/* tl_progress_fn of tl_trace_load (ctx is the tl_progress): prints the rows read so far and
** returns non-zero once the connection was interrupted. */
int tl_progress_rows(void *ctx, const char *stage, int64_t done);
/* 1 when sqlite3_interrupt() was called on the connection (int (*)(void *) for callbacks). */
int tl_progress_interrupted(void *ctx);
/* Ends the last stage and clears the progress line. */
void tl_progress_end(tl_progress *p);

#endif
