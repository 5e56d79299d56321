/*
** structure.c: building the forest of recovered trees (see structure.h).
*/
#include "structure/structure.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __linux__
#include <sys/mman.h>
#include <unistd.h>
#endif

static void tree_free(tl_tree *tr) {
  tl_structure_free(&tr->st);
  free(tr->checkpoint);
  free(tr->nodes);
  free(tr->child);
  free(tr->occ_node);
  free(tr->occ);
  tr->checkpoint = NULL, tr->nodes = NULL, tr->child = NULL, tr->occ_node = NULL;
  tr->occ = NULL;
  tr->nnodes = 0;
}

void tl_forest_free(tl_forest *f) {
  for (size_t i = 0; i < f->trees.n; i++) tree_free(&f->trees.v[i]);
  TL_VEC_FREE(&f->trees);
  tl_i64col_free(&f->linked_ns);
}

void tl_tree_token_sums(const tl_tree *tr, uint32_t k, tl_sums *out) {
  size_t n = tr->first_anchor + k;
  tl_packet pk = tl_packet_at(tr->packets, n);
  out->v[TL_SUM_COMPUTE] = pk.compute_ns;
  out->v[TL_SUM_COMM] = pk.comm_ns;
  out->v[TL_SUM_IDLE] = pk.idle_ns;
  out->v[TL_SUM_SELF] = pk.self_ns;
  out->v[TL_SUM_AUX] = pk.aux_ns;
  out->v[TL_SUM_AUX_EVENTS] = pk.aux_events;
  out->v[TL_SUM_LINKED_AUX] = tl_i64col_get(tr->linked_ns, n);
}

/* Adds (sign +1) or subtracts (-1) the tokens [from, to) to acc. */
static void add_tokens(const tl_tree *tr, uint32_t from, uint32_t to, int sign, tl_sums *acc) {
  for (uint32_t k = from; k < to; k++) {
    tl_sums one;
    tl_tree_token_sums(tr, k, &one);
    for (int f = 0; f < TL_SUM_COUNT; f++) acc->v[f] += sign * one.v[f];
  }
}

/* Sums over [0, k): the checkpoint nearest k, then the packets between them, from
** whichever side of k is nearer (the checkpoint after k exists when k is not in the
** trailing partial block). */
static void prefix(const tl_tree *tr, uint32_t k, tl_sums *out) {
  size_t b = k / TL_SUM_BLOCK, off = k % TL_SUM_BLOCK;
  size_t nblocks = tr->ntokens / TL_SUM_BLOCK;
  if (off > TL_SUM_BLOCK / 2 && b < nblocks) {
    *out = tr->checkpoint[b + 1];
    add_tokens(tr, k, (uint32_t)((b + 1) * TL_SUM_BLOCK), -1, out);
  } else {
    *out = tr->checkpoint[b];
    add_tokens(tr, (uint32_t)(b * TL_SUM_BLOCK), k, 1, out);
  }
}

void tl_tree_sums(const tl_tree *tr, uint32_t start, uint32_t end, tl_sums *out) {
  if (end - start <= TL_SUM_BLOCK) {
    memset(out, 0, sizeof *out);
    add_tokens(tr, start, end, 1, out);
    return;
  }
  tl_sums lo;
  prefix(tr, end, out);
  prefix(tr, start, &lo);
  for (int f = 0; f < TL_SUM_COUNT; f++) out->v[f] -= lo.v[f];
}

/* Recovery's occurrences (28 bytes each) are rewritten as tl_tree_occ (8) in place as the
** nodes are built: entry o's 8 bytes never reach an entry after o, read later. The bytes
** between the rewritten entries and the next unread one are dead, so their whole pages are
** handed back as the walk goes (Linux: MADV_DONTNEED; a page the rewrite reaches later is
** mapped again, zero-filled, and written before it is read): the occurrences' 28 bytes and
** the nodes (24 bytes a node, 4 an occurrence) are not resident at once, the 10M bench's
** peak (210 MB of occurrences beside 160 MB of nodes; ARCHITECTURE.md Memory). */
typedef struct occ_rewrite {
  char *block;     /* recovery's occurrences, then the tl_tree_occ */
  size_t page;     /* the page size; 0: nothing is handed back */
  size_t released; /* bytes of the block below this offset were handed back or are live */
} occ_rewrite;

static void occ_rewrite_init(occ_rewrite *w, void *block) {
  w->block = block, w->page = 0, w->released = 0;
#ifdef __linux__
  long page = sysconf(_SC_PAGESIZE);
  if (page > 0) w->page = (size_t)page;
#endif
}

/* Entry o is read and rewritten: the pages wholly inside [8 (o + 1), 28 (o + 1)) are dead.
** Handed back a few MiB at a time, not a call a page. */
static void occ_rewrite_done(occ_rewrite *w, size_t o) {
#ifdef __linux__
  if (!w->page) return;
  uintptr_t base = (uintptr_t)w->block, p = w->page;
  uintptr_t lo = base + (o + 1) * sizeof(tl_tree_occ), hi = base + (o + 1) * sizeof(tl_occurrence);
  if (lo < base + w->released) lo = base + w->released;
  lo = (lo + p - 1) / p * p, hi = hi / p * p;
  if (hi <= lo || hi - lo < ((size_t)4 << 20)) return;
  if (madvise((void *)lo, hi - lo, MADV_DONTNEED) == 0) w->released = hi - base;
  else w->page = 0;
#else
  (void)w, (void)o;
#endif
}

typedef struct walk_frame {
  uint32_t occ, idx; /* an occurrence on the path from the root, its index in its node */
} walk_frame;

/* The nodes of a tree (structure.h): one per (parent node, slot), created in walk order,
** which is preorder, since a node's first occurrence realizes all its slots, left to right,
** before anything after it. Returns TL_OK, -1 when out of memory, or TL_RECOVER_EINVARIANT
** when a child's occurrences do not follow its parent's (the views' arithmetic needs it:
** structure.h tl_tree_child_idx, checked per occurrence against its walk-order index). The
** occurrences are tl_tree_occ once it returns TL_OK (tr->occ), and garbage otherwise. */
static int build_nodes(tl_tree *tr) {
  tl_structure *st = &tr->st;
  size_t nocc = st->noccurrences;
  tr->occ_node = malloc((nocc ? nocc : 1) * sizeof *tr->occ_node);
  /* At most one node per occurrence, and at most one child entry per slot of each node. */
  TL_VEC(tl_tree_node) nodes = {0};
  TL_VEC(uint32_t) child = {0};
  TL_VEC(walk_frame) path = {0}; /* the ancestors of the occurrence visited (preorder) */
  if (!tr->occ_node) return -1;
  occ_rewrite w;
  occ_rewrite_init(&w, st->occurrences);
  tl_tree_occ *slim = (tl_tree_occ *)(void *)w.block;
  for (size_t o = 0; o < nocc; o++) {
    tl_occurrence ocv;
    memcpy(&ocv, w.block + o * sizeof ocv, sizeof ocv);
    const tl_occurrence *oc = &ocv;
    uint32_t node;
    uint32_t *entry = NULL;
    if (oc->parent == TL_RECOVER_NONE) {
      if (o != 0) goto invariant; /* one root, the first occurrence */
    } else {
      if (oc->parent >= o) goto invariant; /* preorder: a parent comes first */
      const tl_tree_node *pn = &nodes.v[tr->occ_node[oc->parent]];
      if (oc->slot < 1 || oc->slot > st->positions[pn->position].nslots) goto invariant;
      entry = &child.v[pn->first_child + oc->slot - 1];
    }
    if (entry && *entry != TL_RECOVER_NONE) {
      node = *entry;
      if (nodes.v[node].position != oc->position) goto invariant;
    } else {
      const tl_position *pos = &st->positions[oc->position];
      tl_tree_node nd = {oc->position, TL_RECOVER_NONE, 0, (uint32_t)child.n, 0, 0};
      if (entry) {
        nd.parent = tr->occ_node[oc->parent];
        nd.slot = oc->slot;
      }
      node = (uint32_t)nodes.n;
      if (TL_VEC_PUSH(&nodes, nd)) goto nomem;
      for (uint32_t s = 0; s < pos->nslots; s++)
        if (TL_VEC_PUSH(&child, TL_RECOVER_NONE)) goto nomem;
      if (oc->parent != TL_RECOVER_NONE)
        child.v[nodes.v[tr->occ_node[oc->parent]].first_child + oc->slot - 1] = node;
    }
    tr->occ_node[o] = node;
    uint32_t idx = ++nodes.v[node].occurrence_count; /* walk order, 1-based */
    if (oc->parent != TL_RECOVER_NONE) {
      while (path.n && path.v[path.n - 1].occ != oc->parent) path.n--;
      if (!path.n) goto invariant; /* the parent is not an ancestor: not preorder */
      const tl_position *pp = &st->positions[nodes.v[nodes.v[node].parent].position];
      if (oc->member_order < 1 || oc->member_order > tl_tree_fanout(pp) ||
          tl_tree_child_idx(pp, path.v[path.n - 1].idx, oc->member_order) != idx)
        goto invariant;
    }
    /* What tl_tree_occ no longer holds must follow from what it does (structure.h). The
    ** parent's position is its node's (checked when it was visited), its start the rewritten
    ** entry's. */
    const tl_position *pos = &st->positions[oc->position];
    if (pos->token_len == 0 || oc->end - oc->start != pos->token_len) goto invariant;
    if (oc->parent != TL_RECOVER_NONE) {
      const tl_position *pp = &st->positions[nodes.v[tr->occ_node[oc->parent]].position];
      uint32_t pstart = slim[oc->parent].start;
      if (pp->kind == TL_POS_REPEAT && (!pp->repeat_count || pp->token_len % pp->repeat_count))
        goto invariant;
      uint32_t member = pp->kind != TL_POS_REPEAT ? 1 : tl_tree_iteration(pp, oc->start - pstart);
      if (oc->start < pstart || member != oc->member_order) goto invariant;
    }
    walk_frame fr = {(uint32_t)o, idx};
    if (TL_VEC_PUSH(&path, fr)) goto nomem;
    tl_tree_occ one = {oc->parent, oc->start};
    memcpy(&slim[o], &one, sizeof one);
    occ_rewrite_done(&w, o);
  }
  free(path.v);
  path.v = NULL;
  /* Ranks, and the counts the views' arithmetic relies on. */
  uint32_t rank = 0;
  for (size_t k = 0; k < nodes.n; k++) {
    tl_tree_node *nd = &nodes.v[k];
    nd->first_rank = rank;
    rank += nd->occurrence_count;
    if (nd->parent != TL_RECOVER_NONE) {
      const tl_tree_node *pn = &nodes.v[nd->parent];
      const tl_position *pp = &st->positions[pn->position];
      uint64_t m = pp->kind == TL_POS_REPEAT ? pp->repeat_count : 1;
      if ((uint64_t)nd->occurrence_count != (uint64_t)pn->occurrence_count * m) goto invariant;
    }
  }
  for (size_t k = 0; k < child.n; k++)
    if (child.v[k] == TL_RECOVER_NONE) goto invariant; /* a slot no occurrence realized */
  tr->nodes = nodes.v, tr->nnodes = nodes.n;
  tr->child = child.v;
  /* the rest of the block goes back */
  tl_tree_occ *shrunk = realloc(w.block, (nocc ? nocc : 1) * sizeof *slim);
  tr->occ = shrunk ? shrunk : slim;
  st->occurrences = NULL;
  return TL_OK;
invariant:
  free(nodes.v), free(child.v), free(path.v);
  return TL_RECOVER_EINVARIANT;
nomem:
  free(nodes.v), free(child.v), free(path.v);
  return -1;
}

/* A flat tree (root Seq over one atom per token) for a sequence the recovery rejected:
** the analysis still publishes every anchor, with the rejection recorded. */
static int flat_structure(const uint32_t *tok, size_t n, uint32_t nsym, tl_structure *st) {
  memset(st, 0, sizeof *st);
  uint32_t *pos_of_sym = malloc((nsym ? nsym : 1) * sizeof *pos_of_sym);
  st->positions = calloc(nsym + 1, sizeof *st->positions);
  st->slots = malloc((n ? n : 1) * sizeof *st->slots);
  st->occurrences = calloc(n + 1, sizeof *st->occurrences);
  if (!pos_of_sym || !st->positions || !st->slots || !st->occurrences) {
    free(pos_of_sym);
    tl_structure_free(st);
    return -1;
  }
  for (uint32_t s = 0; s < nsym; s++) pos_of_sym[s] = TL_RECOVER_NONE;
  st->npositions = 1;
  st->positions[0] = (tl_position){TL_POS_SEQ, TL_RECOVER_NONE, 0, 0, 0, (uint32_t)n, 1, 0, n};
  st->occurrences[0] = (tl_occurrence){0, TL_RECOVER_NONE, 0, 0, 1, 0, (uint32_t)n};
  for (size_t i = 0; i < n; i++) {
    uint32_t s = tok[i];
    if (pos_of_sym[s] == TL_RECOVER_NONE) {
      pos_of_sym[s] = (uint32_t)st->npositions;
      st->positions[st->npositions++] =
          (tl_position){TL_POS_ATOM, s, 0, 0, 0, 0, 0, 1, 1};
    }
    uint32_t pos = pos_of_sym[s];
    st->slots[i] = pos;
    st->occurrences[i + 1] = (tl_occurrence){pos, 0, (uint32_t)i + 1, 1,
                                             ++st->positions[pos].occurrence_count,
                                             (uint32_t)i, (uint32_t)i + 1};
  }
  st->nslots = n;
  st->noccurrences = n + 1;
  st->ntokens = n;
  free(pos_of_sym);
  return 0;
}

/* Protected intervals of a group: maximal runs of anchors of one replay unit, when the
** unit's launch anchors are all in that one run. A unit of one launch is protected too:
** every unit is its own `ReplayUnit T<k>` Seq with its launches inside (recovery.md 5),
** so a single CUDA graph or ACL graph launch reads as the unit it is. */
static int group_protect(const tl_forest_constraints *c, size_t first, size_t n,
                         tl_protected **out, size_t *nout) {
  *out = NULL, *nout = 0;
  if (!c || !c->anchor_unit) return 0;
  /* Anchors per unit in this group: a run is the whole unit when it holds all of them. */
  uint32_t max_unit = 0;
  for (size_t k = 0; k < n; k++)
    if (c->anchor_unit[first + k] > max_unit) max_unit = c->anchor_unit[first + k];
  uint32_t *count = calloc((size_t)max_unit + 1, sizeof *count);
  if (!count) return -1;
  for (size_t k = 0; k < n; k++) count[c->anchor_unit[first + k]]++;
  TL_VEC(tl_protected) v = {0};
  for (size_t k = 0; k < n;) {
    uint32_t u = c->anchor_unit[first + k];
    size_t j = k + 1;
    while (j < n && c->anchor_unit[first + j] == u) j++;
    if (u != 0 && count[u] == j - k) {
      tl_protected pr = {k, j - 1, TL_PROTECT_UNIT};
      if (TL_VEC_PUSH(&v, pr)) {
        free(v.v);
        free(count);
        return -1;
      }
    }
    k = j;
  }
  free(count);
  *out = v.v, *nout = v.n;
  return 0;
}

static int build_tree(const tl_trace *t, const tl_anchors *a, const tl_packets *p,
                      const tl_forest_constraints *c, const tl_i64col *linked_ns, size_t gi,
                      int several_devices, tl_tree *tr, tl_err *e) {
  const tl_anchor_group *g = &a->groups.v[gi];
  size_t n = g->count;
  memset(tr, 0, sizeof *tr);
  tr->group = gi;
  tr->db_idx = g->db_idx;
  tr->device_id = g->device_id;
  snprintf(tr->tree_id, sizeof tr->tree_id, "tree-db%u-dev%u", (unsigned)g->db_idx,
           (unsigned)g->device_id);
  tr->node_device = several_devices != 0;
  if (several_devices)
    snprintf(tr->node_prefix, sizeof tr->node_prefix, "node-d%u-", (unsigned)g->device_id);
  else
    snprintf(tr->node_prefix, sizeof tr->node_prefix, "node-");
  /* Dense tokens: symbols numbered in first-appearance order within the group. */
  uint32_t *tok = malloc((n ? n : 1) * sizeof *tok);
  tl_i64map dense = {0};
  if (!tok) return tl_nomem(e);
  uint32_t nsym = 0;
  for (size_t k = 0; k < n; k++) {
    int64_t s = a->symbol[g->first + k];
    if (c && c->anchor_token_key && c->anchor_token_key[g->first + k])
      s = c->anchor_token_key[g->first + k];
    int64_t *d = tl_i64map_get(&dense, s);
    if (!d) {
      if (tl_i64map_put(&dense, s, nsym)) goto nomem;
      tok[k] = nsym++;
    } else {
      tok[k] = (uint32_t)*d;
    }
  }
  tl_i64map_free(&dense);
  tl_protected *protect = NULL;
  size_t nprotect = 0;
  if (group_protect(c, g->first, n, &protect, &nprotect)) goto nomem;
  /* The group's slice of the hints: their offsets index the whole table's entries. */
  tl_recover_hints hint = {0};
  if (c && c->anchor_hint)
    hint = (tl_recover_hints){c->anchor_hint->off + g->first, c->anchor_hint->span,
                              c->anchor_hint->weight};
  tl_recover_input in = {tok, n, c && c->anchor_partition ? c->anchor_partition + g->first : NULL,
                         protect, nprotect, c && c->anchor_hint ? &hint : NULL};
  tl_err rerr = {0};
  int rc = tl_recover(&in, &tr->st, &rerr);
  free(protect);
  if (rc == TL_RECOVER_ESTEP) {
    /* A replay outside one known step is an input contradiction, not a shape problem. */
    free(tok);
    tl_fail(e, "%s (db %u, device %u)", rerr.msg, (unsigned)g->db_idx, (unsigned)g->device_id);
    tl_err_clear(&rerr);
    tree_free(tr);
    return TL_ERROR;
  }
  if (rc == TL_OK) {
    tr->macro_discovery = "native_report_tree_complete";
  } else if (rc == TL_RECOVER_ENOMEM) {
    tl_err_clear(&rerr);
    goto nomem;
  } else {
    /* Fail closed on the structure, not on the analysis: a flat tree, and the reason. */
    tl_err_clear(&rerr);
    tr->macro_discovery = "rejected_flat_fallback";
    if (flat_structure(tok, n, nsym, &tr->st)) goto nomem;
  }
  /* Atom symbols are dense ids: map them back to the anchors' pool symbols. */
  uint32_t *sym_of_dense = malloc((nsym ? nsym : 1) * sizeof *sym_of_dense);
  if (!sym_of_dense) goto nomem;
  for (size_t k = 0; k < n; k++) sym_of_dense[tok[k]] = a->symbol[g->first + k];
  for (size_t k = 0; k < tr->st.npositions; k++)
    if (tr->st.positions[k].kind == TL_POS_ATOM)
      tr->st.positions[k].symbol = sym_of_dense[tr->st.positions[k].symbol];
  free(sym_of_dense);
  free(tok);
  tok = NULL;
  rc = build_nodes(tr);
  if (rc == -1) goto nomem;
  if (rc != TL_OK) {
    free(tok);
    tree_free(tr);
    return tl_fail(e, "recover_invariant_violation: the recovered structure of db %u, device %u "
                      "is not a tree of positions (a slot is unrealized or realized by several "
                      "positions, or a child's occurrences do not follow its parent's)",
                   (unsigned)g->db_idx, (unsigned)g->device_id);
  }
  tr->packets = p;
  tr->linked_ns = linked_ns;
  tr->first_anchor = g->first;
  tr->ntokens = n;
  size_t nblocks = n / TL_SUM_BLOCK;
  tr->checkpoint = malloc((nblocks + 1) * sizeof *tr->checkpoint);
  if (!tr->checkpoint) goto nomem;
  memset(&tr->checkpoint[0], 0, sizeof tr->checkpoint[0]);
  for (size_t b = 0; b < nblocks; b++) {
    tr->checkpoint[b + 1] = tr->checkpoint[b];
    add_tokens(tr, (uint32_t)(b * TL_SUM_BLOCK), (uint32_t)((b + 1) * TL_SUM_BLOCK), 1,
               &tr->checkpoint[b + 1]);
  }
  (void)t;
  return TL_OK;
nomem:
  free(tok);
  tl_i64map_free(&dense);
  tree_free(tr);
  return tl_nomem(e);
}

int tl_forest_build(const tl_trace *t, const tl_anchors *a, const tl_packets *p,
                    const tl_forest_constraints *c, tl_forest *f, tl_err *e) {
  memset(f, 0, sizeof *f);
  /* Duration of the aux events linked to each anchor (traceloom_aux_link). */
  tl_i64col *linked_ns = &f->linked_ns;
  tl_i64col_init(linked_ns, 0);
  int bad = tl_i64col_grow(linked_ns, a->n ? a->n : 1);
  for (size_t k = 0; !bad && k < a->nlinks; k++)
    bad = tl_i64col_add(linked_ns, a->link_anchor[k],
                        tl_events_end(&t->ev, a->link_event[k]) - t->ev.start_ns[a->link_event[k]]);
  if (bad) {
    tl_forest_free(f);
    return tl_nomem(e);
  }
  for (size_t gi = 0; gi < a->groups.n; gi++) {
    if (a->groups.v[gi].count == 0) continue;
    int several = 0;
    for (size_t gj = 0; gj < a->groups.n; gj++)
      if (gj != gi && a->groups.v[gj].db_idx == a->groups.v[gi].db_idx && a->groups.v[gj].count)
        several = 1;
    tl_tree tr;
    if (build_tree(t, a, p, c, linked_ns, gi, several, &tr, e)) {
      tl_forest_free(f);
      return TL_ERROR;
    }
    if (TL_VEC_PUSH(&f->trees, tr)) {
      tree_free(&tr);
      tl_forest_free(f);
      return tl_nomem(e);
    }
  }
  return TL_OK;
}
