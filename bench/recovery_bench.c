/*
** recovery_bench: structure recovery of N anchors through the real stages.
**
**   cc -O2 -D_GNU_SOURCE -DSQLITE_CORE -Iext -Iext/util bench/recovery_bench.c \
**      build/libtraceloom_core.a -lsqlite3 -lyaml -lz -lm -lpthread -o /tmp/rb && /tmp/rb 10000000
**
** Builds an in-memory trace of N device events shaped like a transformer decode run (a
** prefill step, then decode steps x 32 layers x 11 operators with two all-reduces per
** layer, timing jitter, one device), then times the stages after reading: anchor
** selection and ordering, cost packets and repeat recovery with occurrence costs
** (tl_anchors_build, tl_packets_build, tl_forest_build). Prints seconds per stage, peak
** RSS and the top of the recovered structure. Publication is not included (see
** bench/RESULTS.md for the end-to-end figures).
*/
#include "anchor/anchors.h"
#include "cost/packets.h"
#include "structure/structure.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  size_t n = argc > 1 ? (size_t)strtoull(argv[1], NULL, 10) : 10000000;
  static const char *const layer[] = {"RmsNorm", "MatMul", "Rope", "Attention", "MatMul",
                                      "AllReduce", "AddRmsNorm", "MatMul", "SwiGlu", "MatMul",
                                      "AllReduce"};
  enum { K = 11, L = 32 };
  tl_err e = {0};
  tl_trace t;
  if (tl_trace_init(&t, NULL, &e)) return 1;
  uint32_t names[K + 3];
  for (int k = 0; k < K; k++) names[k] = tl_strpool_intern_cstr(t.pool, layer[k]);
  names[K] = tl_strpool_intern_cstr(t.pool, "Embedding");
  names[K + 1] = tl_strpool_intern_cstr(t.pool, "LmHead");
  names[K + 2] = tl_strpool_intern_cstr(t.pool, "Sampler");
  double t0 = now();
  int64_t ts = 1712345678000000000LL;
  uint64_t x = 88172645463325252ull;
  size_t step_len = 1 + (size_t)L * K + 2;
  for (size_t i = 0; i < n; i++) {
    size_t in_step = i % step_len;
    uint32_t name = in_step == 0 ? names[K]
                    : in_step == step_len - 2 ? names[K + 1]
                    : in_step == step_len - 1 ? names[K + 2]
                                              : names[(in_step - 1) % K];
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    int64_t dur = 5000 + (int64_t)(x % 2000), gap = 200 + (int64_t)((x >> 20) % 300);
    tl_event_row r;
    memset(&r, 0, sizeof r);
    r.source_table = "TASK";
    r.source_rowid = (int64_t)i + 1;
    r.stream_id = 1;
    r.start_ns = ts, r.end_ns = ts + dur;
    int comm = strcmp(tl_strpool_str(t.pool, name), "AllReduce") == 0;
    r.kind = comm ? TL_KIND_COMMUNICATION : TL_KIND_COMPUTE;
    r.name = r.op_type = name;
    r.task_id = r.global_task_id = r.correlation_id = r.context_id = r.model_id = TL_ABSENT;
    r.graph_node_id = r.op_id = TL_ABSENT;
    if (tl_trace_add_event(&t, &r)) return 1;
    ts += dur + gap;
  }
  double t_build = now() - t0;
  uint8_t *role = calloc(n, 1);
  uint32_t *sym = malloc(n * sizeof *sym);
  for (size_t i = 0; i < n; i++) sym[i] = t.labels.v[t.ev.label[i]].op_type;
  tl_anchors a;
  tl_packets p;
  tl_forest f;
  double t1 = now();
  tl_anchor_input in = {&t, role, NULL, sym, NULL};
  if (tl_anchors_build(&in, &a, &e)) return fprintf(stderr, "%s\n", e.msg), 1;
  /* As in traceloom_analyze, the per-event roles and symbols go once anchors exist. */
  free(role), free(sym);
  role = NULL, sym = NULL;
  double t2 = now();
  if (tl_packets_build(&t, &a, &p, &e)) return fprintf(stderr, "%s\n", e.msg), 1;
  double t3 = now();
  if (tl_forest_build(&t, &a, &p, NULL, &f, &e)) return fprintf(stderr, "%s\n", e.msg), 1;
  double t4 = now();
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  printf("anchors %zu (trace built in %.2f s)\n", a.n, t_build);
  printf("anchors: %.3f s, packets: %.3f s, recovery + occurrence costs: %.3f s, total %.3f s\n",
         t2 - t1, t3 - t2, t4 - t3, t4 - t1);
  printf("peak RSS %.0f MiB (includes the %zu-event trace itself)\n", ru.ru_maxrss / 1024.0, n);
  if (f.trees.n) {
    char *outline = tl_structure_outline(&f.trees.v[0].st, 3, 6);
    printf("%s", outline ? outline : "");
    free(outline);
  }
  tl_forest_free(&f);
  tl_packets_free(&p);
  tl_anchors_free(&a);
  free(role), free(sym);
  tl_trace_free(&t);
  return 0;
}
