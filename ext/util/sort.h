/*
** sort.h: stable LSD radix sort of (uint64 key, uint32 value) pairs; selection of one rank.
**
** The analysis orders millions of events by packed integer keys (device, time, ...);
** a radix sort does that in a few linear passes where qsort or SQL ORDER BY would be
** several times slower. Passes whose digit is the same for every key are skipped, so
** narrow keys cost fewer passes. Equal keys keep their input order (stable), which makes
** every ordering deterministic.
*/
#ifndef TL_SORT_H
#define TL_SORT_H

#include <stddef.h>
#include <stdint.h>

/* Sorts keys[] ascending and permutes vals[] alongside. Returns 0, or -1 on out-of-memory. */
int tl_radix_sort_u64(uint64_t *keys, uint32_t *vals, size_t n);

/* Order statistics without a sort: rearranges v[0, n) so that v[k] is the value of rank k
** (0-based) in ascending order, every value before it <= it and every value after >= it.
** In place (no scratch), expected linear time; a range that does not shrink fast enough
** is sorted instead (O(n log n) at worst). k < n. The value found is the sorted array's
** v[k] whatever the input order, so its callers stay deterministic. */
void tl_select_i64(int64_t *v, size_t n, size_t k);

/* Maps a signed int64 to a uint64 with the same order. */
static inline uint64_t tl_order_i64(int64_t v) { return (uint64_t)v ^ 0x8000000000000000ull; }

#endif
