/*
** structure.h: one recovered tree per (db_idx, device_id), with costs.
**
** For each anchor group the anchor symbols become dense tokens, ext/recover turns them
** into positions and occurrences, and prefix sums over the anchors' cost packets give
** every occurrence its cost in O(1): an occurrence costs the sum of the packets of the
** anchors it covers, a position the sum over its occurrences (outputs.md 3.2).
*/
#ifndef TL_STRUCTURE_H
#define TL_STRUCTURE_H

#include "anchor/anchors.h"
#include "cost/packets.h"
#include "recover/recover.h"

/* Prefix-summed packet fields: index k holds the sum over anchors [0, k) of the group. */
enum { TL_SUM_COMPUTE, TL_SUM_COMM, TL_SUM_IDLE, TL_SUM_SELF, TL_SUM_AUX, TL_SUM_AUX_EVENTS,
       TL_SUM_LINKED_AUX, TL_SUM_COUNT };

typedef struct tl_tree {
  size_t group;             /* index into tl_anchors.groups */
  uint16_t db_idx;
  uint32_t device_id;
  char tree_id[48];
  char node_prefix[24];     /* "node-" or "node-d<device>-" when a DB holds several devices */
  int node_device;          /* 1 when node_prefix carries the device */
  const char *macro_discovery;
  tl_structure st;
  int64_t *sum[TL_SUM_COUNT];  /* n+1 prefix sums each */
  uint32_t *token_atom;     /* token -> its atom occurrence */
} tl_tree;

typedef struct tl_forest {
  TL_VEC(tl_tree) trees;
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
} tl_forest_constraints;

int tl_forest_build(const tl_trace *t, const tl_anchors *a, const tl_packet *p,
                    const tl_forest_constraints *c, tl_forest *f, tl_err *e);
void tl_forest_free(tl_forest *f);

/* Sum of one field over the tokens [start, end) of a tree. */
static inline int64_t tl_tree_sum(const tl_tree *tr, int field, uint32_t start, uint32_t end) {
  return tr->sum[field][end] - tr->sum[field][start];
}

#endif
