/*
** publish_structure.h: publishing anchors, aux links, cost packets and the recovered
** trees (see publish_structure.c). One row of the driver's publishers (ext/analyze), inside
** the publication's savepoint.
*/
#ifndef TL_PUBLISH_STRUCTURE_H
#define TL_PUBLISH_STRUCTURE_H

#include "util/sqlite_api.h"
#include "structure/structure.h"
#include "export/looptree.h"

typedef struct tl_structure_input {
  const tl_trace *trace;
  const tl_anchors *anchors;
  const tl_packets *packets;
  const tl_forest *forest;
  const uint32_t *anchor_call;  /* per anchor: its runtime endpoint call, UINT32_MAX for none
                                   (tl_reports_anchor_endpoints); NULL: none known */
  /* Optional (NULL = none): node_name[k][node] names node `node` of forest tree k after the
  ** trace's own hierarchy (strpool id, 0 = none); a named Repeat's label is "<name> xN". */
  const uint32_t *const *node_name;
} tl_structure_input;

typedef struct tl_structure_loop_trees tl_structure_loop_trees;

/* Everything: the anchors, the symbol summary, then the trees (prepare, nodes, rest), on one
** connection; with loop (NULL: none), also the loop tree's rows (tl_structure_loop_trees_build). */
int tl_publish_structure(sqlite3 *db, const tl_structure_input *in, tl_structure_loop_trees *loop,
                         tl_err *e);

/* The parts, for two connections at once (with threads >= 2 the driver writes the nodes and
** the upper part of the occurrences on a staging connection, ext/analyze/staging.c, while
** its own writes the anchors and the lower part):
**
**   rc = tl_publish_structure_summary(db, in, e);     the symbol summary (its sort holds 12+
**                                                     bytes an anchor: before the trees' ranks,
**                                                     or built beside the copy below and
**                                                     written after it, within a budget)
**   tl_structure_trees *t;
**   rc = tl_structure_trees_prepare(db, in, &t, e);   node-major ranks, node shapes (written)
**   size_t n = tl_structure_trees_occurrences(t), k;  occurrences in all, a split point
**   rc = tl_structure_trees_staged(other, t, k, e);   traceloom_node_core, then the
**                                                     occurrences [k, n) (tl_structure_staged_tables)
**   rc = tl_publish_structure_anchors(db, in, e);     anchors, aux links
**   rc = tl_structure_trees_lower(db, t, k, e);       the occurrences [0, k)
**   ... the staged rows moved into db (the occurrences appended) ...
**   rc = tl_structure_trees_rows(db, t, e);           traceloom_tree_core
**   tl_structure_trees_free(t);                       also after a failed prepare
**
** On one connection: tl_structure_trees_nodes, then tl_structure_trees_rest (occurrences and
** tree rows, tree by tree). Nodes, anchors, tree rows and two ranges of the occurrences share
** only what they read (`in`, `t`, the string pool), so they may be written on two threads. */
typedef struct tl_structure_trees tl_structure_trees;
int tl_publish_structure_anchors(sqlite3 *db, const tl_structure_input *in, tl_err *e);
int tl_publish_structure_summary(sqlite3 *db, const tl_structure_input *in, tl_err *e);
/* tl_publish_structure_summary in two parts: the rows computed from the arrays alone (no
** connection: the driver builds them on a helper thread beside a staging copy), then written
** on db. The rows are the same either way. */
typedef struct tl_symbol_summary tl_symbol_summary;
int tl_structure_summary_build(const tl_structure_input *in, tl_symbol_summary **out, tl_err *e);
int tl_structure_summary_write(sqlite3 *db, const tl_structure_input *in,
                               const tl_symbol_summary *sum, tl_err *e);
void tl_structure_summary_free(tl_symbol_summary *sum); /* NULL: nothing */
int tl_structure_trees_prepare(sqlite3 *db, const tl_structure_input *in,
                               tl_structure_trees **out, tl_err *e);
int tl_structure_trees_nodes(sqlite3 *db, const tl_structure_trees *t, tl_err *e);
int tl_structure_trees_rest(sqlite3 *db, const tl_structure_trees *t, tl_err *e);
size_t tl_structure_trees_occurrences(const tl_structure_trees *t);
int tl_structure_trees_staged(sqlite3 *db, const tl_structure_trees *t, size_t from, tl_err *e);
int tl_structure_trees_lower(sqlite3 *db, const tl_structure_trees *t, size_t to, tl_err *e);
int tl_structure_trees_rows(sqlite3 *db, const tl_structure_trees *t, tl_err *e);
void tl_structure_trees_free(tl_structure_trees *t);
extern const char *const tl_structure_staged_tables[]; /* NULL-terminated */

/* The trees as the loop tree Markdown reads them once published (export/looptree.h), built
** from the trees in memory after tl_structure_trees_prepare, so that the Markdown can be
** rendered while the rest of the analysis is published: the rows of traceloom_v_node_stats
** that tl_loop_tree reads, in (db_idx, device_id) order, and the node shapes' labels. */
struct tl_structure_loop_trees {
  tl_loop_tree_input *trees;
  size_t ntrees;
  tl_loop_tree_shape *shapes;
  size_t nshapes;
};
int tl_structure_loop_trees_build(const tl_structure_trees *t, tl_structure_loop_trees *out,
                                  tl_err *e);
void tl_structure_loop_trees_free(tl_structure_loop_trees *lt);

#endif
