/*
** runs.c: maximal runs (tandem repeats) of a token sequence, for the folding in
** grammar.c.
**
** Detection is one left-to-right pass. For each position i and each window width w in
** {1, 4, 16, 64}, the previous occurrence j of the w-gram at i (a fingerprint table)
** proposes the period p = i - j. A proposal is verified by direct comparison: the
** relation tok[x] == tok[x - p] is extended right and left from i to its maximal
** stretch, and the stretch is a run when it spans at least two periods. A registry of
** the last stretch per period skips proposals inside a stretch already extended, so
** each stretch is compared once: the pass costs O(n * widths) plus the total length of
** the stretches (about n times the nesting depth for traces). Fingerprints only
** propose; equality of tokens decides, so a fingerprint collision can cost a missed
** proposal, never a wrong run.
**
** Why these widths find the runs: a window at least as long as the period recurs in a
** run exactly one period back and nowhere closer (else the body would not be
** primitive), so every run of period <= 64 with three iterations is proposed; longer
** periods are proposed from any 64-gram that occurs once per period, such as those
** holding a step's prologue or epilogue.
**
** Each run then gets its cyclic class (the minimal rotation of its body, found with the
** two-pointer minimum-rotation scan and compared token by token) and votes, per class
** and residue, for the phases it admits, weighted by the tokens it covers: that is how
** runs of the same body agree on where iterations start. A max-r segment tree over
** the runs answers "which runs cross x" for pricing cuts (tl_rc_damage).
*/
#include "recover/recover_int.h"

#include <stdlib.h>
#include <string.h>

#define NSCALE 4
static const uint32_t scale_width[NSCALE] = {1, 4, 16, 64};
#define TBITS_MAX 16 /* fingerprint table per width: at most 2^16 slots, 512 KiB */
#define HBASE 0x100000001B3ull

typedef struct fp_slot {
  uint32_t chk, pos;
} fp_slot;

/* period -> right end of the last verified stretch of that period: a direct array for
** short periods (the hot case), a hash map for the rest */
#define REG_DIRECT 65536
typedef struct regmap {
  uint32_t *key, *val;
  size_t cap, n;
  uint32_t *direct;
} regmap;

static uint32_t reg_get(const regmap *m, uint32_t p) {
  if (p < REG_DIRECT) return m->direct[p];
  size_t mask = m->cap - 1, h = (size_t)(rc_mix(p) & mask);
  while (m->key[h]) {
    if (m->key[h] == p) return m->val[h];
    h = (h + 1) & mask;
  }
  return RC_NONE;
}

static int reg_put(regmap *m, uint32_t p, uint32_t r) {
  if (p < REG_DIRECT) {
    m->direct[p] = r;
    return 0;
  }
  if ((m->n + 1) * 2 > m->cap) {
    size_t ncap = m->cap * 2;
    uint32_t *k = calloc(ncap, sizeof *k), *v = malloc(ncap * sizeof *v);
    if (!k || !v) {
      free(k);
      free(v);
      return -1;
    }
    for (size_t i = 0; i < m->cap; i++) {
      if (!m->key[i]) continue;
      size_t h = (size_t)(rc_mix(m->key[i]) & (ncap - 1));
      while (k[h]) h = (h + 1) & (ncap - 1);
      k[h] = m->key[i];
      v[h] = m->val[i];
    }
    free(m->key);
    free(m->val);
    m->key = k;
    m->val = v;
    m->cap = ncap;
  }
  size_t mask = m->cap - 1, h = (size_t)(rc_mix(p) & mask);
  while (m->key[h] && m->key[h] != p) h = (h + 1) & mask;
  if (!m->key[h]) m->n++;
  m->key[h] = p;
  m->val[h] = r;
  return 0;
}

static int push_run(rc_runs *rs, uint32_t l, uint32_t r, uint32_t p) {
  if (rs->n == rs->cap && tl_vec_reserve_((void **)&rs->run, &rs->cap, rs->n + 1, sizeof *rs->run))
    return -1;
  rs->run[rs->n++] = (rc_run){l, r, p};
  return 0;
}

static int cmp_run(const void *x, const void *y) {
  const rc_run *a = x, *b = y;
  if (a->l != b->l) return a->l < b->l ? -1 : 1;
  if (a->p != b->p) return a->p < b->p ? -1 : 1;
  return 0;
}

int tl_rc_runs_detect(const uint32_t *tok, size_t m, uint32_t nid, const uint32_t *seg_start,
                   size_t nseg, rc_runs *rs, tl_err *e) {
  memset(rs, 0, sizeof *rs);
  if (m < 2) return TL_OK;
  int rc = TL_OK;
  uint32_t *last1 = malloc((size_t)nid * sizeof *last1);
  uint64_t *ftab = malloc((size_t)nid * sizeof *ftab);
  unsigned tbits = 6; /* small inputs get small tables */
  while (tbits < TBITS_MAX && ((size_t)1 << tbits) < 2 * m) tbits++;
  fp_slot *tab = malloc(((size_t)(NSCALE - 1) << tbits) * sizeof *tab);
  size_t ndirect = m < REG_DIRECT ? m : REG_DIRECT;
  regmap reg = {calloc(64, sizeof(uint32_t)), malloc(64 * sizeof(uint32_t)), 64, 0,
                malloc(ndirect * sizeof(uint32_t))};
  if (!last1 || !ftab || !tab || !reg.key || !reg.val || !reg.direct) goto nomem;
  memset(reg.direct, 0xff, ndirect * sizeof(uint32_t));
  memset(last1, 0xff, (size_t)nid * sizeof *last1);
  for (uint32_t x = 0; x < nid; x++) ftab[x] = rc_mix(x);
  for (size_t k = 0; k < ((size_t)(NSCALE - 1) << tbits); k++) tab[k] = (fp_slot){0, RC_NONE};

  uint64_t h[NSCALE] = {0}, hw[NSCALE] = {0}; /* window fingerprint, HBASE^(w-1) */
  uint32_t cur_p[NSCALE] = {0}, cur_r[NSCALE] = {0};
  for (int s = 1; s < NSCALE; s++) {
    uint32_t w = scale_width[s];
    hw[s] = 1;
    for (uint32_t k = 1; k < w; k++) hw[s] *= HBASE;
    if (w <= m)
      for (uint32_t k = 0; k < w; k++) h[s] = h[s] * HBASE + ftab[tok[k]];
  }

  size_t si = 0;
  uint32_t sa = 0, sb = nseg > 1 ? seg_start[1] : (uint32_t)m;
  for (uint32_t i = 0; i < m; i++) {
    while (i >= sb) {
      si++;
      sa = sb;
      sb = si + 1 < nseg ? seg_start[si + 1] : (uint32_t)m;
    }
    for (int s = 0; s < NSCALE; s++) {
      uint32_t w = scale_width[s], j;
      if ((size_t)i + w > m) break;
      if (s == 0) {
        j = last1[tok[i]];
        last1[tok[i]] = i;
      } else {
        uint64_t hv = h[s];
        size_t idx = ((size_t)(s - 1) << tbits) + (size_t)((hv * 0xD6E8FEB86659FD93ull) >> (64 - tbits));
        uint32_t chk = (uint32_t)(hv >> 32);
        j = (tab[idx].pos != RC_NONE && tab[idx].chk == chk) ? tab[idx].pos : RC_NONE;
        tab[idx] = (fp_slot){chk, i};
        if ((size_t)i + w < m) h[s] = (hv - ftab[tok[i]] * hw[s]) * HBASE + ftab[tok[i + w]];
      }
      if (j == RC_NONE || j < sa) continue;
      uint32_t p = i - j;
      if (p == cur_p[s] && i < cur_r[s]) continue;
      if (tok[i] != tok[j]) continue; /* fingerprint collision */
      if (p > 1) {
        /* A lone matching position cannot hold a run of period > 1. */
        int next = i + 1 < sb && tok[i + 1] == tok[i + 1 - p];
        int prev = i - 1 >= sa + p && tok[i - 1] == tok[i - 1 - p];
        if (!next && !prev) continue;
      }
      uint32_t known = reg_get(&reg, p);
      if (known != RC_NONE && i < known) {
        cur_p[s] = p;
        cur_r[s] = known;
        continue;
      }
      uint32_t hi = i + 1;
      while (hi < sb && tok[hi] == tok[hi - p]) hi++;
      uint32_t lo = i;
      while (lo > sa + p && tok[lo - 1] == tok[lo - 1 - p]) lo--;
      if (reg_put(&reg, p, hi)) goto nomem;
      cur_p[s] = p;
      cur_r[s] = hi;
      if (hi - lo >= p && push_run(rs, lo - p, hi, p)) goto nomem;
    }
  }
  if (rs->n) qsort(rs->run, rs->n, sizeof *rs->run, cmp_run);
  goto done;
nomem:
  rc = tl_fail(e, "recover_out_of_memory: run detection over %zu tokens", m);
  free(rs->run);
  memset(rs, 0, sizeof *rs);
done:
  free(last1);
  free(ftab);
  free(tab);
  free(reg.key);
  free(reg.val);
  free(reg.direct);
  return rc;
}

/* Start (0 <= k < p) of the lexicographically least rotation of s[0..p), where s holds
** at least 2p tokens of the periodic run (so s[i + k] needs no modulo). */
static uint32_t min_rotation(const uint32_t *s, uint32_t p) {
  uint32_t i = 0, j = 1, k = 0;
  while (i < p && j < p && k < p) {
    uint32_t a = s[i + k], b = s[j + k];
    if (a == b) {
      k++;
      continue;
    }
    if (a > b)
      i += k + 1;
    else
      j += k + 1;
    if (i == j) j++;
    k = 0;
  }
  return i < j ? i : j;
}

int tl_rc_runs_index(rc_runs *rs, const uint32_t *tok, uint32_t nid, const uint32_t *amb_prefix,
                  const uint32_t *noenc_prefix, tl_err *e) {
  (void)nid;
  size_t n = rs->n;
  TL_VEC(uint32_t) cls_p = {0};
  TL_VEC(uint32_t) cls_rep = {0};
  TL_VEC(uint64_t) cls_hash = {0};
  uint32_t *ct = NULL;
  uint8_t *banned = NULL;
  size_t ctcap = 16;
  while (ctcap < 2 * n + 2) ctcap *= 2;
  rs->cls = malloc((n ? n : 1) * sizeof *rs->cls);
  rs->canon = malloc((n ? n : 1) * sizeof *rs->canon);
  ct = malloc(ctcap * sizeof *ct);
  if (!rs->cls || !rs->canon || !ct) goto nomem;
  memset(ct, 0xff, ctcap * sizeof *ct);

  for (size_t i = 0; i < n; i++) {
    uint32_t l = rs->run[i].l, p = rs->run[i].p;
    uint32_t c0 = l + min_rotation(tok + l, p);
    uint64_t hv = p;
    for (uint32_t k = 0; k < p; k++) hv = rc_mix(hv ^ tok[c0 + k]);
    size_t hslot = (size_t)(hv & (ctcap - 1));
    uint32_t id = RC_NONE;
    while (ct[hslot] != RC_NONE) {
      uint32_t c = ct[hslot];
      if (cls_hash.v[c] == hv && cls_p.v[c] == p &&
          !memcmp(tok + cls_rep.v[c], tok + c0, (size_t)p * sizeof *tok)) {
        id = c;
        break;
      }
      hslot = (hslot + 1) & (ctcap - 1);
    }
    if (id == RC_NONE) {
      id = (uint32_t)cls_p.n;
      if (TL_VEC_PUSH(&cls_p, p) || TL_VEC_PUSH(&cls_rep, c0) || TL_VEC_PUSH(&cls_hash, hv)) goto nomem;
      ct[hslot] = id;
    }
    rs->cls[i] = id;
    rs->canon[i] = c0;
  }
  rs->ncls = cls_p.n;

  /* Policies: ambiguous intervals ban the cyclic key everywhere; no-enclose units may
  ** only be repeated alone. */
  if (amb_prefix || noenc_prefix) {
    banned = calloc(rs->ncls ? rs->ncls : 1, 1);
    if (!banned) goto nomem;
    if (amb_prefix)
      for (size_t i = 0; i < n; i++)
        if (amb_prefix[rs->run[i].r] != amb_prefix[rs->run[i].l]) banned[rs->cls[i]] = 1;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
      const rc_run *u = &rs->run[i];
      if (banned[rs->cls[i]]) continue;
      if (noenc_prefix && u->p > 1 && noenc_prefix[u->r] != noenc_prefix[u->l]) continue;
      rs->run[k] = rs->run[i];
      rs->cls[k] = rs->cls[i];
      rs->canon[k] = rs->canon[i];
      k++;
    }
    rs->n = n = k;
  }

  /* Votes: a cyclic difference array per class, then prefix sums. */
  rs->vote_off = malloc((rs->ncls + 1) * sizeof *rs->vote_off);
  if (!rs->vote_off) goto nomem;
  uint64_t tot = 0;
  for (size_t c = 0; c < rs->ncls; c++) {
    rs->vote_off[c] = tot;
    tot += (uint64_t)cls_p.v[c] + 1;
  }
  rs->vote_off[rs->ncls] = tot;
  rs->votes = calloc(tot ? tot : 1, sizeof *rs->votes);
  if (!rs->votes) goto nomem;
  for (size_t i = 0; i < n; i++) {
    const rc_run *u = &rs->run[i];
    uint32_t len = u->r - u->l, c = len / u->p, sigma = len - c * u->p;
    uint64_t w = (uint64_t)c * u->p, *d = rs->votes + rs->vote_off[rs->cls[i]];
    uint32_t rho = rc_residue(rs, i, u->l);
    if (rho + sigma < u->p) {
      d[rho] += w;
      d[rho + sigma + 1] -= w;
    } else {
      d[rho] += w;
      d[u->p] -= w;
      d[0] += w;
      d[rho + sigma + 1 - u->p] -= w;
    }
  }
  for (size_t c = 0; c < rs->ncls; c++) {
    uint64_t *d = rs->votes + rs->vote_off[c], acc = 0;
    for (uint32_t k = 0; k < cls_p.v[c]; k++) d[k] = acc += d[k];
  }

  rs->leaves = 1;
  while (rs->leaves < n) rs->leaves *= 2;
  rs->tree = calloc(2 * rs->leaves, sizeof *rs->tree);
  if (!rs->tree) goto nomem;
  for (size_t i = 0; i < n; i++) rs->tree[rs->leaves + i] = rs->run[i].r;
  for (size_t k = rs->leaves - 1; k >= 1; k--)
    rs->tree[k] = rs->tree[2 * k] > rs->tree[2 * k + 1] ? rs->tree[2 * k] : rs->tree[2 * k + 1];

  TL_VEC_FREE(&cls_p);
  TL_VEC_FREE(&cls_rep);
  TL_VEC_FREE(&cls_hash);
  free(ct);
  free(banned);
  return TL_OK;
nomem:
  TL_VEC_FREE(&cls_p);
  TL_VEC_FREE(&cls_rep);
  TL_VEC_FREE(&cls_hash);
  free(ct);
  free(banned);
  return tl_fail(e, "recover_out_of_memory: indexing %zu runs", n);
}

uint64_t tl_rc_damage(const rc_runs *rs, uint32_t x, uint32_t pmax, uint32_t a, uint32_t b) {
  if (x <= a || x >= b || !rs->n) return 0;
  /* q = number of runs with l < x */
  size_t lo = 0, hi = rs->n;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (rs->run[mid].l < x)
      lo = mid + 1;
    else
      hi = mid;
  }
  size_t q = lo;
  uint64_t dmg = 0;
  struct {
    size_t node, lo, hi;
  } st[128];
  int sp = 0;
  st[sp++].node = 1;
  st[0].lo = 0;
  st[0].hi = rs->leaves;
  while (sp) {
    sp--;
    size_t node = st[sp].node, nlo = st[sp].lo, nhi = st[sp].hi;
    if (nlo >= q || rs->tree[node] <= x) continue;
    if (node >= rs->leaves) {
      const rc_run *z = &rs->run[node - rs->leaves];
      if (z->p >= pmax) continue;
      uint32_t zl = z->l > a ? z->l : a, zr = z->r < b ? z->r : b;
      if (zr <= zl || zr - zl < 2 * z->p || x <= zl || x >= zr) continue;
      uint32_t c = (zr - zl) / z->p, left = (x - zl) / z->p, right = (zr - x) / z->p;
      if (left < c && right < c && (uint64_t)(c - 1) * z->p > 1) dmg += (uint64_t)(c - 1) * z->p - 1;
      continue;
    }
    size_t mid = (nlo + nhi) / 2;
    st[sp].node = 2 * node + 1;
    st[sp].lo = mid;
    st[sp++].hi = nhi;
    st[sp].node = 2 * node;
    st[sp].lo = nlo;
    st[sp++].hi = mid;
  }
  return dmg;
}

void tl_rc_runs_free(rc_runs *rs) {
  free(rs->run);
  free(rs->cls);
  free(rs->canon);
  free(rs->vote_off);
  free(rs->votes);
  free(rs->tree);
  memset(rs, 0, sizeof *rs);
}
