/*
** timing.h: TRACELOOM_TIMING=1 prints how long each stage of an analysis, and each step of
** a stage, took, on stderr. The one clock and format of every timing line.
**
**   tl_timer stages;                      the analysis driver: one line per stage
**   tl_timer_start(&stages, NULL);
**   tl_timer_next(&stages, "relating");   ends the stage before (if any), starts this one
**   tl_timer_next(&stages, NULL);         "traceloom timing: relating        0.123 s"
**
**   tl_timer t;                           inside a stage: one line per step
**   tl_timer_start(&t, "publish");
**   ... step ...
**   tl_timer_mark(&t, "events");          "traceloom timing:   publish events   0.123 s"
**
** Off (the default) it costs one getenv per timer and nothing per step.
*/
#ifndef TRACELOOM_TIMING_H
#define TRACELOOM_TIMING_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct tl_timer {
  int on;
  const char *stage;
  struct timespec t0;
} tl_timer;

/* Seconds on the monotonic clock (progress messages measure with it too). */
static inline double tl_now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline double tl_timer_elapsed_(const tl_timer *t, struct timespec *now) {
  clock_gettime(CLOCK_MONOTONIC, now);
  return (double)(now->tv_sec - t->t0.tv_sec) + (double)(now->tv_nsec - t->t0.tv_nsec) * 1e-9;
}

static inline void tl_timer_start(tl_timer *t, const char *stage) {
  const char *env = getenv("TRACELOOM_TIMING");
  t->on = env && *env && *env != '0';
  t->stage = stage;
  clock_gettime(CLOCK_MONOTONIC, &t->t0);
}

/* A step of the timer's stage ended. */
static inline void tl_timer_mark(tl_timer *t, const char *step) {
  if (!t->on) return;
  struct timespec t1;
  double s = tl_timer_elapsed_(t, &t1);
  fprintf(stderr, "traceloom timing:   %s %-*s %8.3f s\n", t->stage, 38 - (int)strlen(t->stage),
          step, s);
  t->t0 = t1;
}

/* The timer's stage ended (when it had one); `next` (NULL: none) starts. */
static inline void tl_timer_next(tl_timer *t, const char *next) {
  if (!t->on) return;
  struct timespec t1;
  double s = tl_timer_elapsed_(t, &t1);
  if (t->stage) fprintf(stderr, "traceloom timing: %-40s %8.3f s\n", t->stage, s);
  t->stage = next;
  t->t0 = t1;
}

#endif
