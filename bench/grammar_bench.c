/*
** grammar_bench.c: speed, memory and shape of tl_recover on a synthetic transformer trace.
**
** The token stream imitates one device of an LLM serving trace: a prefill step of a
** different shape (its own attention kernels, a longer prologue), then S decode steps,
** each a prologue, L layers of K ops (the K-th op of a layer is its all-reduce) and an
** epilogue (final norm, lm_head, sampling). With --noise R, a step gets one auxiliary
** token (a stray memcpy) at a random place with probability R. With --partitions every
** step carries its own step id (the prefill too) and noise tokens an unknown step.
**
**   gcc -O2 -Iext -Iext/util bench/grammar_bench.c ext/recover/[a-z]*.c ext/util/err.c \
**       ext/util/vec.c -o /tmp/gb
**   /tmp/gb                       # 10M tokens: S decode steps x 32 layers x 40 ops
**   /tmp/gb --steps 36 --layers 24 --ops 12 --noise 0.05 --partitions --seed 7
**
** It prints the wall time of tl_recover, peak RSS (getrusage), the counts, the outline
** of the top of the tree, and whether the tree has the expected shape:
** Repeat x(decode steps) > [prologue, Repeat xL > [K ops], epilogue].
*/
#define _POSIX_C_SOURCE 200809L /* clock_gettime under -std=c11 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "recover/recover.h"

typedef struct bench_rng {
  uint64_t s;
} bench_rng;

static uint64_t rng_next(bench_rng *r) {
  r->s += 0x9E3779B97F4A7C15ull;
  uint64_t z = r->s;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/* Symbols: 0 embedding, 1 allreduce, 2 final norm, 3 lm_head, 4 sampling, 5 memcpy (noise),
** 6 prefill-only prologue op, 10.. layer op pool, 200.. prefill attention variants. */
enum { SYM_EMBED = 0, SYM_AR = 1, SYM_FNORM = 2, SYM_LMHEAD = 3, SYM_SAMPLE = 4, SYM_NOISE = 5, SYM_PRE = 6 };

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Appends the tokens of one occurrence of position pos to out (at most max). */
static size_t expand(const tl_structure *st, uint32_t pos, uint32_t *out, size_t n, size_t max) {
  const tl_position *p = &st->positions[pos];
  if (p->kind == TL_POS_ATOM) {
    if (n < max) out[n] = p->symbol;
    return n + 1;
  }
  unsigned reps = p->kind == TL_POS_REPEAT ? p->repeat_count : 1;
  for (unsigned r = 0; r < reps && n <= max; r++)
    for (uint32_t k = 0; k < p->nslots && n <= max; k++) n = expand(st, st->slots[p->first_slot + k], out, n, max);
  return n;
}

/* Is position pos Repeat xL whose iteration expands to exactly the layer ops? */
static int is_layer_repeat(const tl_structure *st, uint32_t pos, unsigned L, const uint32_t *layer, unsigned K) {
  const tl_position *p = &st->positions[pos];
  if (p->kind != TL_POS_REPEAT || p->repeat_count != L || p->token_len != (uint64_t)L * K) return 0;
  uint32_t buf[4096];
  size_t n = 0;
  for (uint32_t k = 0; k < p->nslots && n <= K && K <= 4096; k++) n = expand(st, st->slots[p->first_slot + k], buf, n, 4096);
  return n == K && !memcmp(buf, layer, K * sizeof *layer);
}

int main(int argc, char **argv) {
  unsigned S = 0, L = 32, K = 40, seed = 1;
  double noise = 0.0;
  int partitions = 0;
  size_t target = 10000000;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--steps") && i + 1 < argc) S = (unsigned)atoi(argv[++i]);
    else if (!strcmp(argv[i], "--layers") && i + 1 < argc) L = (unsigned)atoi(argv[++i]);
    else if (!strcmp(argv[i], "--ops") && i + 1 < argc) K = (unsigned)atoi(argv[++i]);
    else if (!strcmp(argv[i], "--noise") && i + 1 < argc) noise = atof(argv[++i]);
    else if (!strcmp(argv[i], "--seed") && i + 1 < argc) seed = (unsigned)atoi(argv[++i]);
    else if (!strcmp(argv[i], "--tokens") && i + 1 < argc) target = (size_t)atoll(argv[++i]);
    else if (!strcmp(argv[i], "--partitions")) partitions = 1;
    else {
      fprintf(stderr, "usage: %s [--steps S] [--layers L] [--ops K] [--noise R] [--partitions] [--seed N] [--tokens N]\n", argv[0]);
      return 2;
    }
  }
  if (K < 2 || L < 1) return 2;
  bench_rng rng = {seed * 0x1234567ull + 1};
  /* A decode layer: K-1 ops drawn from a pool of K/2 symbols (so ops repeat inside a
  ** layer, as GEMMs and norms do), then the all-reduce. The prefill layer swaps the
  ** attention op (position 3) for a prefill kernel. */
  uint32_t *layer = malloc(K * sizeof *layer), *pre_layer = malloc(K * sizeof *pre_layer);
  unsigned pool = K / 2 > 2 ? K / 2 : 2;
  for (unsigned k = 0; k + 1 < K; k++) layer[k] = 10 + (uint32_t)(rng_next(&rng) % pool);
  layer[K - 1] = SYM_AR;
  memcpy(pre_layer, layer, K * sizeof *layer);
  pre_layer[K > 4 ? 3 : 0] = 200 + (uint32_t)(rng_next(&rng) % 7);
  const uint32_t prologue[] = {SYM_EMBED};
  const uint32_t pre_prologue[] = {SYM_PRE, SYM_EMBED};
  const uint32_t epilogue[] = {SYM_FNORM, SYM_LMHEAD, SYM_SAMPLE};
  size_t step_len = 1 + (size_t)L * K + 3;
  if (!S) S = (unsigned)((target - (2 + (size_t)L * K + 3)) / step_len);
  size_t cap = 2 + (size_t)L * K + 3 + (size_t)S * (step_len + 1);
  uint32_t *sym = malloc(cap * sizeof *sym), *part = malloc(cap * sizeof *part);
  size_t n = 0;
  unsigned noisy = 0, clean_run = 0, expect_folded = 0;
  for (unsigned s = 0; s <= S; s++) {
    int pre = s == 0;
    size_t begin = n;
    const uint32_t *pro = pre ? pre_prologue : prologue;
    size_t npro = pre ? 2 : 1;
    for (size_t k = 0; k < npro; k++) sym[n++] = pro[k];
    for (unsigned l = 0; l < L; l++)
      for (unsigned k = 0; k < K; k++) sym[n++] = pre ? pre_layer[k] : layer[k];
    for (size_t k = 0; k < 3; k++) sym[n++] = epilogue[k];
    for (size_t i = begin; i < n; i++) part[i] = s;
    if (!pre && noise > 0 && (double)(rng_next(&rng) % 1000000) / 1e6 < noise) {
      size_t at = begin + 1 + rng_next(&rng) % (n - begin - 1); /* strictly inside the step */
      memmove(sym + at + 1, sym + at, (n - at) * sizeof *sym);
      sym[at] = SYM_NOISE;
      memmove(part + at + 1, part + at, (n - at) * sizeof *part);
      part[at] = TL_RECOVER_NO_PARTITION;
      n++;
      noisy++;
      clean_run = 0;
    } else if (!pre) {
      /* Clean steps fold only in stretches of two or more. */
      clean_run++;
      expect_folded += clean_run == 2 ? 2 : clean_run > 2 ? 1 : 0;
    }
  }
  printf("tokens %zu: prefill + %u decode steps x %u layers x %u ops, %u noisy steps%s\n", n, S, L, K, noisy,
         partitions ? ", with step partitions" : "");

  tl_recover_input in = {sym, n, partitions ? part : NULL, NULL, 0, NULL};
  tl_structure st;
  tl_err e = {0};
  double t0 = now_s();
  int rc = tl_recover(&in, &st, &e);
  double t1 = now_s();
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  if (rc != TL_OK) {
    printf("tl_recover failed (%d): %s\n", rc, e.msg);
    tl_err_clear(&e);
    return 1;
  }
  printf("tl_recover: %.3f s, peak RSS %.1f MiB (input arrays %.1f MiB)\n", t1 - t0, ru.ru_maxrss / 1024.0,
         2.0 * n * sizeof(uint32_t) / 1048576.0);
  printf("positions %zu, occurrences %zu, root slots %u, runs %zu, partitions %zu\n", st.npositions,
         st.noccurrences, st.positions[0].nslots, st.nruns, st.npartitions);
  char *o = tl_structure_outline(&st, 3, 8);
  printf("%s", o ? o : "(outline: out of memory)\n");
  free(o);

  /* Shape: root slots that are Repeats of a step whose body holds Repeat xL of the layer;
  ** all of them should share one body (the same slots). */
  unsigned steps_folded = 0, bodies = 0;
  const tl_position *root = &st.positions[0], *body = NULL;
  for (uint32_t i = 0; i < root->nslots; i++) {
    const tl_position *p = &st.positions[st.slots[root->first_slot + i]];
    if (p->kind != TL_POS_REPEAT) continue;
    int has_layers = 0;
    for (uint32_t k = 0; k < p->nslots; k++)
      has_layers |= is_layer_repeat(&st, st.slots[p->first_slot + k], L, layer, K);
    if (!has_layers) continue;
    steps_folded += p->repeat_count;
    if (!body || body->nslots != p->nslots ||
        memcmp(st.slots + body->first_slot, st.slots + p->first_slot, p->nslots * sizeof *st.slots))
      bodies++, body = p;
  }
  printf("shape: %u decode steps (of %u; %u expected: clean steps in stretches >= 2) in Repeat(step) > "
         "Repeat x%u > [%u ops], %u distinct step bod%s -- %s\n",
         steps_folded, S, expect_folded, L, K, bodies, bodies == 1 ? "y" : "ies",
         steps_folded == expect_folded && bodies == 1 ? "OK" : "UNEXPECTED");
  tl_structure_free(&st);
  free(sym);
  free(part);
  free(layer);
  free(pre_layer);
  return 0;
}
