/*
** i64col.h: a column of int64 values that costs what its values need.
**
**   tl_i64col c;
**   tl_i64col_init(&c, TL_I64COL_ABSENT);   // every row reads as the base value (-1 here)
**   tl_i64col_grow(&c, cap);                // with the other columns of its table
**   tl_i64col_set(&c, i, value);            // any row i < cap
**   tl_i64col_get(&c, i)                    // exactly the value last set (base if never)
**
** Provider ids (task, globalTaskId, connectionId, correlationId, context, model, graph node,
** source rowid) and per-anchor durations are int64, but nearly every value sits a little
** above a base (-1 = absent for ids, 0 for durations). A column therefore holds:
**   - nothing while every value equals the base (a column no source fills costs 0 bytes);
**   - while rows are set in append order, runs: rows [start, next start) hold offset + i
**     (a source rowid, Ascend's globalTaskId and connectionId, which grow with the row) or
**     the constant offset (a context id): a few runs describe millions of rows, 24 bytes a
**     run. Too many runs (more than 64 and one per 32 rows), or a row set out of order,
**     turn the column into the cells below;
**   - 4 bytes per row, value - base (calloc'd: zero = base);
**     a value outside [base, base + 2^32 - 2] is stored in an overflow map and its cell
**     marked UINT32_MAX, so one long idle gap does not cost the whole column 8 bytes a row;
**   - 8 bytes per row, for good, once overflows pass 1/16 of the rows (a column whose
**     values are all large, such as Ascend's globalTid = pid << 32 | tid).
** Reading is a branch or two; the values read back are exactly those written.
**
** Rows past the capacity of the last tl_i64col_grow before the first non-base value are
** base, and so are rows past the last one set while the column is runs; once it is cells,
** rows added by a later grow must be set before they are read (append order does this).
*/
#ifndef TL_I64COL_H
#define TL_I64COL_H

#include <stddef.h>
#include <stdint.h>

#include "util/i64map.h"

#define TL_I64COL_ABSENT (-1)

/* Runs are found from a per-block index (256 rows a block, 4 bytes each): a read steps from
** the run holding its block's first row, O(1) in any order while runs are sparse. */
#define TL_I64COL_BLOCK_BITS 8

/* Rows [start, the next run's start) hold offset + slope * row. */
typedef struct tl_i64run {
  size_t start;
  int64_t offset;
  int64_t slope;       /* 0 or 1 */
} tl_i64run;

/* Row i of run r; modulo 2^64, as the values it was made from. */
static inline int64_t tl_i64run_value(const tl_i64run *r, size_t i) {
  return (int64_t)((uint64_t)r->offset + (uint64_t)r->slope * (uint64_t)i);
}

typedef struct tl_i64col {
  int64_t base;        /* the value of a zero cell */
  uint32_t *narrow;    /* value - base; UINT32_MAX = see overflow; NULL: no storage yet */
  int64_t *wide;       /* the values themselves, once overflows are common */
  tl_i64map overflow;  /* row -> value for cells marked UINT32_MAX */
  tl_i64run *runs;     /* without cells: the runs of rows [runs[0].start, init) */
  size_t nruns, runs_cap;
  uint32_t *block_run; /* per block of TL_I64COL_BLOCK rows before the last run's start:
                          the run holding its first row (0 before the first run) */
  size_t nblocks, blocks_cap;
  size_t cap;          /* rows the live representation holds */
  size_t init;         /* cells: leading rows whose cells are initialized (for widening);
                          runs: rows [0, init) are described (base before the first run) */
} tl_i64col;

void tl_i64col_init(tl_i64col *c, int64_t base);
/* Capacity for cap rows (rows keep their values). 0, or -1 on out-of-memory. */
int tl_i64col_grow(tl_i64col *c, size_t cap);
void tl_i64col_free(tl_i64col *c);
/* Bytes held, overflow map included (benchmarks and tests). */
size_t tl_i64col_bytes(const tl_i64col *c);

/* Slow paths of the inline functions below. */
int tl_i64col_set_slow(tl_i64col *c, size_t i, int64_t v);
int64_t tl_i64col_get_overflow(const tl_i64col *c, size_t i);
int64_t tl_i64col_get_run(const tl_i64col *c, size_t i);

static inline int64_t tl_i64col_get(const tl_i64col *c, size_t i) {
  if (c->wide) return c->wide[i];
  if (!c->narrow) {
    if (!c->nruns || i >= c->init) return c->base;
    const tl_i64run *last = &c->runs[c->nruns - 1]; /* most reads of one-run columns */
    return i >= last->start ? tl_i64run_value(last, i) : tl_i64col_get_run(c, i);
  }
  uint32_t x = c->narrow[i];
  return x != UINT32_MAX ? c->base + (int64_t)x : tl_i64col_get_overflow(c, i);
}

/* 0, or -1 on out-of-memory (the column is unchanged then). */
static inline int tl_i64col_set(tl_i64col *c, size_t i, int64_t v) {
  if (i >= c->init && (c->narrow || c->wide)) c->init = i + 1;
  if (c->wide) {
    c->wide[i] = v;
    return 0;
  }
  uint64_t d = (uint64_t)v - (uint64_t)c->base; /* wraps for v < base: not narrow */
  if (c->narrow && d < UINT32_MAX) {
    c->narrow[i] = (uint32_t)d;
    return 0;
  }
  if (!c->narrow) {
    if (i >= c->init && d == 0) return 0; /* rows past the runs read base */
    if (i == c->init && c->nruns) {       /* the next row of the last run */
      const tl_i64run *r = &c->runs[c->nruns - 1];
      if (v == tl_i64run_value(r, i)) {
        c->init = i + 1;
        return 0;
      }
    }
  }
  return tl_i64col_set_slow(c, i, v);
}

static inline int tl_i64col_add(tl_i64col *c, size_t i, int64_t delta) {
  return delta ? tl_i64col_set(c, i, tl_i64col_get(c, i) + delta) : 0;
}

#endif
