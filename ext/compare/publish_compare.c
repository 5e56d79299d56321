/*
** publish_compare.c: writes the traceloom_compare_* relations into the calling connection's
** main database, in one SAVEPOINT.
**
** Earlier traceloom_compare_* relations are dropped, the embedded sql/compare/00_*.sql creates
** the tables, the rows go in (the nodes as one INSERT ... SELECT from traceloom_rows), then
** sql/compare/10_*.sql creates the views. When the database is an analysis (it has
** traceloom_analysis_surface), the relations join its catalog from their `-- @surface` lines.
** Any error rolls the savepoint back: an earlier comparison, and the analysis, stay exactly
** as they were.
*/
#include "compare/compare_int.h"
#include "embedded.h"
#include "publish/publish.h"
#include "publish/rows.h"
#include "traceloom.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SQL_PREFIX "sql/compare/"

static int exec(sqlite3 *db, const char *sql, tl_err *e) {
  char *msg = NULL;
  if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
    tl_fail(e, "traceloom_compare: cannot publish the comparison: %s",
            msg ? msg : sqlite3_errmsg(db));
    sqlite3_free(msg);
    return TL_ERROR;
  }
  return TL_OK;
}

static int prepare(sqlite3 *db, const char *sql, sqlite3_stmt **st, tl_err *e) {
  if (sqlite3_prepare_v2(db, sql, -1, st, NULL) != SQLITE_OK)
    return tl_fail(e, "traceloom_compare: cannot publish the comparison: %s", sqlite3_errmsg(db));
  return TL_OK;
}

static int step_done(sqlite3 *db, sqlite3_stmt *st, const char *table, tl_err *e) {
  int rc = sqlite3_step(st);
  sqlite3_reset(st);
  if (rc != SQLITE_DONE)
    return tl_fail(e, "traceloom_compare: cannot write %s: %s", table, sqlite3_errmsg(db));
  return TL_OK;
}

static int has_relation(sqlite3 *db, const char *name) {
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(db, "SELECT 1 FROM main.sqlite_schema WHERE name = ?1", -1, &st, NULL))
    return 0;
  sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
  int found = sqlite3_step(st) == SQLITE_ROW;
  sqlite3_finalize(st);
  return found;
}

/* Drops the earlier comparison (views first: they read the tables). */
static int drop_previous(sqlite3 *db, tl_err *e) {
  sqlite3_stmt *st;
  if (prepare(db,
              "SELECT CASE type WHEN 'view' THEN 'DROP VIEW main.\"' ELSE 'DROP TABLE main.\"' END "
              "|| replace(name, '\"', '\"\"') || '\"' FROM main.sqlite_schema "
              "WHERE name LIKE 'traceloom\\_compare\\_%' ESCAPE '\\' AND type IN ('view', 'table') "
              "ORDER BY type = 'table', name",
              &st, e))
    return TL_ERROR;
  TL_VEC(char *) drops = {0};
  int rc = TL_OK, step;
  while (rc == TL_OK && (step = sqlite3_step(st)) == SQLITE_ROW) {
    char *sql = tl_strdup((const char *)sqlite3_column_text(st, 0));
    if (!sql || TL_VEC_PUSH(&drops, sql)) free(sql), rc = tl_nomem(e);
  }
  if (rc == TL_OK && step != SQLITE_DONE)
    rc = tl_fail(e, "traceloom_compare: cannot list the earlier comparison: %s", sqlite3_errmsg(db));
  sqlite3_finalize(st);
  for (size_t i = 0; rc == TL_OK && i < drops.n; i++) rc = exec(db, drops.v[i], e);
  for (size_t i = 0; i < drops.n; i++) free(drops.v[i]);
  TL_VEC_FREE(&drops);
  if (rc == TL_OK && has_relation(db, "traceloom_analysis_surface"))
    rc = exec(db, "DELETE FROM main.traceloom_analysis_surface WHERE surface_name LIKE "
                  "'traceloom\\_compare\\_%' ESCAPE '\\'", e);
  return rc;
}

/* Runs the embedded sql/compare files whose names start with prefix, in name order. */
static int run_sql(sqlite3 *db, const char *prefix, tl_err *e) {
  for (const tl_embedded_file *f = tl_embedded_files; f->name; f++)
    if (strncmp(f->name, prefix, strlen(prefix)) == 0 && exec(db, f->text, e)) return TL_ERROR;
  return TL_OK;
}

/* The `-- @surface name | grain | purpose | example` lines of sql/compare, into the catalog. */
static int register_surfaces(sqlite3 *db, tl_err *e) {
  if (!has_relation(db, "traceloom_analysis_surface")) return TL_OK;
  sqlite3_stmt *ins;
  if (prepare(db,
              "INSERT OR REPLACE INTO main.traceloom_analysis_surface(surface_name, relation_name, "
              "row_grain, purpose, example_sql) VALUES (trim(?1), trim(?1), trim(?2), trim(?3), "
              "trim(?4))",
              &ins, e))
    return TL_ERROR;
  int rc = TL_OK;
  for (const tl_embedded_file *f = tl_embedded_files; rc == TL_OK && f->name; f++) {
    if (strncmp(f->name, SQL_PREFIX, strlen(SQL_PREFIX)) != 0) continue;
    for (const char *p = f->text; rc == TL_OK && (p = strstr(p, "-- @surface ")) != NULL;) {
      p += strlen("-- @surface ");
      const char *eol = strchr(p, '\n');
      if (!eol) eol = p + strlen(p);
      for (int k = 1; k <= 4; k++) {
        const char *bar = k < 4 ? memchr(p, '|', (size_t)(eol - p)) : NULL;
        const char *end = bar ? bar : eol;
        sqlite3_bind_text(ins, k, p, (int)(end - p), SQLITE_STATIC);
        p = bar ? bar + 1 : eol;
      }
      rc = step_done(db, ins, "traceloom_analysis_surface", e);
      sqlite3_clear_bindings(ins);
    }
  }
  sqlite3_finalize(ins);
  return rc;
}

/* ------------------------------------------------------------------ rows */

#define NODE_COLUMNS                                                                         \
  "node_key, pair_id, parent_key, end_key, depth, alignment, node_type, label, path, family, " \
  "base_position_id, new_position_id, base_symbol, new_symbol, base_occurrences, "          \
  "new_occurrences, base_units, new_units, base_compute_ns, base_comm_ns, base_idle_ns, "    \
  "new_compute_ns, new_comm_ns, new_idle_ns, base_unit_stddev_ns, new_unit_stddev_ns, "     \
  "rate_ns, count_ns, structure_ns, noise, noise_threshold_ns"
#define NODE_NCOLS 31
#define NODE_TEXT_COLS                                                                       \
  ((1u << 5) | (1u << 6) | (1u << 7) | (1u << 8) | (1u << 9) | (1u << 10) | (1u << 11) |     \
   (1u << 12) | (1u << 13) | (1u << 29))

typedef struct node_fill {
  const cmp_result *r;
  size_t row;
} node_fill;

static int64_t round_ns(double ns) { return (int64_t)llround(ns); }

static const cmp_position *row_position(const cmp_side *s, int32_t node) {
  return node >= 0 ? &s->positions.v[s->nodes.v[node].position] : NULL;
}

static const char *alignment_name(const cmp_row *row) {
  return row->status == CMP_MATCHED ? tl_cmp_match_name(row->match)
                                    : tl_cmp_status_name(row->status);
}

/* The side's integers of one node: occurrences, units, costs, spread (columns at v[k..]). */
static void side_values(const cmp_side *s, int32_t node, int64_t *occ_units, int64_t *costs,
                        int64_t *spread, unsigned char *null_occ, unsigned char *null_costs,
                        unsigned char *null_spread) {
  if (node < 0) {
    null_occ[0] = null_occ[2] = 1;
    null_costs[0] = null_costs[1] = null_costs[2] = 1;
    *null_spread = 1;
    return;
  }
  const cmp_node *x = &s->nodes.v[node];
  occ_units[0] = x->occurrences, occ_units[2] = x->units;
  costs[0] = x->compute_ns, costs[1] = x->comm_ns, costs[2] = x->idle_ns;
  if (x->samples >= 2)
    *spread = round_ns(sqrt(x->m2 / (double)(x->samples - 1)));
  else
    *null_spread = 1;
}

static int fill_node(void *ctx, size_t k, int64_t *v, unsigned char *null) {
  node_fill *f = ctx;
  const cmp_result *r = f->r;
  const cmp_row *row = &r->rows.v[k];
  f->row = k;
  memset(null, 0, NODE_NCOLS);
  v[0] = (int64_t)k + 1;
  v[1] = row->pair + 1;
  if (row->parent >= 0) v[2] = row->parent + 1; else null[2] = 1;
  v[3] = row->end + 1;
  v[4] = row->depth;
  side_values(&r->base, row->b, &v[14], &v[18], &v[24], &null[14], &null[18], &null[24]);
  side_values(&r->fresh, row->n, &v[15], &v[21], &v[25], &null[15], &null[21], &null[25]);
  if (row->status == CMP_MATCHED) {
    v[26] = round_ns(row->rate_ns);
    v[27] = round_ns(row->count_ns);
    null[28] = 1;
    v[30] = round_ns(row->noise_threshold_ns);
  } else {
    null[26] = null[27] = null[29] = null[30] = 1;
    if (row->top) v[28] = round_ns(row->structure_ns); else null[28] = 1;
  }
  const cmp_position *pb = row_position(&r->base, row->b), *pn = row_position(&r->fresh, row->n);
  const cmp_position *p = pn ? pn : pb;
  if (p->type != CMP_ATOM) null[9] = null[12] = null[13] = 1;
  if (p->type == CMP_ATOM && tl_cmp_family_name(r->families, p->family) == NULL) null[9] = 1;
  if (!pb) null[10] = null[12] = 1;
  if (!pn) null[11] = null[13] = 1;
  return 0;
}

static void text_node(void *ctx, int col, const char **out, int *n) {
  const node_fill *f = ctx;
  const cmp_result *r = f->r;
  const cmp_row *row = &r->rows.v[f->row];
  const cmp_position *pb = row_position(&r->base, row->b), *pn = row_position(&r->fresh, row->n);
  const cmp_position *p = pn ? pn : pb;
  const char *s = NULL;
  *n = -1;
  switch (col) {
    case 5: s = alignment_name(row); break;
    case 6: s = tl_cmp_type_name(p->type); break;
    case 7: s = r->paths + row->label_off, *n = (int)row->label_len; break;
    case 8: s = r->paths ? r->paths + row->path_off : "", *n = (int)row->path_len; break;
    case 9: s = tl_cmp_family_name(r->families, p->family); break;
    case 10: s = tl_strpool_str(r->pool, pb->id); break;
    case 11: s = tl_strpool_str(r->pool, pn->id); break;
    case 12: s = tl_strpool_str(r->pool, pb->symbol); break;
    case 13: s = tl_strpool_str(r->pool, pn->symbol); break;
    case 29: s = tl_cmp_noise_name(row->noise); break;
  }
  *out = s ? s : "";
}

static int publish_nodes(sqlite3 *db, const cmp_result *r, tl_err *e) {
  node_fill f = {r, 0};
  tl_rows rows = {r->rows.n, NODE_NCOLS, fill_node, &f, NODE_TEXT_COLS, text_node};
  return tl_rows_insert(db, "traceloom_compare_node", NODE_COLUMNS, &rows, e);
}

static int publish_run(sqlite3 *db, const cmp_result *r, tl_err *e) {
  sqlite3_stmt *st;
  if (prepare(db,
              "INSERT INTO traceloom_compare_run(run_id, base_path, new_path, options_json, "
              "families_source, top_n, noise_z, tree_pairs, traceloom_version) "
              "VALUES (1, ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
              &st, e))
    return TL_ERROR;
  sqlite3_bind_text(st, 1, r->base.path, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 2, r->fresh.path, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 3, r->opt->canonical, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 4, tl_cmp_families_source(r->families), -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, 5, r->opt->top);
  sqlite3_bind_double(st, 6, r->opt->noise_z);
  sqlite3_bind_int64(st, 7, (int64_t)r->pairs.n);
  sqlite3_bind_text(st, 8, TRACELOOM_VERSION, -1, SQLITE_STATIC);
  int rc = step_done(db, st, "traceloom_compare_run", e);
  sqlite3_finalize(st);
  return rc;
}

static void bind_tree_side(sqlite3_stmt *st, int col, const cmp_side *s, int32_t tree) {
  if (tree < 0) {
    sqlite3_bind_null(st, col), sqlite3_bind_null(st, col + 1);
  } else {
    sqlite3_bind_int64(st, col, s->trees.v[tree].db_idx);
    sqlite3_bind_int64(st, col + 1, s->trees.v[tree].device_id);
  }
}

static int publish_trees(sqlite3 *db, const cmp_result *r, tl_err *e) {
  sqlite3_stmt *st;
  if (prepare(db,
              "INSERT INTO traceloom_compare_tree(pair_id, base_db_idx, base_device_id, new_db_idx, "
              "new_device_id, root_key, end_key, base_total_ns, new_total_ns, rate_ns, count_ns, "
              "added_ns, removed_ns, nodes_matched, nodes_matched_by_family, nodes_added, "
              "nodes_removed, alignment) "
              "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)",
              &st, e))
    return TL_ERROR;
  int rc = TL_OK;
  for (size_t k = 0; rc == TL_OK && k < r->pairs.n; k++) {
    const cmp_pair *p = &r->pairs.v[k];
    const cmp_row *root = &r->rows.v[p->row0];
    /* The effect sums are of the rounded node values, so the tables add up exactly. */
    int64_t rate = 0, count = 0, added = 0, removed = 0;
    for (int32_t i = p->row0; i < p->row_end; i++) {
      const cmp_row *row = &r->rows.v[i];
      if (row->status == CMP_MATCHED) {
        rate += round_ns(row->rate_ns), count += round_ns(row->count_ns);
      } else if (row->top) {
        if (row->status == CMP_ADDED) added += round_ns(row->structure_ns);
        else removed -= round_ns(row->structure_ns);
      }
    }
    sqlite3_bind_int64(st, 1, (int64_t)k + 1);
    bind_tree_side(st, 2, &r->base, p->base_tree);
    bind_tree_side(st, 4, &r->fresh, p->new_tree);
    sqlite3_bind_int64(st, 6, p->row0 + 1);
    sqlite3_bind_int64(st, 7, p->row_end + 1);
    sqlite3_bind_int64(st, 8, root->b >= 0 ? cmp_node_total(&r->base.nodes.v[root->b]) : 0);
    sqlite3_bind_int64(st, 9, root->n >= 0 ? cmp_node_total(&r->fresh.nodes.v[root->n]) : 0);
    sqlite3_bind_int64(st, 10, rate);
    sqlite3_bind_int64(st, 11, count);
    sqlite3_bind_int64(st, 12, added);
    sqlite3_bind_int64(st, 13, removed);
    sqlite3_bind_int64(st, 14, p->matched);
    sqlite3_bind_int64(st, 15, p->matched_family);
    sqlite3_bind_int64(st, 16, p->added);
    sqlite3_bind_int64(st, 17, p->removed);
    sqlite3_bind_text(st, 18, p->windowed ? "windowed" : "exact", -1, SQLITE_STATIC);
    rc = step_done(db, st, "traceloom_compare_tree", e);
  }
  sqlite3_finalize(st);
  return rc;
}

static int publish_ranks(sqlite3 *db, const cmp_result *r, tl_err *e) {
  sqlite3_stmt *st;
  if (prepare(db,
              "INSERT INTO traceloom_compare_rank(pair_id, rank, node_key, effect, contribution_ns) "
              "VALUES (?1, ?2, ?3, ?4, ?5)",
              &st, e))
    return TL_ERROR;
  int rc = TL_OK;
  for (size_t k = 0; rc == TL_OK && k < r->ranks.n; k++) {
    const cmp_rank *rk = &r->ranks.v[k];
    sqlite3_bind_int64(st, 1, rk->pair + 1);
    sqlite3_bind_int64(st, 2, rk->rank);
    sqlite3_bind_int64(st, 3, rk->row + 1);
    sqlite3_bind_text(st, 4, tl_cmp_effect_name(rk->effect), -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 5, round_ns(rk->contribution_ns));
    rc = step_done(db, st, "traceloom_compare_rank", e);
  }
  sqlite3_finalize(st);
  return rc;
}

/* One savepoint with a rollback guard (ext/publish/guard.h): a failure, an interrupt that
** stopped any statement included, leaves the earlier comparison exactly as it was. */
int tl_cmp_publish(sqlite3 *db, const cmp_result *r, tl_err *e) {
  tl_txn_guard guard;
  int rc = tl_guard_begin(&guard, db, "traceloom_compare", e);
  if (rc == TL_OK) rc = drop_previous(db, e);
  if (rc == TL_OK) rc = tl_guard_hold(&guard, e); /* after the drops */
  if (rc == TL_OK) rc = run_sql(db, SQL_PREFIX "00_", e);
  if (rc == TL_OK) rc = publish_run(db, r, e);
  if (rc == TL_OK) rc = publish_trees(db, r, e);
  if (rc == TL_OK) rc = publish_nodes(db, r, e);
  if (rc == TL_OK) rc = publish_ranks(db, r, e);
  if (rc == TL_OK) rc = run_sql(db, SQL_PREFIX "10_", e);
  if (rc == TL_OK) rc = register_surfaces(db, e);
  return tl_guard_end(&guard, rc, e);
}
