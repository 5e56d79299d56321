/*
** timing.h: TRACELOOM_TIMING=1 prints how long each stage of an analysis, and each step of
** a stage, took, on stderr. The one clock and format of every timing line.
**
**   tl_timer stages;                      the analysis driver: one line per stage
**   tl_timer_start(&stages, NULL);
**   tl_timer_next(&stages, "relating");   ends the stage before (if any), starts this one
**   tl_timer_next(&stages, NULL);         "traceloom timing: relating   0.123 s   0.101 s cpu"
**
**   tl_timer t;                           inside a stage: one line per step
**   tl_timer_start(&t, "publish");
**   ... step ...
**   tl_timer_mark(&t, "events");          "traceloom timing:   publish events   0.123 s ..."
**
** Each line gives wall time and the process's CPU time (user + system, all threads) over the
** same span: on a shared machine the wall time says little, the CPU time is what a step
** costs. Off (the default) it costs one getenv per timer and nothing per step.
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
  struct timespec cpu0; /* CLOCK_PROCESS_CPUTIME_ID at t0 */
} tl_timer;

/* Seconds on the monotonic clock (progress messages measure with it too). */
static inline double tl_now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline double tl_timespec_diff_(const struct timespec *a, const struct timespec *b) {
  return (double)(b->tv_sec - a->tv_sec) + (double)(b->tv_nsec - a->tv_nsec) * 1e-9;
}

/* Wall and CPU seconds since the timer's last line; restarts both clocks. */
static inline void tl_timer_lap_(tl_timer *t, double *wall, double *cpu) {
  struct timespec now, cpu_now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu_now);
  *wall = tl_timespec_diff_(&t->t0, &now);
  *cpu = tl_timespec_diff_(&t->cpu0, &cpu_now);
  t->t0 = now, t->cpu0 = cpu_now;
}

static inline void tl_timer_start(tl_timer *t, const char *stage) {
  const char *env = getenv("TRACELOOM_TIMING");
  t->on = env && *env && *env != '0';
  t->stage = stage;
  clock_gettime(CLOCK_MONOTONIC, &t->t0);
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t->cpu0);
}

/* A step of the timer's stage ended. */
static inline void tl_timer_mark(tl_timer *t, const char *step) {
  if (!t->on) return;
  double wall, cpu;
  tl_timer_lap_(t, &wall, &cpu);
  fprintf(stderr, "traceloom timing:   %s %-*s %8.3f s %8.3f s cpu\n", t->stage,
          38 - (int)strlen(t->stage), step, wall, cpu);
}

/* The timer's stage ended (when it had one); `next` (NULL: none) starts. */
static inline void tl_timer_next(tl_timer *t, const char *next) {
  if (!t->on) return;
  double wall, cpu;
  tl_timer_lap_(t, &wall, &cpu);
  if (t->stage) fprintf(stderr, "traceloom timing: %-40s %8.3f s %8.3f s cpu\n", t->stage, wall, cpu);
  t->stage = next;
}

/* A step of the timer's stage measured by its caller (a span on another thread, a part of
** a wait): the same line as tl_timer_mark's, with the given seconds. */
static inline void tl_timer_span(const tl_timer *t, const char *step, double wall, double cpu) {
  if (!t->on) return;
  fprintf(stderr, "traceloom timing:   %s %-*s %8.3f s %8.3f s cpu\n", t->stage,
          38 - (int)strlen(t->stage), step, wall, cpu);
}

/* CPU seconds the calling thread has used so far. */
static inline double tl_thread_cpu_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The CPU seconds of each thread of a step that ran on several (tl_thread_cpu_s differences,
** the calling thread's first): "traceloom timing:   export read threads   0.470 | 0.320 s cpu".
** What the step's wall would be on idle cores follows from them, not from a shared
** machine's wall. */
static inline void tl_timer_threads(const tl_timer *t, const char *step, const double *cpu,
                                    int n) {
  if (!t->on) return;
  fprintf(stderr, "traceloom timing:   %s %s threads", t->stage, step);
  for (int i = 0; i < n; i++) fprintf(stderr, "%s%.3f", i ? " | " : " ", cpu[i]);
  fprintf(stderr, " s cpu\n");
}

#endif
