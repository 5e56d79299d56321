/*
** effects.c: what each aligned node contributes to the end-to-end delta, and the ranking.
**
** A node's unit is an iteration for a Repeat and an occurrence otherwise; its per-unit cost is
** its total over its units. Every matched node u has an own cost (its total minus its
** children's totals: the whole cost of an atom, ~0 for a Repeat or Seq whose children tile
** it) and a multiplicity (its units per unit of its parent: the iteration count of a Repeat,
** 1 for a slot). The end-to-end delta of a tree pair splits exactly into
**
**   rate   (own_new / U_new - own_base / U_base) x U_new      per matched node
**   count  (M_base(u) / U_base) x (U_new - U_base x P_new / P_base)   per matched node
**   added  + the new total of each added subtree
**   removed  - the base total of each removed subtree
**
** where P are the parent's units and M_base(u) the base cost of u's matched part (its own
** cost and its matched descendants'). Summed over the tree these telescope to
** new_total - base_total (docs/COMPARE.md works it through), so 6 vs 8 decode steps of the
** same cost give count effects on the decode Repeat and no rate effect anywhere.
**
** Noise: a per-unit change within noise_z standard errors of the difference of the two
** per-unit means (Welch, from the node's own units: iterations or occurrences) is
** within_noise; with fewer than two units on both sides there is no spread to judge by.
** Ranking is noise-aware: rate changes within noise rank after every other change.
*/
#include "compare/compare_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *tl_cmp_effect_name(int effect) {
  static const char *const N[] = {"slower", "faster", "more_iterations", "fewer_iterations",
                                  "added", "removed"};
  return effect >= 0 && effect < 6 ? N[effect] : NULL;
}

const char *tl_cmp_noise_name(int noise) {
  static const char *const N[] = {NULL, "significant", "within_noise", "no_spread"};
  return noise >= 0 && noise < 4 ? N[noise] : NULL;
}

static double variance(const cmp_node *x) {
  return x->samples >= 2 ? x->m2 / (double)(x->samples - 1) : -1.0;
}

/* Noise status of a matched row's per-unit change. */
static void judge_noise(cmp_row *row, const cmp_node *b, const cmp_node *n, double z) {
  double vb = variance(b), vn = variance(n);
  if (vb < 0 && vn < 0) {
    row->noise = CMP_N_NO_SPREAD;
    row->noise_threshold_ns = 0;
    return;
  }
  if (vb < 0) vb = vn;
  if (vn < 0) vn = vb;
  double ub = b->units > 0 ? (double)b->units : 1.0, un = n->units > 0 ? (double)n->units : 1.0;
  double se = sqrt(vb / ub + vn / un);
  double delta = (double)cmp_node_total(n) / un - (double)cmp_node_total(b) / ub;
  row->noise_threshold_ns = z * se;
  row->noise = fabs(delta) <= row->noise_threshold_ns ? CMP_N_WITHIN : CMP_N_SIGNIFICANT;
}

typedef struct item {
  int within_noise; /* ranks after every change that is not */
  double key;       /* -|contribution|: ascending sort puts the largest first */
  int32_t row;
  uint8_t effect;
  double contribution;
} item;

/* Noise-aware order: changes within the noise of their node's own units come after the
** others (significant, structural, or with no spread to judge by), each group by size. */
static int item_cmp(const void *pa, const void *pb) {
  const item *a = pa, *b = pb;
  if (a->within_noise != b->within_noise) return a->within_noise - b->within_noise;
  if (a->key != b->key) return a->key < b->key ? -1 : 1;
  if (a->row != b->row) return a->row < b->row ? -1 : 1;
  return (int)a->effect - (int)b->effect;
}

static int rank_pair(cmp_result *r, int32_t pair, tl_err *e) {
  const cmp_pair *p = &r->pairs.v[pair];
  TL_VEC(item) items = {0};
  int rc = TL_OK;
  for (int32_t i = p->row0; rc == TL_OK && i < p->row_end; i++) {
    const cmp_row *row = &r->rows.v[i];
    item it[2];
    int k = 0;
    if (row->status == CMP_MATCHED) {
      if (fabs(row->rate_ns) >= 0.5)
        it[k++] = (item){row->noise == CMP_N_WITHIN, 0, i,
                         row->rate_ns > 0 ? CMP_E_SLOWER : CMP_E_FASTER, row->rate_ns};
      if (fabs(row->count_ns) >= 0.5)
        it[k++] = (item){0, 0, i, row->count_ns > 0 ? CMP_E_MORE : CMP_E_FEWER, row->count_ns};
    } else if (row->top) {
      it[k++] = (item){0, 0, i, row->status == CMP_ADDED ? CMP_E_ADDED : CMP_E_REMOVED,
                       row->structure_ns};
    }
    for (int j = 0; j < k && rc == TL_OK; j++) {
      it[j].key = -fabs(it[j].contribution);
      if (TL_VEC_PUSH(&items, it[j])) rc = tl_nomem(e);
    }
  }
  if (rc == TL_OK && items.n) qsort(items.v, items.n, sizeof *items.v, item_cmp);
  for (size_t k = 0; rc == TL_OK && k < items.n && (int64_t)k < r->opt->top; k++) {
    cmp_rank rk = {pair, (int32_t)k + 1, items.v[k].row, items.v[k].effect,
                   items.v[k].contribution};
    if (TL_VEC_PUSH(&r->ranks, rk)) rc = tl_nomem(e);
  }
  TL_VEC_FREE(&items);
  return rc;
}

static const cmp_node *node_at(const cmp_side *s, int32_t node) {
  return node >= 0 ? &s->nodes.v[node] : NULL;
}

int tl_cmp_effects(cmp_result *r, tl_err *e) {
  size_t nrows = r->rows.n;
  int64_t *child_b = calloc(nrows ? nrows : 1, sizeof *child_b);
  int64_t *child_n = calloc(nrows ? nrows : 1, sizeof *child_n);
  double *matched_b = calloc(nrows ? nrows : 1, sizeof *matched_b);
  int rc = child_b && child_n && matched_b ? TL_OK : tl_nomem(e);
  /* Children first (reverse preorder): own costs, rate effects, matched base costs. */
  for (size_t k = nrows; rc == TL_OK && k-- > 0;) {
    cmp_row *row = &r->rows.v[k];
    const cmp_node *b = node_at(&r->base, row->b), *n = node_at(&r->fresh, row->n);
    int64_t bt = b ? cmp_node_total(b) : 0, nt = n ? cmp_node_total(n) : 0;
    if (row->status == CMP_MATCHED) {
      double own_b = (double)(bt - child_b[k]), own_n = (double)(nt - child_n[k]);
      double ub = (double)b->units, un = (double)n->units;
      row->rate_ns = ub > 0 && un > 0 ? (own_n / un - own_b / ub) * un : own_n - own_b;
      matched_b[k] += own_b;
      judge_noise(row, b, n, r->opt->noise_z);
    } else if (row->top) {
      row->structure_ns = row->status == CMP_ADDED ? (double)nt : -(double)bt;
    }
    if (row->parent >= 0) {
      child_b[row->parent] += bt;
      child_n[row->parent] += nt;
      if (row->status == CMP_MATCHED) matched_b[row->parent] += matched_b[k];
    }
  }
  /* Parents first: count effects need the parent's units. */
  for (size_t k = 0; rc == TL_OK && k < nrows; k++) {
    cmp_row *row = &r->rows.v[k];
    if (row->status != CMP_MATCHED) continue;
    const cmp_node *b = node_at(&r->base, row->b), *n = node_at(&r->fresh, row->n);
    double pb = 1, pn = 1;
    if (row->parent >= 0) {
      const cmp_row *up = &r->rows.v[row->parent];
      pb = (double)r->base.nodes.v[up->b].units, pn = (double)r->fresh.nodes.v[up->n].units;
    }
    double ub = (double)b->units, un = (double)n->units;
    row->count_ns = ub > 0 && pb > 0 ? matched_b[k] / ub * (un - ub * pn / pb) : 0;
  }
  for (size_t p = 0; rc == TL_OK && p < r->pairs.n; p++) {
    cmp_pair *pair = &r->pairs.v[p];
    for (int32_t i = pair->row0; i < pair->row_end; i++) {
      const cmp_row *row = &r->rows.v[i];
      if (row->status == CMP_MATCHED) {
        pair->rate_ns += row->rate_ns, pair->count_ns += row->count_ns;
      } else if (row->top) {
        if (row->status == CMP_ADDED) pair->added_ns += row->structure_ns;
        else pair->removed_ns -= row->structure_ns;
      }
    }
    rc = rank_pair(r, (int32_t)p, e);
  }
  free(child_b), free(child_n), free(matched_b);
  return rc;
}
