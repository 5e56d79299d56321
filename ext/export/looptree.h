/*
** looptree.h: the loop-tree Markdown report over a published analysis, or over the
** analysis's own trees in memory (the same bytes).
*/
#ifndef TL_LOOPTREE_H
#define TL_LOOPTREE_H

#include "util/sqlite_api.h"
#include "util/err.h"
#include "util/buf.h"

#include <stddef.h>
#include <stdint.h>

/* Renders the loop tree of the analysis in db's main database; *out is malloc'd. */
int tl_loop_tree(sqlite3 *db, const char *options_json, char **out, tl_err *e);

/* One node as traceloom_v_node_stats gives it once published: the caller fills the first
** part; the renderer links the nodes in place (no copy of a tree of half a million nodes). */
enum { TL_LT_COMPUTE, TL_LT_COMM, TL_LT_IDLE, TL_LT_AUX, TL_LT_SELF, TL_LT_NNS };
typedef struct tl_loop_tree_row {
  int64_t local_n;            /* N<local_n>: 1 + the node's preorder index in its tree */
  int64_t repeat_count;       /* iterations per occurrence; 0 outside Repeat nodes */
  int64_t occ;                /* occurrence_count */
  int64_t denom;              /* traceloom_v_node_stats.denom */
  int64_t ns[TL_LT_NNS];      /* summed over the occurrences */
  double total;               /* the renderer's from here on: total_us, unrounded */
  uint32_t shape;             /* caller: traceloom_node_shape.shape_id */
  uint32_t parent;            /* caller: index of the parent (before it), UINT32_MAX: root */
  uint32_t first_child, nchild; /* children: kids[first_child .. + nchild) in slot order */
  uint8_t repeat;             /* a Repeat node */
  uint8_t repeat_inside;      /* a Repeat in its subtree (itself excluded) */
  uint8_t null_ns;            /* bit TL_LT_*: that column is NULL */
  uint8_t extra;              /* aux and self known (read back on demand otherwise) */
} tl_loop_tree_row;

/* One tree: its nodes in preorder (node k is local id N<k + 1>), as traceloom_tree_core and
** traceloom_semantic_tree describe it. */
typedef struct tl_loop_tree_input {
  int64_t db_idx, device_id, token_count;
  const char *macro_discovery;
  tl_loop_tree_row *rows;     /* linked in place by the renderer */
  size_t n;
} tl_loop_tree_input;

/* A node shape's label and whether it is a Repeat (traceloom_node_shape by shape_id). */
typedef struct tl_loop_tree_shape {
  char *label; /* NULL: none */
  size_t len;
  int repeat;
} tl_loop_tree_shape;

/* Renders trees[0 .. ntrees) (in (db_idx, device_id) order) as tl_loop_tree renders the same
** trees once published: the CLI's Markdown, rendered while the analysis still publishes. */
int tl_loop_tree_render(const char *options_json, tl_loop_tree_input *trees, size_t ntrees,
                        const tl_loop_tree_shape *shapes, size_t nshapes, char **out, tl_err *e);

/* The CLI's short version of the loop tree, after tl_loop_tree_render linked the same trees:
** per tree, the three outermost Repeats by the time they cover, each with the two largest
** Repeats directly inside it, at most 24 lines (the lines the CLI's SQL over the published
** analysis prints, byte for byte); appended to `lines`. */
void tl_loop_tree_summary(const tl_loop_tree_input *trees, size_t ntrees,
                          const tl_loop_tree_shape *shapes, size_t nshapes, tl_buf *lines);

#endif
