/*
** sort.c: stable LSD radix sort, and the selection of one rank (see sort.h).
**
** Only the bits that vary between the keys are sorted on: the span from the lowest to the
** highest varying bit is cut into as few passes of at most 16 bits as before, but of equal
** width (a 34-bit span: three 12-bit digits, not 16 + 16 + 2), so each pass scatters into at
** most 2^digit buckets: 4,096 counters and write positions stay in the cache where 65,536
** do not. One read of the keys counts every pass's digits.
*/
#include "util/sort.h"
#include "util/vec.h"

#include <stdlib.h>
#include <string.h>

#define MAX_DIGIT_BITS 16

int tl_radix_sort_u64(uint64_t *keys, uint32_t *vals, size_t n) {
  if (n < 2) return 0;
  /* Which bits vary at all? */
  uint64_t all_and = ~0ull, all_or = 0;
  for (size_t i = 0; i < n; i++) all_and &= keys[i], all_or |= keys[i];
  uint64_t varying = all_and ^ all_or;
  if (!varying) return 0;
  int lo = __builtin_ctzll(varying), hi = 64 - __builtin_clzll(varying);
  int span = hi - lo;
  int passes = (span + MAX_DIGIT_BITS - 1) / MAX_DIGIT_BITS;
  int bits = (span + passes - 1) / passes;
  size_t buckets = (size_t)1 << bits;
  uint64_t mask = buckets - 1;
  uint64_t *k2 = malloc(n * sizeof *k2);
  uint32_t *v2 = malloc(n * sizeof *v2);
  size_t *count = calloc((size_t)passes * buckets, sizeof *count);
  if (!k2 || !v2 || !count) {
    free(k2), free(v2), free(count);
    return -1;
  }
  /* every slot is written by the first pass: mapped at once, not a page fault a page */
  tl_vec_prefault_(k2, n, 0, n, sizeof *k2);
  tl_vec_prefault_(v2, n, 0, n, sizeof *v2);
  for (size_t i = 0; i < n; i++)
    for (int p = 0; p < passes; p++) count[(size_t)p * buckets + ((keys[i] >> (lo + p * bits)) & mask)]++;
  uint64_t *src_k = keys, *dst_k = k2;
  uint32_t *src_v = vals, *dst_v = v2;
  for (int p = 0; p < passes; p++) {
    size_t *c = count + (size_t)p * buckets, sum = 0;
    int shift = lo + p * bits;
    for (size_t d = 0; d < buckets; d++) {
      size_t x = c[d];
      c[d] = sum;
      sum += x;
    }
    for (size_t i = 0; i < n; i++) {
      size_t pos = c[(src_k[i] >> shift) & mask]++;
      dst_k[pos] = src_k[i];
      dst_v[pos] = src_v[i];
    }
    uint64_t *tk = src_k; src_k = dst_k; dst_k = tk;
    uint32_t *tv = src_v; src_v = dst_v; dst_v = tv;
  }
  if (src_k != keys) {
    memcpy(keys, src_k, n * sizeof *keys);
    memcpy(vals, src_v, n * sizeof *vals);
  }
  free(k2), free(v2), free(count);
  return 0;
}

static int cmp_i64(const void *x, const void *y) {
  int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
  return (a > b) - (a < b);
}

static void swap_i64(int64_t *a, int64_t *b) {
  int64_t t = *a;
  *a = *b, *b = t;
}

/* Quickselect: a three-way partition around the median of three (durations repeat a lot:
** the values equal to the pivot are settled at once), kept to the side holding rank k. After
** 2 log2(n) + 16 rounds the remaining range is sorted: a pathological input costs a sort. */
void tl_select_i64(int64_t *v, size_t n, size_t k) {
  size_t lo = 0, hi = n; /* the rank lies in [lo, hi) */
  int budget = 16;
  for (size_t m = n; m > 1; m >>= 1) budget += 2;
  while (hi - lo > 1) {
    if (budget-- == 0) {
      qsort(v + lo, hi - lo, sizeof *v, cmp_i64);
      return;
    }
    size_t mid = lo + (hi - lo) / 2;
    int64_t a = v[lo], b = v[mid], c = v[hi - 1];
    int64_t pivot = a < b ? (b < c ? b : a < c ? c : a) : (a < c ? a : b < c ? c : b);
    /* [lo, lt) < pivot, [lt, i) == pivot, [gt, hi) > pivot */
    size_t lt = lo, i = lo, gt = hi;
    while (i < gt) {
      if (v[i] < pivot) swap_i64(&v[lt++], &v[i++]);
      else if (v[i] > pivot) swap_i64(&v[i], &v[--gt]);
      else i++;
    }
    if (k < lt) hi = lt;
    else if (k >= gt) lo = gt;
    else return;
  }
}
