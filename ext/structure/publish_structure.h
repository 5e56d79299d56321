/*
** publish_structure.h: publishing anchors, aux links, cost packets and the recovered
** trees (see publish_structure.c). One row of the driver's publishers (ext/analyze), inside
** the publication's savepoint.
*/
#ifndef TL_PUBLISH_STRUCTURE_H
#define TL_PUBLISH_STRUCTURE_H

#include "util/sqlite_api.h"
#include "structure/structure.h"

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

/* Everything: tl_publish_structure_anchors, then tl_publish_structure_trees. */
int tl_publish_structure(sqlite3 *db, const tl_structure_input *in, tl_err *e);

/* The two halves, which share no table and only read `in`, so they may run at once on two
** connections (with threads >= 2 the driver writes the trees on a staging connection,
** ext/analyze/staging.c, while its own writes the anchors): the anchors with their shapes,
** aux links and symbol summary; the trees, whose tables are tl_structure_tree_tables
** (NULL-terminated). The string pool is only read. */
int tl_publish_structure_anchors(sqlite3 *db, const tl_structure_input *in, tl_err *e);
int tl_publish_structure_trees(sqlite3 *db, const tl_structure_input *in, tl_err *e);
extern const char *const tl_structure_tree_tables[];

#endif
