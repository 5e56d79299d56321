/*
** i64map.c: int64 -> int64 hash map (see i64map.h).
*/
#include "util/i64map.h"

#include <stdlib.h>

#define EMPTY INT64_MIN

static size_t slot_of(int64_t key, size_t cap) {
  /* MurmurHash3's finalizer: provider ids are often dense runs, which a weaker mix
  ** would cluster under linear probing. */
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
  tl_i64slot *slots = malloc(cap * sizeof *slots);
  if (!slots) return -1;
  for (size_t i = 0; i < cap; i++) slots[i].key = EMPTY;
  for (size_t i = 0; i < m->cap; i++) {
    if (m->slots[i].key == EMPTY) continue;
    size_t j = slot_of(m->slots[i].key, cap);
    while (slots[j].key != EMPTY) j = (j + 1) & (cap - 1);
    slots[j] = m->slots[i];
  }
  free(m->slots);
  m->slots = slots;
  m->cap = cap;
  return 0;
}

int tl_i64map_put(tl_i64map *m, int64_t key, int64_t val) {
  if (key == EMPTY) {
    m->has_min = 1;
    m->min_val = val;
    return 0;
  }
  if ((m->n + 1) * 2 > m->cap && grow(m) != 0) return -1;
  size_t i = slot_of(key, m->cap);
  while (m->slots[i].key != EMPTY) {
    if (m->slots[i].key == key) {
      m->slots[i].val = val;
      return 0;
    }
    i = (i + 1) & (m->cap - 1);
  }
  m->slots[i].key = key;
  m->slots[i].val = val;
  m->n++;
  return 0;
}

int64_t *tl_i64map_get(const tl_i64map *m, int64_t key) {
  if (key == EMPTY) return m->has_min ? (int64_t *)&m->min_val : NULL;
  if (!m->cap) return NULL;
  size_t i = slot_of(key, m->cap);
  for (;;) {
    tl_i64slot *s = &m->slots[i];
    if (s->key == key) return &s->val;
    if (s->key == EMPTY) return NULL;
    i = (i + 1) & (m->cap - 1);
  }
}

void tl_i64map_free(tl_i64map *m) {
  free(m->slots);
  m->slots = NULL;
  m->n = m->cap = 0;
  m->has_min = 0;
}
