/*
** progress.c: progress lines, stage timing and the interrupt probe (see progress.h).
*/
#include "analyze/progress.h"

#include <stdio.h>

/* sqlite3_interrupt() on the analysis connection (Ctrl-C in the shell and the CLI) must
** stop every stage, not only publication: a one-row statement on that connection returns
** SQLITE_INTERRUPT once it was called (SQLite 3.40 has no sqlite3_is_interrupted()). It is
** prepared when the analysis starts: once interrupted, the connection prepares nothing
** (the prepare itself then says SQLITE_INTERRUPT). */
static int prepare_probe(tl_progress *p) {
  int rc = sqlite3_prepare_v2(p->db, "SELECT 1", -1, &p->probe, NULL);
  if (rc == SQLITE_INTERRUPT) p->interrupted = 1;
  return rc;
}

void tl_progress_init(tl_progress *p, sqlite3 *db, int on) {
  p->on = on;
  p->t0 = tl_now_s();
  tl_timer_start(&p->stages, NULL);
  p->db = db;
  p->probe = NULL;
  p->interrupted = 0;
  prepare_probe(p);
}

int tl_progress_interrupted(void *ctx) {
  tl_progress *p = ctx;
  if (p->interrupted) return 1;
  if (!p->probe && prepare_probe(p) != SQLITE_OK) return p->interrupted;
  int rc = sqlite3_step(p->probe);
  sqlite3_reset(p->probe);
  if (rc == SQLITE_INTERRUPT) p->interrupted = 1;
  return p->interrupted;
}

int tl_progress_rows(void *ctx, const char *stage, int64_t done) {
  tl_progress *p = ctx;
  if (p->on) {
    fprintf(stderr, "\rtraceloom: %s %lld rows (%.1f s)   ", stage, (long long)done,
            tl_now_s() - p->t0);
    fflush(stderr);
  }
  return tl_progress_interrupted(p);
}

int tl_progress_stage(tl_progress *p, const char *stage, tl_err *e) {
  tl_timer_next(&p->stages, stage);
  if (p->on) {
    fprintf(stderr, "\rtraceloom: %-40s (%.1f s)   ", stage, tl_now_s() - p->t0);
    fflush(stderr);
  }
  if (!tl_progress_interrupted(p)) return TL_OK;
  return tl_fail_code(e, TL_ERR_INTERRUPTED, "interrupted (before %s); nothing was published",
                      stage);
}

void tl_progress_end(tl_progress *p) {
  tl_timer_next(&p->stages, NULL);
  sqlite3_finalize(p->probe);
  p->probe = NULL;
  if (!p->on) return;
  fprintf(stderr, "\r%60s\r", "");
  fflush(stderr);
}
