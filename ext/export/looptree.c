/*
** looptree.c: traceloom_loop_tree([options_json]), the loop tree as Markdown.
**
**   SELECT traceloom_loop_tree();
**   SELECT traceloom_loop_tree('{"max_children": 20, "max_depth": 4}');
**
** Reads the published analysis of the calling connection (traceloom_v_tree_node and
** traceloom_viz_edge) and renders, per (db_idx, device_id): the tree outline, then every
** Repeat node followed by the children of one iteration, each with total_us and the
** per-iteration averages avg_total_us, avg_compute_us, avg_comm_us, avg_idle_us,
** avg_aux_us, avg_self_us. Plain SQL underneath: the same numbers any client can query.
*/
#include "export/looptree.h"
#include "util/json.h"
#include "util/buf.h"

#include <stdio.h>
#include <string.h>

typedef struct looptree_opts {
  int64_t max_children; /* children listed per node */
  int64_t max_depth;    /* outline depth */
} looptree_opts;

static int parse_opts(const char *json, looptree_opts *o, tl_err *e) {
  o->max_children = 40;
  o->max_depth = 6;
  if (!json || !*json) return TL_OK;
  tl_json *doc;
  if (tl_json_parse(json, strlen(json), &doc, e)) return TL_ERROR;
  int rc = TL_OK;
  if (tl_json_type_of(doc) != TL_JSON_OBJECT)
    rc = tl_fail(e, "traceloom_loop_tree options must be a JSON object");
  for (size_t i = 0; rc == TL_OK && i < tl_json_len(doc); i++) {
    const char *k = tl_json_key_at(doc, i);
    int64_t v;
    if (tl_json_i64(tl_json_value_at(doc, i), &v) || v < 1) {
      rc = tl_fail(e, "traceloom_loop_tree option \"%s\" must be a positive integer", k);
    } else if (strcmp(k, "max_children") == 0) {
      o->max_children = v;
    } else if (strcmp(k, "max_depth") == 0) {
      o->max_depth = v;
    } else {
      rc = tl_fail(e, "unknown traceloom_loop_tree option \"%s\": expected max_children or "
                      "max_depth", k);
    }
  }
  tl_json_free(doc);
  return rc;
}

#define NODE_COLS \
  "n.node_id, n.local_node_id, n.label, n.kind, n.repeat_count, n.occurrence_count, " \
  "n.total_us, n.avg_total_us, n.avg_compute_us, n.avg_comm_us, n.avg_idle_us, n.avg_aux_us, " \
  "n.avg_self_us"

static void fmt_num(tl_buf *b, sqlite3_stmt *st, int col) {
  if (sqlite3_column_type(st, col) == SQLITE_NULL)
    tl_buf_puts(b, " |");
  else
    tl_buf_printf(b, " %.3f |", sqlite3_column_double(st, col));
}

static void table_header(tl_buf *b) {
  tl_buf_puts(b, "| node | structure | occ | total_us | avg_total_us | avg_compute_us | "
                 "avg_comm_us | avg_idle_us | avg_aux_us | avg_self_us |\n"
                 "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
}

/* One table row from a statement whose columns start with NODE_COLS. */
static void table_row(tl_buf *b, sqlite3_stmt *st, const char *prefix) {
  const char *label = (const char *)sqlite3_column_text(st, 2);
  tl_buf_printf(b, "| %s%s | %s | %lld |", prefix, sqlite3_column_text(st, 1), label ? label : "",
                (long long)sqlite3_column_int64(st, 5));
  for (int c = 6; c <= 12; c++) fmt_num(b, st, c);
  tl_buf_puts(b, "\n");
}

typedef struct ctx {
  sqlite3 *db;
  looptree_opts o;
  tl_buf *b;
  int64_t db_idx, device_id;
} ctx;

/* Outline from a node: one line per slot, Repeat children indented under their loop. */
static int outline(ctx *c, const char *node_id, int depth, tl_err *e) {
  if (depth > c->o.max_depth) return TL_OK;
  /* Statements cannot be shared across recursion levels: prepare one per level. */
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(c->db,
                         "SELECT " NODE_COLS " FROM traceloom_viz_edge e JOIN traceloom_v_tree_node n "
                         "ON n.node_id = e.child_node_id AND n.db_idx = e.db_idx AND "
                         "n.device_id = e.device_id AND n.view_name = e.view_name "
                         "WHERE e.parent_node_id = ?1 AND e.db_idx = ?2 AND e.device_id = ?3 "
                         "ORDER BY e.edge_order",
                         -1, &st, NULL) != SQLITE_OK)
    return tl_fail(e, "traceloom_loop_tree needs a published analysis: %s",
                   sqlite3_errmsg(c->db));
  sqlite3_bind_text(st, 1, node_id, -1, SQLITE_TRANSIENT);
  sqlite3_bind_int64(st, 2, c->db_idx);
  sqlite3_bind_int64(st, 3, c->device_id);
  int rc = TL_OK, n = 0;
  while (rc == TL_OK && sqlite3_step(st) == SQLITE_ROW) {
    if (++n > c->o.max_children) {
      tl_buf_printf(c->b, "%*s- ...\n", 2 * depth, "");
      break;
    }
    const char *kind = (const char *)sqlite3_column_text(st, 3);
    tl_buf_printf(c->b, "%*s- %s %s  total_us=%.3f avg_total_us=%.3f\n", 2 * depth, "",
                  sqlite3_column_text(st, 1), sqlite3_column_text(st, 2),
                  sqlite3_column_double(st, 6), sqlite3_column_double(st, 7));
    if (kind && strcmp(kind, "repeat") == 0) {
      char child[128];
      snprintf(child, sizeof child, "%s", sqlite3_column_text(st, 0));
      rc = outline(c, child, depth + 1, e);
    }
  }
  sqlite3_finalize(st);
  return rc;
}

int tl_loop_tree(sqlite3 *db, const char *options_json, char **out, tl_err *e) {
  *out = NULL;
  ctx c = {db, {0, 0}, NULL, 0, 0};
  if (parse_opts(options_json, &c.o, e)) return TL_ERROR;
  tl_buf b = {0};
  c.b = &b;
  sqlite3_stmt *trees = NULL, *repeats = NULL, *children = NULL;
  int rc = TL_OK;
  if (sqlite3_prepare_v2(db,
                         "SELECT db_idx, device_id, tree_id, root_node_id, token_count, "
                         "macro_discovery FROM traceloom_semantic_tree ORDER BY db_idx, device_id",
                         -1, &trees, NULL) != SQLITE_OK ||
      sqlite3_prepare_v2(db,
                         "SELECT " NODE_COLS " FROM traceloom_v_tree_node n WHERE n.db_idx = ?1 "
                         "AND n.device_id = ?2 AND n.kind = 'repeat' ORDER BY n.display_order",
                         -1, &repeats, NULL) != SQLITE_OK ||
      sqlite3_prepare_v2(db,
                         "SELECT " NODE_COLS " FROM traceloom_viz_edge e JOIN traceloom_v_tree_node n "
                         "ON n.node_id = e.child_node_id AND n.db_idx = e.db_idx AND "
                         "n.device_id = e.device_id AND n.view_name = e.view_name "
                         "WHERE e.parent_node_id = ?1 AND e.db_idx = ?2 AND e.device_id = ?3 "
                         "ORDER BY e.edge_order",
                         -1, &children, NULL) != SQLITE_OK) {
    rc = tl_fail(e, "traceloom_loop_tree needs a published analysis in this database "
                    "(run traceloom_analyze first): %s", sqlite3_errmsg(db));
    goto done;
  }
  tl_buf_puts(&b, "# Loop tree\n");
  int ntrees = 0;
  while (rc == TL_OK && sqlite3_step(trees) == SQLITE_ROW) {
    ntrees++;
    c.db_idx = sqlite3_column_int64(trees, 0);
    c.device_id = sqlite3_column_int64(trees, 1);
    char root[128];
    snprintf(root, sizeof root, "%s", sqlite3_column_text(trees, 3));
    tl_buf_printf(&b, "\n## db %lld, device %lld (%lld anchors, %s)\n\n",
                  (long long)c.db_idx, (long long)c.device_id,
                  (long long)sqlite3_column_int64(trees, 4), sqlite3_column_text(trees, 5));
    tl_buf_puts(&b, "Outline (Repeat bodies indented; averages are per iteration):\n\n");
    rc = outline(&c, root, 0, e);
    sqlite3_bind_int64(repeats, 1, c.db_idx);
    sqlite3_bind_int64(repeats, 2, c.device_id);
    while (rc == TL_OK && sqlite3_step(repeats) == SQLITE_ROW) {
      tl_buf_printf(&b, "\n### %s %s (%lld occurrence(s))\n\n", sqlite3_column_text(repeats, 1),
                    sqlite3_column_text(repeats, 2),
                    (long long)sqlite3_column_int64(repeats, 5));
      table_header(&b);
      table_row(&b, repeats, "");
      sqlite3_bind_text(children, 1, (const char *)sqlite3_column_text(repeats, 0), -1,
                        SQLITE_TRANSIENT);
      sqlite3_bind_int64(children, 2, c.db_idx);
      sqlite3_bind_int64(children, 3, c.device_id);
      int64_t k = 0;
      while (sqlite3_step(children) == SQLITE_ROW) {
        if (++k > c.o.max_children) {
          tl_buf_puts(&b, "| ... | | | | | | | | | |\n");
          break;
        }
        table_row(&b, children, "&nbsp;&nbsp;");
      }
      sqlite3_reset(children);
    }
    sqlite3_reset(repeats);
  }
  if (rc == TL_OK && ntrees == 0) tl_buf_puts(&b, "\nNo recovered tree (no anchors).\n");
  if (rc == TL_OK && b.oom) rc = tl_nomem(e);
  if (rc == TL_OK) {
    *out = b.p;
    b.p = NULL;
  }
done:
  sqlite3_finalize(trees), sqlite3_finalize(repeats), sqlite3_finalize(children);
  tl_buf_free(&b);
  return rc;
}
