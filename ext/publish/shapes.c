/*
** shapes.c: fixed-width key interning (see shapes.h).
*/
#include "publish/shapes.h"

#include <stdlib.h>
#include <string.h>

void tl_shapes_init(tl_shapes *s, size_t width) {
  memset(s, 0, sizeof *s);
  s->width = width;
}

static uint64_t hash_words(const uint64_t *w, size_t n) {
  uint64_t h = 0x9E3779B97F4A7C15u;
  for (size_t i = 0; i < n; i++) {
    h ^= w[i] + 0x9E3779B97F4A7C15u + (h << 6) + (h >> 2);
    h *= 0xBF58476D1CE4E5B9u;
  }
  return h ^ (h >> 31);
}

int64_t tl_shapes_intern(tl_shapes *s, const uint64_t *key, int *fresh) {
  *fresh = 0;
  size_t bytes = s->width * sizeof *key;
  /* Distinct keys with equal hashes take the next free hash value: probe until the key
  ** or a free hash is found; a new key takes that free hash. */
  uint64_t h = hash_words(key, s->width);
  for (int64_t *id; (id = tl_i64map_get(&s->by_hash, (int64_t)h)) != NULL; h++)
    if (memcmp(&s->keys[(size_t)(*id - 1) * s->width], key, bytes) == 0) return *id;
  if (s->n == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 64;
    uint64_t *k = realloc(s->keys, cap * bytes);
    if (!k) return -1;
    s->keys = k, s->cap = cap;
  }
  memcpy(&s->keys[s->n * s->width], key, bytes);
  int64_t id = (int64_t)++s->n;
  if (tl_i64map_put(&s->by_hash, (int64_t)h, id)) return -1;
  *fresh = 1;
  return id;
}

void tl_shapes_free(tl_shapes *s) {
  free(s->keys);
  tl_i64map_free(&s->by_hash);
  memset(s, 0, sizeof *s);
}
