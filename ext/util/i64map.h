/*
** i64map.h: an open-addressing hash map from int64 keys to int64 values.
**
** Used for identity joins on provider ids (globalTaskId, correlationId, connectionId),
** where SQL joins on unindexed source tables would be full scans.
*/
#ifndef TL_I64MAP_H
#define TL_I64MAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct tl_i64map {
  int64_t *keys;
  int64_t *vals;
  uint8_t *used;
  size_t n, cap; /* cap is a power of two or 0 */
} tl_i64map;

/* Inserts or replaces. Returns 0, or -1 on out-of-memory. */
int tl_i64map_put(tl_i64map *m, int64_t key, int64_t val);
/* Returns a pointer to the value, or NULL when absent. Valid until the next put. */
int64_t *tl_i64map_get(const tl_i64map *m, int64_t key);
void tl_i64map_free(tl_i64map *m);

#endif
