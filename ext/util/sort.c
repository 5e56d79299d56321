/*
** sort.c: stable LSD radix sort, 16-bit digits (see sort.h).
*/
#include "util/sort.h"

#include <stdlib.h>
#include <string.h>

int tl_radix_sort_u64(uint64_t *keys, uint32_t *vals, size_t n) {
  if (n < 2) return 0;
  uint64_t *k2 = malloc(n * sizeof *k2);
  uint32_t *v2 = malloc(n * sizeof *v2);
  size_t *count = malloc(65536 * sizeof *count);
  if (!k2 || !v2 || !count) {
    free(k2), free(v2), free(count);
    return -1;
  }
  /* Which digits vary at all? */
  uint64_t all_and = ~0ull, all_or = 0;
  for (size_t i = 0; i < n; i++) all_and &= keys[i], all_or |= keys[i];
  uint64_t varying = all_and ^ all_or;
  uint64_t *src_k = keys, *dst_k = k2;
  uint32_t *src_v = vals, *dst_v = v2;
  for (int shift = 0; shift < 64; shift += 16) {
    if (((varying >> shift) & 0xFFFF) == 0) continue;
    memset(count, 0, 65536 * sizeof *count);
    for (size_t i = 0; i < n; i++) count[(src_k[i] >> shift) & 0xFFFF]++;
    size_t sum = 0;
    for (size_t d = 0; d < 65536; d++) {
      size_t c = count[d];
      count[d] = sum;
      sum += c;
    }
    for (size_t i = 0; i < n; i++) {
      size_t pos = count[(src_k[i] >> shift) & 0xFFFF]++;
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
