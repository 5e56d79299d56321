/*
** pf_read.c: the read API of the Perfetto export (pf.h): what a timeline draws, read from
** an analysis into plain arrays.
**
** Two readings give the same arrays, string ids and bytes:
**   - the stored core (core_path, the default for an analysis of this version): the tree
**     nodes, occurrences, anchors, events, runtime calls and relations from their *_core
**     tables and shapes (sql/schema/10_events.sql, 30_structure.sql), by integer keys, one
**     sequential pass each, deriving here what the public views derive from them (each
**     derivation names the view it mirrors); the views' per-row subqueries and text were
**     two thirds of the export's CPU;
**   - the public views (TRACELOOM_EXPORT_READ=views, or an analysis without those core
**     columns): traceloom_v_tree_node, traceloom_position_occurrence, traceloom_anchor,
**     traceloom_event, traceloom_runtime_call, traceloom_runtime_device_relation, each in
**     one pass joined in C by its integer keys; columns the views compute with subqueries
**     (paths and repeat contexts of atoms) are not asked for.
** tests/python/test_perfetto.py exports every fixture both ways and compares the bytes, so
** the two cannot drift. Replay members (traceloom_graph_body_member, traceloom_graph_launch)
** and the context views are read from the views either way.
*/
#include "export/pf.h"
#include "util/sha256.h"
#include "util/timing.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Small helpers ------------------------------------------------------------------- */

/* Keys above this many times the entries so far (plus a floor) make the map sparse. */
#define DENSE_SLACK 8
#define DENSE_FLOOR (1 << 22)

static int imap_to_sparse(pf_imap *m) {
  for (size_t k = 0; k < m->cap; k++)
    if (m->v[k] != PF_IMAP_NONE && tl_i64map_put(&m->map, (int64_t)k, m->v[k])) return -1;
  free(m->v);
  m->v = NULL, m->cap = 0, m->sparse = 1;
  return 0;
}

int pf_imap_put_slow(pf_imap *m, int64_t key, int64_t val) {
  if (!m->sparse && (key < 0 || (uint64_t)key >= DENSE_SLACK * (uint64_t)m->n + DENSE_FLOOR) &&
      (key < 0 || (size_t)key >= m->cap) && imap_to_sparse(m))
    return -1;
  if (m->sparse) {
    if (!tl_i64map_get(&m->map, key)) m->n++;
    return tl_i64map_put(&m->map, key, val);
  }
  if ((size_t)key >= m->cap) {
    size_t cap = m->cap ? m->cap : 1024;
    while (cap <= (size_t)key) cap *= 2;
    int64_t *g = realloc(m->v, cap * sizeof *g);
    if (!g) return -1;
    for (size_t k = m->cap; k < cap; k++) g[k] = PF_IMAP_NONE;
    m->v = g, m->cap = cap;
  }
  if (m->v[key] == PF_IMAP_NONE) m->n++;
  m->v[key] = val;
  return 0;
}

int pf_imap_reserve(pf_imap *m, size_t cap) {
  if (m->sparse || cap <= m->cap) return 0;
  int64_t *g = realloc(m->v, cap * sizeof *g);
  if (!g) return -1;
  tl_vec_prefault_(g, cap, m->cap, cap, sizeof *g); /* every slot is written just below */
  for (size_t k = m->cap; k < cap; k++) g[k] = PF_IMAP_NONE;
  m->v = g, m->cap = cap;
  return 0;
}

void pf_imap_free(pf_imap *m) {
  free(m->v);
  tl_i64map_free(&m->map);
  memset(m, 0, sizeof *m);
}

int pf_has_relation(sqlite3 *db, const char *name) {
  sqlite3_stmt *st;
  if (sqlite3_prepare_v2(db, "SELECT 1 FROM main.sqlite_schema WHERE type IN ('table', 'view') "
                             "AND name = ?1", -1, &st, NULL) != SQLITE_OK)
    return 0;
  sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
  int found = sqlite3_step(st) == SQLITE_ROW;
  sqlite3_finalize(st);
  return found;
}

/* 1 when table (or view) has that column. */
static int has_column(sqlite3 *db, const char *table, const char *column) {
  /* Unquoted: a double-quoted name that is no column would be read as a string literal. */
  char *sql = tl_mprintf("SELECT %s FROM main.\"%s\" LIMIT 0", column, table);
  sqlite3_stmt *st = NULL;
  int ok = sql && sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK;
  sqlite3_finalize(st);
  free(sql);
  return ok;
}

int pf_check_timeline(sqlite3 *db, const char *what, tl_err *e) {
  static const char *const need[] = {"traceloom_v_tree_node", "traceloom_tree_node_occurrence",
                                     "traceloom_metadata"};
  for (size_t i = 0; i < sizeof need / sizeof *need; i++) {
    if (!pf_has_relation(db, need[i]))
      return tl_fail(e, "traceloom_export_perfetto: %s has no relation %s: expected a "
                        "TraceLoom analysis database (run traceloom_analyze first)",
                     what, need[i]);
  }
  sqlite3_stmt *st;
  int rc = sqlite3_prepare_v2(db, "SELECT value FROM traceloom_metadata WHERE key = "
                                  "'artifact_kind'", -1, &st, NULL);
  if (rc != SQLITE_OK)
    return tl_fail(e, "traceloom_export_perfetto: cannot read traceloom_metadata of %s: %s",
                   what, sqlite3_errmsg(db));
  const char *kind = NULL;
  int ok = 0;
  if (sqlite3_step(st) == SQLITE_ROW) {
    kind = (const char *)sqlite3_column_text(st, 0);
    ok = kind && strcmp(kind, "queryable_database_timeline") == 0;
  }
  if (!ok)
    tl_fail(e, "traceloom_export_perfetto: %s has traceloom_metadata.artifact_kind = %s%s%s, "
               "expected 'queryable_database_timeline'",
            what, kind ? "'" : "", kind ? kind : "(missing)", kind ? "'" : "");
  sqlite3_finalize(st);
  return ok ? TL_OK : TL_ERROR;
}

typedef TL_VEC(int64_t) i64vec;

struct pump;

typedef struct rd {
  sqlite3 *db;
  pf_analysis *a;
  tl_err *e;
  int own;           /* db is the exporter's own connection, with PUMP_FN registered */
  struct pump *pump; /* the query each_row is feeding through PUMP_FN */
} rd;

static int prep(rd *r, const char *sql, sqlite3_stmt **st) {
  if (sqlite3_prepare_v2(r->db, sql, -1, st, NULL) != SQLITE_OK)
    return tl_fail(r->e, "traceloom_export_perfetto: cannot query the analysis: %s; sql=%s",
                   sqlite3_errmsg(r->db), sql);
  return TL_OK;
}

static int step_done(rd *r, int rc) {
  if (rc != SQLITE_DONE)
    return tl_fail(r->e, "traceloom_export_perfetto: reading the analysis failed: %s",
                   sqlite3_errmsg(r->db));
  return TL_OK;
}

/*
** Rows of the stored core, handed to a row function as the values of their columns. Most of
** the reading's CPU is SQLite's: stepping a row costs about what fetching its columns one
** sqlite3_column_* call at a time costs again (each call takes the statement's mutex, checks
** the column and converts). On a connection the exporter opened itself (the worker readers',
** PUMP_FN registered by pump_open), the rows are fed instead through an aggregate function
** of its own, `SELECT traceloom_pf_rows(cols) FROM table NOT INDEXED`: SQLite hands it the
** row's values as they are, one call per row, and nothing is returned (about half the CPU of
** the same rows through the column API). A full scan of a rowid table visits the rows in
** rowid order, which is the order asked of a key that is the INTEGER PRIMARY KEY; NOT
** INDEXED keeps the planner off any index, and where the order matters each row's key is
** checked (a row out of order fails the read rather than reorder the export). On the
** caller's connection (no function may be registered there while its statement runs) the
** same row function gets sqlite3_column_value of each column.
*/
#define PUMP_FN "traceloom_pf_rows"
#define PUMP_MAX_COLS 24

typedef int (*row_fn)(rd *r, void *ctx, sqlite3_value **v);

/* One query of each_row: SELECT cols FROM table [WHERE where] [ORDER BY key]. */
typedef struct row_query {
  const char *cols, *table, *where;
  const char *key; /* the INTEGER PRIMARY KEY rows must come in the order of (first column);
                   ** NULL: any order */
} row_query;

typedef struct pump {
  rd *r;
  const row_query *q;
  row_fn fn;
  void *ctx;
  int rc;
  int64_t last; /* key of the previous row (q->key) */
  int any;
} pump;

static void pump_step(sqlite3_context *cx, int n, sqlite3_value **v) {
  (void)n;
  pump *p = ((rd *)sqlite3_user_data(cx))->pump;
  if (!p || p->rc) return;
  if (p->q->key) {
    int64_t k = sqlite3_value_int64(v[0]);
    if (p->any && k <= p->last) {
      p->rc = tl_fail(p->r->e, "traceloom_export_perfetto: %s came out of %s order (%lld after "
                               "%lld)", p->q->table, p->q->key, (long long)k, (long long)p->last);
      return;
    }
    p->last = k, p->any = 1;
  }
  p->rc = p->fn(p->r, p->ctx, v);
}

static void pump_final(sqlite3_context *cx) { sqlite3_result_null(cx); }

/* Registers PUMP_FN on r's connection, which the exporter opened itself. */
static int pump_open(rd *r) {
  if (sqlite3_create_function(r->db, PUMP_FN, -1, SQLITE_UTF8 | SQLITE_DIRECTONLY, r, NULL,
                              pump_step, pump_final) != SQLITE_OK)
    return tl_fail(r->e, "traceloom_export_perfetto: cannot register %s: %s", PUMP_FN,
                   sqlite3_errmsg(r->db));
  return TL_OK;
}

/* Feeds every row of q to fn (see above); TL_ERROR when fn or SQLite failed. */
static int each_row(rd *r, const row_query *q, row_fn fn, void *ctx) {
  char *sql = r->own ? tl_mprintf("SELECT " PUMP_FN "(%s) FROM %s NOT INDEXED%s%s", q->cols,
                                  q->table, q->where ? " WHERE " : "", q->where ? q->where : "")
                     : tl_mprintf("SELECT %s FROM %s%s%s%s%s", q->cols, q->table,
                                  q->where ? " WHERE " : "", q->where ? q->where : "",
                                  q->key ? " ORDER BY " : "", q->key ? q->key : "");
  sqlite3_stmt *st;
  if (!sql) return tl_nomem(r->e);
  int err = prep(r, sql, &st), rc = SQLITE_DONE;
  free(sql);
  if (err) return err;
  if (r->own) {
    pump p = {r, q, fn, ctx, TL_OK, 0, 0};
    r->pump = &p;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {}
    r->pump = NULL;
    err = p.rc;
  } else {
    int n = sqlite3_column_count(st);
    sqlite3_value *v[PUMP_MAX_COLS];
    if (n > PUMP_MAX_COLS) err = tl_fail(r->e, "traceloom_export_perfetto: too many columns");
    while (!err && (rc = sqlite3_step(st)) == SQLITE_ROW) {
      for (int i = 0; i < n; i++) v[i] = sqlite3_column_value(st, i);
      err = fn(r, ctx, v);
    }
  }
  sqlite3_finalize(st);
  return err ? err : step_done(r, rc);
}

/* The columns a relation must have; names what is missing (an analysis of another version). */
static int need_columns(rd *r, const char *rel, const char *const *cols) {
  for (; *cols; cols++)
    if (!has_column(r->db, rel, *cols))
      return tl_fail(r->e, "traceloom_export_perfetto: %s has no column %s: the analysis was "
                           "written by another TraceLoom version; re-run the analysis",
                     rel, *cols);
  return TL_OK;
}

/* At most how many rows table holds, its INTEGER PRIMARY KEY key dense from 0 or 1 (the
** core tables' *_n): max(key) + 1, one b-tree descent; 0 when empty, unknown or beyond
** DENSE_ROWS_MAX. A capacity hint for the arrays filled row by row, reserved once instead of
** doubling: below glibc's mmap threshold each doubling copies an array into fresh pages
** (on the 1M-task bench, realloc's copies were 16% of the export's page faults). */
#define DENSE_ROWS_MAX ((int64_t)1 << 27)
static size_t dense_rows(rd *r, const char *table, const char *key) {
  char *sql = tl_mprintf("SELECT max(%s) FROM %s", key, table);
  sqlite3_stmt *st = NULL;
  int64_t n = 0;
  if (sql && sqlite3_prepare_v2(r->db, sql, -1, &st, NULL) == SQLITE_OK &&
      sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) == SQLITE_INTEGER)
    n = sqlite3_column_int64(st, 0) + 1;
  sqlite3_finalize(st);
  free(sql);
  return n > 0 && n <= DENSE_ROWS_MAX ? (size_t)n : 0;
}

static uint32_t col_intern(rd *r, sqlite3_stmt *st, int col) {
  const unsigned char *t = sqlite3_column_text(st, col);
  if (!t) return TL_STR_NONE;
  return tl_strpool_intern(r->a->pool, (const char *)t, (size_t)sqlite3_column_bytes(st, col));
}

/* Interns column col, reusing *last when the text is the same (neighbouring rows repeat). */
static uint32_t col_intern_last(rd *r, sqlite3_stmt *st, int col, uint32_t *last) {
  const char *t = (const char *)sqlite3_column_text(st, col);
  if (!t) return TL_STR_NONE;
  size_t n = (size_t)sqlite3_column_bytes(st, col);
  if (*last != TL_STR_NOMEM && tl_strpool_len(r->a->pool, *last) == n &&
      memcmp(tl_strpool_str(r->a->pool, *last), t, n) == 0)
    return *last;
  uint32_t id = tl_strpool_intern(r->a->pool, t, n);
  if (id != TL_STR_NOMEM) *last = id;
  return id;
}

/* A REAL microsecond column as integer ns (the views divide integer ns by 1000.0, so this
** is exact); NULL and non-finite as 0. */
static int64_t col_us_ns(sqlite3_stmt *st, int col) {
  if (sqlite3_column_type(st, col) == SQLITE_NULL) return 0;
  double x = sqlite3_column_double(st, col) * 1000.0;
  if (!isfinite(x) || fabs(x) > 9.0e18) return 0;
  return llround(x);
}

/* n of an id "<prefix><n>" (the ids the analysis writes), -1 otherwise. */
static int64_t id_number(const unsigned char *t, int bytes, const char *prefix) {
  size_t p = strlen(prefix), n = (size_t)bytes;
  if (!t || n <= p || n > p + 18 || memcmp(t, prefix, p) != 0) return -1;
  int64_t v = 0;
  for (size_t i = p; i < n; i++) {
    if (t[i] < '0' || t[i] > '9') return -1;
    v = v * 10 + (t[i] - '0');
  }
  return v;
}

int pf_kv_i64(pf_analysis *a, int key, int64_t v) {
  pf_kv kv = {key, PF_KV_I64, v, 0};
  return TL_VEC_PUSH(&a->kv, kv);
}

int pf_kv_i64n(pf_analysis *a, int key, int64_t v, int is_null) {
  pf_kv kv = {key, is_null ? PF_KV_NULL : PF_KV_I64, v, 0};
  return TL_VEC_PUSH(&a->kv, kv);
}

int pf_kv_us(pf_analysis *a, int key, int64_t ns) {
  pf_kv kv = {key, PF_KV_US, ns, 0};
  return TL_VEC_PUSH(&a->kv, kv);
}

int pf_kv_str(pf_analysis *a, int key, const char *s) {
  uint32_t id = s ? tl_strpool_intern_cstr(a->pool, s) : TL_STR_NONE;
  pf_kv kv = {key, s ? PF_KV_STR : PF_KV_NULL, 0, id};
  if (id == TL_STR_NOMEM) return -1;
  return TL_VEC_PUSH(&a->kv, kv);
}

/* ---- Tree nodes and motifs ----------------------------------------------------------- */

/* (db_idx, device_id) -> a small tree number, for the node lookup key. */
typedef struct tree_keys {
  tl_i64map by_pair; /* db << 32 | device (both 32-bit) -> tree number */
  int64_t n;
} tree_keys;

static int64_t tree_number(tree_keys *t, int64_t db, int64_t dev, int insert) {
  if (db < 0 || db > INT32_MAX || dev < INT32_MIN || dev > INT32_MAX) return -2;
  int64_t key = (int64_t)((uint64_t)db << 32 | (uint32_t)(int32_t)dev);
  int64_t *v = tl_i64map_get(&t->by_pair, key);
  if (v) return *v;
  if (!insert) return -1;
  if (tl_i64map_put(&t->by_pair, key, t->n)) return -3;
  return t->n++;
}

static int64_t node_key(uint32_t node_id, int64_t tree) {
  return (int64_t)((uint64_t)node_id << 24 | (uint64_t)tree);
}

/* What an occurrence read from the stored core needs of its node (the core path only). */
typedef struct core_node {
  int64_t token_len;    /* anchors per occurrence */
  int64_t first_anchor; /* its tree's first_anchor_n: token ordinals are anchor_n less it */
  int64_t first_occ, occ_count; /* its occurrences: occurrence_n in [first, first + count) */
  int64_t slot;         /* slot_ordinal in its parent */
  int64_t parent;       /* node index of its parent; -1: none */
  int node_kind;        /* node_core.node_kind (1 Atom: its occurrences are the anchor's) */
  uint32_t rooted;      /* its rooted_path in node_index.paths; TL_STR_NONE: NULL */
} core_node;

typedef struct node_index {
  tree_keys trees;
  tl_i64map by_key; /* node_key(node_id, tree) -> node index (report nodes) */
  /* Where the tree views give the integer node keys (node_n, parent_n: one node per
  ** structural position), nodes and occurrences are joined by them, no text. */
  int use_n;
  pf_imap by_n;     /* node_n -> node index */
  int defer;        /* occurrences read apart from the nodes: pf_occ.node holds node_n until
                    ** merge_occurrences */
  /* Read from the stored core (core_path): per node index what its occurrences need, and
  ** the rooted paths apart from the analysis pool (interned there in occurrence order). */
  int core;
  TL_VEC(core_node) cn;
  tl_strpool *paths;
} node_index;

/* A node row as read, before it is put in display order. */
typedef struct node_row {
  pf_node n;
  int64_t node_n, parent_n; /* -1: none (or not given) */
  core_node cn;             /* the core path only */
} node_row;
typedef TL_VEC(node_row) node_rows;

/* Display order of two nodes: (db_idx, device_id, view_name, display_order); 0: a tie. */
static int cmp_display(const pf_node *a, const pf_node *b, const tl_strpool *pool) {
  if (a->db != b->db) return a->db < b->db ? -1 : 1;
  if (a->dev != b->dev) return a->dev < b->dev ? -1 : 1;
  if (a->view != b->view) {
    int c = strcmp(tl_strpool_str(pool, a->view), tl_strpool_str(pool, b->view));
    if (c) return c;
  }
  if (a->display_order != b->display_order) return a->display_order < b->display_order ? -1 : 1;
  return 0;
}

/* Display order, then the order read (first_child holds it until the children are linked). */
static int cmp_node_row(const void *x, const void *y, void *ctx) {
  const node_row *a = x, *b = y;
  int c = cmp_display(&a->n, &b->n, ctx);
  if (c) return c;
  return a->n.first_child < b->n.first_child ? -1 : a->n.first_child > b->n.first_child;
}

/* Rows read out of display order, now sorted: their strings interned again in this order
** into a fresh pool (after the before - 1 strings interned ahead of them), so that the string
** ids, and the protobuf's interned ids, are those of rows read in order. */
static int reintern_in_order(pf_analysis *a, node_row *rows, size_t n, uint32_t before) {
  tl_strpool *p = tl_strpool_new();
  int err = p ? TL_OK : TL_ERROR;
  for (uint32_t i = 1; !err && i < before; i++)
    if (tl_strpool_intern(p, tl_strpool_str(a->pool, i), tl_strpool_len(a->pool, i)) != i)
      err = TL_ERROR;
  for (size_t k = 0; !err && k < n; k++) {
    pf_node *nd = &rows[k].n;
    uint32_t *f[] = {&nd->node_id, &nd->parent, &nd->local, &nd->label, &nd->category, &nd->view};
    for (size_t j = 0; !err && j < sizeof f / sizeof *f; j++) {
      if (*f[j] == TL_STR_NONE) continue;
      *f[j] = tl_strpool_intern(p, tl_strpool_str(a->pool, *f[j]), tl_strpool_len(a->pool, *f[j]));
      if (*f[j] == TL_STR_NOMEM) err = TL_ERROR;
    }
  }
  if (err) {
    tl_strpool_free(p);
    return TL_ERROR;
  }
  tl_strpool_free(a->pool);
  a->pool = p;
  return TL_OK;
}

/*
** traceloom_v_tree_node in display order. The view is read as it comes (in node_n order,
** which is the display order of the one-node-per-position model: a SQL ORDER BY would sort
** half a million rows for nothing) and sorted here only when it is not in order.
*/
static int node_rows_view(rd *r, node_index *ix, node_rows *out, int *in_order) {
  pf_analysis *a = r->a;
  sqlite3_stmt *st;
  /* With node_n the parent is linked below by parent_n (its text is its node_id). The kind
  ** is asked for only where node_type is NULL, the category (which names seq slices) only
  ** for nodes that are not atoms, each a lookup per row in the view; an atom's local id only
  ** where it has no label (the label names it): half a million strings not interned. */
#define NODE_ATOM "(node_type = 'Atom' OR (node_type IS NULL AND kind NOT IN ('seq', 'repeat')))"
#define NODE_COLS(parent)                                                                    \
  "SELECT node_id, " parent ", CASE WHEN " NODE_ATOM " AND label <> '' THEN NULL ELSE "        \
  "local_node_id END, CASE WHEN node_type IS NULL THEN kind END, node_type, label, "           \
  "CASE WHEN " NODE_ATOM " THEN NULL ELSE category END, db_idx, device_id, view_name, "        \
  "tree_depth, display_order, repeat_count, "
  if (prep(r, ix->use_n ? NODE_COLS("NULL") "node_n, parent_n FROM traceloom_v_tree_node"
                        : NODE_COLS("parent_node_id") "NULL, NULL FROM traceloom_v_tree_node",
           &st))
    return TL_ERROR;
#undef NODE_COLS
#undef NODE_ATOM
  node_rows rows = *out;
  uint32_t last_view = TL_STR_NOMEM, last_category = TL_STR_NOMEM;
  int rc, err = TL_OK, sorted = 1;
  while (!err && (rc = sqlite3_step(st)) == SQLITE_ROW) {
    node_row row;
    memset(&row, 0, sizeof row);
    pf_node *n = &row.n;
    n->node_id = col_intern(r, st, 0);
    n->parent = ix->use_n ? TL_STR_NONE : col_intern(r, st, 1);
    n->local = col_intern(r, st, 2);
    const char *kind = (const char *)sqlite3_column_text(st, 3);
    const char *type = (const char *)sqlite3_column_text(st, 4);
    n->label = col_intern(r, st, 5);
    n->category = col_intern_last(r, st, 6, &last_category);
    n->db = sqlite3_column_int64(st, 7);
    n->dev = sqlite3_column_int64(st, 8);
    n->view = col_intern_last(r, st, 9, &last_view);
    n->tree_depth = sqlite3_column_int64(st, 10);
    n->display_order = sqlite3_column_int64(st, 11);
    n->repeat_count = sqlite3_column_type(st, 12) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 12);
    if ((type && strcmp(type, "Repeat") == 0) || (!type && kind && strcmp(kind, "repeat") == 0))
      n->kind = PF_KIND_REPEAT;
    else if ((type && strcmp(type, "Atom") == 0) ||
             (!type && kind && strcmp(kind, "seq") != 0 && strcmp(kind, "repeat") != 0))
      n->kind = PF_KIND_ATOM;
    else
      n->kind = PF_KIND_SEQ;
    n->first_child = (int64_t)rows.n; /* the order read, until the children are linked */
    n->next_sibling = -1;
    n->motif = -1;
    row.node_n = sqlite3_column_type(st, 13) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 13);
    row.parent_n = sqlite3_column_type(st, 14) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 14);
    if (n->node_id == TL_STR_NOMEM || n->parent == TL_STR_NOMEM || n->local == TL_STR_NOMEM ||
        n->label == TL_STR_NOMEM || n->category == TL_STR_NOMEM || n->view == TL_STR_NOMEM ||
        TL_VEC_PUSH(&rows, row)) {
      err = tl_nomem(r->e);
      break;
    }
    if (sorted && rows.n > 1 && cmp_node_row(&rows.v[rows.n - 2], &rows.v[rows.n - 1], a->pool) > 0)
      sorted = 0;
  }
  sqlite3_finalize(st);
  if (!err && step_done(r, rc)) err = TL_ERROR;
  *out = rows, *in_order = sorted;
  return err;
}

/*
** The tree nodes from the stored core (core_path): traceloom_node_core with its shapes
** (traceloom_node_shape) and trees (traceloom_tree_core), derived as traceloom_v_tree_node
** derives them (sql/views/30_structure.sql over traceloom_viz_node): node_id
** 'node-[d<node_device>-]N%03d' and local_node_id 'N%03d' of local_n, display_order local_n,
** tree_depth depth, node_type / kind / label / category from the shape, whose category
** 'comm' the view reads as 'collective' and 'graph' by a graph-launch lookup (asked of
** traceloom_viz_node for that node: graph categories sit on atoms, whose category is not
** read); only nodes whose tree is in traceloom_tree_core (the view's inner join). The same
** strings are interned in the same order as node_rows_view interns the view's, so the
** string ids, and the bytes, are the same.
*/
typedef struct core_shape {
  int64_t id;
  uint32_t type, kind, label, category; /* in the shapes' own pool; TL_STR_NONE: NULL */
  /* label and category as ids of the analysis pool, interned at the first node of this
  ** shape (where reading the view row by row first interns them); TL_STR_NOMEM: not yet */
  uint32_t label_id, category_id;
} core_shape;
typedef TL_VEC(core_shape) core_shapes;

/* Reads the node shapes into shp (their text in pool). */
static int read_node_shapes(rd *r, tl_strpool *pool, core_shapes *shp, pf_imap *by_id) {
  sqlite3_stmt *st;
  if (prep(r, "SELECT shape_id, node_type, kind, label, category FROM traceloom_node_shape", &st))
    return TL_ERROR;
  int rc, err = TL_OK;
  while (!err && (rc = sqlite3_step(st)) == SQLITE_ROW) {
    core_shape s = {sqlite3_column_int64(st, 0), 0, 0, 0, 0, TL_STR_NOMEM, TL_STR_NOMEM};
    uint32_t *f[] = {&s.type, &s.kind, &s.label, &s.category};
    for (int k = 0; k < 4; k++) {
      const char *t = (const char *)sqlite3_column_text(st, k + 1);
      *f[k] = t ? tl_strpool_intern(pool, t, (size_t)sqlite3_column_bytes(st, k + 1)) : TL_STR_NONE;
      if (*f[k] == TL_STR_NOMEM) err = tl_nomem(r->e);
    }
    if (!err && (pf_imap_put(by_id, s.id, (int64_t)shp->n) || TL_VEC_PUSH(shp, s)))
      err = tl_nomem(r->e);
  }
  sqlite3_finalize(st);
  return err ? err : step_done(r, rc);
}

/* text of id in pool, NULL for TL_STR_NONE. */
static const char *pool_text(const tl_strpool *pool, uint32_t id) {
  return id == TL_STR_NONE ? NULL : tl_strpool_str(pool, id);
}

/* The category traceloom_viz_node gives a node that is not an atom (the shape's category
** cat, NULL: none), as an id in the analysis pool. */
static uint32_t core_category(rd *r, sqlite3_stmt **viz, int64_t node_n, const char *cat) {
  if (!cat) return TL_STR_NONE;
  if (strcmp(cat, "comm") == 0) return tl_strpool_intern_cstr(r->a->pool, "collective");
  if (strcmp(cat, "graph") != 0) return tl_strpool_intern_cstr(r->a->pool, cat);
  if (!*viz && prep(r, "SELECT category FROM traceloom_viz_node WHERE node_n = ?1", viz))
    return TL_STR_NOMEM;
  sqlite3_reset(*viz);
  sqlite3_bind_int64(*viz, 1, node_n);
  uint32_t id = TL_STR_NONE;
  if (sqlite3_step(*viz) == SQLITE_ROW) id = col_intern(r, *viz, 0);
  return id;
}

/* Writes v in decimal at p as printf's %0<width>lld does (the sign counts in the width);
** returns the end. */
static char *put_decimal(char *p, int64_t v, int width) {
  char tmp[24];
  int n = 0;
  uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
  do tmp[n++] = (char)('0' + u % 10), u /= 10;
  while (u);
  while (n < width - (v < 0)) tmp[n++] = '0';
  if (v < 0) *p++ = '-';
  while (n) *p++ = tmp[--n];
  return p;
}

/* node_id as the generated column formats it: printf('node-%sN%03d', COALESCE('d' ||
** node_device || '-', ''), local_n) (sql/views/00_indexes.sql), without printf: it is half
** a million ids. out holds at least 64 bytes; returns the length. */
static size_t node_id_text(char *out, int has_device, int64_t device, int64_t local) {
  char *p = out;
  memcpy(p, "node-", 5), p += 5;
  if (has_device) {
    *p++ = 'd';
    p = put_decimal(p, device, 1);
    *p++ = '-';
  }
  *p++ = 'N';
  p = put_decimal(p, local, 3);
  *p = 0;
  return (size_t)(p - out);
}

/* A tree's values its nodes take (traceloom_tree_core): a node's db_idx, device_id and
** node_device are its tree's (ext/structure writes both rows from the tree), so the half a
** million node rows are read without those three columns. */
typedef struct core_tree {
  int64_t first_anchor, db, dev, node_device;
  int has_node_device;
} core_tree;

/* What node_row needs while traceloom_node_core streams by. */
typedef struct node_core_rows {
  node_index *ix;
  uint32_t native;
  tl_strpool *spool; /* the shapes' text */
  core_shapes shp;
  pf_imap shape_by_id, tree_row; /* tree_n -> index into trees */
  TL_VEC(core_tree) trees;
  sqlite3_stmt *viz;
  /* While the rows come in display order (an analysis of this version), each goes straight
  ** where read_nodes would copy it (the nodes, by_n, cn, parent_n), not through rows: half a
  ** million rows of 190 bytes neither written twice nor first touched twice. The first row
  ** out of order moves those read so far into rows, which are then sorted as before. */
  int direct;
  size_t first;    /* a->nodes.n before the first row */
  i64vec *parent_n; /* read_nodes' parent_n */
  node_rows rows;
  int sorted;
} node_core_rows;

/* The rows that went straight to their places, back into x->rows (in the order read). */
static int undo_direct(rd *r, node_core_rows *x) {
  pf_analysis *a = r->a;
  node_index *ix = x->ix;
  x->direct = 0;
  if (TL_VEC_RESERVE(&x->rows, a->nodes.n - x->first)) return tl_nomem(r->e);
  for (size_t i = x->first, k = 0; i < a->nodes.n; i++, k++) {
    node_row row;
    memset(&row, 0, sizeof row);
    row.n = a->nodes.v[i];
    row.n.first_child = (int64_t)k;
    row.node_n = row.n.node_n;
    row.parent_n = x->parent_n->v[k];
    row.cn = ix->cn.v[k];
    x->rows.v[x->rows.n++] = row;
  }
  a->nodes.n = x->first, x->parent_n->n = 0, ix->cn.n = 0;
  pf_imap_free(&ix->by_n);
  return TL_OK;
}

static int tree_row(rd *r, void *arg, sqlite3_value **v) {
  node_core_rows *x = arg;
  core_tree t = {sqlite3_value_int64(v[1]), sqlite3_value_int64(v[2]), sqlite3_value_int64(v[3]),
                 sqlite3_value_int64(v[4]), sqlite3_value_type(v[4]) != SQLITE_NULL};
  if (pf_imap_put(&x->tree_row, sqlite3_value_int64(v[0]), (int64_t)x->trees.n) ||
      TL_VEC_PUSH(&x->trees, t))
    return tl_nomem(r->e);
  return TL_OK;
}

static int node_row_core(rd *r, void *arg, sqlite3_value **v) {
  node_core_rows *x = arg;
  pf_analysis *a = r->a;
  /* v: node_n, parent_n, local_n, node_kind, shape_id, depth, repeat_count, tree_n,
  ** token_len, first_occurrence_n, occurrence_count, slot_ordinal, rooted_path */
  const int64_t *ti = pf_imap_get(&x->tree_row, sqlite3_value_int64(v[7]));
  if (!ti) return TL_OK; /* no tree row: the view's inner join leaves it out */
  const core_tree *tr = &x->trees.v[*ti];
  node_row row;
  memset(&row, 0, sizeof row);
  pf_node *n = &row.n;
  const int64_t *si = pf_imap_get(&x->shape_by_id, sqlite3_value_int64(v[4]));
  core_shape *sh = si ? &x->shp.v[*si] : NULL;
  const char *type = sh ? pool_text(x->spool, sh->type) : NULL;
  const char *kind = sh ? pool_text(x->spool, sh->kind) : NULL;
  const char *label = sh ? pool_text(x->spool, sh->label) : NULL;
  int atom = type ? strcmp(type, "Atom") == 0
                  : kind && strcmp(kind, "seq") != 0 && strcmp(kind, "repeat") != 0;
  int64_t local = sqlite3_value_int64(v[2]);
  char id[96];
  size_t len = node_id_text(id, tr->has_node_device, tr->node_device, local);
  n->node_id = tl_strpool_intern(a->pool, id, len);
  n->parent = TL_STR_NONE;
  if (atom && label && *label) {
    n->local = TL_STR_NONE;
  } else { /* local_node_id: the id's tail from its 'N' */
    const char *tail = strrchr(id, 'N');
    n->local = tl_strpool_intern(a->pool, tail, len - (size_t)(tail - id));
  }
  if (sh && sh->label_id == TL_STR_NOMEM && label)
    sh->label_id = tl_strpool_intern_cstr(a->pool, label);
  n->label = label ? sh->label_id : TL_STR_NONE;
  const char *cat = sh && !atom ? pool_text(x->spool, sh->category) : NULL;
  if (cat && strcmp(cat, "graph") == 0) { /* per node: the view looks its launch up */
    n->category = core_category(r, &x->viz, sqlite3_value_int64(v[0]), cat);
  } else if (cat) {
    if (sh->category_id == TL_STR_NOMEM)
      sh->category_id = core_category(r, &x->viz, sqlite3_value_int64(v[0]), cat);
    n->category = sh->category_id;
  } else {
    n->category = TL_STR_NONE;
  }
  n->view = x->native;
  n->db = tr->db;
  n->dev = tr->dev;
  n->tree_depth = sqlite3_value_int64(v[5]);
  n->display_order = local;
  n->repeat_count = sqlite3_value_type(v[6]) == SQLITE_NULL ? -1 : sqlite3_value_int64(v[6]);
  if ((type && strcmp(type, "Repeat") == 0) || (!type && kind && strcmp(kind, "repeat") == 0))
    n->kind = PF_KIND_REPEAT;
  else
    n->kind = atom ? PF_KIND_ATOM : PF_KIND_SEQ;
  n->next_sibling = -1;
  n->motif = -1;
  row.node_n = sqlite3_value_int64(v[0]);
  row.parent_n = sqlite3_value_type(v[1]) == SQLITE_NULL ? -1 : sqlite3_value_int64(v[1]);
  row.cn.first_anchor = tr->first_anchor;
  row.cn.token_len = sqlite3_value_int64(v[8]);
  row.cn.first_occ = sqlite3_value_int64(v[9]);
  row.cn.occ_count = sqlite3_value_int64(v[10]);
  row.cn.slot = sqlite3_value_int64(v[11]);
  row.cn.parent = -1;
  row.cn.node_kind = sqlite3_value_int(v[3]);
  const char *path = (const char *)sqlite3_value_text(v[12]);
  row.cn.rooted = path ? tl_strpool_intern(x->ix->paths, path, (size_t)sqlite3_value_bytes(v[12]))
                       : TL_STR_NONE;
  if (n->node_id == TL_STR_NOMEM || n->local == TL_STR_NOMEM || n->label == TL_STR_NOMEM ||
      n->category == TL_STR_NOMEM || row.cn.rooted == TL_STR_NOMEM)
    return r->e->msg ? TL_ERROR : tl_nomem(r->e);
  if (x->direct && a->nodes.n > x->first &&
      cmp_display(&a->nodes.v[a->nodes.n - 1], n, a->pool) > 0 && undo_direct(r, x))
    return TL_ERROR;
  if (x->direct) { /* as read_nodes copies a row of the native view by node_n */
    node_index *ix = x->ix;
    n->first_child = -1;
    n->node_n = row.node_n;
    if (pf_imap_put(&ix->by_n, row.node_n, (int64_t)a->nodes.n) ||
        TL_VEC_PUSH(x->parent_n, row.parent_n) || TL_VEC_PUSH(&ix->cn, row.cn) ||
        TL_VEC_PUSH(&a->nodes, *n))
      return tl_nomem(r->e);
    return TL_OK;
  }
  n->first_child = (int64_t)x->rows.n; /* the order read, until the children are linked */
  if (TL_VEC_PUSH(&x->rows, row)) return tl_nomem(r->e);
  if (x->sorted && x->rows.n > 1 &&
      cmp_node_row(&x->rows.v[x->rows.n - 2], &x->rows.v[x->rows.n - 1], a->pool) > 0)
    x->sorted = 0;
  return TL_OK;
}

static int node_rows_core(rd *r, node_index *ix, uint32_t native, node_rows *out,
                          i64vec *parent_n, int *in_order) {
  static const row_query trees = {"tree_n, first_anchor_n, db_idx, device_id, node_device",
                                  "traceloom_tree_core", NULL, NULL};
  static const row_query nodes = {
      "node_n, parent_n, local_n, node_kind, shape_id, depth, repeat_count, tree_n, token_len, "
      "first_occurrence_n, occurrence_count, slot_ordinal, rooted_path", "traceloom_node_core",
      NULL, "node_n"};
  node_core_rows x;
  memset(&x, 0, sizeof x);
  x.ix = ix, x.native = native, x.rows = *out, x.sorted = 1;
  x.direct = 1, x.first = r->a->nodes.n, x.parent_n = parent_n;
  x.spool = tl_strpool_new();
  int err = x.spool ? read_node_shapes(r, x.spool, &x.shp, &x.shape_by_id) : tl_nomem(r->e);
  if (!err) err = each_row(r, &trees, tree_row, &x);
  /* Each node interns its node_id (unique), a few their local_node_id or label. */
  size_t nn = err ? 0 : dense_rows(r, "traceloom_node_core", "node_n");
  if (nn && (TL_VEC_RESERVE(&r->a->nodes, r->a->nodes.n + nn) ||
             TL_VEC_RESERVE(parent_n, parent_n->n + nn) || TL_VEC_RESERVE(&ix->cn, ix->cn.n + nn) ||
             pf_imap_reserve(&ix->by_n, nn) || tl_strpool_reserve(r->a->pool, nn + nn / 8, 16 * nn)))
    err = tl_nomem(r->e);
  if (nn && !err) { /* a node a key, less those without a tree row (none in this version) */
    TL_VEC_PREFAULT(&r->a->nodes, r->a->nodes.n + nn);
    TL_VEC_PREFAULT(parent_n, parent_n->n + nn);
    TL_VEC_PREFAULT(&ix->cn, ix->cn.n + nn);
  }
  if (!err) err = each_row(r, &nodes, node_row_core, &x);
  sqlite3_finalize(x.viz);
  TL_VEC_FREE(&x.shp);
  tl_strpool_free(x.spool);
  pf_imap_free(&x.shape_by_id);
  pf_imap_free(&x.tree_row);
  TL_VEC_FREE(&x.trees);
  *out = x.rows, *in_order = x.sorted;
  return err;
}

/* The tree nodes in display order (from the view, or the stored core: core_path), linked to
** their parents and children. */
static int read_nodes(rd *r, node_index *ix) {
  pf_analysis *a = r->a;
  node_rows rows = {0};
  uint32_t native = tl_strpool_intern_cstr(a->pool, "native_report_tree");
  uint32_t before = tl_strpool_count(a->pool);
  int sorted = 1, err = native == TL_STR_NOMEM ? tl_nomem(r->e) : TL_OK;
  /* The core path puts rows that come in order straight into a->nodes, ix->by_n, ix->cn
  ** and parent_n (rows stays empty then). */
  i64vec parent_n = {0};
  if (!err) err = ix->core ? node_rows_core(r, ix, native, &rows, &parent_n, &sorted)
                           : node_rows_view(r, ix, &rows, &sorted);
  if (!err && !sorted) {
    qsort_r(rows.v, rows.n, sizeof *rows.v, cmp_node_row, a->pool);
    if (reintern_in_order(a, rows.v, rows.n, before)) err = tl_nomem(r->e);
  }
  for (size_t i = 0; !err && i < rows.n; i++) {
    pf_node n = rows.v[i].n;
    n.first_child = -1;
    n.node_n = ix->use_n ? rows.v[i].node_n : -1;
    if (n.view == native && ix->use_n) {
      if (pf_imap_put(&ix->by_n, rows.v[i].node_n, (int64_t)a->nodes.n) ||
          TL_VEC_PUSH(&parent_n, rows.v[i].parent_n) ||
          (ix->core && TL_VEC_PUSH(&ix->cn, rows.v[i].cn))) {
        err = tl_nomem(r->e);
        break;
      }
    } else if (ix->use_n) {
      if (TL_VEC_PUSH(&parent_n, -1)) {
        err = tl_nomem(r->e);
        break;
      }
    } else if (n.view == native) {
      int64_t t = tree_number(&ix->trees, n.db, n.dev, 1);
      if (t == -3) {
        err = tl_nomem(r->e);
        break;
      }
      if (t < 0 || t >= (1 << 24)) {
        err = tl_fail(r->e, "traceloom_export_perfetto: traceloom_v_tree_node has db_idx %lld, "
                            "device_id %lld out of range", (long long)n.db, (long long)n.dev);
        break;
      }
      int64_t k = node_key(n.node_id, t);
      if (tl_i64map_get(&ix->by_key, k)) {
        err = tl_fail(r->e, "traceloom_export_perfetto: traceloom_v_tree_node lists node %s "
                            "(db %lld, device %lld) twice",
                      tl_strpool_str(a->pool, n.node_id), (long long)n.db, (long long)n.dev);
        break;
      }
      if (tl_i64map_put(&ix->by_key, k, (int64_t)a->nodes.n)) {
        err = tl_nomem(r->e);
        break;
      }
    }
    if (TL_VEC_PUSH(&a->nodes, n)) err = tl_nomem(r->e);
  }
  TL_VEC_FREE(&rows);
  if (err) return TL_VEC_FREE(&parent_n), err;
  /* Children lists in display order (nodes are sorted, so link back to front), for the
  ** topology signatures: the display parent within the same (db, device, view). */
  for (size_t i = a->nodes.n; i-- > 0;) {
    pf_node *n = &a->nodes.v[i];
    if ((!ix->use_n && n->parent == TL_STR_NONE) || n->view != native) continue;
    int64_t *p;
    if (ix->use_n) {
      p = parent_n.v[i] >= 0 ? pf_imap_get(&ix->by_n, parent_n.v[i]) : NULL;
      if (p) n->parent = a->nodes.v[*p].node_id;
      if (p && ix->core) ix->cn.v[i].parent = *p;
    } else {
      int64_t t = tree_number(&ix->trees, n->db, n->dev, 0);
      p = t >= 0 ? tl_i64map_get(&ix->by_key, node_key(n->parent, t)) : NULL;
    }
    if (!p) continue;
    n->next_sibling = a->nodes.v[*p].first_child;
    a->nodes.v[*p].first_child = (int64_t)i;
  }
  TL_VEC_FREE(&parent_n);
  return TL_OK;
}

/*
** Topology signatures: a node's topology is S(...)/R(...)/A(...) over its children's in
** display order, and its signature the SHA-256 of that text. Equal subtrees are frequent
** (every childless atom, every iteration of a repeated layer), so topologies are hash-consed: a
** node's class is the key (kind, the children's classes), interned in a pool of its own,
** and the text and its hash are built once per class, never per node.
*/
typedef struct topo_class {
  char *text;
  char sha[65];
} topo_class;

typedef struct topo_classes {
  pf_analysis *a;
  tl_strpool *keys;          /* class key -> id (class index + 1) */
  TL_VEC(topo_class) cls;
  int64_t *of;               /* node index -> class index; -1 not yet known */
  tl_buf key;
  int64_t leaf[3];           /* by kind: the class of a childless node; -1 not yet known */
} topo_classes;

/* The class of node i (children first, memoised); -1 on out-of-memory or a runaway depth. */
static int64_t topo_class_of(topo_classes *t, int64_t i, int guard) {
  if (t->of[i] >= 0) return t->of[i];
  if (guard > 100000) return -1;
  const pf_node *nodes = t->a->nodes.v, *n = &nodes[i];
  int leaf = n->first_child < 0 && n->kind >= 0 && n->kind < 3; /* most nodes: one class */
  if (leaf && t->leaf[n->kind] >= 0) return t->of[i] = t->leaf[n->kind];
  for (int64_t ch = n->first_child; ch >= 0; ch = nodes[ch].next_sibling)
    if (topo_class_of(t, ch, guard + 1) < 0) return -1;
  tl_buf_reset(&t->key);
  char kind = n->kind == PF_KIND_SEQ ? 'S' : n->kind == PF_KIND_REPEAT ? 'R' : 'A';
  tl_buf_append(&t->key, &kind, 1);
  for (int64_t ch = n->first_child; ch >= 0; ch = nodes[ch].next_sibling) {
    uint32_t c = (uint32_t)t->of[ch];
    tl_buf_append(&t->key, (const char *)&c, sizeof c);
  }
  if (t->key.oom) return -1;
  uint32_t id = tl_strpool_intern(t->keys, t->key.p, t->key.n);
  if (id == TL_STR_NOMEM) return -1;
  if ((size_t)id - 1 == t->cls.n) { /* a new class: its text and signature */
    tl_buf b = {0};
    tl_buf_append(&b, &kind, 1);
    tl_buf_append(&b, "(", 1);
    for (int64_t ch = n->first_child, k = 0; ch >= 0; ch = nodes[ch].next_sibling, k++) {
      if (k) tl_buf_append(&b, ",", 1);
      tl_buf_puts(&b, t->cls.v[t->of[ch]].text);
    }
    tl_buf_append(&b, ")", 1);
    topo_class c = {b.p, {0}};
    if (b.oom || TL_VEC_PUSH(&t->cls, c)) {
      tl_buf_free(&b);
      return -1;
    }
    tl_sha256 s;
    uint8_t d[32];
    tl_sha256_init(&s);
    tl_sha256_update(&s, c.text, b.n);
    tl_sha256_final(&s, d);
    tl_sha256_hex(d, t->cls.v[t->cls.n - 1].sha);
  }
  if (leaf) t->leaf[n->kind] = (int64_t)id - 1;
  return t->of[i] = (int64_t)id - 1;
}

/* Every node's topology signature (pf_node.topo, pf_analysis.topo). */
static int sign_topologies(rd *r) {
  pf_analysis *a = r->a;
  topo_classes t = {a, tl_strpool_new(), {0}, malloc((a->nodes.n + 1) * sizeof(int64_t)), {0},
                    {-1, -1, -1}};
  int err = t.keys && t.of ? TL_OK : tl_nomem(r->e);
  for (size_t i = 0; !err && i < a->nodes.n; i++) t.of[i] = -1;
  for (size_t i = 0; !err && i < a->nodes.n; i++) {
    int64_t k = topo_class_of(&t, (int64_t)i, 0);
    if (k < 0) err = tl_nomem(r->e);
    else a->nodes.v[i].topo = (uint32_t)k;
  }
  if (!err && TL_VEC_RESERVE(&a->topo, t.cls.n)) err = tl_nomem(r->e);
  for (size_t k = 0; !err && k < t.cls.n; k++) {
    memcpy(a->topo.v[k].sha, t.cls.v[k].sha, sizeof a->topo.v[k].sha);
    a->topo.n = k + 1;
  }
  for (size_t k = 0; k < t.cls.n; k++) free(t.cls.v[k].text);
  TL_VEC_FREE(&t.cls);
  tl_strpool_free(t.keys);
  tl_buf_free(&t.key);
  free(t.of);
  return err;
}

static int cmp_str_ptr(const void *x, const void *y) {
  return strcmp(*(const char *const *)x, *(const char *const *)y);
}

/* Motif letters name the sorted distinct topology signatures of the repeat nodes
** (presentation only: equal letters, equal colours). */
static int assign_motifs(rd *r) {
  pf_analysis *a = r->a;
  if (sign_topologies(r)) return TL_ERROR;
  const char **sig = malloc((a->nodes.n + 1) * sizeof *sig);
  if (!sig) return tl_nomem(r->e);
  size_t n = 0;
  for (size_t i = 0; i < a->nodes.n; i++)
    if (a->nodes.v[i].kind == PF_KIND_REPEAT) sig[n++] = a->topo.v[a->nodes.v[i].topo].sha;
  qsort(sig, n, sizeof *sig, cmp_str_ptr);
  size_t m = 0;
  for (size_t i = 0; i < n; i++)
    if (m == 0 || strcmp(sig[m - 1], sig[i]) != 0) sig[m++] = sig[i];
  a->nmotif = (int64_t)m;
  for (size_t i = 0; i < a->nodes.n; i++) {
    pf_node *nd = &a->nodes.v[i];
    if (nd->kind != PF_KIND_REPEAT) continue;
    const char *key = a->topo.v[nd->topo].sha;
    const char **hit = bsearch(&key, sig, m, sizeof *sig, cmp_str_ptr);
    nd->motif = hit ? (int)(hit - sig) : -1;
  }
  free(sig);
  return TL_OK;
}

void pf_motif_alias(int k, char out[16]) {
  char tmp[16];
  int n = 0;
  for (int64_t v = (int64_t)k + 1; v > 0 && n < 15; v = (v - 1) / 26)
    tmp[n++] = (char)('A' + (v - 1) % 26);
  for (int i = 0; i < n; i++) out[i] = tmp[n - 1 - i];
  out[n] = 0;
}

/* ---- Occurrences ------------------------------------------------------------------------ */

static const char *const occ_columns[] = {
    "occurrence_n", "parent_n", "position_id", "db_idx", "device_id", "occurrence_idx",
    "repeat_iteration", "token_start_ordinal", "token_end_exclusive", "start_ns", "end_ns",
    "compute_us", "comm_us", "idle_us", "self_us", "aux_us", "aux_events", "coverage_kind",
    "repeat_context", "rooted_position_path", "anchor_first_n", "slot_ordinal", NULL};

/* (parent node, slot) -> child node, from traceloom_position_refinement: the position that
** fills each slot. key: node index << 24 | slot. */
static int64_t slot_key(int64_t parent_node, int64_t slot) {
  return (int64_t)((uint64_t)parent_node << 24 | (uint64_t)(slot & 0xffffff));
}

/* Above this many slots (a flat tree: a slot per atom) reading them costs what they save. */
#define SLOTS_MAX 65536

/* The slots, or *use = 0 when there are none or too many to be worth it. */
static int read_slots(rd *r, node_index *ix, tl_i64map *slots, int *use) {
  static const char *const cols[] = {"parent_position_id", "slot_ordinal", "child_position_id",
                                     "db_idx", "device_id", NULL};
  *use = 0;
  if (!pf_has_relation(r->db, "traceloom_position_refinement")) return TL_OK;
  if (need_columns(r, "traceloom_position_refinement", cols)) return TL_ERROR;
  sqlite3_stmt *st;
  if (prep(r, "SELECT count(*) FROM (SELECT 1 FROM traceloom_position_refinement LIMIT "
              "65537)", &st))
    return TL_ERROR;
  int many = sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int64(st, 0) > SLOTS_MAX;
  sqlite3_finalize(st);
  if (many) return TL_OK;
  *use = 1;
  if (prep(r, "SELECT parent_position_id, slot_ordinal, child_position_id, db_idx, device_id "
              "FROM traceloom_position_refinement", &st))
    return TL_ERROR;
  int rc, err = TL_OK;
  while (!err && (rc = sqlite3_step(st)) == SQLITE_ROW) {
    int64_t tree = tree_number(&ix->trees, sqlite3_column_int64(st, 3),
                               sqlite3_column_int64(st, 4), 0);
    uint32_t pid = col_intern(r, st, 0), cid = col_intern(r, st, 2);
    int64_t slot = sqlite3_column_int64(st, 1);
    if (pid == TL_STR_NOMEM || cid == TL_STR_NOMEM) err = tl_nomem(r->e);
    if (err || tree < 0 || slot < 0 || slot > 0xffffff) continue;
    int64_t *pn = tl_i64map_get(&ix->by_key, node_key(pid, tree));
    int64_t *cn = tl_i64map_get(&ix->by_key, node_key(cid, tree));
    if (pn && cn && tl_i64map_put(slots, slot_key(*pn, slot), *cn)) err = tl_nomem(r->e);
  }
  sqlite3_finalize(st);
  if (!err) err = step_done(r, rc);
  return err;
}

/* The token offsets (token_start_ordinal - anchor_first_n, token_end_exclusive -
** anchor_end_n) of tree (db, dev), looked up on its occurrence occ_n the first time;
** offsets holds (db, dev, start, end) per tree (a handful: searched in turn). */
static int tree_offset(rd *r, sqlite3_stmt *off_st, i64vec *offsets, int64_t db, int64_t dev,
                       int64_t occ_n, int64_t *start, int64_t *end) {
  size_t k = 0;
  while (k < offsets->n && (offsets->v[k] != db || offsets->v[k + 1] != dev)) k += 4;
  if (k == offsets->n) {
    sqlite3_reset(off_st);
    sqlite3_bind_int64(off_st, 1, occ_n);
    int rc = sqlite3_step(off_st);
    if (rc != SQLITE_ROW)
      return rc == SQLITE_DONE ? tl_fail(r->e, "traceloom_export_perfetto: occurrence_n %lld "
                                               "vanished from traceloom_position_occurrence",
                                         (long long)occ_n)
                               : step_done(r, rc);
    if (TL_VEC_PUSH(offsets, db) || TL_VEC_PUSH(offsets, dev) ||
        TL_VEC_PUSH(offsets, sqlite3_column_int64(off_st, 0)) ||
        TL_VEC_PUSH(offsets, sqlite3_column_int64(off_st, 1)))
      return tl_nomem(r->e);
  }
  *start = offsets->v[k + 2], *end = offsets->v[k + 3];
  return TL_OK;
}

/* Parent links (pf_occ.parent) from each occurrence's parent_n, once every occurrence is
** known (whatever the row order). */
static int link_parents(rd *r, const pf_imap *occ_by_n, const i64vec *parent_n) {
  for (size_t i = 0; i < r->a->occs.n; i++) {
    pf_occ *o = &r->a->occs.v[i];
    o->parent = -1;
    if (parent_n->v[i] < 0) continue;
    int64_t *p = pf_imap_get(occ_by_n, parent_n->v[i]);
    if (!p)
      return tl_fail(r->e, "traceloom_export_perfetto: occurrence_n %lld has parent_n %lld, "
                           "which traceloom_position_occurrence does not list",
                     (long long)o->n, (long long)parent_n->v[i]);
    o->parent = *p;
  }
  return TL_OK;
}

#define OCC_RETRY 2 /* an atom whose position its parent's slot does not name: read them all */

/*
** traceloom_position_occurrence: every occurrence with its parent occurrence (parent_n), in
** one pass (see occ_columns). An atom with a parent is found by (parent's position, slot)
** in traceloom_position_refinement (slots) rather than by its position_id, which the view
** formats per row; OCC_RETRY when that fails, then by_text reads every position (also the
** choice when there are more slots than SLOTS_MAX).
** Nor are an atom's path and repeat context read (the view computes them by a parent lookup
** per row): the structure draws them as the atom's ancestors.
*/
static int read_occurrences_pass(rd *r, node_index *ix, const tl_i64map *slots, int by_text,
                                 pf_imap *occ_by_n, i64vec *atoms) {
  pf_analysis *a = r->a;
  sqlite3_stmt *st;
  /* The position of every row, or (the fast pass) only of roots and non-atoms. The
  ** iteration under a repeat is member_order (outputs.md 6): the view's repeat_iteration
  ** parses it out of repeat contexts for every row. The token ordinals are the anchor
  ** numbers less the tree's first anchor (anchor_n is dense per tree): the offset is taken
  ** once per tree (tree_offsets) instead of two subqueries per row. */
  int by_member = has_column(r->db, "traceloom_position_occurrence", "member_order");
  int by_anchor_n = has_column(r->db, "traceloom_position_occurrence", "anchor_end_n");
  char *sql = tl_mprintf(
      "SELECT occurrence_n, parent_n, %s, db_idx, device_id, occurrence_idx, %s, %s, "
      "start_ns, end_ns, compute_us, comm_us, idle_us, self_us, aux_us, aux_events, "
      "coverage_kind = 'self', CASE WHEN coverage_kind <> 'self' THEN repeat_context END, "
      "CASE WHEN coverage_kind <> 'self' THEN rooted_position_path END, anchor_first_n, "
      "slot_ordinal FROM traceloom_position_occurrence ORDER BY occurrence_n",
      ix->use_n ? "node_n"
      : by_text ? "position_id"
                : "CASE WHEN parent_n IS NULL OR coverage_kind <> 'self' THEN position_id END",
      by_member ? "member_order" : "repeat_iteration",
      by_anchor_n ? "anchor_first_n, anchor_end_n" : "token_start_ordinal, token_end_exclusive");
  if (!sql) return tl_nomem(r->e);
  int prc = prep(r, sql, &st);
  free(sql);
  if (prc) return TL_ERROR;
  sqlite3_stmt *off_st = NULL; /* the token offsets of the tree of an occurrence */
  if (by_anchor_n &&
      prep(r, "SELECT token_start_ordinal - anchor_first_n, token_end_exclusive - anchor_end_n "
              "FROM traceloom_position_occurrence WHERE occurrence_n = ?1", &off_st)) {
    sqlite3_finalize(st);
    return TL_ERROR;
  }
  i64vec offsets = {0}; /* tree_offset's */
  int64_t off_start = 0, off_end = 0;
  i64vec parent_n = {0};
  uint32_t last_pos = TL_STR_NOMEM, last_ctx = TL_STR_NOMEM;
  int64_t last_db = INT64_MIN, last_dev = INT64_MIN, tree = -1;
  int rc, err = TL_OK;
  while (!err && (rc = sqlite3_step(st)) == SQLITE_ROW) {
    pf_occ o;
    memset(&o, 0, sizeof o);
    o.n = sqlite3_column_int64(st, 0);
    int64_t pn = sqlite3_column_type(st, 1) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 1);
    uint32_t pos = ix->use_n ? TL_STR_NONE : col_intern_last(r, st, 2, &last_pos);
    int64_t db = sqlite3_column_int64(st, 3), dev = sqlite3_column_int64(st, 4);
    if (db != last_db || dev != last_dev) {
      tree = tree_number(&ix->trees, db, dev, 0);
      last_db = db, last_dev = dev;
      if (off_st && (err = tree_offset(r, off_st, &offsets, db, dev, o.n, &off_start, &off_end)))
        break;
    }
    if (pos == TL_STR_NOMEM) {
      err = tl_nomem(r->e);
      break;
    }
    int64_t *node = NULL, node_n = sqlite3_column_int64(st, 2);
    if (ix->use_n) {
      node = ix->defer ? &node_n : pf_imap_get(&ix->by_n, node_n);
      if (!node) {
        err = tl_fail(r->e, "traceloom_export_perfetto: traceloom_position_occurrence %lld "
                            "(node_n %lld) has no traceloom_v_tree_node row",
                      (long long)o.n, (long long)sqlite3_column_int64(st, 2));
        break;
      }
    } else if (pos == TL_STR_NONE && pn >= 0) { /* an atom: its parent's slot names it */
      int64_t *p = pf_imap_get(occ_by_n, pn);
      node = p ? tl_i64map_get(slots, slot_key(a->occs.v[*p].node, sqlite3_column_int64(st, 21)))
               : NULL;
      if (!node) {
        err = OCC_RETRY;
        break;
      }
    } else if (tree >= 0 && pos != TL_STR_NONE) {
      node = tl_i64map_get(&ix->by_key, node_key(pos, tree));
    }
    if (!node) {
      err = tl_fail(r->e, "traceloom_export_perfetto: traceloom_position_occurrence %lld "
                          "(position %s, db %lld, device %lld) has no traceloom_v_tree_node row",
                    (long long)o.n, tl_strpool_str(a->pool, pos), (long long)db, (long long)dev);
      break;
    }
    o.node = *node;
    o.occ_idx = sqlite3_column_int64(st, 5);
    o.iteration = sqlite3_column_int64(st, 6);
    o.anchor_first = sqlite3_column_int64(st, 7) + off_start;
    o.anchor_end = sqlite3_column_int64(st, 8) + off_end;
    if (sqlite3_column_type(st, 9) == SQLITE_NULL || sqlite3_column_type(st, 10) == SQLITE_NULL) {
      err = tl_fail(r->e, "traceloom_export_perfetto: occurrence_n %lld (%s %s) has no "
                          "start_ns/end_ns in traceloom_position_occurrence",
                    (long long)o.n, ix->defer ? "node_n" : "position",
                    ix->defer ? (const char *)sqlite3_column_text(st, 2)
                              : tl_strpool_str(a->pool, a->nodes.v[o.node].node_id));
      break;
    }
    o.start = sqlite3_column_int64(st, 9);
    o.end = sqlite3_column_int64(st, 10);
    if (o.end < o.start) o.end = o.start;
    o.cost[PF_C_COMPUTE] = col_us_ns(st, 11);
    o.cost[PF_C_COMM] = col_us_ns(st, 12);
    o.cost[PF_C_IDLE] = col_us_ns(st, 13);
    o.cost[PF_C_TOTAL] = o.cost[PF_C_COMPUTE] + o.cost[PF_C_COMM] + o.cost[PF_C_IDLE];
    o.cost[PF_C_SELF] = col_us_ns(st, 14);
    o.cost[PF_C_AUX] = col_us_ns(st, 15);
    o.aux_events = sqlite3_column_int64(st, 16);
    o.event_n = -1, o.anchor_n = -1;
    if (sqlite3_column_int(st, 17)) {
      if (TL_VEC_PUSH(atoms, (int64_t)a->occs.n) || TL_VEC_PUSH(atoms, sqlite3_column_int64(st, 20))) {
        err = tl_nomem(r->e);
        break;
      }
    } else {
      o.repeat_context = col_intern_last(r, st, 18, &last_ctx);
      o.rooted_path = col_intern(r, st, 19);
      if (o.repeat_context == TL_STR_NOMEM || o.rooted_path == TL_STR_NOMEM) {
        err = tl_nomem(r->e);
        break;
      }
    }
    if (pf_imap_get(occ_by_n, o.n)) {
      err = tl_fail(r->e, "traceloom_export_perfetto: traceloom_position_occurrence lists "
                          "occurrence_n %lld twice", (long long)o.n);
      break;
    }
    if (pf_imap_put(occ_by_n, o.n, (int64_t)a->occs.n) || TL_VEC_PUSH(&a->occs, o) ||
        TL_VEC_PUSH(&parent_n, pn))
      err = tl_nomem(r->e);
  }
  sqlite3_finalize(st);
  sqlite3_finalize(off_st);
  TL_VEC_FREE(&offsets);
  if (!err && step_done(r, rc)) err = TL_ERROR;
  if (!err) err = link_parents(r, occ_by_n, &parent_n);
  TL_VEC_FREE(&parent_n);
  return err;
}

static int read_occurrences(rd *r, node_index *ix, pf_imap *occ_by_n, i64vec *atoms) {
  pf_analysis *a = r->a;
  if (need_columns(r, "traceloom_position_occurrence", occ_columns)) return TL_ERROR;
  tl_i64map slots = {0};
  int use_slots = 0;
  int err = ix->use_n ? TL_OK : read_slots(r, ix, &slots, &use_slots);
  if (!err) err = read_occurrences_pass(r, ix, &slots, !use_slots, occ_by_n, atoms);
  if (err == OCC_RETRY) {
    a->occs.n = 0, atoms->n = 0;
    pf_imap_free(occ_by_n);
    err = read_occurrences_pass(r, ix, &slots, 1, occ_by_n, atoms);
  }
  tl_i64map_free(&slots);
  return err;
}

/* What the device plane needs besides the occurrences: anchor_n -> event_n and event_n ->
** stream_id (EV_NULL_STREAM: NULL), each relation read once in full. */
#define EV_NULL_STREAM (INT64_MIN + 1)
typedef struct event_maps {
  pf_imap anchor_event, event_stream;
} event_maps;

static int read_event_maps(rd *r, event_maps *m) {
  static const char *const anchor_cols[] = {"anchor_n", "event_n", NULL};
  static const char *const event_cols[] = {"event_n", "stream_id", NULL};
  if (!pf_has_relation(r->db, "traceloom_anchor") || !pf_has_relation(r->db, "traceloom_event"))
    return TL_OK;
  if (need_columns(r, "traceloom_anchor", anchor_cols) ||
      need_columns(r, "traceloom_event", event_cols))
    return TL_ERROR;
  int rc, err = TL_OK;
  sqlite3_stmt *st = NULL;
  if (prep(r, "SELECT anchor_n, event_n FROM traceloom_anchor WHERE event_n IS NOT NULL", &st))
    return TL_ERROR;
  while (!err && (rc = sqlite3_step(st)) == SQLITE_ROW)
    if (pf_imap_put(&m->anchor_event, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1)))
      err = tl_nomem(r->e);
  sqlite3_finalize(st);
  if (!err) err = step_done(r, rc);
  if (!err && prep(r, "SELECT event_n, stream_id FROM traceloom_event", &st)) err = TL_ERROR;
  while (!err && (rc = sqlite3_step(st)) == SQLITE_ROW)
    if (pf_imap_put(&m->event_stream, sqlite3_column_int64(st, 0),
                    sqlite3_column_type(st, 1) == SQLITE_NULL ? EV_NULL_STREAM
                                                              : sqlite3_column_int64(st, 1)))
      err = tl_nomem(r->e);
  if (!err) {
    sqlite3_finalize(st);
    err = step_done(r, rc);
  }
  return err;
}

/* The event of each atom occurrence and its stream: an atom covers exactly one anchor
** (anchor_first_n, kept by read_occurrences as (occurrence index, anchor_n) pairs). */
static void resolve_atom_events(pf_analysis *a, const event_maps *m, const int64_t *atom_anchor,
                                size_t npairs) {
  for (size_t i = 0; i < npairs; i++) {
    pf_occ *o = &a->occs.v[atom_anchor[2 * i]];
    o->anchor_n = atom_anchor[2 * i + 1];
    const int64_t *ev = pf_imap_get(&m->anchor_event, atom_anchor[2 * i + 1]);
    if (!ev || *ev < 0) continue;
    o->event_n = *ev;
    const int64_t *s = pf_imap_get(&m->event_stream, *ev);
    if (s && *s != EV_NULL_STREAM) o->stream = *s, o->has_stream = 1;
  }
}

/* ---- Replay members, runtime calls, relations ------------------------------------------ */

/* Exact replay members of promoted launches (absent tables: none). */
static int read_members(rd *r) {
  pf_analysis *a = r->a;
  if (!pf_has_relation(r->db, "traceloom_graph_body_member") ||
      !pf_has_relation(r->db, "traceloom_graph_launch"))
    return TL_OK;
  sqlite3_stmt *st;
  if (prep(r, "SELECT m.db_idx, l.graph_event_id, m.member_id, m.launch_id, m.replay_unit_id, "
              "m.event_id, m.kind, m.identity, m.stream_id, m.start_ns, m.end_ns, m.lane_ordinal, "
              "m.task_ordinal, m.member_order, l.anchor_id, m.aggregate_n, m.device_id, "
              "l.host_call_id, l.anchor_n "
              "FROM traceloom_graph_body_member m "
              "JOIN traceloom_graph_launch l ON l.launch_id = m.launch_id "
              "WHERE l.anchor_id IS NOT NULL ORDER BY m.db_idx, l.graph_launch_occurrence_id, "
              "m.member_order",
           &st))
    return TL_ERROR;
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    pf_member m;
    memset(&m, 0, sizeof m);
    m.db = sqlite3_column_int64(st, 0);
    m.launch_event = col_intern(r, st, 1);
    m.member_id = col_intern(r, st, 2);
    m.launch_id = col_intern(r, st, 3);
    m.unit = sqlite3_column_int64(st, 4);
    m.event_id = col_intern(r, st, 5);
    m.event_n = id_number(sqlite3_column_text(st, 5), sqlite3_column_bytes(st, 5), "event-");
    m.launch_event_n =
        id_number(sqlite3_column_text(st, 1), sqlite3_column_bytes(st, 1), "event-");
    m.kind = col_intern(r, st, 6);
    m.identity = col_intern(r, st, 7);
    m.has_stream = sqlite3_column_type(st, 8) != SQLITE_NULL;
    m.stream_id = sqlite3_column_int64(st, 8);
    m.start = sqlite3_column_int64(st, 9);
    m.end = sqlite3_column_int64(st, 10);
    if (m.end < m.start) m.end = m.start;
    m.lane = sqlite3_column_int64(st, 11);
    m.task = sqlite3_column_int64(st, 12);
    m.order = sqlite3_column_int64(st, 13);
    m.anchor_id = col_intern(r, st, 14);
    m.aggregate = sqlite3_column_int64(st, 15);
    m.device = sqlite3_column_int64(st, 16);
    m.host_call_n =
        id_number(sqlite3_column_text(st, 17), sqlite3_column_bytes(st, 17), "runtime-call-");
    m.launch_anchor_n = sqlite3_column_int64(st, 18);
    m.occ = -1;
    if (m.launch_event == TL_STR_NOMEM || m.member_id == TL_STR_NOMEM ||
        m.launch_id == TL_STR_NOMEM || m.event_id == TL_STR_NOMEM ||
        m.kind == TL_STR_NOMEM || m.identity == TL_STR_NOMEM || m.anchor_id == TL_STR_NOMEM ||
        TL_VEC_PUSH(&a->members, m))
      break;
  }
  sqlite3_finalize(st);
  if (rc == SQLITE_ROW) return tl_nomem(r->e);
  return step_done(r, rc);
}

/* Host runtime calls and their exact relations to device work (support_state
** supported_exact): the flows of the timeline. */
static int read_calls(rd *r) {
  pf_analysis *a = r->a;
  static const char *const call_cols[] = {"call_n", "global_tid", "thread_id", "api_name",
                                          "correlation_id", NULL};
  static const char *const rel_cols[] = {"call_n", "event_n", "support_state", NULL};
  if (!pf_has_relation(r->db, "traceloom_runtime_call") ||
      !pf_has_relation(r->db, "traceloom_runtime_device_relation"))
    return TL_OK;
  if (need_columns(r, "traceloom_runtime_call", call_cols) ||
      need_columns(r, "traceloom_runtime_device_relation", rel_cols))
    return TL_ERROR;
  sqlite3_stmt *st;
  if (prep(r, "SELECT call_n, db_idx, start_ns, end_ns, COALESCE(global_tid, thread_id), "
              "api_name, correlation_id FROM traceloom_runtime_call "
              "WHERE start_ns IS NOT NULL AND end_ns IS NOT NULL ORDER BY call_n",
           &st))
    return TL_ERROR;
  uint32_t last_api = TL_STR_NOMEM;
  int rc, err = TL_OK;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    pf_call k;
    memset(&k, 0, sizeof k);
    k.call_n = sqlite3_column_int64(st, 0);
    k.db = sqlite3_column_int64(st, 1);
    k.start = sqlite3_column_int64(st, 2);
    k.end = sqlite3_column_int64(st, 3);
    if (k.end < k.start) k.end = k.start;
    k.has_tid = sqlite3_column_type(st, 4) != SQLITE_NULL;
    k.tid = sqlite3_column_int64(st, 4);
    k.api = col_intern_last(r, st, 5, &last_api);
    k.has_correlation = sqlite3_column_type(st, 6) != SQLITE_NULL;
    k.correlation = sqlite3_column_int64(st, 6);
    if (k.api == TL_STR_NOMEM || TL_VEC_PUSH(&a->calls, k)) {
      err = tl_nomem(r->e);
      break;
    }
  }
  sqlite3_finalize(st);
  if (err) return err;
  if (step_done(r, rc)) return TL_ERROR;
  if (prep(r, "SELECT call_n, event_n FROM traceloom_runtime_device_relation "
              "WHERE support_state = 'supported_exact' AND call_n IS NOT NULL "
              "AND event_n IS NOT NULL",
           &st))
    return TL_ERROR;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    pf_relation x = {sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1)};
    if (TL_VEC_PUSH(&a->relations, x)) {
      err = tl_nomem(r->e);
      break;
    }
  }
  sqlite3_finalize(st);
  if (err) return err;
  return step_done(r, rc);
}

/* ---- The stored core: anchors, events, runtime calls and relations ----------------------- */

/* An anchor's values an atom occurrence takes (traceloom_anchor_core), and an event's
** (traceloom_event_core; stream EV_NULL_STREAM: NULL). */
typedef struct core_anchor {
  int64_t event_n, compute, comm, idle, aux_events, aux;
} core_anchor;
typedef struct core_event {
  int64_t start, dur, stream;
} core_event;

/* The core path's event maps: anchor_n -> index into anchors, event_n -> into events. */
typedef struct core_maps {
  TL_VEC(core_anchor) anchors;
  TL_VEC(core_event) events;
  pf_imap anchor_row, event_row;
  pf_imap launch_row; /* -event_n (> 0) of a promoted launch anchor's interval row: kept
                      ** apart, so that event_row stays dense over the events */
} core_maps;

static void core_maps_free(core_maps *m) {
  TL_VEC_FREE(&m->anchors);
  TL_VEC_FREE(&m->events);
  pf_imap_free(&m->anchor_row);
  pf_imap_free(&m->event_row);
  pf_imap_free(&m->launch_row);
}

static int anchor_row(rd *r, void *arg, sqlite3_value **v) {
  core_maps *m = arg;
  core_anchor x = {sqlite3_value_int64(v[1]), sqlite3_value_int64(v[2]),
                   sqlite3_value_int64(v[3]), sqlite3_value_int64(v[4]),
                   sqlite3_value_int64(v[5]), sqlite3_value_int64(v[6])};
  if (pf_imap_put(&m->anchor_row, sqlite3_value_int64(v[0]), (int64_t)m->anchors.n) ||
      TL_VEC_PUSH(&m->anchors, x))
    return tl_nomem(r->e);
  return TL_OK;
}

static int event_row(rd *r, void *arg, sqlite3_value **v) {
  core_maps *m = arg;
  core_event x = {sqlite3_value_int64(v[1]), sqlite3_value_int64(v[2]),
                  sqlite3_value_type(v[3]) == SQLITE_NULL ? EV_NULL_STREAM
                                                          : sqlite3_value_int64(v[3])};
  int64_t k = sqlite3_value_int64(v[0]);
  if ((k >= 0 ? pf_imap_put(&m->event_row, k, (int64_t)m->events.n)
              : pf_imap_put(&m->launch_row, -k, (int64_t)m->events.n)) ||
      TL_VEC_PUSH(&m->events, x))
    return tl_nomem(r->e);
  return TL_OK;
}

/* Every anchor and every event, each table read once (by key: any order). */
static int read_core_maps(rd *r, core_maps *m) {
  static const row_query anchors = {
      "anchor_n, event_n, compute_ns, comm_ns, idle_ns, aux_events, aux_ns",
      "traceloom_anchor_core", NULL, NULL};
  static const row_query events = {"event_n, start_ns, dur_ns, stream_id", "traceloom_event_core",
                                   NULL, NULL};
  size_t na = dense_rows(r, "traceloom_anchor_core", "anchor_n");
  size_t ne = dense_rows(r, "traceloom_event_core", "event_n");
  if (TL_VEC_RESERVE(&m->anchors, na) || pf_imap_reserve(&m->anchor_row, na) ||
      TL_VEC_RESERVE(&m->events, ne) || pf_imap_reserve(&m->event_row, ne))
    return tl_nomem(r->e);
  TL_VEC_PREFAULT(&m->anchors, na);
  TL_VEC_PREFAULT(&m->events, ne);
  int err = each_row(r, &anchors, anchor_row, m);
  return err ? err : each_row(r, &events, event_row, m);
}

/* A runtime call shape's values (traceloom_runtime_call_shape). */
typedef struct call_shape {
  uint32_t api; /* api_name in the shapes' own pool; TL_STR_NONE: NULL */
  uint32_t api_a; /* api interned in the analysis pool (TL_STR_NOMEM: not yet) */
  int has_tid;
  int64_t tid;  /* COALESCE(global_tid, thread_id) */
} call_shape;

/* The runtime calls from the stored core, as traceloom_runtime_call derives them
** (sql/schema/10_events.sql): end_ns is start_ns + dur_ns, api_name and the thread from the
** call's shape. The api names are interned call by call, as read_calls interns them. */
typedef struct call_rows {
  tl_strpool *spool;
  TL_VEC(call_shape) shp;
  pf_imap shape_row;
} call_rows;

static int call_shape_row(rd *r, void *arg, sqlite3_value **v) {
  call_rows *x = arg;
  call_shape s = {TL_STR_NONE, TL_STR_NOMEM, sqlite3_value_type(v[2]) != SQLITE_NULL,
                  sqlite3_value_int64(v[2])};
  const char *api = (const char *)sqlite3_value_text(v[1]);
  if (api) s.api = tl_strpool_intern(x->spool, api, (size_t)sqlite3_value_bytes(v[1]));
  if (s.api == TL_STR_NOMEM ||
      pf_imap_put(&x->shape_row, sqlite3_value_int64(v[0]), (int64_t)x->shp.n) ||
      TL_VEC_PUSH(&x->shp, s))
    return tl_nomem(r->e);
  return TL_OK;
}

static int call_row(rd *r, void *arg, sqlite3_value **v) {
  call_rows *x = arg;
  pf_analysis *a = r->a;
  pf_call k;
  memset(&k, 0, sizeof k);
  k.call_n = sqlite3_value_int64(v[0]);
  k.db = sqlite3_value_int64(v[1]);
  k.start = sqlite3_value_int64(v[2]);
  k.end = k.start + sqlite3_value_int64(v[3]);
  if (k.end < k.start) k.end = k.start;
  int64_t shape = sqlite3_value_int64(v[4]);
  const int64_t *row = pf_imap_get(&x->shape_row, shape);
  k.api = TL_STR_NONE;
  if (row) {
    call_shape *cs = &x->shp.v[*row];
    k.has_tid = cs->has_tid, k.tid = cs->tid;
    /* The api name is interned at the shape's first call, not at every call (at 1M tasks
    ** nearly every call has another shape than the call before it): the pool's ids are
    ** the same, a string keeping the id of its first interning. */
    if (cs->api_a == TL_STR_NOMEM && cs->api != TL_STR_NONE)
      cs->api_a = tl_strpool_intern(a->pool, tl_strpool_str(x->spool, cs->api),
                                    tl_strpool_len(x->spool, cs->api));
    if (cs->api != TL_STR_NONE) k.api = cs->api_a;
  }
  k.has_correlation = sqlite3_value_type(v[5]) != SQLITE_NULL;
  k.correlation = sqlite3_value_int64(v[5]);
  if (k.api == TL_STR_NOMEM || TL_VEC_PUSH(&a->calls, k)) return tl_nomem(r->e);
  return TL_OK;
}

static int read_calls_core(rd *r) {
  static const row_query shapes = {"shape_id, api_name, COALESCE(global_tid, thread_id)",
                                   "traceloom_runtime_call_shape", NULL, NULL};
  static const row_query calls = {"call_n, db_idx, start_ns, dur_ns, shape_id, correlation_id",
                                  "traceloom_runtime_call_core", NULL, "call_n"};
  call_rows x;
  memset(&x, 0, sizeof x);
  int err = (x.spool = tl_strpool_new()) ? TL_OK : tl_nomem(r->e);
  if (!err) err = each_row(r, &shapes, call_shape_row, &x);
  size_t nc = err ? 0 : dense_rows(r, "traceloom_runtime_call_core", "call_n");
  if (nc && TL_VEC_RESERVE(&r->a->calls, r->a->calls.n + nc)) err = tl_nomem(r->e);
  if (nc && !err) TL_VEC_PREFAULT(&r->a->calls, r->a->calls.n + nc);
  if (!err) err = each_row(r, &calls, call_row, &x);
  TL_VEC_FREE(&x.shp);
  tl_strpool_free(x.spool);
  pf_imap_free(&x.shape_row);
  return err;
}

/* The exact relations from the stored core: a relation is exact where its shape's
** support_state is supported_exact (traceloom_runtime_device_relation), in relation_n
** order. */
typedef struct relation_rows {
  pf_imap exact; /* shape_id -> 1 where supported_exact */
  pf_relations *out;
} relation_rows;

static int exact_shape_row(rd *r, void *arg, sqlite3_value **v) {
  relation_rows *x = arg;
  return pf_imap_put(&x->exact, sqlite3_value_int64(v[0]), 1) ? tl_nomem(r->e) : TL_OK;
}

static int relation_row(rd *r, void *arg, sqlite3_value **v) {
  relation_rows *x = arg;
  if (sqlite3_value_type(v[0]) == SQLITE_NULL || sqlite3_value_type(v[1]) == SQLITE_NULL ||
      !pf_imap_get(&x->exact, sqlite3_value_int64(v[2])))
    return TL_OK;
  pf_relation rel = {sqlite3_value_int64(v[0]), sqlite3_value_int64(v[1])};
  return TL_VEC_PUSH(x->out, rel) ? tl_nomem(r->e) : TL_OK;
}

static int read_relations_core(rd *r, pf_relations *out) {
  static const row_query shapes = {"shape_id", "traceloom_runtime_device_relation_shape",
                                   "support_state = 'supported_exact'", NULL};
  /* A relation without a call or without device work is skipped by relation_row, not by a
  ** WHERE: SQLite would fetch both columns once for the WHERE and again for the row (1M
  ** relations at 1M tasks, under 1% of them without either end). */
  static const row_query relations = {"call_n, event_n, shape_id",
                                      "traceloom_runtime_device_relation_core", NULL, NULL};
  relation_rows x;
  memset(&x, 0, sizeof x);
  x.out = out;
  size_t nr = dense_rows(r, "traceloom_runtime_device_relation_core", "relation_n");
  int err = TL_VEC_RESERVE(out, out->n + nr) ? tl_nomem(r->e) : TL_OK;
  if (!err) err = each_row(r, &shapes, exact_shape_row, &x);
  if (!err) err = each_row(r, &relations, relation_row, &x);
  pf_imap_free(&x.exact);
  return err;
}

/* ---- Scheduler context (perfetto.md 9) -------------------------------------------------- */

/* Host scopes are the execution markers on their host thread, step envelopes span the
** device work linked to a step per device, and the linked work is drawn again with its
** association basis. All three are observations over identity links, never timestamp
** joins, and say what they are not in a `boundary` arg. */
static int read_context(rd *r) {
  pf_analysis *a = r->a;
  if (!pf_has_relation(r->db, "traceloom_context_marker") ||
      !pf_has_relation(r->db, "traceloom_v_context_device_work"))
    return TL_OK;
  static const char *const sql[3] = {
      "SELECT m.start_ns, m.end_ns, CAST(m.global_tid AS INTEGER), x.run_id, x.step_id, "
      "x.execution_id, x.phase, x.worker_rank, s.ordinal, s.total_scheduled_tokens "
      "FROM traceloom_context_marker m JOIN traceloom_context_execution x "
      "ON x.execution_id = m.execution_id LEFT JOIN traceloom_scheduler_step s "
      "ON s.run_id = x.run_id AND s.step_id = x.step_id ORDER BY m.start_ns, m.execution_id",
      "SELECT min(w.start_ns), max(w.end_ns), w.device_id, w.run_id, w.step_id, count(*), "
      "s.ordinal FROM (SELECT DISTINCT run_id, step_id, device_id, device_work_id, start_ns, "
      "end_ns FROM traceloom_v_context_device_work) w LEFT JOIN traceloom_scheduler_step s "
      "ON s.run_id = w.run_id AND s.step_id = w.step_id GROUP BY w.run_id, w.step_id, "
      "w.device_id ORDER BY 1, 2, w.step_id",
      "SELECT start_ns, end_ns, device_id, run_id, step_id, device_work_id, event_id, symbol, "
      "group_concat(DISTINCT association_basis) FROM traceloom_v_context_device_work "
      "GROUP BY device_work_id, run_id, step_id ORDER BY start_ns, device_work_id"};
  static const int kinds[3] = {PF_ROW_CTX_HOST, PF_ROW_CTX_STEP, PF_ROW_CTX_DEVICE};
  for (int k = 0; k < 3; k++) {
    sqlite3_stmt *st;
    if (prep(r, sql[k], &st)) return TL_ERROR;
    int rc, bad = 0;
#define TXT(i) ((const char *)sqlite3_column_text(st, (i)))
#define ISNULL(i) (sqlite3_column_type(st, (i)) == SQLITE_NULL)
    while (!bad && (rc = sqlite3_step(st)) == SQLITE_ROW) {
      int64_t s0 = sqlite3_column_int64(st, 0), e0 = sqlite3_column_int64(st, 1);
      size_t off = a->kv.n;
      char name[256];
      bad |= pf_kv_str(a, PF_K_run_id, TXT(3)) | pf_kv_str(a, PF_K_step_id, TXT(4));
      if (k == 0) {
        snprintf(name, sizeof name, "Step %s \xC2\xB7 %s", ISNULL(8) ? "?" : TXT(8),
                 TXT(6) ? TXT(6) : "?");
        bad |= pf_kv_str(a, PF_K_execution_id, TXT(5)) | pf_kv_str(a, PF_K_phase, TXT(6)) |
               pf_kv_i64n(a, PF_K_rank, sqlite3_column_int64(st, 7), ISNULL(7)) |
               pf_kv_i64n(a, PF_K_scheduled_tokens, sqlite3_column_int64(st, 9), ISNULL(9)) |
               pf_kv_str(a, PF_K_boundary, "host dispatch scope; not device duration");
      } else if (k == 1) {
        snprintf(name, sizeof name, "Step %s \xC2\xB7 device %lld", ISNULL(6) ? "?" : TXT(6),
                 (long long)sqlite3_column_int64(st, 2));
        bad |= pf_kv_i64(a, PF_K_device_id, sqlite3_column_int64(st, 2)) |
               pf_kv_i64(a, PF_K_linked_device_work, sqlite3_column_int64(st, 5)) |
               pf_kv_str(a, PF_K_boundary,
                         "linked device envelope; not busy time or complete membership");
      } else {
        snprintf(name, sizeof name, "%s", TXT(7) ? TXT(7) : TXT(5) ? TXT(5) : "?");
        bad |= pf_kv_i64(a, PF_K_device_id, sqlite3_column_int64(st, 2)) |
               pf_kv_str(a, PF_K_device_work_id, TXT(5)) | pf_kv_str(a, PF_K_event_id, TXT(6)) |
               pf_kv_str(a, PF_K_association_basis, TXT(8));
      }
      pf_row_slice row = {.kind = kinds[k], .a = sqlite3_column_int64(st, 2), .start = s0,
                          .end = e0 > s0 ? e0 : s0, .kv_off = off, .kv_n = a->kv.n - off};
      row.name = tl_strpool_intern_cstr(a->pool, name);
      bad |= row.name == TL_STR_NOMEM || TL_VEC_PUSH(&a->rows, row);
    }
#undef TXT
#undef ISNULL
    sqlite3_finalize(st);
    if (bad) return tl_nomem(r->e);
    if (step_done(r, rc)) return TL_ERROR;
  }
  return TL_OK;
}

/* ---- The side reader ------------------------------------------------------------------ */

/* The relations no occurrence depends on (runtime calls and relations, the anchor and event
** maps), read into a pf_analysis of their own (own string pool) so that they can be read on
** a second read-only connection by a worker thread while the calling thread reads the
** occurrences; merged afterwards. The same functions run in the same order either way, so
** the result does not depend on it. */
typedef struct side {
  const char *path;   /* worker: the database file to open; NULL: use db */
  sqlite3 *db;
  int distributed;
  int core;           /* read the stored core (core_path) */
  int relations_apart;/* the relations are read by their own worker (pf_pending) */
  pf_analysis a;
  event_maps maps;
  core_maps cm;       /* the core path's */
  tl_err e;
  int rc;
  double cpu;         /* its thread's CPU seconds (TRACELOOM_TIMING) */
} side;

/* A reader's run: on its own read-only connection to path (NULL: on db), into a, whose
** string pool it creates, with its own error. */
static int run_reader(const char *path, sqlite3 *db, pf_analysis *a, tl_err *e,
                      int (*read)(rd *r, void *ctx), void *ctx) {
  if (path && pf_open_analysis_ro(path, &db, e)) return TL_ERROR;
  rd r = {db, a, e, path != NULL, NULL};
  int rc = r.own ? pump_open(&r) : TL_OK;
  if (rc == TL_OK) rc = (a->pool = tl_strpool_new()) ? read(&r, ctx) : tl_nomem(e);
  if (path) sqlite3_close(db);
  return rc;
}

static int side_reads(rd *r, void *ctx) {
  side *sd = ctx;
  int rc = sd->core ? read_core_maps(r, &sd->cm) : read_event_maps(r, &sd->maps);
  if (rc == TL_OK && !sd->distributed) rc = sd->core ? read_calls_core(r) : read_calls(r);
  if (rc == TL_OK && !sd->distributed && sd->core && !sd->relations_apart)
    rc = read_relations_core(r, &r->a->relations);
  return rc;
}

static void *side_read(void *arg) {
  side *sd = arg;
  double cpu0 = tl_thread_cpu_s();
  sd->rc = run_reader(sd->path, sd->db, &sd->a, &sd->e, side_reads, sd);
  sd->cpu = tl_thread_cpu_s() - cpu0;
  return NULL;
}

/* The ids in to of every string of from (NULL: none), interned in from's id order, so that
** merging a reader's pool gives the ids reading into to would have given; NULL on
** out-of-memory (entries TL_STR_NOMEM where interning failed). */
static uint32_t *remap_pool(tl_strpool *to, const tl_strpool *from) {
  uint32_t nstr = from ? tl_strpool_count(from) : 0;
  uint32_t *map = calloc((size_t)nstr + 1, sizeof *map);
  for (uint32_t i = 0; map && i < nstr; i++)
    map[i] = i == TL_STR_NONE ? TL_STR_NONE
                              : tl_strpool_intern(to, tl_strpool_str(from, i),
                                                  tl_strpool_len(from, i));
  return map;
}

/* Moves the side reader's calls and relations into a (api names re-interned). */
static int merge_side(pf_analysis *a, side *sd, tl_err *e) {
  uint32_t *map = remap_pool(a->pool, sd->a.pool);
  if (!map) return tl_nomem(e);
  int err = TL_OK;
  for (size_t k = 0; k < sd->a.calls.n; k++) {
    uint32_t id = map[sd->a.calls.v[k].api];
    if (id == TL_STR_NOMEM) err = tl_nomem(e);
    sd->a.calls.v[k].api = id;
  }
  free(map);
  if (err) return err;
  a->calls = sd->a.calls, a->relations = sd->a.relations;
  memset(&sd->a.calls, 0, sizeof sd->a.calls);
  memset(&sd->a.relations, 0, sizeof sd->a.relations);
  return TL_OK;
}

/* ---- The occurrence reader ------------------------------------------------------------ */

/* Where the occurrences name their node by node_n, they need no node to be read: they are
** read apart (ix.defer), on a third read-only connection by a worker thread while the
** calling thread reads the nodes, into a pf_analysis of their own (own string pool), and
** merged right after the nodes. The same functions run in the same order either way, so
** the string ids, and the bytes, do not depend on it. */
typedef struct occ_reader {
  const char *path; /* worker: the database file to open; NULL: use db */
  sqlite3 *db;
  pf_analysis a;
  node_index ix;
  pf_imap occ_by_n;
  i64vec atoms;
  TL_VEC(uint8_t) nulls; /* the core path: which stored columns of each row were NULL */
  tl_err e;
  int rc;
  double cpu; /* its thread's CPU seconds (TRACELOOM_TIMING) */
} occ_reader;

/* The node index of an occurrence read apart (pf_occ.node holds its node_n); NULL, with the
** error set, when no node row has that node_n. */
static const int64_t *occ_node_index(const node_index *ix, const pf_occ *o, tl_err *e) {
  const int64_t *node = pf_imap_get(&ix->by_n, o->node);
  if (!node)
    tl_fail(e, "traceloom_export_perfetto: traceloom_position_occurrence %lld (node_n %lld) "
               "has no traceloom_v_tree_node row", (long long)o->n, (long long)o->node);
  return node;
}

/* Moves the occurrence reader's occurrences into a. */
static void take_occurrences(pf_analysis *a, occ_reader *w) {
  a->occs = w->a.occs;
  memset(&w->a.occs, 0, sizeof w->a.occs);
}

/* ---- The stored core: occurrences ------------------------------------------------------- */

/* The stored values an atom lacks (traceloom_position_occurrence_body has no row for it: its
** anchor's and its event's values stand in, the view's COALESCE), one bit each in
** occ_reader.nulls. */
enum { ON_START = 1, ON_END = 2, ON_COMPUTE = 4, ON_COMM = 8, ON_IDLE = 16, ON_SELF = 32,
       ON_AUX_EVENTS = 64, ON_AUX = 128, ON_ALL = 255 };

/* The occurrences as stored (traceloom_position_occurrence_core, occurrence_n order), before
** their node is known: pf_occ.node holds node_n and anchor_first anchor_first_n; the times
** and costs are the stored ns of traceloom_position_occurrence_body (w->nulls: which were not
** stored), repeat_context the view's text (':' read as '#', ',' as '/') in the reader's own
** pool. merge_occurrences_core finishes them once the nodes are read, resolve_atoms_core once
** the anchors are. */
typedef struct occ_rows {
  occ_reader *w;
  i64vec parent_n;
  tl_buf ctx;
} occ_rows;

static int occ_row(rd *r, void *arg, sqlite3_value **v) {
  occ_rows *x = arg;
  occ_reader *w = x->w;
  pf_analysis *a = r->a;
  pf_occ o;
  memset(&o, 0, sizeof o);
  o.n = sqlite3_value_int64(v[0]);
  o.node = sqlite3_value_int64(v[1]);
  o.occ_idx = sqlite3_value_int64(v[2]);
  int64_t pn = sqlite3_value_type(v[3]) == SQLITE_NULL ? -1 : sqlite3_value_int64(v[3]);
  o.iteration = sqlite3_value_int64(v[4]);
  o.anchor_first = sqlite3_value_int64(v[5]);
  o.event_n = -1, o.anchor_n = -1;
  uint8_t nulls = ON_ALL; /* until its body row, if any, is read */
  if (pf_imap_get(&w->occ_by_n, o.n))
    return tl_fail(r->e, "traceloom_export_perfetto: traceloom_position_occurrence lists "
                         "occurrence_n %lld twice", (long long)o.n);
  if (pf_imap_put(&w->occ_by_n, o.n, (int64_t)a->occs.n) || TL_VEC_PUSH(&a->occs, o) ||
      TL_VEC_PUSH(&x->parent_n, pn) || TL_VEC_PUSH(&w->nulls, nulls))
    return tl_nomem(r->e);
  return TL_OK;
}

/* One row of traceloom_position_occurrence_body: the times, costs and repeat context of an
** occurrence read by occ_row. */
static int occ_body_row(rd *r, void *arg, sqlite3_value **v) {
  occ_rows *x = arg;
  occ_reader *w = x->w;
  pf_analysis *a = r->a;
  int64_t n = sqlite3_value_int64(v[0]);
  const int64_t *at = pf_imap_get(&w->occ_by_n, n);
  if (!at)
    return tl_fail(r->e, "traceloom_export_perfetto: traceloom_position_occurrence_body names "
                         "occurrence_n %lld, which traceloom_position_occurrence_core lacks",
                   (long long)n);
  pf_occ *o = &a->occs.v[*at];
  int64_t *f[] = {&o->start, &o->end, &o->cost[PF_C_COMPUTE], &o->cost[PF_C_COMM],
                  &o->cost[PF_C_IDLE], &o->cost[PF_C_SELF], &o->aux_events, &o->cost[PF_C_AUX]};
  uint8_t nulls = 0;
  for (int k = 0; k < 8; k++) {
    if (sqlite3_value_type(v[1 + k]) == SQLITE_NULL) nulls |= (uint8_t)(1u << k);
    else *f[k] = sqlite3_value_int64(v[1 + k]);
  }
  w->nulls.v[*at] = nulls;
  const char *t = (const char *)sqlite3_value_text(v[9]);
  if (t) {
    tl_buf *c = &x->ctx;
    tl_buf_reset(c);
    tl_buf_append(c, t, (size_t)sqlite3_value_bytes(v[9]));
    for (size_t i = 0; i < c->n; i++) c->p[i] = c->p[i] == ':' ? '#' : c->p[i] == ',' ? '/' : c->p[i];
    o->repeat_context = c->oom ? TL_STR_NOMEM : tl_strpool_intern(a->pool, c->p, c->n);
    if (o->repeat_context == TL_STR_NOMEM) return tl_nomem(r->e);
  }
  return TL_OK;
}

static int read_occurrences_core(rd *r, occ_reader *w) {
  static const row_query q = {
      "occurrence_n, node_n, occurrence_idx, parent_n, member_order, anchor_first_n",
      "traceloom_position_occurrence_core", NULL, "occurrence_n"};
  static const row_query body = {
      "occurrence_n, start_ns, end_ns, compute_ns, comm_ns, idle_ns, self_ns, aux_events, "
      "aux_ns, repeat_context",
      "traceloom_position_occurrence_body", NULL, "occurrence_n"};
  occ_rows x = {w, {0}, {0}};
  size_t no = dense_rows(r, "traceloom_position_occurrence_core", "occurrence_n");
  int err = no && (TL_VEC_RESERVE(&r->a->occs, no) || TL_VEC_RESERVE(&x.parent_n, no) ||
                   TL_VEC_RESERVE(&w->nulls, no) || pf_imap_reserve(&w->occ_by_n, no))
                ? tl_nomem(r->e) : TL_OK;
  if (!err) TL_VEC_PREFAULT(&r->a->occs, no); /* each key a row: all of it is filled */
  if (!err) err = each_row(r, &q, occ_row, &x);
  if (!err) err = each_row(r, &body, occ_body_row, &x);
  if (!err) err = link_parents(r, &w->occ_by_n, &x.parent_n);
  TL_VEC_FREE(&x.parent_n);
  tl_buf_free(&x.ctx);
  return err;
}

/* The rooted path of node k (core_node.rooted, else its parent's with '/s<slot>/<node_id>':
** the view's COALESCE), interned in a's pool; TL_STR_NONE where it is NULL. */
static uint32_t core_rooted_path(pf_analysis *a, const node_index *ix, int64_t k, tl_buf *b) {
  const core_node *cn = &ix->cn.v[k];
  if (cn->rooted != TL_STR_NONE)
    return tl_strpool_intern(a->pool, tl_strpool_str(ix->paths, cn->rooted),
                             tl_strpool_len(ix->paths, cn->rooted));
  if (cn->parent < 0 || ix->cn.v[cn->parent].rooted == TL_STR_NONE) return TL_STR_NONE;
  tl_buf_reset(b);
  tl_buf_puts(b, tl_strpool_str(ix->paths, ix->cn.v[cn->parent].rooted));
  char tail[64];
  int n = snprintf(tail, sizeof tail, "/s%lld/", (long long)cn->slot);
  tl_buf_append(b, tail, (size_t)n);
  tl_buf_puts(b, tl_strpool_str(a->pool, a->nodes.v[k].node_id));
  return b->oom ? TL_STR_NOMEM : tl_strpool_intern(a->pool, b->p, b->n);
}

/* Moves the core occurrences into a once the nodes are read: node_n -> node index, token
** ordinals (anchor_n less the tree's first_anchor_n, the end token_len further), and for
** occurrences with children their times, costs, repeat context and rooted path (interned
** occurrence by occurrence, context then path, as merge_occurrences gives them). Atoms are
** listed in atoms as (occurrence index, anchor_first_n) for resolve_atoms_core. */
static int merge_occurrences_core(pf_analysis *a, occ_reader *w, const node_index *ix,
                                  i64vec *atoms, tl_err *e) {
  tl_buf path = {0};
  int err = TL_VEC_RESERVE(atoms, 2 * w->a.occs.n) ? tl_nomem(e) : TL_OK;
  for (size_t i = 0; !err && i < w->a.occs.n; i++) {
    pf_occ *o = &w->a.occs.v[i];
    const int64_t *node = occ_node_index(ix, o, e);
    if (!node) {
      err = TL_ERROR;
      break;
    }
    const core_node *cn = &ix->cn.v[*node];
    if (o->n < cn->first_occ || o->n >= cn->first_occ + cn->occ_count) {
      err = tl_fail(e, "traceloom_export_perfetto: occurrence_n %lld lies outside the "
                       "occurrences of its node_n %lld in traceloom_node_core",
                    (long long)o->n, (long long)o->node);
      break;
    }
    int64_t anchor_n = o->anchor_first;
    o->node = *node;
    o->anchor_first = anchor_n - cn->first_anchor;
    o->anchor_end = anchor_n + cn->token_len - cn->first_anchor;
    if (cn->node_kind == 1) {
      o->repeat_context = o->rooted_path = TL_STR_NONE;
      if (TL_VEC_PUSH(atoms, (int64_t)i) || TL_VEC_PUSH(atoms, anchor_n)) err = tl_nomem(e);
      continue;
    }
    uint8_t nulls = w->nulls.v[i];
    if (nulls & (ON_START | ON_END)) {
      err = tl_fail(e, "traceloom_export_perfetto: occurrence_n %lld (node_n %lld) has no "
                       "start_ns/end_ns in traceloom_position_occurrence",
                    (long long)o->n, (long long)a->nodes.v[*node].node_n);
      break;
    }
    if (o->end < o->start) o->end = o->start;
    /* NULL costs read as 0, as col_us_ns reads the view's */
    o->cost[PF_C_TOTAL] = o->cost[PF_C_COMPUTE] + o->cost[PF_C_COMM] + o->cost[PF_C_IDLE];
    if (o->repeat_context != TL_STR_NONE)
      o->repeat_context = tl_strpool_intern(a->pool, tl_strpool_str(w->a.pool, o->repeat_context),
                                            tl_strpool_len(w->a.pool, o->repeat_context));
    o->rooted_path = core_rooted_path(a, ix, *node, &path);
    if (o->repeat_context == TL_STR_NOMEM || o->rooted_path == TL_STR_NOMEM) err = tl_nomem(e);
  }
  tl_buf_free(&path);
  if (err) return err;
  take_occurrences(a, w);
  return TL_OK;
}

/* An atom's times and costs where its row leaves them NULL: its anchor's packet and its
** event's start, end and duration (self time); its event and that event's stream. */
static int resolve_atoms_core(pf_analysis *a, const core_maps *m, const uint8_t *nulls,
                              const int64_t *atom_anchor, size_t npairs, tl_err *e) {
  for (size_t i = 0; i < npairs; i++) {
    pf_occ *o = &a->occs.v[atom_anchor[2 * i]];
    o->anchor_n = atom_anchor[2 * i + 1];
    uint8_t nl = nulls[atom_anchor[2 * i]];
    const int64_t *ar = pf_imap_get(&m->anchor_row, atom_anchor[2 * i + 1]);
    const core_anchor *an = ar ? &m->anchors.v[*ar] : NULL;
    const int64_t *er = !an ? NULL
                        : an->event_n >= 0 ? pf_imap_get(&m->event_row, an->event_n)
                                           : pf_imap_get(&m->launch_row, -an->event_n);
    const core_event *ev = er ? &m->events.v[*er] : NULL;
    if ((nl & (ON_START | ON_END)) && !ev)
      return tl_fail(e, "traceloom_export_perfetto: occurrence_n %lld (node_n %lld) has no "
                        "start_ns/end_ns in traceloom_position_occurrence",
                     (long long)o->n, (long long)a->nodes.v[o->node].node_n);
    if (nl & ON_START) o->start = ev->start;
    if (nl & ON_END) o->end = ev->start + ev->dur;
    if (o->end < o->start) o->end = o->start;
    if (nl & ON_COMPUTE) o->cost[PF_C_COMPUTE] = an ? an->compute : 0;
    if (nl & ON_COMM) o->cost[PF_C_COMM] = an ? an->comm : 0;
    if (nl & ON_IDLE) o->cost[PF_C_IDLE] = an ? an->idle : 0;
    if (nl & ON_SELF) o->cost[PF_C_SELF] = ev ? ev->dur : 0;
    if (nl & ON_AUX_EVENTS) o->aux_events = an ? an->aux_events : 0;
    if (nl & ON_AUX) o->cost[PF_C_AUX] = an ? an->aux : 0;
    o->cost[PF_C_TOTAL] = o->cost[PF_C_COMPUTE] + o->cost[PF_C_COMM] + o->cost[PF_C_IDLE];
    if (!an || an->event_n < 0) continue;
    o->event_n = an->event_n;
    if (ev && ev->stream != EV_NULL_STREAM) o->stream = ev->stream, o->has_stream = 1;
  }
  return TL_OK;
}

/* 1 when the exporter reads the stored core: every core table and column it reads is there
** (an analysis of this version), and TRACELOOM_EXPORT_READ is not "views" (which reads the
** public views instead: the tests compare the two). */
static int core_path(sqlite3 *db) {
  static const char *const cols[][17] = {
      {"traceloom_node_core", "node_n", "parent_n", "local_n", "node_kind", "shape_id",
       "depth", "repeat_count", "tree_n", "token_len", "first_occurrence_n",
       "occurrence_count", "slot_ordinal", "rooted_path"},
      {"traceloom_node_shape", "shape_id", "node_type", "kind", "label", "category"},
      {"traceloom_tree_core", "tree_n", "first_anchor_n", "db_idx", "device_id", "node_device"},
      {"traceloom_position_occurrence_core", "occurrence_n", "node_n", "occurrence_idx",
       "parent_n", "member_order", "anchor_first_n"},
      {"traceloom_position_occurrence_body", "occurrence_n", "start_ns", "end_ns", "compute_ns",
       "comm_ns", "idle_ns", "self_ns", "aux_events", "aux_ns", "repeat_context"},
      {"traceloom_anchor_core", "anchor_n", "event_n", "compute_ns", "comm_ns", "idle_ns",
       "aux_events", "aux_ns"},
      {"traceloom_event_core", "event_n", "start_ns", "dur_ns", "stream_id"},
      {"traceloom_runtime_call_core", "call_n", "db_idx", "start_ns", "dur_ns", "shape_id",
       "correlation_id"},
      {"traceloom_runtime_call_shape", "shape_id", "api_name", "global_tid", "thread_id"},
      {"traceloom_runtime_device_relation_core", "call_n", "event_n", "shape_id"},
      {"traceloom_runtime_device_relation_shape", "shape_id", "support_state"},
      {"traceloom_viz_node", "node_n", "category"}};
  const char *env = getenv("TRACELOOM_EXPORT_READ");
  if (env && strcmp(env, "views") == 0) return 0;
  for (size_t t = 0; t < sizeof cols / sizeof *cols; t++)
    for (size_t c = 1; c < sizeof *cols / sizeof **cols && cols[t][c]; c++)
      if (!has_column(db, cols[t][0], cols[t][c])) return 0;
  return 1;
}

static int occ_reads(rd *r, void *ctx) {
  occ_reader *w = ctx;
  return w->ix.core ? read_occurrences_core(r, w) : read_occurrences(r, &w->ix, &w->occ_by_n, &w->atoms);
}

static void *occ_read(void *arg) {
  occ_reader *w = arg;
  double cpu0 = tl_thread_cpu_s();
  w->rc = run_reader(w->path, w->db, &w->a, &w->e, occ_reads, w);
  w->cpu = tl_thread_cpu_s() - cpu0;
  return NULL;
}

/* Moves the occurrence reader's occurrences into a: node_n -> node index, the repeat
** contexts and paths re-interned. */
static int merge_occurrences(pf_analysis *a, occ_reader *w, const node_index *ix, tl_err *e) {
  uint32_t *map = remap_pool(a->pool, w->a.pool);
  if (!map) return tl_nomem(e);
  int err = TL_OK;
  for (size_t i = 0; !err && i < w->a.occs.n; i++) {
    pf_occ *o = &w->a.occs.v[i];
    const int64_t *node = occ_node_index(ix, o, e);
    if (!node) {
      err = TL_ERROR;
      break;
    }
    o->node = *node;
    o->repeat_context = map[o->repeat_context];
    o->rooted_path = map[o->rooted_path];
    if (o->repeat_context == TL_STR_NOMEM || o->rooted_path == TL_STR_NOMEM) err = tl_nomem(e);
  }
  free(map);
  if (err) return err;
  take_occurrences(a, w);
  return TL_OK;
}

/* The worker's database: the main database's file, when a second connection sees what
** this one sees: a file (not in memory or temporary), no transaction open on the caller's
** connection (autocommit), a thread-safe SQLite, and TRACELOOM_EXPORT_THREADS not 1. */
static const char *side_path(sqlite3 *db) {
  const char *env = getenv("TRACELOOM_EXPORT_THREADS");
  if ((env && atoi(env) == 1) || !sqlite3_threadsafe() || !sqlite3_get_autocommit(db))
    return NULL;
  const char *path = sqlite3_db_filename(db, "main");
  return path && *path ? path : NULL;
}

/* ---- The relations reader ------------------------------------------------------------- */

/* The exact relations are needed last (the layout's flows, after every slice): where the
** stored core is read on worker threads, a worker of their own reads them on a fourth
** read-only connection, through the reading and into the layout, which takes them with
** pf_relations_ready. They hold no string, so nothing depends on when they arrive. */
struct pf_pending {
  pthread_t th;
  const char *path;
  pf_relations rel;
  tl_err e;
  int rc;
  double cpu; /* its thread's CPU seconds (TRACELOOM_TIMING) */
};

static void *relations_read(void *arg) {
  struct pf_pending *p = arg;
  sqlite3 *db;
  if (pf_open_analysis_ro(p->path, &db, &p->e)) {
    p->rc = TL_ERROR;
    return NULL;
  }
  rd r = {db, NULL, &p->e, 1, NULL};
  p->rc = pump_open(&r);
  if (p->rc == TL_OK) p->rc = read_relations_core(&r, &p->rel);
  sqlite3_close(db);
  p->cpu = tl_thread_cpu_s();
  return NULL;
}

int pf_relations_ready(pf_analysis *a, tl_err *e) {
  struct pf_pending *p = a->pending;
  if (!p) return TL_OK;
  pthread_join(p->th, NULL);
  a->pending = NULL;
  tl_timer tm;
  tl_timer_start(&tm, "export read");
  tl_timer_threads(&tm, "relations (worker)", &p->cpu, 1);
  int rc = p->rc;
  if (rc == TL_OK) {
    TL_VEC_FREE(&a->relations);
    a->relations = p->rel;
  } else {
    tl_fail(e, "%s", p->e.msg ? p->e.msg : "traceloom_export_perfetto: reading failed");
    TL_VEC_FREE(&p->rel);
  }
  tl_err_clear(&p->e);
  free(p);
  return rc;
}

/* ---- Entry -------------------------------------------------------------------------------- */

int pf_read_analysis(sqlite3 *db, int distributed, pf_analysis *a, tl_err *e) {
  rd r = {db, a, e, 0, NULL};
  static const char *const fixed[PF_NSTR] = {
      "published_tree_occurrence", "derived_repeat_body_window", "exact_replay_member",
      "exact_launch_members; envelopes_include_gaps; non_additive", "structure",
      "device_events"};
  if (!a->pool && !(a->pool = tl_strpool_new())) return tl_nomem(e);
  for (int k = 0; k < PF_NSTR; k++)
    if ((a->strs[k] = tl_strpool_intern_cstr(a->pool, fixed[k])) == TL_STR_NOMEM)
      return tl_nomem(e);
  node_index ix;
  memset(&ix, 0, sizeof ix);
  ix.core = core_path(db);
  ix.use_n = ix.core || (has_column(db, "traceloom_v_tree_node", "node_n") &&
                         has_column(db, "traceloom_v_tree_node", "parent_n") &&
                         has_column(db, "traceloom_position_occurrence", "node_n"));
  if (ix.core && !(ix.paths = tl_strpool_new())) return tl_nomem(e);
  pf_imap occ_by_n;
  memset(&occ_by_n, 0, sizeof occ_by_n);
  i64vec atoms = {0};
  side sd;
  memset(&sd, 0, sizeof sd);
  sd.db = db, sd.distributed = distributed, sd.path = side_path(db), sd.core = ix.core;
  pthread_t worker, occ_worker;
  if (ix.core && sd.path && !distributed && !a->pending) {
    struct pf_pending *p = calloc(1, sizeof *p);
    if (p) p->path = sd.path;
    if (p && pthread_create(&p->th, NULL, relations_read, p) == 0) a->pending = p, sd.relations_apart = 1;
    else free(p);
  }
  int threaded = sd.path && pthread_create(&worker, NULL, side_read, &sd) == 0;
  occ_reader ow;
  memset(&ow, 0, sizeof ow);
  ow.db = db, ow.path = sd.path, ow.ix.use_n = ow.ix.defer = 1, ow.ix.core = ix.core;
  int occ_threaded = ix.use_n && ow.path && pthread_create(&occ_worker, NULL, occ_read, &ow) == 0;
  tl_timer tm;
  tl_timer_start(&tm, "export read");
  double main_cpu0 = tl_thread_cpu_s();
  /* The nodes of the stored core: where the workers read on connections of their own, on one
  ** of this thread's own too (each_row feeds them through PUMP_FN there). */
  rd nr = r;
  int rc = TL_OK;
  if (ix.core && sd.path) {
    rc = pf_open_analysis_ro(sd.path, &nr.db, e);
    nr.own = 1;
    if (rc == TL_OK) rc = pump_open(&nr);
  }
  if (rc == TL_OK) rc = read_nodes(&nr, &ix);
  if (nr.db != db) sqlite3_close(nr.db);
  if (rc == TL_OK) rc = assign_motifs(&r);
  tl_timer_mark(&tm, "nodes");
  if (rc == TL_OK && !pf_has_relation(db, "traceloom_position_occurrence"))
    rc = tl_fail(e, "traceloom_export_perfetto: the analysis has no relation "
                    "traceloom_position_occurrence: re-run the analysis");
  if (ix.use_n) { /* read apart (by the worker, or now), merged right after the nodes */
    if (occ_threaded) pthread_join(occ_worker, NULL);
    else if (rc == TL_OK) ow.path = NULL, occ_read(&ow);
    if (rc == TL_OK && ow.rc != TL_OK)
      rc = tl_fail(e, "%s", ow.e.msg ? ow.e.msg : "traceloom_export_perfetto: reading failed");
    if (rc == TL_OK)
      rc = ix.core ? merge_occurrences_core(a, &ow, &ix, &ow.atoms, e)
                   : merge_occurrences(a, &ow, &ix, e);
    occ_by_n = ow.occ_by_n, atoms = ow.atoms;
    memset(&ow.occ_by_n, 0, sizeof ow.occ_by_n);
    memset(&ow.atoms, 0, sizeof ow.atoms);
    tl_err_clear(&ow.e);
    pf_analysis_free(&ow.a);
  } else if (rc == TL_OK) {
    rc = read_occurrences(&r, &ix, &occ_by_n, &atoms);
  }
  tl_timer_mark(&tm, "occurrences");
  if (rc == TL_OK && !distributed) { /* perfetto.md 5.3 and 9: not drawn with ranks */
    rc = read_members(&r);
    if (rc == TL_OK) rc = read_context(&r);
  }
  tl_timer_mark(&tm, "members and context");
  if (threaded) {
    pthread_join(worker, NULL);
  } else {
    sd.path = NULL;
    if (rc == TL_OK) side_read(&sd);
    else sd.rc = TL_OK;
  }
  tl_timer_mark(&tm, "calls, relations, anchors, events");
  if (rc == TL_OK && sd.rc != TL_OK) {
    rc = tl_fail(e, "%s", sd.e.msg ? sd.e.msg : "traceloom_export_perfetto: reading failed");
  }
  if (rc == TL_OK && atoms.n && !(ix.core ? sd.cm.anchors.n : sd.maps.anchor_event.n))
    rc = tl_fail(e, "traceloom_export_perfetto: the analysis has atom occurrences but no "
                    "traceloom_anchor / traceloom_event rows");
  if (rc == TL_OK && ix.core)
    rc = resolve_atoms_core(a, &sd.cm, ow.nulls.v, atoms.v, atoms.n / 2, e);
  else if (rc == TL_OK)
    resolve_atom_events(a, &sd.maps, atoms.v, atoms.n / 2);
  if (rc == TL_OK) rc = merge_side(a, &sd, e);
  double cpu[3] = {tl_thread_cpu_s() - main_cpu0, occ_threaded ? ow.cpu : 0, threaded ? sd.cpu : 0};
  tl_timer_threads(&tm, "(this, occurrences, side)", cpu, 3);
  tl_err_clear(&sd.e);
  pf_imap_free(&sd.maps.anchor_event);
  pf_imap_free(&sd.maps.event_stream);
  core_maps_free(&sd.cm);
  pf_analysis_free(&sd.a);
  TL_VEC_FREE(&ow.nulls);
  TL_VEC_FREE(&ix.cn);
  tl_strpool_free(ix.paths);
  tl_i64map_free(&ix.trees.by_pair);
  tl_i64map_free(&ix.by_key);
  pf_imap_free(&ix.by_n);
  pf_imap_free(&occ_by_n);
  TL_VEC_FREE(&atoms);
  return rc;
}

void pf_analysis_free(pf_analysis *a) {
  if (a->pending) { /* a failure before the layout took them */
    tl_err e = {0};
    pf_relations_ready(a, &e);
    tl_err_clear(&e);
  }
  TL_VEC_FREE(&a->nodes);
  TL_VEC_FREE(&a->topo);
  TL_VEC_FREE(&a->occs);
  TL_VEC_FREE(&a->members);
  TL_VEC_FREE(&a->calls);
  TL_VEC_FREE(&a->relations);
  TL_VEC_FREE(&a->rows);
  TL_VEC_FREE(&a->kv);
  tl_strpool_free(a->pool);
  a->pool = NULL;
}
