/*
** structure.h: one recovered tree per (db_idx, device_id), with costs.
**
** For each anchor group the anchor symbols become dense tokens, ext/recover turns them
** into positions and occurrences, and checkpointed prefix sums over the anchors' cost
** packets give every occurrence its cost: an occurrence costs the sum of the packets of
** the anchors it covers, a position the sum over its occurrences (outputs.md 3.2).
**
** Checkpoints instead of a full prefix sum per anchor: the sums over [0, k) are kept only
** at every TL_SUM_BLOCK-th anchor, and a sum up to any other anchor adds at most
** TL_SUM_BLOCK - 1 packets to the checkpoint before it. Full prefix sums cost 56 bytes per
** anchor (560 MB at 10 million anchors) beside the 48-byte packets they summarize; the
** checkpoints cost under 2 bytes per anchor, and an occurrence's sum still takes O(1)
** packet reads per end.
*/
#ifndef TL_STRUCTURE_H
#define TL_STRUCTURE_H

#include "anchor/anchors.h"
#include "cost/packets.h"
#include "recover/recover.h"

/* Prefix-summed packet fields: index k holds the sum over anchors [0, k) of the group. */
enum { TL_SUM_COMPUTE, TL_SUM_COMM, TL_SUM_IDLE, TL_SUM_SELF, TL_SUM_AUX, TL_SUM_AUX_EVENTS,
       TL_SUM_LINKED_AUX, TL_SUM_COUNT };

enum { TL_SUM_BLOCK = 32 };

/* The TL_SUM_* fields of one anchor or of a span of anchors. */
typedef struct tl_sums {
  int64_t v[TL_SUM_COUNT];
} tl_sums;

/* One node of a tree: a structural position as reached from the root. The recovered
** positions (st.positions) are definitions, shared by every place where an identical
** structure occurs (every MatMul atom, every equal layer body); a node is one definition at
** one place of the tree (outputs.md 4: one node per structural position), with its own
** occurrences. Nodes are numbered in preorder (display order: node k is N<k+1>); the
** children of a node are its definition's slots, in slot order. In a tree every child of a
** node with c occurrences has c * m occurrences (m: the repeat count of a Repeat parent, 1
** otherwise), and its occurrence q (1-based) lies in the parent's occurrence
** (q - 1) / m + 1, iteration (q - 1) % m + 1: the published views rely on that arithmetic. */
typedef struct tl_tree_node {
  uint32_t position;         /* the definition: index into st.positions */
  uint32_t parent;           /* node index; TL_RECOVER_NONE for the root */
  uint32_t slot;             /* 1-based slot in the parent; 0 for the root */
  uint32_t first_child;      /* the child in slot s is tr->child[first_child + s - 1] */
  /* depth and loop depth are not held (8 bytes a node): the publication walks the parents */
  uint32_t occurrence_count;
  uint32_t first_rank;       /* node-major rank of its first occurrence (sum of the
                                occurrence counts of the nodes before it) */
} tl_tree_node;

/* One occurrence of a tree as its readers need it. Recovery's tl_occurrence holds 28 bytes;
** the rest of it follows from the occurrence's node and parent (tl_tree_occ_* below:
** position and slot are the node's, the end is the start plus the position's length, the
** member order is the iteration the start falls in), so a built tree holds 8 bytes an
** occurrence (build_nodes checks every derived field against recovery's). */
typedef struct tl_tree_occ {
  uint32_t parent; /* occurrence index; TL_RECOVER_NONE for the root */
  uint32_t start;  /* first token of its span */
} tl_tree_occ;

typedef struct tl_tree {
  size_t group;             /* index into tl_anchors.groups */
  uint16_t db_idx;
  uint32_t device_id;
  char tree_id[48];
  char node_prefix[24];     /* "node-" or "node-d<device>-" when a DB holds several devices */
  int node_device;          /* 1 when node_prefix carries the device */
  const char *macro_discovery;
  tl_structure st;          /* st.occurrences is NULL once built: occ holds them */
  const tl_packets *packets; /* borrowed: token k is packet first_anchor + k */
  const tl_i64col *linked_ns; /* per global anchor (the forest owns it) */
  size_t first_anchor, ntokens;
  tl_sums *checkpoint;      /* checkpoint[b] = sums over tokens [0, b * TL_SUM_BLOCK) */
  tl_tree_node *nodes;      /* nnodes nodes in preorder; nodes[0] is the root */
  size_t nnodes;
  uint32_t *child;          /* the node in each slot of each node (tl_tree_node.first_child) */
  tl_tree_occ *occ;         /* st.noccurrences occurrences, in walk order (preorder) */
  uint32_t *occ_node;       /* the node of each occurrence */
} tl_tree;

typedef struct tl_forest {
  TL_VEC(tl_tree) trees;
  tl_i64col linked_ns;      /* per global anchor: duration of the aux events linked to it */
} tl_forest;

/* Optional constraints on recovery, indexed by global anchor number (NULL = none):
** anchor_unit: 1 + the exact replay unit an anchor is a launch of (0 = eager work); a
**   unit whose launch anchors are contiguous becomes one protected interval that repeat
**   recovery never splits (recovery.md 4.2; a lone launch anchor is atomic anyway);
** anchor_partition: the scheduler step of each anchor, TL_RECOVER_NO_PARTITION when
**   unknown; repeats never cross a step and a protected unit must lie in one known step,
**   else the build fails with "protected replay has missing or conflicting step identity". */
typedef struct tl_forest_constraints {
  const uint32_t *anchor_unit;
  /* anchor_token_key: non-zero keys replace the symbol as the anchor's token identity, so
  ** launches with one symbol (ACLH) but different graph or body templates stay distinct
  ** tokens; the published symbol does not change. */
  const int64_t *anchor_token_key;
  const uint32_t *anchor_partition;
  /* anchor_hint: the host ranges (the trace's own hierarchy) that begin at each anchor; a
  ** Repeat's iterations begin where more of them do (recover.h hint). */
  const tl_recover_hints *anchor_hint;
} tl_forest_constraints;

/* Builds one tree per anchor group. The trees read p until tl_forest_free: keep the
** packets alive as long as the forest. */
int tl_forest_build(const tl_trace *t, const tl_anchors *a, const tl_packets *p,
                    const tl_forest_constraints *c, tl_forest *f, tl_err *e);
void tl_forest_free(tl_forest *f);

/* The position (definition) of occurrence o. */
static inline const tl_position *tl_tree_occ_position(const tl_tree *tr, uint32_t o) {
  return &tr->st.positions[tr->nodes[tr->occ_node[o]].position];
}
/* The end (exclusive) of occurrence o's token span. */
static inline uint32_t tl_tree_occ_end(const tl_tree *tr, uint32_t o) {
  return tr->occ[o].start + (uint32_t)tl_tree_occ_position(tr, o)->token_len;
}
/* Its slot in the parent (1-based; 0 for the root). */
static inline uint32_t tl_tree_occ_slot(const tl_tree *tr, uint32_t o) {
  return tr->nodes[tr->occ_node[o]].slot;
}
/* The iteration (1-based) of a Repeat pp that the token offset (from the Repeat's start) is
** in: iterations are equal bodies of token_len / repeat_count tokens, slots side by side. */
static inline uint32_t tl_tree_iteration(const tl_position *pp, uint32_t offset) {
  return offset / (uint32_t)(pp->token_len / pp->repeat_count) + 1;
}
/* Its member order: the iteration under a Repeat parent, 1 under a Seq, 0 for the root. */
static inline uint32_t tl_tree_occ_member(const tl_tree *tr, uint32_t o) {
  uint32_t p = tr->occ[o].parent;
  if (p == TL_RECOVER_NONE) return 0;
  const tl_position *pp = tl_tree_occ_position(tr, p);
  return pp->kind != TL_POS_REPEAT ? 1 : tl_tree_iteration(pp, tr->occ[o].start - tr->occ[p].start);
}

/* The next atom occurrence at or after *cursor (an occurrence index, 0 to start), moving
** the cursor past it; UINT32_MAX when there is none. Atoms come in walk order, which is
** token order: the k-th call returns the atom of token k-1. */
static inline uint32_t tl_tree_next_atom(const tl_tree *tr, uint32_t *cursor) {
  while (*cursor < tr->st.noccurrences) {
    uint32_t o = (*cursor)++;
    if (tl_tree_occ_position(tr, o)->kind == TL_POS_ATOM) return o;
  }
  return UINT32_MAX;
}

/* The views' occurrence arithmetic (tl_tree_node): under a node whose definition is pp
** (m = its repeat count for a Repeat, else 1), the child occurrence of iteration
** member_order (1 under a Seq) in the parent's occurrence p is the child node's occurrence
** (p - 1) * m + member_order, and back. build_nodes checks it holds for every occurrence,
** so the publication derives occurrence indexes and ranks from it instead of holding them. */
static inline uint32_t tl_tree_fanout(const tl_position *pp) {
  return pp->kind == TL_POS_REPEAT ? pp->repeat_count : 1;
}
static inline uint64_t tl_tree_child_idx(const tl_position *pp, uint32_t parent_idx,
                                         uint32_t member_order) {
  return (uint64_t)(parent_idx - 1) * tl_tree_fanout(pp) + member_order;
}
static inline uint32_t tl_tree_parent_idx(const tl_position *pp, uint32_t idx,
                                          uint32_t member_order) {
  return (idx - member_order) / tl_tree_fanout(pp) + 1;
}

/* The TL_SUM_* fields of token k of a tree (one anchor's packet). */
void tl_tree_token_sums(const tl_tree *tr, uint32_t k, tl_sums *out);
/* The TL_SUM_* fields summed over the tokens [start, end) of a tree. */
void tl_tree_sums(const tl_tree *tr, uint32_t start, uint32_t end, tl_sums *out);

#endif
