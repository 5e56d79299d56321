/*
** grammar.c: folding maximal runs into a tree of shared definitions.
**
** structure_range(a, b) turns tok[a..b) into a list of child definitions, top down:
**  1. the runs clipped to [a, b) that still hold two iterations are ranked by covered
**     tokens (count * period), then period, then position; each is accepted when no
**     accepted span overlaps it (greedy, so the dominant repetition wins: decode steps
**     before the layers inside them, a layer before the seams between layers);
**  2. an accepted run becomes Repeat x count over [s, s + count * p). The first run of
**     a cyclic class to be placed anchors the phase of the class; later runs of the
**     class use that rotation (and are rejected at this level when they cannot hold two
**     iterations in it), so all its Repeats share one body. The anchoring rotation
**     maximises the tokens in whole iterations minus the coverage of the shorter runs
**     (inner runs, neighbours) whose iterations its cuts would break, so a Repeat
**     gives up an iteration rather than rotate its body through the layers inside;
**     but among rotations that keep as many whole iterations, the one whose iterations
**     begin where the trace's host hierarchy begins the most ranges that fit in one
**     iteration (the level's hint: modules and annotations far above Python functions)
**     wins before that coverage; remaining ties go
**     to the rotation that agrees with the segment's edges (a segment is a
**     structure: a trace, a step, a body, a gap between repeats, so an iteration that
**     starts like it starts or ends like it ends, or meets an edge, is likely aligned),
**     then to the rotation most runs of the same cyclic body admit, then leftmost;
**  3. the first iteration [s, s + p) is structured recursively into the Repeat's slots
**     (memoized by content, so every iteration and every equal body share one
**     definition), and the gaps between accepted spans are structured recursively with
**     the remaining clipped runs (a rejected run's parts inside a gap or a first
**     iteration stay candidates there; parts in later iterations are dropped because
**     the first iteration stands for them).
** Recursion depth is logarithmic in practice (bodies at most halve; a gap holds only
** runs crossing its ends); a hard limit turns deeper gaps into plain atoms rather than
** overflowing the stack.
**
** Definitions are hash-consed (kind, count/symbol/template, children), so identical
** structures are one definition wherever they occur.
*/
#include "recover/recover_int.h"

#include <stdlib.h>
#include <string.h>

#define RC_MAX_DEPTH 1024

typedef struct rc_clip {
  uint32_t run, l, r, p;
} rc_clip;

typedef struct rc_acc {
  uint32_t s, c, p;
} rc_acc;

/* ---- definitions ---- */

static uint64_t def_hash(uint32_t kind, uint32_t a, const uint32_t *kids, uint32_t n) {
  uint64_t h = rc_mix(((uint64_t)kind << 32) ^ a);
  h = rc_mix(h ^ n);
  for (uint32_t i = 0; i < n; i++) h = rc_mix(h ^ kids[i]);
  return h;
}

static int ht_grow(rc_gram *g) {
  size_t ncap = g->htcap ? g->htcap * 2 : 1024;
  uint32_t *t = malloc(ncap * sizeof *t);
  if (!t) return -1;
  memset(t, 0xff, ncap * sizeof *t);
  for (size_t i = 0; i < g->defs.n; i++) {
    const rc_def *d = &g->defs.v[i];
    size_t h = (size_t)(def_hash(d->kind, d->a, g->kids.v + d->kid0, d->nkid) & (ncap - 1));
    while (t[h] != RC_NONE) h = (h + 1) & (ncap - 1);
    t[h] = (uint32_t)i;
  }
  free(g->ht);
  g->ht = t;
  g->htcap = ncap;
  return 0;
}

uint32_t tl_rc_def_intern(rc_gram *g, uint32_t kind, uint32_t a, const uint32_t *kids, uint32_t nkid) {
  if ((g->defs.n + 1) * 2 > g->htcap && ht_grow(g)) return RC_NONE;
  size_t mask = g->htcap - 1;
  size_t h = (size_t)(def_hash(kind, a, kids, nkid) & mask);
  while (g->ht[h] != RC_NONE) {
    const rc_def *d = &g->defs.v[g->ht[h]];
    if (d->kind == kind && d->a == a && d->nkid == nkid &&
        (!nkid || !memcmp(g->kids.v + d->kid0, kids, nkid * sizeof *kids)))
      return g->ht[h];
    h = (h + 1) & mask;
  }
  if (g->defs.n >= RC_NONE - 1 || g->kids.n + nkid >= RC_NONE) return RC_NONE;
  uint64_t len = kind == RC_ATOM ? 1 : 0;
  for (uint32_t i = 0; i < nkid; i++) len += g->defs.v[kids[i]].len;
  if (kind == RC_REPEAT) len *= a;
  rc_def d = {kind, a, (uint32_t)g->kids.n, nkid, len};
  if (TL_VEC_RESERVE(&g->kids, g->kids.n + nkid)) return RC_NONE;
  if (nkid) memcpy(g->kids.v + g->kids.n, kids, nkid * sizeof *kids);
  g->kids.n += nkid;
  if (TL_VEC_PUSH(&g->defs, d)) return RC_NONE;
  g->ht[h] = (uint32_t)(g->defs.n - 1);
  return g->ht[h];
}

uint32_t tl_rc_list_add(rc_gram *g, const uint32_t *v, uint32_t n) {
  if (g->lists.n + n >= RC_NONE || TL_VEC_RESERVE(&g->lists, g->lists.n + n)) return RC_NONE;
  uint32_t off = (uint32_t)g->lists.n;
  if (n) memcpy(g->lists.v + off, v, n * sizeof *v);
  g->lists.n += n;
  return off;
}

void tl_rc_gram_free(rc_gram *g) {
  TL_VEC_FREE(&g->defs);
  TL_VEC_FREE(&g->kids);
  TL_VEC_FREE(&g->scratch);
  TL_VEC_FREE(&g->lists);
  TL_VEC_FREE(&g->memo);
  free(g->ht);
  free(g->mt);
  memset(g, 0, sizeof *g);
}

/* ---- memo of structured bodies, keyed by (level, content) ---- */

static uint64_t content_hash(const uint32_t *t, uint32_t len) {
  uint64_t h = rc_mix(len);
  for (uint32_t i = 0; i < len; i++) h = h * 0x100000001B3ull + rc_mix(t[i]);
  return rc_mix(h);
}

static int mt_grow(rc_gram *g) {
  size_t ncap = g->mtcap ? g->mtcap * 2 : 256;
  uint32_t *t = malloc(ncap * sizeof *t);
  if (!t) return -1;
  memset(t, 0xff, ncap * sizeof *t);
  for (size_t i = 0; i < g->memo.n; i++) {
    size_t h = (size_t)(g->memo.v[i].hash & (ncap - 1));
    while (t[h] != RC_NONE) h = (h + 1) & (ncap - 1);
    t[h] = (uint32_t)i;
  }
  free(g->mt);
  g->mt = t;
  g->mtcap = ncap;
  return 0;
}

/* Finds the memo entry of tok[pos..pos+len) at this level; *slot gets the table slot
** where a new entry goes. */
static uint32_t memo_find(rc_gram *g, const rc_level *lv, uint32_t pos, uint32_t len, uint64_t hash,
                          size_t *slot) {
  size_t mask = g->mtcap - 1, h = (size_t)(hash & mask);
  while (g->mt[h] != RC_NONE) {
    const rc_memo *m = &g->memo.v[g->mt[h]];
    if (m->hash == hash && m->level == lv->id && m->len == len &&
        !memcmp(lv->tok + m->pos, lv->tok + pos, (size_t)len * sizeof *lv->tok))
      return g->mt[h];
    h = (h + 1) & mask;
  }
  *slot = h;
  return RC_NONE;
}

/* ---- folding ---- */

static int emit_plain(rc_gram *g, const rc_level *lv, uint32_t a, uint32_t b, tl_err *e) {
  for (uint32_t i = a; i < b; i++) {
    uint32_t id = lv->tok[i], n = lv->nitem[id], off = lv->item0[id];
    if (TL_VEC_RESERVE(&g->scratch, g->scratch.n + n))
      return tl_fail(e, "recover_out_of_memory: child lists");
    memcpy(g->scratch.v + g->scratch.n, g->lists.v + off, n * sizeof(uint32_t));
    g->scratch.n += n;
  }
  return TL_OK;
}

static int cmp_rank(const void *x, const void *y) {
  const rc_clip *a = x, *b = y;
  uint64_t ca = (uint64_t)((a->r - a->l) / a->p) * a->p, cb = (uint64_t)((b->r - b->l) / b->p) * b->p;
  if (ca != cb) return ca > cb ? -1 : 1;
  if (a->p != b->p) return a->p < b->p ? -1 : 1;
  if (a->l != b->l) return a->l < b->l ? -1 : 1;
  return 0;
}

static int cmp_acc(const void *x, const void *y) {
  const rc_acc *a = x, *b = y;
  return a->s < b->s ? -1 : a->s > b->s;
}

/* What the host ranges that begin at token t count for a Repeat of period p: the ranges
** that fit in one iteration (a range over several iterations, or over the whole step, says
** nothing about where an iteration begins), twice for one that covers it exactly. */
static uint64_t hint_at(const tl_recover_hints *h, uint32_t t, uint32_t p) {
  uint64_t w = 0;
  for (uint32_t q = h->off[t]; q < h->off[t + 1]; q++)
    if (h->span[q] <= p) w += (uint64_t)h->weight[q] << (h->span[q] == p);
  return w;
}

/* Start of the iterations of run cl inside segment [a, b), or RC_NONE when the run
** cannot hold two iterations in the phase its class is anchored to. The first run of a
** class to be phased anchors the class, so every Repeat of one cyclic body starts at
** the same rotation and shares one body definition. */
static uint32_t choose_phase(const rc_level *lv, uint32_t a, uint32_t b, const rc_clip *cl) {
  const rc_runs *rs = lv->runs;
  uint32_t p = cl->p, len = cl->r - cl->l;
  uint32_t cls = rs->cls[cl->run], rho = rc_residue(rs, cl->run, cl->l);
  if (lv->anchor[cls] != RC_NONE) {
    uint32_t s = cl->l + (lv->anchor[cls] + p - rho) % p;
    return s <= cl->r - 2 * p ? s : RC_NONE;
  }
  /* Anchoring: try every rotation (the leftmost start of each residue keeps the most
  ** iterations) and keep the one with the most tokens in whole iterations minus what
  ** the shorter runs its cuts would split would have saved, except that between rotations
  ** with as many whole iterations the host ranges decide first (below); ties go to the one
  ** that agrees with the segment's edges (iterations starting like the segment starts,
  ** ending like it ends, or meeting an edge), then to the one most runs of the class
  ** admit, then to the leftmost. */
  const uint64_t *votes = rs->votes + rs->vote_off[cls];
  uint32_t best = 0, span = len - 2 * p + 1 < p ? len - 2 * p + 1 : p;
  int64_t best_value = INT64_MIN;
  uint64_t best_vote = 0, best_hint = 0;
  int64_t best_kp = -1;
  int best_align = 0;
  for (uint32_t o = 0; o < span; o++) {
    uint32_t x = cl->l + o, k = (cl->r - x) / p;
    uint64_t dmg = tl_rc_damage(rs, x, p, a, b) + (uint64_t)(k - 1) * tl_rc_damage(rs, x + p, p, a, b) +
                   tl_rc_damage(rs, x + k * p, p, a, b);
    int64_t value = (int64_t)k * p - (int64_t)dmg;
    uint64_t vote = votes[rc_residue(rs, cl->run, x)];
    int align = (x == a || lv->tok[x] == lv->tok[a]) + (x + k * p == b || (x > a && lv->tok[x - 1] == lv->tok[b - 1]));
    uint64_t hint = 0;
    for (uint32_t i = 0; lv->hint && i < k; i++) hint += hint_at(lv->hint, x + i * p, p);
    /* Among rotations that keep as many whole iterations, where the host hierarchy begins
    ** ranges decides before the damage to shorter runs: a decoder layer's module says
    ** where each layer begins, which outweighs a coincidental run across a layer's edge
    ** (CudaMatMul, CudaReduce twice where the last layer's down projection meets the final
    ** norm and the LM head: tests/python/test_kineto_gpu.py). Without hints, hint is 0. */
    int better;
    if ((int64_t)k * p != best_kp)
      better = value > best_value;
    else if (hint != best_hint)
      better = hint > best_hint;
    else
      better = value > best_value ||
               (value == best_value &&
                (align > best_align || (align == best_align && vote > best_vote)));
    if (better) {
      best = o;
      best_value = value;
      best_vote = vote;
      best_align = align;
      best_hint = hint;
      best_kp = (int64_t)k * p;
    }
  }
  lv->anchor[cls] = (rho + best) % p;
  return cl->l + best;
}

static int structure_body(rc_gram *g, const rc_level *lv, uint32_t s, uint32_t len, rc_clip *R,
                          size_t nR, unsigned depth, uint32_t *list0, uint32_t *nlist,
                          uint32_t *memo, tl_err *e);

typedef struct rc_piece {
  uint32_t target;
  rc_clip c;
} rc_piece;

static int structure_range(rc_gram *g, const rc_level *lv, uint32_t a, uint32_t b, rc_clip *R,
                           size_t nR, unsigned depth, tl_err *e) {
  size_t k = 0;
  for (size_t i = 0; i < nR; i++) {
    uint32_t l = R[i].l > a ? R[i].l : a, r = R[i].r < b ? R[i].r : b;
    if (r > l && r - l >= 2 * R[i].p) R[k++] = (rc_clip){R[i].run, l, r, R[i].p};
  }
  nR = k;
  if (!nR || depth > RC_MAX_DEPTH) return emit_plain(g, lv, a, b, e);
  qsort(R, nR, sizeof *R, cmp_rank);

  int rc = TL_OK;
  uint8_t *claimed = calloc(b - a, 1), *isacc = calloc(nR, 1);
  rc_acc *acc = malloc(nR * sizeof *acc);
  rc_piece *pc = NULL, *sorted = NULL;
  size_t *off = NULL;
  size_t nacc = 0;
  TL_VEC(rc_piece) pieces = {0};
  if (!claimed || !isacc || !acc) goto nomem;
  for (size_t i = 0; i < nR; i++) {
    const rc_clip *cl = &R[i];
    uint32_t x = cl->l;
    while (x < cl->r && !claimed[x - a]) x++;
    if (x < cl->r) continue;
    uint32_t s = choose_phase(lv, a, b, cl);
    if (s == RC_NONE) { /* cannot hold two iterations in its class's phase, nor can any part */
      isacc[i] = 2;
      continue;
    }
    uint32_t c = (cl->r - s) / cl->p;
    memset(claimed + (s - a), 1, (size_t)c * cl->p);
    acc[nacc++] = (rc_acc){s, c, cl->p};
    isacc[i] = 1;
  }
  free(claimed);
  claimed = NULL;
  qsort(acc, nacc, sizeof *acc, cmp_acc);

  /* Hand each rejected run's parts to the gaps and first iterations it meets. Target
  ** 2j is the gap before accepted span j, 2j+1 the first iteration of span j. */
  for (size_t i = 0; i < nR; i++) {
    if (isacc[i]) continue; /* accepted (1) or dead (2) */
    const rc_clip *cl = &R[i];
    size_t lo = 0, hi = nacc;
    while (lo < hi) {
      size_t mid = (lo + hi) / 2;
      if (acc[mid].s + acc[mid].c * acc[mid].p <= cl->l)
        lo = mid + 1;
      else
        hi = mid;
    }
    uint32_t cur = cl->l;
    for (size_t j = lo; cur < cl->r; j++) {
      uint32_t gap_end = (j < nacc && acc[j].s < cl->r) ? acc[j].s : cl->r;
      if (cur < gap_end && gap_end - cur >= 2 * cl->p) {
        rc_piece q = {(uint32_t)(2 * j), {cl->run, cur, gap_end, cl->p}};
        if (TL_VEC_PUSH(&pieces, q)) goto nomem;
      }
      if (gap_end == cl->r) break;
      uint32_t bl = cur > acc[j].s ? cur : acc[j].s;
      uint32_t br = acc[j].s + acc[j].p < cl->r ? acc[j].s + acc[j].p : cl->r;
      if (bl < br && br - bl >= 2 * cl->p) {
        rc_piece q = {(uint32_t)(2 * j + 1), {cl->run, bl, br, cl->p}};
        if (TL_VEC_PUSH(&pieces, q)) goto nomem;
      }
      uint32_t end = acc[j].s + acc[j].c * acc[j].p;
      if (end > cur) cur = end;
    }
  }
  free(isacc);
  isacc = NULL;

  size_t nt = 2 * nacc + 1;
  off = calloc(nt + 1, sizeof *off);
  sorted = malloc((pieces.n ? pieces.n : 1) * sizeof *sorted);
  pc = malloc((pieces.n ? pieces.n : 1) * sizeof *pc);
  if (!off || !sorted || !pc) goto nomem;
  for (size_t i = 0; i < pieces.n; i++) off[pieces.v[i].target + 1]++;
  for (size_t t = 0; t < nt; t++) off[t + 1] += off[t];
  {
    size_t *fill = calloc(nt, sizeof *fill);
    if (!fill) goto nomem;
    for (size_t i = 0; i < pieces.n; i++) {
      uint32_t t = pieces.v[i].target;
      sorted[off[t] + fill[t]++] = pieces.v[i];
    }
    free(fill);
  }
  TL_VEC_FREE(&pieces);
  rc_clip *clips = (rc_clip *)pc;
  for (size_t i = 0; i < off[nt]; i++) clips[i] = sorted[i].c;
  free(sorted);
  sorted = NULL;

  uint32_t prev = a;
  for (size_t j = 0; j <= nacc; j++) {
    uint32_t gap_end = j < nacc ? acc[j].s : b;
    if (prev < gap_end &&
        (rc = structure_range(g, lv, prev, gap_end, clips + off[2 * j], off[2 * j + 1] - off[2 * j],
                              depth + 1, e)))
      goto done;
    if (j == nacc) break;
    uint32_t l0, nl, memo;
    if ((rc = structure_body(g, lv, acc[j].s, acc[j].p, clips + off[2 * j + 1],
                             off[2 * j + 2] - off[2 * j + 1], depth + 1, &l0, &nl, &memo, e)))
      goto done;
    uint32_t def = tl_rc_def_intern(g, RC_REPEAT, acc[j].c, g->lists.v + l0, nl);
    if (def == RC_NONE || TL_VEC_PUSH(&g->scratch, def)) goto nomem;
    prev = acc[j].s + acc[j].c * acc[j].p;
  }
  goto done;
nomem:
  rc = tl_fail(e, "recover_out_of_memory: folding %u tokens", b - a);
done:
  free(claimed);
  free(isacc);
  free(acc);
  free(off);
  free(sorted);
  free(pc);
  TL_VEC_FREE(&pieces);
  return rc;
}

static int structure_body(rc_gram *g, const rc_level *lv, uint32_t s, uint32_t len, rc_clip *R,
                          size_t nR, unsigned depth, uint32_t *list0, uint32_t *nlist,
                          uint32_t *memo, tl_err *e) {
  if ((g->memo.n + 1) * 2 > g->mtcap && mt_grow(g))
    return tl_fail(e, "recover_out_of_memory: memo");
  uint64_t hash = content_hash(lv->tok + s, len);
  size_t slot;
  uint32_t hit = memo_find(g, lv, s, len, hash, &slot);
  if (hit != RC_NONE) {
    *list0 = g->memo.v[hit].list0;
    *nlist = g->memo.v[hit].nlist;
    *memo = hit;
    return TL_OK;
  }
  size_t mark = g->scratch.n;
  int rc = structure_range(g, lv, s, s + len, R, nR, depth, e);
  if (rc) return rc;
  uint32_t n = (uint32_t)(g->scratch.n - mark);
  uint32_t l0 = tl_rc_list_add(g, g->scratch.v + mark, n);
  g->scratch.n = mark;
  if (l0 == RC_NONE) return tl_fail(e, "recover_out_of_memory: child lists");
  /* The recursion may have added entries and grown the table: find the slot again. */
  if ((g->memo.n + 1) * 2 > g->mtcap && mt_grow(g))
    return tl_fail(e, "recover_out_of_memory: memo");
  memo_find(g, lv, s, len, hash, &slot);
  rc_memo m = {hash, lv->id, s, len, l0, n, RC_NONE};
  if (TL_VEC_PUSH(&g->memo, m)) return tl_fail(e, "recover_out_of_memory: memo");
  g->mt[slot] = (uint32_t)(g->memo.n - 1);
  *list0 = l0;
  *nlist = n;
  *memo = (uint32_t)(g->memo.n - 1);
  return TL_OK;
}

/* Runs of the level with l in [a, b), as clips. */
static rc_clip *clips_in(const rc_runs *rs, uint32_t a, uint32_t b, size_t *n) {
  size_t lo = 0, hi = rs->n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (rs->run[mid].l < a)
      lo = mid + 1;
    else
      hi = mid;
  }
  size_t k = lo;
  while (k < rs->n && rs->run[k].l < b) k++;
  *n = k - lo;
  rc_clip *c = malloc((*n ? *n : 1) * sizeof *c);
  if (!c) return NULL;
  for (size_t i = lo; i < k; i++)
    c[i - lo] = (rc_clip){(uint32_t)i, rs->run[i].l, rs->run[i].r, rs->run[i].p};
  return c;
}

int tl_rc_structure_segment(rc_gram *g, const rc_level *lv, uint32_t a, uint32_t b,
                         uint32_t *list0, uint32_t *nlist, uint32_t *memo, tl_err *e) {
  size_t n;
  rc_clip *c = clips_in(lv->runs, a, b, &n);
  if (!c) return tl_fail(e, "recover_out_of_memory: segment runs");
  int rc = structure_body(g, lv, a, b - a, c, n, 0, list0, nlist, memo, e);
  free(c);
  return rc;
}

int tl_rc_structure_all(rc_gram *g, const rc_level *lv, tl_err *e) {
  size_t n;
  rc_clip *c = clips_in(lv->runs, 0, (uint32_t)lv->m, &n);
  if (!c) return tl_fail(e, "recover_out_of_memory: level runs");
  int rc = structure_range(g, lv, 0, (uint32_t)lv->m, c, n, 0, e);
  free(c);
  return rc;
}
