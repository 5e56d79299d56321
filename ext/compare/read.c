/*
** read.c: the tree relations of one published analysis, read into plain C arrays.
**
** Four public relations, each one scan (their documented columns only, never *_core):
**
**   traceloom_semantic_tree        one root position per (db_idx, device_id)
**   traceloom_viz_node             position type, symbol, label, repeat count
**   traceloom_position_refinement  which position fills each slot of a position
**   traceloom_position_occurrence  every occurrence: parent occurrence, slot, iteration, cost
**
** A tree node is the child of its parent's tree node at a slot, created when the first
** occurrence reaches it, so a position shared by two parents (one node per symbol) becomes two
** tree nodes, and in a one-node-per-slot analysis tree nodes and positions coincide. Costs
** come in as the view's microseconds (ns / 1000.0, exact to the ns below 2^42 us) and are
** summed back in int64 ns.
*/
#include "compare/compare_int.h"
#include "util/sort.h"
#include "source/sqlsrc.h"
#include "util/timing.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef TL_VEC(uint32_t) u32_vec;

typedef struct relation_need {
  const char *name;
  const char *const *columns;
} relation_need;

static const char *const TREE_COLS[] = {"db_idx", "device_id", "root_node_id", NULL};
static const char *const NODE_COLS[] = {"node_id", "db_idx", "device_id", "node_type", "symbol",
                                        "label", "repeat_count", NULL};
static const char *const REFINE_COLS[] = {"parent_position_id", "slot_ordinal", "child_position_id",
                                          "db_idx", "device_id", NULL};
static const char *const OCC_COLS[] = {"occurrence_n", "parent_n", "db_idx", "device_id",
                                       "slot_ordinal", "repeat_iteration", "compute_us", "comm_us",
                                       "idle_us", NULL};

static const relation_need NEEDS[] = {
    {"traceloom_semantic_tree", TREE_COLS},
    {"traceloom_viz_node", NODE_COLS},
    {"traceloom_position_refinement", REFINE_COLS},
    {"traceloom_position_occurrence", OCC_COLS},
};

/* Every relation and column the reader uses, or an error naming what is missing. */
static int check_schema(sqlite3 *db, const cmp_side *s, tl_err *e) {
  for (size_t i = 0; i < sizeof NEEDS / sizeof NEEDS[0]; i++) {
    tl_columns cols;
    if (tl_sql_columns(db, s->path, NEEDS[i].name, &cols, e)) return TL_ERROR;
    char *missing = NULL;
    int ok = cols.n > 0 && tl_columns_have(&cols, NEEDS[i].columns, 0, &missing);
    int absent = cols.n == 0;
    tl_columns_free(&cols);
    if (!ok) {
      int rc = absent ? tl_fail(e, "the %s analysis %s has no relation %s (expected a TraceLoom "
                                   "analysis database: run traceloom on the profile first)",
                                s->what, s->path, NEEDS[i].name)
                      : tl_fail(e, "the %s analysis %s: relation %s is missing column(s): %s "
                                   "(written by an older TraceLoom? re-run the analysis)",
                                s->what, s->path, NEEDS[i].name, missing ? missing : "?");
      free(missing);
      return rc;
    }
  }
  return TL_OK;
}

static int prepare(sqlite3 *db, const cmp_side *s, const char *sql, sqlite3_stmt **st, tl_err *e) {
  if (sqlite3_prepare_v2(db, sql, -1, st, NULL) != SQLITE_OK)
    return tl_fail(e, "cannot read the %s analysis %s: %s (%s)", s->what, s->path,
                   sqlite3_errmsg(db), sql);
  return TL_OK;
}

static int step_failed(sqlite3 *db, const cmp_side *s, const char *relation, tl_err *e) {
  return tl_fail(e, "cannot read %s of the %s analysis %s: %s", relation, s->what, s->path,
                 sqlite3_errmsg(db));
}

static int64_t tree_key(int64_t db_idx, int64_t device_id) {
  return (int64_t)(((uint64_t)db_idx << 32) ^ (uint64_t)(uint32_t)device_id);
}

static int find_tree(const tl_i64map *trees, int64_t db_idx, int64_t dev) {
  int64_t *t = tl_i64map_get(trees, tree_key(db_idx, dev));
  return t ? (int)*t : -1;
}

/* find_tree for a scan whose rows come tree by tree: the last answer is asked again. */
typedef struct tree_cache {
  int valid, tree;
  int64_t db_idx, dev;
} tree_cache;

static int find_tree_cached(const tl_i64map *trees, tree_cache *c, int64_t db_idx, int64_t dev) {
  if (!c->valid || c->db_idx != db_idx || c->dev != dev)
    c->valid = 1, c->db_idx = db_idx, c->dev = dev, c->tree = find_tree(trees, db_idx, dev);
  return c->tree;
}

/* The position of (tree, pool id), -1 none. */
static int32_t find_position(const cmp_side *s, int tree, uint32_t id) {
  int32_t p = id < s->position_of.n ? s->position_of.v[id] : -1;
  while (p >= 0 && s->positions.v[p].tree != tree) p = s->positions.v[p].next_same_id;
  return p;
}

/* Records the last of s->positions under its (tree, id); 0, or -1 on out-of-memory. */
static int index_position(cmp_side *s) {
  int32_t at = (int32_t)s->positions.n - 1;
  cmp_position *p = &s->positions.v[at];
  if (s->position_of.n <= p->id) {
    size_t old = s->position_of.n, want = (size_t)p->id + 1;
    if (TL_VEC_RESERVE(&s->position_of, want < 2 * old ? 2 * old : want)) return -1;
    for (size_t k = old; k < s->position_of.cap; k++) s->position_of.v[k] = -1;
    s->position_of.n = s->position_of.cap;
  }
  /* Appended at the chain's end: positions of one id stay in reading order. */
  int32_t *link = &s->position_of.v[p->id];
  while (*link >= 0) link = &s->positions.v[*link].next_same_id;
  *link = at;
  return 0;
}

static int intern_col(sqlite3_stmt *st, int col, tl_strpool *pool, uint32_t *out, tl_err *e) {
  const unsigned char *t = sqlite3_column_text(st, col);
  *out = t ? tl_strpool_intern(pool, (const char *)t, (size_t)sqlite3_column_bytes(st, col))
           : TL_STR_NONE;
  return *out == TL_STR_NOMEM ? tl_nomem(e) : TL_OK;
}

static cmp_type type_of(const char *node_type) {
  if (!node_type) return CMP_OTHER;
  if (strcasecmp(node_type, "Seq") == 0) return CMP_SEQ;
  if (strcasecmp(node_type, "Repeat") == 0) return CMP_REPEAT;
  if (strcasecmp(node_type, "Atom") == 0) return CMP_ATOM;
  return CMP_OTHER;
}

/* traceloom_semantic_tree: the trees, in (db_idx, device_id) order. Root positions are
** looked up once the positions are known (resolve_roots). */
static int read_trees(sqlite3 *db, cmp_side *s, tl_i64map *trees, u32_vec *root_ids,
                      tl_strpool *pool, tl_err *e) {
  sqlite3_stmt *st;
  if (prepare(db, s,
              "SELECT db_idx, device_id, root_node_id FROM traceloom_semantic_tree "
              "ORDER BY db_idx, device_id",
              &st, e))
    return TL_ERROR;
  int rc = TL_OK, step;
  while (rc == TL_OK && (step = sqlite3_step(st)) == SQLITE_ROW) {
    int64_t db_idx = sqlite3_column_int64(st, 0), dev = sqlite3_column_int64(st, 1);
    if (find_tree(trees, db_idx, dev) >= 0) continue; /* one tree per (db_idx, device) */
    uint32_t root;
    if (intern_col(st, 2, pool, &root, e)) {
      rc = TL_ERROR;
      break;
    }
    cmp_tree t = {db_idx, dev, -1, -1};
    if (TL_VEC_PUSH(&s->trees, t) || TL_VEC_PUSH(root_ids, root) ||
        tl_i64map_put(trees, tree_key(db_idx, dev), (int64_t)s->trees.n - 1))
      rc = tl_nomem(e);
  }
  if (rc == TL_OK && step != SQLITE_DONE) rc = step_failed(db, s, "traceloom_semantic_tree", e);
  sqlite3_finalize(st);
  if (rc == TL_OK && s->trees.n == 0)
    rc = tl_fail(e, "the %s analysis %s has no recovered tree (traceloom_semantic_tree is empty)",
                 s->what, s->path);
  return rc;
}

/* traceloom_viz_node: one position per (tree, node_id); the first row wins. */
static int read_positions(sqlite3 *db, cmp_side *s, const tl_i64map *trees, tl_strpool *pool,
                          const tl_cmp_families *fam, tl_err *e) {
  sqlite3_stmt *st;
  if (prepare(db, s,
              "SELECT node_id, db_idx, device_id, node_type, symbol, label, repeat_count "
              "FROM traceloom_viz_node",
              &st, e))
    return TL_ERROR;
  TL_VEC(int16_t) family_of = {0}; /* per symbol pool id, +2 (0: not yet looked up) */
  tree_cache tc = {0};
  int rc = TL_OK, step;
  while (rc == TL_OK && (step = sqlite3_step(st)) == SQLITE_ROW) {
    int tree = find_tree_cached(trees, &tc, sqlite3_column_int64(st, 1), sqlite3_column_int64(st, 2));
    if (tree < 0) continue;
    cmp_position p = {0};
    p.tree = tree, p.family = -1, p.next_same_id = -1;
    p.type = (uint8_t)type_of((const char *)sqlite3_column_text(st, 3));
    if (intern_col(st, 0, pool, &p.id, e) || intern_col(st, 5, pool, &p.label, e)) {
      rc = TL_ERROR;
      break;
    }
    if (find_position(s, tree, p.id) >= 0) continue;
    if (p.type == CMP_ATOM || p.type == CMP_OTHER) {
      if (intern_col(st, 4, pool, &p.symbol, e)) {
        rc = TL_ERROR;
        break;
      }
      if (p.symbol == TL_STR_NONE) p.symbol = p.label;
    }
    if (p.type == CMP_REPEAT) {
      p.repeat_count = sqlite3_column_int64(st, 6);
      if (p.repeat_count < 0 || p.repeat_count > INT32_MAX) p.repeat_count = 0; /* unknown */
    }
    if (p.type == CMP_ATOM && p.symbol != TL_STR_NONE) {
      if (family_of.n <= p.symbol) {
        size_t old = family_of.n;
        if (TL_VEC_RESERVE(&family_of, (size_t)p.symbol + 1)) {
          rc = tl_nomem(e);
          break;
        }
        memset(family_of.v + old, 0, ((size_t)p.symbol + 1 - old) * sizeof *family_of.v);
        family_of.n = (size_t)p.symbol + 1;
      }
      if (!family_of.v[p.symbol])
        family_of.v[p.symbol] = (int16_t)(tl_cmp_family_of(fam, tl_strpool_str(pool, p.symbol)) + 2);
      p.family = (int16_t)(family_of.v[p.symbol] - 2);
    }
    if (s->positions.n >= INT32_MAX || TL_VEC_PUSH(&s->positions, p) || index_position(s))
      rc = tl_nomem(e);
  }
  if (rc == TL_OK && step != SQLITE_DONE) rc = step_failed(db, s, "traceloom_viz_node", e);
  sqlite3_finalize(st);
  TL_VEC_FREE(&family_of);
  return rc;
}

static int lookup_position(const cmp_side *s, int tree, uint32_t id, const tl_strpool *pool,
                           const char *relation, int32_t *out, tl_err *e) {
  int32_t p = find_position(s, tree, id);
  if (p < 0)
    return tl_fail(e, "the %s analysis %s: %s names position %s of db %lld device %lld, which "
                      "traceloom_viz_node does not list",
                   s->what, s->path, relation, tl_strpool_str(pool, id),
                   (long long)s->trees.v[tree].db_idx, (long long)s->trees.v[tree].device_id);
  *out = p;
  return TL_OK;
}

/* Whether column col of the row is the text of pool string id. */
static int same_text(sqlite3_stmt *st, int col, const tl_strpool *pool, uint32_t id) {
  const unsigned char *t = sqlite3_column_text(st, col);
  size_t n = tl_strpool_len(pool, id);
  return t && (size_t)sqlite3_column_bytes(st, col) == n && memcmp(t, tl_strpool_str(pool, id), n) == 0;
}

/* traceloom_position_refinement: the children of every position, by slot (1..n). */
static int read_slots(sqlite3 *db, cmp_side *s, const tl_i64map *trees, tl_strpool *pool,
                      tl_err *e) {
  sqlite3_stmt *st;
  if (prepare(db, s,
              "SELECT parent_position_id, slot_ordinal, child_position_id, db_idx, device_id "
              "FROM traceloom_position_refinement",
              &st, e))
    return TL_ERROR;
  TL_VEC(uint64_t) keys = {0};
  TL_VEC(uint32_t) order = {0};
  TL_VEC(int32_t) child = {0};
  /* The slots of one parent come together: its id is looked up once per run of rows. The
  ** children mostly come in the order traceloom_viz_node listed them (both follow the
  ** positions' numbering): the position after the last child is tried first, by its text,
  ** before the id is interned and looked up. */
  int last_tree = -1;
  uint32_t pid = TL_STR_NONE;
  int32_t parent = -1, kid = -1;
  tree_cache tc = {0};
  int rc = TL_OK, step;
  while (rc == TL_OK && (step = sqlite3_step(st)) == SQLITE_ROW) {
    int tree = find_tree_cached(trees, &tc, sqlite3_column_int64(st, 3), sqlite3_column_int64(st, 4));
    if (tree < 0) continue;
    uint32_t cid;
    int64_t slot = sqlite3_column_int64(st, 1);
    int same = tree == last_tree && parent >= 0 && same_text(st, 0, pool, pid);
    int32_t next = kid + 1;
    int guessed = next < (int32_t)s->positions.n && s->positions.v[next].tree == tree &&
                  same_text(st, 2, pool, s->positions.v[next].id);
    if ((!same && (intern_col(st, 0, pool, &pid, e) ||
                   lookup_position(s, tree, pid, pool, "traceloom_position_refinement", &parent,
                                   e))) ||
        (!guessed && (intern_col(st, 2, pool, &cid, e) ||
                      lookup_position(s, tree, cid, pool, "traceloom_position_refinement", &kid,
                                      e)))) {
      rc = TL_ERROR;
      break;
    }
    if (guessed) kid = next;
    last_tree = tree;
    if (slot < 1 || slot > INT32_MAX) {
      rc = tl_fail(e, "the %s analysis %s: traceloom_position_refinement slot_ordinal %lld of "
                      "position %s is not a positive slot number",
                   s->what, s->path, (long long)slot, tl_strpool_str(pool, pid));
      break;
    }
    uint32_t at = (uint32_t)order.n;
    if (TL_VEC_PUSH(&keys, ((uint64_t)(uint32_t)parent << 32) | (uint64_t)slot) ||
        TL_VEC_PUSH(&order, at) || TL_VEC_PUSH(&child, kid))
      rc = tl_nomem(e);
  }
  if (rc == TL_OK && step != SQLITE_DONE)
    rc = step_failed(db, s, "traceloom_position_refinement", e);
  sqlite3_finalize(st);
  if (rc == TL_OK && keys.n && tl_radix_sort_u64(keys.v, order.v, keys.n)) rc = tl_nomem(e);
  if (rc == TL_OK && TL_VEC_RESERVE(&s->slot_child, keys.n)) rc = tl_nomem(e);
  int32_t current = -1;
  for (size_t i = 0; rc == TL_OK && i < keys.n; i++) {
    int32_t parent = (int32_t)(keys.v[i] >> 32);
    int64_t slot = (int64_t)(keys.v[i] & 0xffffffffu);
    cmp_position *p = &s->positions.v[parent];
    if (parent != current) current = parent, p->slot0 = (int32_t)s->slot_child.n, p->nslots = 0;
    if (slot != (int64_t)p->nslots + 1) {
      rc = tl_fail(e, "the %s analysis %s: the slots of position %s in "
                      "traceloom_position_refinement are not 1..n (slot %lld %s)",
                   s->what, s->path, tl_strpool_str(pool, p->id), (long long)slot,
                   slot <= p->nslots ? "is listed twice" : "follows a gap");
      break;
    }
    p->nslots++;
    s->slot_child.v[s->slot_child.n++] = child.v[order.v[i]];
  }
  TL_VEC_FREE(&keys);
  TL_VEC_FREE(&order);
  TL_VEC_FREE(&child);
  return rc;
}

/* ------------------------------------------------------------------ occurrences */

typedef struct occ_rows {
  size_t n;
  int64_t *number;        /* occurrence_n */
  int64_t *parent;        /* parent occurrence_n, -1: root; then the parent's index */
  int32_t *tree;          /* a root's tree (-1: not listed, skipped); children: -1, their parent's */
  int32_t *slot, *node;
  int64_t *iteration;     /* repeat_iteration, -1 when NULL */
  int64_t *compute, *comm, *idle;
} occ_rows;

static void occ_free(occ_rows *o) {
  free(o->number), free(o->parent), free(o->tree), free(o->slot), free(o->node);
  free(o->iteration), free(o->compute), free(o->comm), free(o->idle);
  memset(o, 0, sizeof *o);
}

/* Grows one column to cap elements of size elem; 0, or -1 on out-of-memory. */
static int grow(void **col, size_t cap, size_t elem) {
  void *q = realloc(*col, cap * elem);
  if (!q) return -1;
  *col = q;
  return 0;
}

static int occ_grow(occ_rows *o, size_t cap) {
  return grow((void **)&o->number, cap, sizeof *o->number) ||
         grow((void **)&o->parent, cap, sizeof *o->parent) ||
         grow((void **)&o->tree, cap, sizeof *o->tree) ||
         grow((void **)&o->slot, cap, sizeof *o->slot) ||
         grow((void **)&o->node, cap, sizeof *o->node) ||
         grow((void **)&o->iteration, cap, sizeof *o->iteration) ||
         grow((void **)&o->compute, cap, sizeof *o->compute) ||
         grow((void **)&o->comm, cap, sizeof *o->comm) ||
         grow((void **)&o->idle, cap, sizeof *o->idle);
}

/* Costs are non-negative and below 2^46 ns (19.5 hours) per occurrence, so no sum of them
** over the occurrences one process can hold overflows; anything else is a damaged analysis. */
#define MAX_OCCURRENCE_NS ((double)(INT64_C(1) << 46))

static int cost_ns(const cmp_side *s, sqlite3_stmt *st, int col, int64_t *out, tl_err *e) {
  double ns = sqlite3_column_double(st, col) * 1000.0;
  if (!(ns >= 0 && ns <= MAX_OCCURRENCE_NS))
    return tl_fail(e, "the %s analysis %s: traceloom_position_occurrence %s of occurrence %lld "
                      "is %g us (expected a duration from 0 to 2^46 ns)",
                   s->what, s->path, sqlite3_column_name(st, col),
                   (long long)sqlite3_column_int64(st, 0), sqlite3_column_double(st, col));
  *out = (int64_t)llround(ns);
  return TL_OK;
}

#define MAX_SIZE_HINT (INT64_C(1) << 26) /* occurrences: 64M rows of ~60 bytes */

#define NODE_UNPLACED -1
#define NODE_SKIPPED -2 /* under a root whose tree traceloom_semantic_tree does not list */

/* One scan in occurrence_n order. Columns are kept few (each is an API call per row): the
** tree is read for roots only, NULLs become 0 / -1 in SQL. */
static int read_occurrences(sqlite3 *db, cmp_side *s, const tl_i64map *trees, occ_rows *o,
                            tl_err *e) {
  sqlite3_stmt *st;
  if (prepare(db, s,
              "SELECT occurrence_n, COALESCE(parent_n, 0), slot_ordinal, "
              "COALESCE(repeat_iteration, -1), compute_us, comm_us, idle_us, "
              "CASE WHEN parent_n IS NULL THEN db_idx END, "
              "CASE WHEN parent_n IS NULL THEN device_id END "
              "FROM traceloom_position_occurrence ORDER BY occurrence_n",
              &st, e))
    return TL_ERROR;
  /* Sized once from the largest occurrence_n (occurrences are numbered 1..n as published):
  ** growing copies and faults pages. Not count(*): the relation is a join, which count(*)
  ** scans whole (a third of the read), while max() reads one row at the end of its key. A
  ** number past MAX_SIZE_HINT is no hint; the arrays then grow as they fill. */
  sqlite3_stmt *count;
  size_t cap = 0;
  if (prepare(db, s, "SELECT max(occurrence_n) FROM traceloom_position_occurrence", &count, e))
    return sqlite3_finalize(st), TL_ERROR;
  if (sqlite3_step(count) == SQLITE_ROW) {
    int64_t last = sqlite3_column_int64(count, 0);
    if (last > 0 && last <= MAX_SIZE_HINT) cap = (size_t)last + 1;
  }
  sqlite3_finalize(count);
  if (cap > 1 && occ_grow(o, cap)) return sqlite3_finalize(st), tl_nomem(e);
  int rc = TL_OK, step;
  while (rc == TL_OK && (step = sqlite3_step(st)) == SQLITE_ROW) {
    if (o->n == cap) {
      cap = cap ? cap * 2 : 4096;
      if (occ_grow(o, cap)) {
        rc = tl_nomem(e);
        break;
      }
    }
    size_t i = o->n++;
    o->number[i] = sqlite3_column_int64(st, 0);
    int64_t parent = sqlite3_column_int64(st, 1);
    o->parent[i] = parent > 0 ? parent : -1;
    o->tree[i] = parent > 0 ? -1
                            : find_tree(trees, sqlite3_column_int64(st, 7), sqlite3_column_int64(st, 8));
    int64_t slot = sqlite3_column_int64(st, 2);
    o->slot[i] = slot < 0 || slot > INT32_MAX ? -1 : (int32_t)slot;
    o->node[i] = parent > 0 || o->tree[i] >= 0 ? NODE_UNPLACED : NODE_SKIPPED;
    o->iteration[i] = sqlite3_column_int64(st, 3);
    if (cost_ns(s, st, 4, &o->compute[i], e) || cost_ns(s, st, 5, &o->comm[i], e) ||
        cost_ns(s, st, 6, &o->idle[i], e))
      rc = TL_ERROR;
  }
  if (rc == TL_OK && step != SQLITE_DONE)
    rc = step_failed(db, s, "traceloom_position_occurrence", e);
  sqlite3_finalize(st);
  if (rc != TL_OK) return rc;
  /* Parent numbers -> indices: direct when occurrence_n is 1..n in order (as published),
  ** through a map otherwise. */
  int dense = 1;
  for (size_t i = 0; dense && i < o->n; i++) dense = o->number[i] == (int64_t)i + 1;
  tl_i64map index = {0};
  for (size_t i = 0; !dense && i < o->n; i++)
    if (tl_i64map_put(&index, o->number[i], (int64_t)i)) return tl_i64map_free(&index), tl_nomem(e);
  for (size_t i = 0; rc == TL_OK && i < o->n; i++) {
    if (o->parent[i] < 0) continue;
    int64_t p = -1;
    if (dense) {
      if (o->parent[i] <= (int64_t)o->n) p = o->parent[i] - 1;
    } else {
      int64_t *q = tl_i64map_get(&index, o->parent[i]);
      if (q) p = *q;
    }
    if (p < 0 || p == (int64_t)i)
      rc = tl_fail(e, "the %s analysis %s: occurrence %lld has parent_n %lld, which is no "
                      "other occurrence",
                   s->what, s->path, (long long)o->number[i], (long long)o->parent[i]);
    o->parent[i] = p;
  }
  tl_i64map_free(&index);
  return rc;
}

/* A new tree node for position pos under parent at slot; its child slots start empty. */
static int new_node(cmp_side *s, int32_t pos, int32_t parent, int32_t slot, int32_t *out,
                    tl_err *e) {
  const cmp_position *p = &s->positions.v[pos];
  cmp_node n = {0};
  n.position = pos, n.parent = parent, n.slot = slot;
  n.child0 = (int32_t)s->node_child.n;
  if (s->nodes.n >= INT32_MAX || TL_VEC_RESERVE(&s->node_child, s->node_child.n + (size_t)p->nslots))
    return tl_nomem(e);
  for (int32_t k = 0; k < p->nslots; k++) s->node_child.v[s->node_child.n++] = -1;
  if (TL_VEC_PUSH(&s->nodes, n)) return tl_nomem(e);
  *out = (int32_t)s->nodes.n - 1;
  return TL_OK;
}

/* The tree node of occurrence i, once its parent's is known. */
static int place(cmp_side *s, occ_rows *o, size_t i, const tl_strpool *pool, tl_err *e) {
  if (o->parent[i] < 0) {
    cmp_tree *t = &s->trees.v[o->tree[i]];
    if (t->root_node < 0 && new_node(s, t->root_position, -1, 0, &t->root_node, e)) return TL_ERROR;
    o->node[i] = t->root_node;
    return TL_OK;
  }
  int32_t parent = o->node[o->parent[i]];
  if (parent == NODE_SKIPPED) return o->node[i] = NODE_SKIPPED, TL_OK;
  const cmp_position *pp = &s->positions.v[s->nodes.v[parent].position];
  if (o->slot[i] < 1 || o->slot[i] > pp->nslots)
    return tl_fail(e, "the %s analysis %s: occurrence %lld is in slot %d of position %s, which "
                      "has %d slot(s) in traceloom_position_refinement",
                   s->what, s->path, (long long)o->number[i], (int)o->slot[i],
                   tl_strpool_str(pool, pp->id), (int)pp->nslots);
  size_t at = (size_t)s->nodes.v[parent].child0 + (size_t)o->slot[i] - 1;
  if (s->node_child.v[at] < 0) {
    int32_t kid;
    if (new_node(s, s->slot_child.v[pp->slot0 + o->slot[i] - 1], parent, o->slot[i], &kid, e))
      return TL_ERROR;
    s->node_child.v[at] = kid;
  }
  o->node[i] = s->node_child.v[at];
  return TL_OK;
}

static void welford(cmp_node *n, double x) {
  n->samples++;
  double d = x - n->mean;
  n->mean += d / (double)n->samples;
  n->m2 += d * (x - n->mean);
}

/* Places every occurrence and sums it into its tree node. A child of a Repeat occurrence also
** adds to that occurrence's iteration: (parent, iteration) keys, sorted, give one per-iteration
** total per group, the Repeat's unit samples. */
static int build_nodes(cmp_side *s, occ_rows *o, const tl_strpool *pool, tl_err *e) {
  TL_VEC(size_t) stack = {0};
  TL_VEC(uint64_t) keys = {0};
  TL_VEC(uint32_t) order = {0};
  TL_VEC(int64_t) totals = {0};
  int rc = TL_OK;
  for (size_t i = 0; rc == TL_OK && i < o->n; i++) {
    if (o->node[i] != NODE_UNPLACED) continue;
    /* Parents are published before their children; a parent listed later is placed first. */
    stack.n = 0;
    if (TL_VEC_PUSH(&stack, i)) rc = tl_nomem(e);
    while (rc == TL_OK && stack.n) {
      size_t k = stack.v[stack.n - 1];
      int64_t p = o->parent[k];
      if (p >= 0 && o->node[p] == NODE_UNPLACED) {
        if (stack.n > o->n)
          rc = tl_fail(e, "the %s analysis %s: the parents of occurrence %lld form a cycle",
                       s->what, s->path, (long long)o->number[k]);
        else if (TL_VEC_PUSH(&stack, (size_t)p))
          rc = tl_nomem(e);
        continue;
      }
      stack.n--;
      if (o->node[k] != NODE_UNPLACED) continue;
      if (place(s, o, k, pool, e)) {
        rc = TL_ERROR;
        break;
      }
      if (o->node[k] == NODE_SKIPPED) continue;
      cmp_node *n = &s->nodes.v[o->node[k]];
      int64_t total = o->compute[k] + o->comm[k] + o->idle[k];
      n->occurrences++;
      int64_t both, all;
      if (__builtin_add_overflow(n->compute_ns, o->compute[k], &n->compute_ns) ||
          __builtin_add_overflow(n->comm_ns, o->comm[k], &n->comm_ns) ||
          __builtin_add_overflow(n->idle_ns, o->idle[k], &n->idle_ns) ||
          __builtin_add_overflow(n->compute_ns, n->comm_ns, &both) ||
          __builtin_add_overflow(both, n->idle_ns, &all)) {
        rc = tl_fail(e, "the %s analysis %s: the costs of position %s overflow 64-bit ns",
                     s->what, s->path, tl_strpool_str(pool, s->positions.v[n->position].id));
        break;
      }
      if (s->positions.v[n->position].type != CMP_REPEAT) {
        n->units++;
        welford(n, (double)total);
      }
      if (p >= 0 && s->positions.v[s->nodes.v[o->node[p]].position].type == CMP_REPEAT) {
        if (o->iteration[k] < 1 || o->iteration[k] > UINT32_MAX || p > UINT32_MAX) {
          rc = tl_fail(e, "the %s analysis %s: occurrence %lld under a Repeat has "
                          "repeat_iteration %lld (expected an iteration number from 1)",
                       s->what, s->path, (long long)o->number[k], (long long)o->iteration[k]);
          break;
        }
        uint32_t at = (uint32_t)order.n;
        if (TL_VEC_PUSH(&keys, ((uint64_t)p << 32) | (uint64_t)o->iteration[k]) ||
            TL_VEC_PUSH(&order, at) || TL_VEC_PUSH(&totals, total))
          rc = tl_nomem(e);
      }
    }
  }
  if (rc == TL_OK && keys.n && tl_radix_sort_u64(keys.v, order.v, keys.n)) rc = tl_nomem(e);
  for (size_t i = 0; rc == TL_OK && i < keys.n;) {
    size_t j = i;
    int64_t sum = 0;
    while (j < keys.n && keys.v[j] == keys.v[i])
      if (__builtin_add_overflow(sum, totals.v[order.v[j++]], &sum))
        rc = tl_fail(e, "the %s analysis %s: an iteration's cost overflows 64-bit ns", s->what,
                     s->path);
    cmp_node *n = &s->nodes.v[o->node[keys.v[i] >> 32]];
    n->units++;
    welford(n, (double)sum);
    i = j;
  }
  /* A Repeat none of whose children was reached still counts its iterations. */
  for (size_t k = 0; rc == TL_OK && k < s->nodes.n; k++) {
    cmp_node *n = &s->nodes.v[k];
    const cmp_position *p = &s->positions.v[n->position];
    if (p->type == CMP_REPEAT && n->units == 0) n->units = n->occurrences * (p->repeat_count > 0 ? p->repeat_count : 1);
  }
  TL_VEC_FREE(&stack);
  TL_VEC_FREE(&keys);
  TL_VEC_FREE(&order);
  TL_VEC_FREE(&totals);
  return rc;
}

int tl_cmp_read(sqlite3 *db, cmp_side *s, tl_strpool *pool, const tl_cmp_families *fam,
                tl_err *e) {
  tl_i64map trees = {0};
  u32_vec root_ids = {0};
  occ_rows o = {0};
  tl_timer tm; /* TRACELOOM_TIMING=1: the steps of one side's read */
  tl_timer_start(&tm, "compare read");
  int rc = check_schema(db, s, e);
  if (rc == TL_OK) rc = read_trees(db, s, &trees, &root_ids, pool, e);
  if (rc == TL_OK) rc = read_positions(db, s, &trees, pool, fam, e);
  for (size_t t = 0; rc == TL_OK && t < s->trees.n; t++)
    rc = lookup_position(s, (int)t, root_ids.v[t], pool, "traceloom_semantic_tree",
                         &s->trees.v[t].root_position, e);
  tl_timer_mark(&tm, "positions");
  if (rc == TL_OK) rc = read_slots(db, s, &trees, pool, e);
  tl_timer_mark(&tm, "slots");
  if (rc == TL_OK) rc = read_occurrences(db, s, &trees, &o, e);
  tl_timer_mark(&tm, "occurrences");
  if (rc == TL_OK) rc = build_nodes(s, &o, pool, e);
  tl_timer_mark(&tm, "nodes");
  occ_free(&o);
  TL_VEC_FREE(&root_ids);
  tl_i64map_free(&trees);
  return rc;
}

void tl_cmp_side_free(cmp_side *s) {
  if (s->hist)
    for (size_t i = 0; i < s->nodes.n; i++) free(s->hist[i]);
  free(s->hist);
  TL_VEC_FREE(&s->trees);
  TL_VEC_FREE(&s->positions);
  TL_VEC_FREE(&s->position_of);
  TL_VEC_FREE(&s->slot_child);
  TL_VEC_FREE(&s->nodes);
  TL_VEC_FREE(&s->node_child);
  s->hist = NULL;
}
