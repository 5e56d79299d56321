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
  free(c->narrow), free(c->wide), free(c->runs), free(c->block_run);
  tl_i64map_free(&c->overflow);
  int64_t base = c->base;
  tl_i64col_init(c, base);
}

size_t tl_i64col_bytes(const tl_i64col *c) {
  size_t row = c->wide ? 8 : c->narrow ? 4 : 0;
  return row * c->cap + c->overflow.cap * sizeof(tl_i64slot) + c->runs_cap * sizeof(tl_i64run) +
         c->blocks_cap * sizeof *c->block_run;
}

int64_t tl_i64col_get_overflow(const tl_i64col *c, size_t i) {
  const int64_t *v = tl_i64map_get(&c->overflow, (int64_t)i);
  return v ? *v : c->base; /* every marked cell has its entry: see set_slow */
}

int64_t tl_i64col_get_run(const tl_i64col *c, size_t i) {
  const tl_i64run *r = c->runs;
  if (i >= c->init || i < r[0].start) return c->base;
  size_t hi = c->nruns - 1;
  if (i >= r[hi].start) return tl_i64run_value(&r[hi], i);
  /* i lies before the last run's start, so its block has an entry; step to the run holding
  ** it (a few steps), or binary search the rest where runs crowd. */
  size_t lo = c->block_run[i >> TL_I64COL_BLOCK_BITS];
  for (int step = 0; step < 8; step++) {
    if (r[lo + 1].start > i) return tl_i64run_value(&r[lo], i);
    lo++;
  }
  while (lo < hi) { /* the last run starting at or before i; r[hi].start > i */
    size_t mid = lo + (hi - lo + 1) / 2;
    if (r[mid].start <= i) lo = mid;
    else hi = mid - 1;
  }
  return tl_i64run_value(&r[lo], i);
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

static int push_run(tl_i64col *c, size_t start, int64_t offset, int64_t slope) {
  /* the blocks beginning before this run now know their run: the last one so far */
  size_t need = start ? ((start - 1) >> TL_I64COL_BLOCK_BITS) + 1 : 0;
  if (need > c->blocks_cap) {
    size_t cap = c->blocks_cap ? c->blocks_cap * 2 : 16;
    while (cap < need) cap *= 2;
    uint32_t *b = realloc(c->block_run, cap * sizeof *b);
    if (!b) return -1;
    c->block_run = b, c->blocks_cap = cap;
  }
  if (c->nruns >= UINT32_MAX) return -1;
  for (; c->nblocks < need; c->nblocks++) {
    size_t row = c->nblocks << TL_I64COL_BLOCK_BITS;
    c->block_run[c->nblocks] = c->nruns && row >= c->runs[0].start ? (uint32_t)(c->nruns - 1) : 0;
  }
  if (c->nruns == c->runs_cap) {
    size_t cap = c->runs_cap ? c->runs_cap * 2 : 4;
    tl_i64run *r = realloc(c->runs, cap * sizeof *r);
    if (!r) return -1;
    c->runs = r, c->runs_cap = cap;
  }
  c->runs[c->nruns++] = (tl_i64run){start, offset, slope};
  return 0;
}

/* Runs: row i of value v set in append order (i >= init; rows [init, i) are base). 0 when
** the runs hold it, 1 when the column must become cells, -1 on out-of-memory. */
static int run_set(tl_i64col *c, size_t i, int64_t v) {
  if (i < c->init) return 1;
  tl_i64run *last = c->nruns ? &c->runs[c->nruns - 1] : NULL;
  /* The second row of a run fixes its slope: v the same (constant) or one more (counting). */
  if (last && i == c->init && last->start + 1 == i && last->slope == 0 &&
      (uint64_t)v == (uint64_t)last->offset + 1) {
    last->slope = 1, last->offset = (int64_t)((uint64_t)last->offset - (uint64_t)last->start);
    c->init = i + 1;
    return 0;
  }
  if (c->nruns + 2 > 64 && (c->nruns + 2) * 32 > i + 1) return 1;
  /* a gap after the runs reads base */
  if (last && i > c->init && push_run(c, c->init, c->base, 0)) return -1;
  if (push_run(c, i, v, 0)) return -1;
  c->init = i + 1;
  return 0;
}

/* Runs to cells: rows [0, init) rewritten as 4-byte cells (or 8, see widen). */
static int cells_from_runs(tl_i64col *c) {
  uint32_t *narrow = calloc(c->cap ? c->cap : 1, sizeof *narrow);
  if (!narrow) return -1;
  tl_i64run *runs = c->runs;
  size_t nruns = c->nruns, rows = c->init;
  size_t k = 0;
  int rc = 0;
  /* calloc's zeros are base: every row up to the capacity reads base until set */
  free(c->block_run);
  c->block_run = NULL, c->nblocks = c->blocks_cap = 0;
  c->narrow = narrow, c->runs = NULL, c->nruns = c->runs_cap = 0;
  c->init = c->cap;
  for (size_t r = 0; rc == 0 && r < nruns; r++) {
    size_t end = r + 1 < nruns ? runs[r + 1].start : rows;
    for (k = runs[r].start; rc == 0 && k < end; k++)
      rc = tl_i64col_set(c, k, tl_i64run_value(&runs[r], k));
  }
  free(runs);
  return rc;
}

int tl_i64col_set_slow(tl_i64col *c, size_t i, int64_t v) {
  if (!c->narrow && !c->wide) {
    int r = run_set(c, i, v);
    if (r <= 0) return r;
    if (cells_from_runs(c)) return -1;
    if (c->init <= i) c->init = i + 1;
    if (c->wide) {
      c->wide[i] = v;
      return 0;
    }
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
