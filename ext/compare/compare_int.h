/*
** compare_int.h: the comparison's plain C arrays, shared by the files of ext/compare.
**
**   read.c      an analysis's published tree relations -> one cmp_side per run
**   families.c  symbol -> semantic family (rules/compare_families.yaml)
**   align.c     signatures, the edit-distance alignment of children, the merged rows
**   effects.c   per-unit stats, the exact decomposition of each delta, noise, ranking
**   publish_compare.c   the traceloom_compare_* tables, in one SAVEPOINT
**   report.c    traceloom_compare_report(): Markdown from the published tables
**
** A side's tree is built from the public relations in a way that holds for both node models
** (one position per symbol shared by several parents, or one position per structural slot):
** a tree node is a root-to-position path, the child of its parent's tree node at one slot, and
** every occurrence belongs to the tree node of its parent occurrence's node at its slot.
*/
#ifndef TL_COMPARE_INT_H
#define TL_COMPARE_INT_H

#include "util/sqlite_api.h"
#include "util/err.h"
#include "util/i64map.h"
#include "util/strpool.h"
#include "util/vec.h"

#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------------ families */

typedef struct tl_cmp_families tl_cmp_families;
/* path NULL: the built-in rules/compare_families.yaml. */
int tl_cmp_families_load(const char *path, tl_cmp_families **out, tl_err *e);
void tl_cmp_families_free(tl_cmp_families *f);
int tl_cmp_family_of(const tl_cmp_families *f, const char *symbol); /* -1: none */
const char *tl_cmp_family_name(const tl_cmp_families *f, int id);
size_t tl_cmp_family_count(const tl_cmp_families *f);
const char *tl_cmp_families_source(const tl_cmp_families *f);

/* ------------------------------------------------------------------ one run */

typedef enum cmp_type { CMP_SEQ, CMP_REPEAT, CMP_ATOM, CMP_OTHER } cmp_type;

/* A position of traceloom_viz_node (node-N007), with its slots from
** traceloom_position_refinement: slot k (1-based) holds slot_child[slot0 + k - 1]. */
typedef struct cmp_position {
  uint32_t id;           /* pool: position id */
  uint32_t symbol;       /* pool: structural symbol of an atom (label when NULL); 0 otherwise */
  uint32_t label;        /* pool: the position's label (Rep x4, MatMul, ...) */
  int64_t repeat_count;  /* Repeat: iterations per occurrence; 0 otherwise */
  int32_t tree;
  int32_t next_same_id;  /* the next position with this id (another tree), -1 none */
  int32_t slot0, nslots;
  int16_t family;        /* atoms: semantic family, -1 none */
  uint8_t type;          /* cmp_type */
} cmp_position;

/* A tree node: one root-to-position path, with the sums of its occurrences. A unit is an
** iteration for a Repeat and an occurrence otherwise; mean/m2 are Welford's running mean
** and squared deviations of the per-unit totals (compute + comm + idle, ns). */
typedef struct cmp_node {
  int32_t position, parent, slot;
  int32_t child0;        /* node_child[child0 .. child0 + nslots): child per slot, -1 none */
  int64_t occurrences, units;
  int64_t compute_ns, comm_ns, idle_ns;
  int64_t samples;
  double mean, m2;
  uint64_t sig, family_sig; /* structure signatures (repeat counts left out) */
} cmp_node;

typedef struct cmp_tree {
  int64_t db_idx, device_id;
  int32_t root_position;
  int32_t root_node;     /* -1 while no occurrence reached it */
} cmp_tree;

typedef struct cmp_side {
  const char *what;      /* "base" or "new", for messages */
  const char *path;      /* the analysis database, for messages and the run table */
  TL_VEC(cmp_tree) trees;
  TL_VEC(cmp_position) positions;
  /* Per pool id: the first position with that id (-1 none); the others, of other trees, follow
  ** through next_same_id. An array and not a hash map: ids are looked up once per position and
  ** per slot, and pool ids are dense. */
  TL_VEC(int32_t) position_of;
  TL_VEC(int32_t) slot_child;
  TL_VEC(cmp_node) nodes;
  TL_VEC(int32_t) node_child;
  uint32_t **hist;       /* per node: leaf-key histogram of a composite (align.c), lazy */
} cmp_side;

/* Reads the tree relations of the analysis in db (main schema) into s. Symbols go into pool,
** shared by both sides so that equal symbols have equal ids. */
int tl_cmp_read(sqlite3 *db, cmp_side *s, tl_strpool *pool, const tl_cmp_families *fam,
                tl_err *e);
void tl_cmp_side_free(cmp_side *s);

static inline int64_t cmp_node_total(const cmp_node *n) {
  return n->compute_ns + n->comm_ns + n->idle_ns;
}

/* ------------------------------------------------------------------ merged rows */

typedef enum cmp_status { CMP_MATCHED, CMP_ADDED, CMP_REMOVED } cmp_status;
typedef enum cmp_match { CMP_M_NONE, CMP_M_ROOT, CMP_M_EXACT, CMP_M_FAMILY, CMP_M_SIMILAR } cmp_match;
typedef enum cmp_noise { CMP_N_NONE, CMP_N_SIGNIFICANT, CMP_N_WITHIN, CMP_N_NO_SPREAD } cmp_noise;

/* One node of the merged tree of a pair, in preorder: a matched pair of tree nodes, or a
** node of one side only (added: new only; removed: base only). */
typedef struct cmp_row {
  int32_t pair, parent, end;  /* end: one past the last row of its subtree */
  int32_t depth;
  int32_t b, n;               /* tree nodes of base / new, -1 absent */
  uint8_t status, match, noise;
  uint8_t top;                /* added / removed: the top of its one-sided subtree */
  uint32_t label_base;        /* pool: MatMul, Rep x6->x8, MatMul ~ CudaMatMul, ... */
  uint32_t dup;               /* k of "#k" when several siblings share label_base, else 0 */
  size_t path_off, label_off; /* in paths: "Rep x6 > Rep x4 > MatMul#2", and "MatMul#2" */
  uint32_t path_len, label_len;
  /* effects (effects.c), ns */
  double rate_ns;             /* own per-unit change x new units (matched) */
  double count_ns;            /* this node's multiplicity change at base cost (matched) */
  double structure_ns;        /* +new total (top added), -base total (top removed) */
  double noise_threshold_ns;  /* z x standard error of the per-unit mean difference */
} cmp_row;

typedef struct cmp_pair {
  int32_t base_tree, new_tree; /* -1 when the other run has no tree left to pair with */
  int32_t row0, row_end;
  int windowed;                /* some long child list was aligned with the windowed diff */
  int64_t matched, matched_family, added, removed;
  double rate_ns, count_ns, added_ns, removed_ns;
} cmp_pair;

typedef struct cmp_rank {
  int32_t pair, rank, row;
  uint8_t effect;              /* cmp_effect */
  double contribution_ns;
} cmp_rank;

typedef enum cmp_effect {
  CMP_E_SLOWER, CMP_E_FASTER, CMP_E_MORE, CMP_E_FEWER, CMP_E_ADDED, CMP_E_REMOVED
} cmp_effect;
const char *tl_cmp_effect_name(int effect);

typedef struct cmp_options {
  char *new_path;        /* NULL: the calling connection's main database */
  char *families;        /* NULL: built-in */
  int64_t top;           /* ranked items kept per pair */
  double noise_z;
  int symbols_only;      /* "match": "symbol": no family fallback */
  char *canonical;       /* the options as stored */
} cmp_options;

typedef struct cmp_result {
  cmp_side base, fresh;  /* fresh: the new run */
  tl_strpool *pool;
  const tl_cmp_families *families;
  const cmp_options *opt;
  TL_VEC(cmp_pair) pairs;
  TL_VEC(cmp_row) rows;
  TL_VEC(cmp_rank) ranks;
  char *paths;           /* all row paths and the root labels, back to back (no NULs) */
  size_t paths_len;
} cmp_result;

/* align.c: pairs the trees of both sides and fills pairs, rows, labels and paths. */
int tl_cmp_align(cmp_result *r, tl_err *e);
/* effects.c: effects, noise and ranking of the aligned rows. */
int tl_cmp_effects(cmp_result *r, tl_err *e);
/* publish_compare.c: the traceloom_compare_* relations, replacing earlier ones. */
int tl_cmp_publish(sqlite3 *db, const cmp_result *r, tl_err *e);

const char *tl_cmp_type_name(int type);
const char *tl_cmp_status_name(int status);
const char *tl_cmp_match_name(int match);
const char *tl_cmp_noise_name(int noise);

#endif
