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
**
** Baseline, in the same process before the stages: a bare radix sort of the N events'
** (start_ns, index) pairs (ext/util/sort.c), the least any recovery has to do to put the
** anchors in order; the stages are printed as a ratio to it. Targets (issue 3): at most
** 10 s and at most 1 GB (10^9 bytes) peak RSS for 10 million anchors, trace included.
** `bench/run.sh` builds and runs it (BENCH_RECOVERY=0 skips it) and, with --record,
** appends the Markdown section it prints after the line "---" to bench/RESULTS.md.
*/
#include "anchor/anchors.h"
#include "cost/packets.h"
#include "structure/structure.h"
#include "util/sort.h"

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
  /* The baseline: order the events by start with the same radix sort anchors use. */
  double tb0 = now();
  uint64_t *bk = malloc(n * sizeof *bk);
  uint32_t *bv = malloc(n * sizeof *bv);
  if (!bk || !bv) return 1;
  for (size_t i = 0; i < n; i++) bk[i] = tl_order_i64(t.ev.start_ns[n - 1 - i]), bv[i] = (uint32_t)i;
  if (tl_radix_sort_u64(bk, bv, n)) return 1;
  double t_bare = now() - tb0;
  free(bk), free(bv);
  uint8_t *role = calloc(n, 1);
  uint32_t *sym = malloc(n * sizeof *sym);
  for (size_t i = 0; i < n; i++) sym[i] = t.labels.v[t.ev.label[i]].op_type;
  tl_anchors a;
  tl_packets p;
  tl_forest f;
  double t1 = now();
  tl_anchor_input in = {&t, NULL, role, NULL, sym, NULL};
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
  double total = t4 - t1, peak_mb = ru.ru_maxrss * 1024.0 / 1e6;
  printf("peak RSS %.0f MiB = %.0f MB (includes the %zu-event trace itself)\n",
         ru.ru_maxrss / 1024.0, peak_mb, n);
  printf("baseline: bare radix sort of %zu (start, index) pairs %.3f s; stages %.1fx it\n", n,
         t_bare, total / t_bare);
  const char *time_ok = total <= 10.0 ? "PASS" : "FAIL";
  const char *rss_ok = peak_mb <= 1000.0 ? "PASS" : "FAIL";
  printf("recovery of %zu anchors %.2f s (target <= 10 s): %s\n", a.n, total, time_ok);
  printf("peak RSS %.0f MB (target <= 1000 MB): %s\n", peak_mb, rss_ok);
  char *outline = f.trees.n ? tl_structure_outline(&f.trees.v[0].st, 3, 6) : NULL;
  printf("%s", outline ? outline : "");
  /* The RESULTS.md section. */
  printf("---\n");
  printf("- synthetic single-device trace of %zu events (prefill + decode steps x 32 layers x 11 "
         "ops, two all-reduces per layer, jitter), every event an anchor\n\n", n);
  printf("| stage | seconds | x bare sort |\n|---|---:|---:|\n");
  printf("| bare radix sort of (start, index), the baseline | %.3f | 1.00 |\n", t_bare);
  printf("| anchor selection and ordering | %.3f | %.2f |\n", t2 - t1, (t2 - t1) / t_bare);
  printf("| cost packets | %.3f | %.2f |\n", t3 - t2, (t3 - t2) / t_bare);
  printf("| repeat recovery + occurrence costs | %.3f | %.2f |\n", t4 - t3, (t4 - t3) / t_bare);
  printf("| **total** | **%.3f** | **%.2f** |\n\n", total, total / t_bare);
  printf("- recovery %.2f s (target <= 10 s): %s; peak RSS %.0f MB = %.0f MiB, trace included "
         "(target <= 1000 MB): %s\n", total, time_ok, peak_mb, ru.ru_maxrss / 1024.0, rss_ok);
  if (outline) {
    char *nl = strchr(outline, '\n');
    if (nl) *nl = 0;
    printf("- recovered root: `%s`\n", outline);
  }
  free(outline);
  tl_forest_free(&f);
  tl_packets_free(&p);
  tl_anchors_free(&a);
  free(role), free(sym);
  tl_trace_free(&t);
  return 0;
}
