/*
** recover_int.h: internals shared by the files of ext/recover/ (not a public API).
**
**   runs.c     maximal-run (tandem repeat) detection, cyclic classes, phase votes and
**              the stabbing index used to price cuts
**   grammar.c  hash-consed definitions and the top-down folding of runs into Repeats
**   recover.c  tl_recover: input checks, units, partitions, lowering to positions and
**              occurrences, the fail-closed checker and the outline
*/
#ifndef TL_RECOVER_INT_H
#define TL_RECOVER_INT_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"
#include "util/vec.h"
#include "recover/recover.h"

#define RC_NONE UINT32_MAX

/* A maximal run: tok[x] == tok[x + p] for l <= x < r - p, r - l >= 2p, p primitive, and
** the run cannot be extended inside its segment. */
typedef struct rc_run {
  uint32_t l, r, p;
} rc_run;

typedef struct rc_runs {
  rc_run *run; /* sorted by (l, p) */
  size_t n, cap;
  uint32_t *cls;   /* per run: cyclic class (same primitive body up to rotation) */
  uint32_t *canon; /* per run: where its canonical rotation starts, in [l, l + p) */
  size_t ncls;
  uint64_t *vote_off; /* per class: offset of its residue votes in votes[] */
  uint64_t *votes;    /* per class and residue: coverage of the runs admitting that phase */
  uint32_t *tree;     /* max-r segment tree over run order (stabbing queries) */
  size_t leaves;
} rc_runs;

/* Detects the maximal runs of tok[0..m), which is cut into segments starting at
** seg_start[0] = 0 < seg_start[1] < ... (no run crosses a segment boundary). Token ids
** are < nid. Fills rs->run (sorted); call tl_rc_runs_index next. */
int tl_rc_runs_detect(const uint32_t *tok, size_t m, uint32_t nid, const uint32_t *seg_start,
                   size_t nseg, rc_runs *rs, tl_err *e);

/* Computes classes, drops runs that break a protection policy, then votes and the
** stabbing index. amb_prefix / noenc_prefix (m+1 prefix counts of ambiguous tokens and
** of no-enclose unit tokens) may be NULL. A run overlapping an ambiguous token bans its
** class everywhere; a run of period > 1 holding a no-enclose token is dropped. */
int tl_rc_runs_index(rc_runs *rs, const uint32_t *tok, uint32_t nid, const uint32_t *amb_prefix,
                  const uint32_t *noenc_prefix, tl_err *e);

/* Damage of cutting the sequence between x-1 and x: for every run of period < pmax,
** clipped to [a, b), that the cut splits (neither side keeps all its iterations), what
** folding it saves: (count - 1) * period tokens less the Repeat node. A split run
** counts whole: it becomes two Repeats, often with loose atoms between, instead of
** one. A seam run that exists only across an iteration boundary ("a | a", saving
** nothing) costs nothing, so it never rotates a body. */
uint64_t tl_rc_damage(const rc_runs *rs, uint32_t x, uint32_t pmax, uint32_t a, uint32_t b);

/* Residue of position x in its run's canonical phase, and the votes of that class. */
static inline uint32_t rc_residue(const rc_runs *rs, size_t run, uint32_t x) {
  uint32_t p = rs->run[run].p;
  return (uint32_t)((x % p + p - rs->canon[run] % p) % p);
}

void tl_rc_runs_free(rc_runs *rs);

/* 64-bit mixer (splitmix64 finaliser): token and window fingerprints. */
static inline uint64_t rc_mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/* ---- grammar.c ---- */

enum { RC_ATOM = 1, RC_SEQ = 2, RC_REPEAT = 3 };

typedef struct rc_def {
  uint32_t kind;
  uint32_t a;    /* ATOM: symbol; REPEAT: count; SEQ: unit template (0 = root) */
  uint32_t kid0; /* children: kids[kid0 .. kid0 + nkid) */
  uint32_t nkid;
  uint64_t len;  /* input tokens per occurrence */
} rc_def;

typedef struct rc_memo {
  uint64_t hash;
  uint32_t level, pos, len; /* content: level's tok[pos .. pos + len) */
  uint32_t list0, nlist;    /* child list in g->lists */
  uint32_t uid;             /* partition content id, RC_NONE until used as one */
} rc_memo;

typedef struct rc_gram {
  TL_VEC(rc_def) defs;
  TL_VEC(uint32_t) kids;
  uint32_t *ht; /* hash-consing table of def ids, RC_NONE = empty */
  size_t htcap;
  TL_VEC(uint32_t) scratch; /* child lists under construction (stack discipline) */
  TL_VEC(uint32_t) lists;   /* finished child lists */
  TL_VEC(rc_memo) memo;
  uint32_t *mt; /* memo table of memo indices */
  size_t mtcap;
} rc_gram;

/* One level of folding: level 0 = tokens (atoms and units), level 1 = partitions. */
typedef struct rc_level {
  unsigned id;
  const uint32_t *tok;
  size_t m;
  const rc_runs *runs;
  const uint32_t *item0, *nitem; /* per token id: its child list in g->lists */
  uint32_t *anchor;              /* per run class: anchored phase residue, RC_NONE = free */
  const tl_recover_hints *hint;  /* host ranges beginning at each token; NULL = none */
} rc_level;

/* Interns a definition; returns its id or RC_NONE on out-of-memory. */
uint32_t tl_rc_def_intern(rc_gram *g, uint32_t kind, uint32_t a, const uint32_t *kids, uint32_t nkid);
/* Stores a child list; returns its offset in g->lists or RC_NONE. */
uint32_t tl_rc_list_add(rc_gram *g, const uint32_t *v, uint32_t n);
/* Structures tok[a..b) of the level into a child list (memoized by content): *list0 and
** *nlist locate it in g->lists; *memo gets the memo entry index. */
int tl_rc_structure_segment(rc_gram *g, const rc_level *lv, uint32_t a, uint32_t b,
                         uint32_t *list0, uint32_t *nlist, uint32_t *memo, tl_err *e);
/* Structures the whole level (no memo) and appends its children to g->scratch. */
int tl_rc_structure_all(rc_gram *g, const rc_level *lv, tl_err *e);
void tl_rc_gram_free(rc_gram *g);

#endif
