/*
** i64map.h: an open-addressing hash map from int64 keys to int64 values.
**
** Used for identity joins on provider ids (globalTaskId, correlationId, connectionId),
** where SQL joins on unindexed source tables would be full scans. Keys and values sit
** side by side in one slot array, so a probe costs one cache line; INT64_MIN marks an
** empty slot and is itself stored out of line.
*/
#ifndef TL_I64MAP_H
#define TL_I64MAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct tl_i64slot {
  int64_t key, val;
} tl_i64slot;

typedef struct tl_i64map {
  tl_i64slot *slots;
  size_t n, cap;   /* cap is a power of two or 0 */
  int has_min;     /* the key INT64_MIN is present, with value min_val */
  int64_t min_val;
} tl_i64map;

/* Inserts or replaces. Returns 0, or -1 on out-of-memory. */
int tl_i64map_put(tl_i64map *m, int64_t key, int64_t val);
/* Returns a pointer to the value, or NULL when absent. Valid until the next put. */
int64_t *tl_i64map_get(const tl_i64map *m, int64_t key);
void tl_i64map_free(tl_i64map *m);

#endif
