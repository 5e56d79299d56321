/*
** align.c: lines up the loop trees of two runs, node by node.
**
** Trees pair up in (db_idx, device_id) order. From the two roots down, the children of each
** matched pair are aligned by edit distance (a node inserted or removed costs INDEL), so an
** extra kernel per decode step is one insertion and not a shifted tree. Two children match:
**
**   exact    same type and same structure signature: symbols for an atom, the children's
**            signatures in order for a Repeat or Seq. Repeat counts are left out, so Rep x6
**            and Rep x8 of the same body match and compare per iteration;
**   family   same signature once every atom symbol is replaced by its semantic family
**            (families.c), so MatMul on Ascend matches CudaMatMul on CUDA;
**   similar  two Repeats or Seqs whose leaf multisets (families, else symbols) overlap by a
**            weighted Jaccard index of at least 1/2, at a cost that falls with the overlap.
**
** Child lists are trimmed of equal heads and tails first; what is left is aligned exactly
** when it fits a DP_MAX_CELLS table, otherwise by a windowed diff (walk while nodes match;
** at a mismatch find the nearest resynchronisation within WINDOW nodes on either side and
** align the gap exactly). The merged tree is written in preorder as cmp_rows, with display
** labels (#k among equal siblings) and readable paths ("Rep x6 > Rep x4 > MatMul#2").
*/
#include "compare/compare_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define INDEL 10          /* inserting or removing one node */
#define COST_FAMILY 3
#define COST_INF 0x3fffffff
#define DP_MAX_CELLS (4u << 20)
#define WINDOW 64
#define RESYNC_RUN 3
#define HIST_BINS 128
#define HIST_FAMILY_BINS 48

typedef TL_VEC(int32_t) i32_vec;

typedef struct align_op {
  int32_t b, n;           /* tree nodes; -1 on the side an insertion / removal lacks */
  uint8_t match;
} align_op;

typedef struct aligner {
  cmp_result *r;
  i32_vec A, B;           /* the child lists of the pair being aligned (scratch) */
  TL_VEC(align_op) ops;   /* a stack: each level appends its ops and truncates after */
  int32_t *cost_row[2];
  uint8_t *trace;
  size_t scratch_cells;
  int windowed;
  int nomem;              /* a histogram could not be allocated */
  tl_err *e;
} aligner;

const char *tl_cmp_type_name(int t) {
  static const char *const N[] = {"Seq", "Repeat", "Atom", "Other"};
  return t >= 0 && t < 4 ? N[t] : "Other";
}

const char *tl_cmp_status_name(int s) {
  static const char *const N[] = {"matched", "added", "removed"};
  return s >= 0 && s < 3 ? N[s] : NULL;
}

const char *tl_cmp_match_name(int m) {
  static const char *const N[] = {NULL, "root", "exact", "family", "similar"};
  return m >= 0 && m < 5 ? N[m] : NULL;
}

/* ------------------------------------------------------------------ signatures */

static uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  h *= 0xff51afd7ed558ccdull;
  return h ^ (h >> 33);
}

static const cmp_position *pos_of(const cmp_side *s, int32_t node) {
  return &s->positions.v[s->nodes.v[node].position];
}

static int is_composite(const cmp_side *s, int32_t node) {
  return pos_of(s, node)->nslots > 0;
}

/* Children of a tree node in slot order (slots no occurrence reached are skipped). */
static int children(const cmp_side *s, int32_t node, i32_vec *out) {
  out->n = 0;
  const cmp_node *x = &s->nodes.v[node];
  int32_t nslots = pos_of(s, node)->nslots;
  for (int32_t k = 0; k < nslots; k++) {
    int32_t c = s->node_child.v[x->child0 + k];
    if (c >= 0 && TL_VEC_PUSH(out, c)) return -1;
  }
  return 0;
}

/* Children are created after their parents, so a reverse scan sees children first. */
static void signatures(cmp_side *s, int symbols_only) {
  for (size_t k = s->nodes.n; k-- > 0;) {
    cmp_node *x = &s->nodes.v[k];
    const cmp_position *p = &s->positions.v[x->position];
    if (p->nslots == 0) {
      x->sig = mix(mix(0, (uint64_t)p->type + 1), p->symbol);
      x->family_sig = p->family >= 0 && !symbols_only
                          ? mix(mix(0, (uint64_t)p->type + 1), 0x100000000ull + (uint64_t)p->family)
                          : x->sig;
      continue;
    }
    uint64_t h = mix(0, (uint64_t)p->type + 17), f = h;
    for (int32_t j = 0; j < p->nslots; j++) {
      int32_t c = s->node_child.v[x->child0 + j];
      if (c < 0) continue;
      h = mix(h, s->nodes.v[c].sig);
      f = mix(f, s->nodes.v[c].family_sig);
    }
    x->sig = h, x->family_sig = f;
  }
}

/* Leaf-key histogram of a composite: each atom below it counted once, by family when it has
** one, else by a hash of its symbol. */
static const uint32_t *histogram(cmp_side *s, int32_t node) {
  if (!s->hist && !(s->hist = calloc(s->nodes.n, sizeof *s->hist))) return NULL;
  if (s->hist[node]) return s->hist[node];
  uint32_t *h = calloc(HIST_BINS, sizeof *h);
  if (!h) return NULL;
  const cmp_node *x = &s->nodes.v[node];
  int32_t nslots = pos_of(s, node)->nslots;
  for (int32_t k = 0; k < nslots; k++) {
    int32_t c = s->node_child.v[x->child0 + k];
    if (c < 0) continue;
    if (is_composite(s, c)) {
      const uint32_t *ch = histogram(s, c);
      if (!ch) return free(h), NULL;
      for (int b = 0; b < HIST_BINS; b++) h[b] += ch[b];
    } else {
      const cmp_position *p = pos_of(s, c);
      uint32_t bin = p->family >= 0 ? (uint32_t)p->family % HIST_FAMILY_BINS
                                    : HIST_FAMILY_BINS + (uint32_t)(mix(0, p->symbol) %
                                                                    (HIST_BINS - HIST_FAMILY_BINS));
      h[bin]++;
    }
  }
  s->hist[node] = h;
  return h;
}

/* Cost of matching base child a with new child b, and how they match; COST_INF: never. */
static int32_t match_cost(aligner *al, int32_t a, int32_t b, uint8_t *how) {
  cmp_result *r = al->r;
  const cmp_position *pa = pos_of(&r->base, a), *pb = pos_of(&r->fresh, b);
  int ca = pa->nslots > 0, cb = pb->nslots > 0;
  if (pa->type != pb->type || ca != cb) return COST_INF;
  const cmp_node *x = &r->base.nodes.v[a], *y = &r->fresh.nodes.v[b];
  if (x->sig == y->sig) return *how = CMP_M_EXACT, 0;
  if (x->family_sig == y->family_sig && !r->opt->symbols_only) return *how = CMP_M_FAMILY, COST_FAMILY;
  if (!ca) return COST_INF;
  const uint32_t *ha = histogram(&r->base, a), *hb = histogram(&r->fresh, b);
  if (!ha || !hb) return al->nomem = 1, COST_INF; /* reported once the level is aligned */
  uint64_t lo = 0, hi = 0;
  for (int k = 0; k < HIST_BINS; k++) {
    lo += ha[k] < hb[k] ? ha[k] : hb[k];
    hi += ha[k] > hb[k] ? ha[k] : hb[k];
  }
  if (hi == 0 || 2 * lo < hi) return COST_INF;
  *how = CMP_M_SIMILAR;
  return 4 + (int32_t)llround(12.0 * (1.0 - (double)lo / (double)hi));
}

static int compatible(const cmp_result *r, int32_t a, int32_t b) {
  const cmp_node *x = &r->base.nodes.v[a], *y = &r->fresh.nodes.v[b];
  return x->sig == y->sig || (!r->opt->symbols_only && x->family_sig == y->family_sig &&
                              pos_of(&r->base, a)->type == pos_of(&r->fresh, b)->type);
}

static int push_op(aligner *al, int32_t b, int32_t n, uint8_t match) {
  align_op op = {b, n, match};
  return TL_VEC_PUSH(&al->ops, op) ? tl_nomem(al->e) : TL_OK;
}

/* Exact edit distance of A[0..n) and B[0..m) (n * m within DP_MAX_CELLS); appends the ops. */
static int dp_align(aligner *al, const int32_t *A, size_t n, const int32_t *B, size_t m) {
  size_t cells = (n + 1) * (m + 1);
  if (cells > al->scratch_cells) {
    size_t want = cells < 4096 ? 4096 : cells;
    uint8_t *t = realloc(al->trace, want);
    if (!t) return tl_nomem(al->e);
    al->trace = t;
    al->scratch_cells = want;
  }
  for (int k = 0; k < 2; k++) {
    int32_t *row = realloc(al->cost_row[k], (m + 1) * sizeof *row);
    if (!row) return tl_nomem(al->e);
    al->cost_row[k] = row;
  }
  /* trace: 0 diagonal (low bits: match kind), 1 << 4 delete (removed), 2 << 4 insert (added) */
  int32_t *prev = al->cost_row[0], *cur = al->cost_row[1];
  uint8_t *tr = al->trace;
  for (size_t j = 0; j <= m; j++) prev[j] = (int32_t)j * INDEL, tr[j] = 2 << 4;
  for (size_t i = 1; i <= n; i++) {
    cur[0] = (int32_t)i * INDEL;
    tr[i * (m + 1)] = 1 << 4;
    for (size_t j = 1; j <= m; j++) {
      uint8_t how = CMP_M_NONE;
      int32_t c = match_cost(al, A[i - 1], B[j - 1], &how);
      int32_t best = c < COST_INF ? prev[j - 1] + c : COST_INF;
      uint8_t t = how;
      if (prev[j] + INDEL < best) best = prev[j] + INDEL, t = 1 << 4;
      if (cur[j - 1] + INDEL < best) best = cur[j - 1] + INDEL, t = 2 << 4;
      cur[j] = best;
      tr[i * (m + 1) + j] = t;
    }
    int32_t *sw = prev;
    prev = cur, cur = sw;
  }
  /* Trace back, then append in forward order. */
  size_t at = al->ops.n, i = n, j = m;
  while (i > 0 || j > 0) {
    uint8_t t = tr[i * (m + 1) + j];
    int rc;
    if (i > 0 && j > 0 && (t >> 4) == 0)
      rc = push_op(al, A[--i], B[--j], t & 15);
    else if (i > 0 && (j == 0 || (t >> 4) == 1))
      rc = push_op(al, A[--i], -1, CMP_M_NONE);
    else
      rc = push_op(al, -1, B[--j], CMP_M_NONE);
    if (rc) return rc;
  }
  for (size_t lo = at, hi = al->ops.n; lo + 1 < hi; lo++, hi--) {
    align_op t = al->ops.v[lo];
    al->ops.v[lo] = al->ops.v[hi - 1], al->ops.v[hi - 1] = t;
  }
  return TL_OK;
}

/* Equal (exact) or, with family > 0, equal once symbols become families. */
static int same_node(const cmp_result *r, int32_t a, int32_t b, int family) {
  return family ? compatible(r, a, b) : r->base.nodes.v[a].sig == r->fresh.nodes.v[b].sig;
}

static int run_matches(const cmp_result *r, const int32_t *A, size_t n, const int32_t *B, size_t m,
                       size_t i, size_t j, int family) {
  for (size_t k = 0; k < RESYNC_RUN; k++) {
    if (i + k >= n || j + k >= m) return i + k >= n && j + k >= m ? 1 : k > 0;
    if (!same_node(r, A[i + k], B[j + k], family)) return 0;
  }
  return 1;
}

/* Long lists: walk while nodes are equal; at a difference, align the gap exactly up to the
** nearest run of RESYNC_RUN equal nodes within WINDOW on either side (exact equality first,
** then by family, as for runs of different hardware), else one WINDOW block. */
static int windowed_align(aligner *al, const int32_t *A, size_t n, const int32_t *B, size_t m) {
  al->windowed = 1;
  size_t i = 0, j = 0;
  int rc = TL_OK;
  while (rc == TL_OK && i < n && j < m) {
    if (same_node(al->r, A[i], B[j], 0)) {
      rc = push_op(al, A[i++], B[j++], CMP_M_EXACT);
      continue;
    }
    size_t da = 0, db = 0;
    int found = 0;
    for (int family = 0; family <= !al->r->opt->symbols_only && !found; family++)
      for (size_t d = 1; !found && d <= 2 * WINDOW; d++)
        for (size_t a = 0; a <= d && !found; a++) {
          size_t b = d - a;
          if (a > WINDOW || b > WINDOW || i + a >= n || j + b >= m) continue;
          if (run_matches(al->r, A, n, B, m, i + a, j + b, family)) found = 1, da = a, db = b;
        }
    if (found && da == 0 && db == 0) { /* equal by family here: match, walk on */
      uint8_t how = CMP_M_NONE;
      match_cost(al, A[i], B[j], &how);
      rc = push_op(al, A[i++], B[j++], how);
      continue;
    }
    if (!found) {
      da = n - i < WINDOW ? n - i : WINDOW;
      db = m - j < WINDOW ? m - j : WINDOW;
    }
    rc = dp_align(al, A + i, da, B + j, db);
    i += da, j += db;
  }
  while (rc == TL_OK && i < n) rc = push_op(al, A[i++], -1, CMP_M_NONE);
  while (rc == TL_OK && j < m) rc = push_op(al, -1, B[j++], CMP_M_NONE);
  return rc;
}

/* Aligns two child lists and appends the ops. */
static int align_lists(aligner *al, const int32_t *A, size_t n, const int32_t *B, size_t m) {
  const cmp_result *r = al->r;
  size_t head = 0, tail = 0;
  while (head < n && head < m && r->base.nodes.v[A[head]].sig == r->fresh.nodes.v[B[head]].sig)
    head++;
  while (tail < n - head && tail < m - head &&
         r->base.nodes.v[A[n - 1 - tail]].sig == r->fresh.nodes.v[B[m - 1 - tail]].sig)
    tail++;
  int rc = TL_OK;
  for (size_t k = 0; rc == TL_OK && k < head; k++) rc = push_op(al, A[k], B[k], CMP_M_EXACT);
  size_t rn = n - head - tail, rm = m - head - tail;
  if (rc == TL_OK && (rn || rm)) {
    if (rn == 0 || rm == 0 || (rn + 1) * (rm + 1) <= DP_MAX_CELLS)
      rc = dp_align(al, A + head, rn, B + head, rm);
    else
      rc = windowed_align(al, A + head, rn, B + head, rm);
  }
  for (size_t k = 0; rc == TL_OK && k < tail; k++)
    rc = push_op(al, A[n - tail + k], B[m - tail + k], CMP_M_EXACT);
  return rc;
}

/* ------------------------------------------------------------------ merged rows */

static int push_row(aligner *al, int32_t pair, int32_t parent, int32_t depth, int32_t b,
                    int32_t n, uint8_t status, uint8_t match, uint8_t top, int32_t *out) {
  cmp_row row = {0};
  row.pair = pair, row.parent = parent, row.depth = depth, row.b = b, row.n = n;
  row.status = status, row.match = match, row.top = top;
  if (al->r->rows.n >= INT32_MAX || TL_VEC_PUSH(&al->r->rows, row)) return tl_nomem(al->e);
  *out = (int32_t)al->r->rows.n - 1;
  return TL_OK;
}

/* A subtree of one side only: added (new) or removed (base). */
static int emit_one_side(aligner *al, int32_t pair, int32_t parent, int32_t depth, int32_t node,
                         uint8_t status, uint8_t top) {
  const cmp_side *s = status == CMP_ADDED ? &al->r->fresh : &al->r->base;
  int32_t row;
  if (push_row(al, pair, parent, depth, status == CMP_REMOVED ? node : -1,
               status == CMP_ADDED ? node : -1, status, CMP_M_NONE, top, &row))
    return TL_ERROR;
  const cmp_node *x = &s->nodes.v[node];
  int32_t nslots = pos_of(s, node)->nslots;
  for (int32_t k = 0; k < nslots; k++) {
    int32_t c = s->node_child.v[x->child0 + k];
    if (c >= 0 && emit_one_side(al, pair, row, depth + 1, c, status, 0)) return TL_ERROR;
  }
  al->r->rows.v[row].end = (int32_t)al->r->rows.n;
  return TL_OK;
}

static int emit_matched(aligner *al, int32_t pair, int32_t parent, int32_t depth, int32_t b,
                        int32_t n, uint8_t match) {
  int32_t row;
  if (depth > 10000) return tl_fail(al->e, "traceloom_compare: the trees are deeper than 10000");
  if (push_row(al, pair, parent, depth, b, n, CMP_MATCHED, match, 0, &row)) return TL_ERROR;
  /* The child lists are scratch: the ops name the nodes, and are read after the lists are
  ** reused by the levels below. */
  int rc = children(&al->r->base, b, &al->A) || children(&al->r->fresh, n, &al->B)
               ? tl_nomem(al->e)
               : TL_OK;
  size_t start = al->ops.n;
  if (rc == TL_OK) rc = align_lists(al, al->A.v, al->A.n, al->B.v, al->B.n);
  if (rc == TL_OK && al->nomem) rc = tl_nomem(al->e);
  size_t end = al->ops.n;
  for (size_t k = start; rc == TL_OK && k < end; k++) {
    align_op op = al->ops.v[k];
    if (op.b >= 0 && op.n >= 0)
      rc = emit_matched(al, pair, row, depth + 1, op.b, op.n, op.match);
    else if (op.b >= 0)
      rc = emit_one_side(al, pair, row, depth + 1, op.b, CMP_REMOVED, 1);
    else
      rc = emit_one_side(al, pair, row, depth + 1, op.n, CMP_ADDED, 1);
  }
  al->ops.n = start;
  al->r->rows.v[row].end = (int32_t)al->r->rows.n;
  return rc;
}

/* ------------------------------------------------------------------ labels and paths */

/* The label of a row before sibling numbering; interned, but an exactly matched atom's is
** its symbol (no formatting for the bulk of the rows). */
static uint32_t base_label(cmp_result *r, const cmp_row *row) {
  const cmp_position *pb = row->b >= 0 ? pos_of(&r->base, row->b) : NULL;
  const cmp_position *pn = row->n >= 0 ? pos_of(&r->fresh, row->n) : NULL;
  const cmp_position *p = pn ? pn : pb;
  char buf[600];
  if (row->parent < 0) {
    snprintf(buf, sizeof buf, "root");
  } else if (p->type == CMP_REPEAT) {
    if (pb && pn && pb->repeat_count != pn->repeat_count)
      snprintf(buf, sizeof buf, "Rep x%lld->x%lld", (long long)pb->repeat_count,
               (long long)pn->repeat_count);
    else
      snprintf(buf, sizeof buf, "Rep x%lld", (long long)p->repeat_count);
  } else if (p->type == CMP_SEQ) {
    return tl_strpool_intern_cstr(r->pool, "Seq");
  } else if (pb && pn && pb->symbol != pn->symbol) {
    snprintf(buf, sizeof buf, "%.280s ~ %.280s", tl_strpool_str(r->pool, pb->symbol),
             tl_strpool_str(r->pool, pn->symbol));
  } else {
    return p->symbol ? p->symbol : p->label;
  }
  return tl_strpool_intern_cstr(r->pool, buf);
}

/* Sibling numbering: #k (1-based, in order) for labels that several siblings share. */
static int label_rows(cmp_result *r, tl_err *e) {
  for (size_t i = 0; i < r->rows.n; i++) {
    r->rows.v[i].label_base = base_label(r, &r->rows.v[i]);
    if (r->rows.v[i].label_base == TL_STR_NOMEM) return tl_nomem(e);
  }
  tl_i64map count = {0}, seen = {0};
  int rc = TL_OK;
  for (size_t p = 0; rc == TL_OK && p < r->rows.n; p++) {
    const cmp_row *parent = &r->rows.v[p];
    if ((size_t)parent->end == p + 1) continue;
    tl_i64map_free(&count), tl_i64map_free(&seen);
    for (int32_t c = (int32_t)p + 1; rc == TL_OK && c < parent->end; c = r->rows.v[c].end) {
      int64_t *k = tl_i64map_get(&count, r->rows.v[c].label_base);
      if (tl_i64map_put(&count, r->rows.v[c].label_base, k ? *k + 1 : 1)) rc = tl_nomem(e);
    }
    for (int32_t c = (int32_t)p + 1; rc == TL_OK && c < parent->end; c = r->rows.v[c].end) {
      cmp_row *row = &r->rows.v[c];
      if (*tl_i64map_get(&count, row->label_base) < 2) continue;
      int64_t *k = tl_i64map_get(&seen, row->label_base);
      int64_t nth = k ? *k + 1 : 1;
      if (nth > UINT32_MAX || tl_i64map_put(&seen, row->label_base, nth)) rc = tl_nomem(e);
      row->dup = (uint32_t)nth;
    }
  }
  tl_i64map_free(&count), tl_i64map_free(&seen);
  return rc;
}

/* Paths: the parent's path, " > ", the label; a row's label is the tail of its path (the
** root's path is empty and its label "root" stands alone). */
static int path_rows(cmp_result *r, tl_err *e) {
  TL_VEC(char) buf = {0};
  for (size_t i = 0; i < r->rows.n; i++) {
    cmp_row *row = &r->rows.v[i];
    const char *base = tl_strpool_str(r->pool, row->label_base);
    char num[16] = "";
    if (row->dup) snprintf(num, sizeof num, "#%u", row->dup);
    size_t bl = strlen(base), nl = strlen(num);
    const cmp_row *up = row->parent >= 0 ? &r->rows.v[row->parent] : NULL;
    size_t head = up ? up->path_len + (up->path_len ? 3 : 0) : 0;
    if (head + bl + nl > UINT32_MAX || TL_VEC_RESERVE(&buf, buf.n + head + bl + nl)) {
      TL_VEC_FREE(&buf);
      return tl_nomem(e);
    }
    row->path_off = buf.n;
    if (up && up->path_len) {
      memcpy(buf.v + buf.n, buf.v + up->path_off, up->path_len);
      memcpy(buf.v + buf.n + up->path_len, " > ", 3);
      buf.n += head;
    }
    row->label_off = buf.n;
    memcpy(buf.v + buf.n, base, bl);
    memcpy(buf.v + buf.n + bl, num, nl);
    buf.n += bl + nl;
    row->label_len = (uint32_t)(bl + nl);
    row->path_len = up ? (uint32_t)(head + bl + nl) : 0;
  }
  r->paths = buf.v;
  r->paths_len = buf.n;
  return TL_OK;
}

/* ------------------------------------------------------------------ pairs */

static int count_rows(cmp_result *r, cmp_pair *p) {
  for (int32_t i = p->row0; i < p->row_end; i++) {
    const cmp_row *row = &r->rows.v[i];
    if (row->status == CMP_ADDED) p->added++;
    else if (row->status == CMP_REMOVED) p->removed++;
    else if (row->match == CMP_M_FAMILY) p->matched_family++, p->matched++;
    else p->matched++;
  }
  return TL_OK;
}

int tl_cmp_align(cmp_result *r, tl_err *e) {
  signatures(&r->base, r->opt->symbols_only);
  signatures(&r->fresh, r->opt->symbols_only);
  aligner al = {0};
  al.r = r, al.e = e;
  /* Trees with a root occurrence, in (db_idx, device_id) order, paired by rank. */
  i32_vec bt = {0}, nt = {0};
  int rc = TL_OK;
  for (size_t t = 0; rc == TL_OK && t < r->base.trees.n; t++)
    if (r->base.trees.v[t].root_node >= 0 && TL_VEC_PUSH(&bt, (int32_t)t)) rc = tl_nomem(e);
  for (size_t t = 0; rc == TL_OK && t < r->fresh.trees.n; t++)
    if (r->fresh.trees.v[t].root_node >= 0 && TL_VEC_PUSH(&nt, (int32_t)t)) rc = tl_nomem(e);
  if (rc == TL_OK && (bt.n == 0 || nt.n == 0))
    rc = tl_fail(e, "traceloom_compare: the %s analysis %s has no occurrence of any tree root",
                 bt.n == 0 ? "base" : "new", bt.n == 0 ? r->base.path : r->fresh.path);
  size_t npairs = bt.n > nt.n ? bt.n : nt.n;
  for (size_t k = 0; rc == TL_OK && k < npairs; k++) {
    cmp_pair pair = {0};
    pair.base_tree = k < bt.n ? bt.v[k] : -1;
    pair.new_tree = k < nt.n ? nt.v[k] : -1;
    pair.row0 = (int32_t)r->rows.n;
    al.windowed = 0;
    int32_t id = (int32_t)r->pairs.n;
    if (pair.base_tree >= 0 && pair.new_tree >= 0)
      rc = emit_matched(&al, id, -1, 0, r->base.trees.v[pair.base_tree].root_node,
                        r->fresh.trees.v[pair.new_tree].root_node, CMP_M_ROOT);
    else if (pair.base_tree >= 0)
      rc = emit_one_side(&al, id, -1, 0, r->base.trees.v[pair.base_tree].root_node, CMP_REMOVED, 1);
    else
      rc = emit_one_side(&al, id, -1, 0, r->fresh.trees.v[pair.new_tree].root_node, CMP_ADDED, 1);
    pair.row_end = (int32_t)r->rows.n;
    pair.windowed = al.windowed;
    if (rc == TL_OK) rc = count_rows(r, &pair);
    if (rc == TL_OK && TL_VEC_PUSH(&r->pairs, pair)) rc = tl_nomem(e);
  }
  TL_VEC_FREE(&bt);
  TL_VEC_FREE(&nt);
  TL_VEC_FREE(&al.ops);
  TL_VEC_FREE(&al.A);
  TL_VEC_FREE(&al.B);
  free(al.cost_row[0]), free(al.cost_row[1]), free(al.trace);
  if (rc == TL_OK) rc = label_rows(r, e);
  if (rc == TL_OK) rc = path_rows(r, e);
  return rc;
}
