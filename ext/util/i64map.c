/*
** i64map.c: int64 -> int64 hash map (see i64map.h).
*/
#include "i64map.h"

#include <stdlib.h>

static size_t slot_of(int64_t key, size_t cap) {
  uint64_t x = (uint64_t)key;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return (size_t)x & (cap - 1);
}

static int grow(tl_i64map *m) {
  size_t cap = m->cap ? m->cap * 2 : 64;
  int64_t *keys = malloc(cap * sizeof *keys);
  int64_t *vals = malloc(cap * sizeof *vals);
  uint8_t *used = calloc(cap, 1);
  if (!keys || !vals || !used) {
    free(keys), free(vals), free(used);
    return -1;
  }
  for (size_t i = 0; i < m->cap; i++) {
    if (!m->used[i]) continue;
    size_t j = slot_of(m->keys[i], cap);
    while (used[j]) j = (j + 1) & (cap - 1);
    used[j] = 1, keys[j] = m->keys[i], vals[j] = m->vals[i];
  }
  free(m->keys), free(m->vals), free(m->used);
  m->keys = keys, m->vals = vals, m->used = used, m->cap = cap;
  return 0;
}

int tl_i64map_put(tl_i64map *m, int64_t key, int64_t val) {
  if ((m->n + 1) * 2 > m->cap && grow(m) != 0) return -1;
  size_t i = slot_of(key, m->cap);
  while (m->used[i]) {
    if (m->keys[i] == key) {
      m->vals[i] = val;
      return 0;
    }
    i = (i + 1) & (m->cap - 1);
  }
  m->used[i] = 1, m->keys[i] = key, m->vals[i] = val, m->n++;
  return 0;
}

int64_t *tl_i64map_get(const tl_i64map *m, int64_t key) {
  if (!m->cap) return NULL;
  size_t i = slot_of(key, m->cap);
  while (m->used[i]) {
    if (m->keys[i] == key) return &m->vals[i];
    i = (i + 1) & (m->cap - 1);
  }
  return NULL;
}

void tl_i64map_free(tl_i64map *m) {
  free(m->keys), free(m->vals), free(m->used);
  m->keys = m->vals = NULL, m->used = NULL, m->n = m->cap = 0;
}
