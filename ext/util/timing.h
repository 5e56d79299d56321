/*
** timing.h: TRACELOOM_TIMING=1 prints how long each step of a stage took, on stderr.
**
**   tl_timer t;
**   tl_timer_start(&t, "publish");
**   ... step ...
**   tl_timer_mark(&t, "events");      // "traceloom timing:   publish events   0.123 s"
**
** Off (the default) it costs one getenv per stage and nothing per step.
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

static inline void tl_timer_start(tl_timer *t, const char *stage) {
  const char *env = getenv("TRACELOOM_TIMING");
  t->on = env && *env && *env != '0';
  t->stage = stage;
  clock_gettime(CLOCK_MONOTONIC, &t->t0);
}

static inline void tl_timer_mark(tl_timer *t, const char *step) {
  if (!t->on) return;
  struct timespec t1;
  clock_gettime(CLOCK_MONOTONIC, &t1);
  fprintf(stderr, "traceloom timing:   %s %-*s %8.3f s\n", t->stage, 38 - (int)strlen(t->stage), step,
          (double)(t1.tv_sec - t->t0.tv_sec) + (double)(t1.tv_nsec - t->t0.tv_nsec) * 1e-9);
  t->t0 = t1;
}

#endif
