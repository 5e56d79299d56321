/*
** i64col.c: the allocation and overflow paths of the packed int64 column (see i64col.h).
*/
#include "util/i64col.h"

#include <stdlib.h>
#include <string.h>

void tl_i64col_init(tl_i64col *c, int64_t base) {
  memset(c, 0, sizeof *c);
  c->base = base;
}

int tl_i64col_grow(tl_i64col *c, size_t cap) {
  if (cap <= c->cap) return 0;
  if (c->wide) {
    int64_t *p = realloc(c->wide, cap * sizeof *p);
    if (!p) return -1;
    c->wide = p;
  } else if (c->narrow) {
    uint32_t *p = realloc(c->narrow, cap * sizeof *p);
    if (!p) return -1;
    c->narrow = p;
  }
  c->cap = cap;
  return 0;
}

void tl_i64col_free(tl_i64col *c) {
  free(c->narrow), free(c->wide);
  tl_i64map_free(&c->overflow);
  int64_t base = c->base;
  tl_i64col_init(c, base);
}

size_t tl_i64col_bytes(const tl_i64col *c) {
  size_t row = c->wide ? 8 : c->narrow ? 4 : 0;
  return row * c->cap + c->overflow.cap * sizeof(tl_i64slot);
}

int64_t tl_i64col_get_overflow(const tl_i64col *c, size_t i) {
  const int64_t *v = tl_i64map_get(&c->overflow, (int64_t)i);
  return v ? *v : c->base; /* every marked cell has its entry: see set_slow */
}

/* Converts rows [0, init) to 8 bytes each and drops the overflow map. */
static int widen(tl_i64col *c) {
  int64_t *w = malloc((c->cap ? c->cap : 1) * sizeof *w);
  if (!w) return -1;
  for (size_t k = 0; k < c->init; k++) w[k] = tl_i64col_get(c, k);
  free(c->narrow);
  tl_i64map_free(&c->overflow);
  c->narrow = NULL;
  c->wide = w;
  return 0;
}

int tl_i64col_set_slow(tl_i64col *c, size_t i, int64_t v) {
  if (!c->narrow) {
    /* The first non-base value: every row so far is base, which calloc's zeros encode. */
    c->narrow = calloc(c->cap ? c->cap : 1, sizeof *c->narrow);
    if (!c->narrow) return -1;
    c->init = c->cap;
    if (c->init <= i) c->init = i + 1;
  }
  uint64_t d = (uint64_t)v - (uint64_t)c->base;
  if (d < UINT32_MAX) {
    c->narrow[i] = (uint32_t)d;
    return 0;
  }
  if (tl_i64map_put(&c->overflow, (int64_t)i, v)) return -1;
  c->narrow[i] = UINT32_MAX;
  /* Entries for rows set narrow again later stay in the map, unread: they only make this
  ** test widen a little early. */
  if (c->overflow.n > 64 && c->overflow.n > c->cap / 16) {
    if (widen(c)) return -1; /* the value is in the map: the column still reads right */
  }
  return 0;
}
