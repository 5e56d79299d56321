/*
** looptree.c: traceloom_loop_tree([options_json]), the loop tree as Markdown.
**
**   SELECT traceloom_loop_tree();
**   SELECT traceloom_loop_tree('{"max_children": 20, "max_depth": 4, "max_repeats": 10}');
**   SELECT traceloom_loop_tree('{"view": "expanded"}');    -- compact (default) | expanded | both
**   SELECT traceloom_loop_tree('{"threads": 1}');          -- read on this connection only
**
** Reads the published analysis of the calling connection (per tree, one scan of the node_n
** range of traceloom_v_node_stats for the integers every line needs, in two halves on two
** connections for a large tree; self and aux time only for the rows of the Repeat tables;
** the rendering is done in C, so a root with half a million children costs one pass, and its
** lines are written without printf) and renders, per (db_idx, device_id):
**   - the lenses: what each number means (a node's total is its busy time, compute plus
**     communication, plus the idle gaps charged to its anchors; averages are per iteration);
**   - "Repeats by time covered": the Repeat nodes, the largest total first, with their path
**     and the time of one iteration, so the loop that matters leads however the tree looks;
**   - the outline from the root, Repeat bodies indented; a run of more than RUN_COLLAPSE
**     consecutive one-off siblings (one occurrence in the whole run, no Repeat inside) is
**     one line ("12 nodes N010-N021 (RmsNorm, MatMul, ...), total_us=188.6"), and past
**     max_children lines plain siblings are only counted while Repeats keep their lines, so
**     every repeat stays visible however wide the root is;
**   - per Repeat (same order): the body of one iteration, one row per child node with that
**     child's own figures per iteration of the Repeat.
** That is the compact view (the default), which also opens with the tree's grammar: the
** anchors' symbols with every Repeat written (body)xN. The expanded view is every node of
** the tree, one line each at its depth, nothing collapsed or cut; "both" writes the two.
** Plain SQL underneath: the same numbers any client reads from traceloom_v_tree_node.
*/
#include "export/looptree.h"
#include "util/json.h"
#include "util/buf.h"
#include "util/dbopen.h"
#include "util/timing.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct looptree_opts {
  int64_t max_children; /* children listed per node */
  int64_t max_depth;    /* outline depth */
  int64_t max_repeats;  /* repeats listed (and tabulated) per tree */
  int compact, expanded; /* the views written */
  int64_t threads;       /* 1: no worker connection (the bytes are the same) */
} looptree_opts;

static int parse_opts(const char *json, looptree_opts *o, tl_err *e) {
  o->max_children = 40;
  o->max_depth = 6;
  o->max_repeats = 20;
  o->compact = 1, o->expanded = 0;
  o->threads = 2;
  if (!json || !*json) return TL_OK;
  tl_json *doc;
  if (tl_json_parse(json, strlen(json), &doc, e)) return TL_ERROR;
  int rc = TL_OK;
  if (tl_json_type_of(doc) != TL_JSON_OBJECT)
    rc = tl_fail(e, "traceloom_loop_tree options must be a JSON object");
  for (size_t i = 0; rc == TL_OK && i < tl_json_len(doc); i++) {
    const char *k = tl_json_key_at(doc, i);
    int64_t v;
    if (strcmp(k, "view") == 0) {
      const char *view = tl_json_str(tl_json_value_at(doc, i), NULL);
      if (view && strcmp(view, "compact") == 0) o->compact = 1, o->expanded = 0;
      else if (view && strcmp(view, "expanded") == 0) o->compact = 0, o->expanded = 1;
      else if (view && strcmp(view, "both") == 0) o->compact = 1, o->expanded = 1;
      else rc = tl_fail(e, "traceloom_loop_tree option \"view\" must be \"compact\", "
                           "\"expanded\" or \"both\"");
    } else if (tl_json_i64(tl_json_value_at(doc, i), &v) || v < 1) {
      rc = tl_fail(e, "traceloom_loop_tree option \"%s\" must be a positive integer", k);
    } else if (strcmp(k, "max_children") == 0) {
      o->max_children = v;
    } else if (strcmp(k, "max_depth") == 0) {
      o->max_depth = v;
    } else if (strcmp(k, "max_repeats") == 0) {
      o->max_repeats = v;
    } else if (strcmp(k, "threads") == 0) {
      o->threads = v;
    } else {
      rc = tl_fail(e, "unknown traceloom_loop_tree option \"%s\": expected max_children, "
                      "max_depth, max_repeats, view or threads", k);
    }
  }
  tl_json_free(doc);
  return rc;
}

/* Siblings without a Repeat inside collapse into one line when more than this many follow
** each other. */
enum { RUN_COLLAPSE = 3, RUN_NAMES = 3 };

/* The columns read per node, in this order: integers only, and only what every line needs.
** The figures of traceloom_v_tree_node (total_us, and the per-iteration averages rounded as
** there) are computed here from the node's nanoseconds, and only for the nodes a line
** shows: SQL's ROUND() formats and parses each value, which for every node of a half-
** million-node tree cost more than the rest of the rendering. The view's node range of one
** tree is a rowid range (node_n is dense over the trees in order, traceloom_tree_core gives
** each tree's first node and count); naming only these columns lets SQLite leave out the
** view's event join (start, end and self). Self and aux time are only in the tables of the
** Repeat bodies: they are read per node shown there (EXTRA_SQL). Labels come from the shape
** table (a few dozen rows), read once. */
#define NODE_SQL                                                                           \
  "SELECT node_n, parent_n, local_n, shape_id, repeat_count, occurrence_count, "           \
  "compute_ns, comm_ns, idle_ns, denom "                                                   \
  "FROM traceloom_v_node_stats WHERE node_n >= ?1 AND node_n < ?2 ORDER BY node_n"
enum { C_N, C_PARENT, C_LOCAL, C_SHAPE, C_REPEAT, C_OCC, C_COMPUTE, C_COMM, C_IDLE, C_DENOM };
#define EXTRA_SQL "SELECT aux_ns, self_ns FROM traceloom_v_node_stats WHERE node_n = ?1"
/* The nanosecond columns of a node: the first three read with it, the last two on demand. */
enum { NS_COMPUTE = TL_LT_COMPUTE, NS_COMM = TL_LT_COMM, NS_IDLE = TL_LT_IDLE, NS_AUX = TL_LT_AUX,
       NS_SELF = TL_LT_SELF, NNS = TL_LT_NNS };

/* The figures a line may show, as traceloom_v_tree_node names them. */
typedef enum lt_fig {
  F_TOTAL, F_AVG_TOTAL, F_AVG_BUSY, F_AVG_COMPUTE, F_AVG_COMM, F_AVG_IDLE, F_AVG_AUX,
  F_AVG_SELF, NFIG
} lt_fig;

typedef tl_loop_tree_shape lt_shape; /* repeat: kind = 'repeat' */

typedef tl_loop_tree_row lt_node; /* ns: aux and self once extra is set */

typedef struct lt_tree {
  lt_node *v;                 /* owned unless borrowed (the caller's rows) */
  int borrowed;
  size_t n;
  uint32_t *kids;
  int64_t base;               /* node_n of v[0] */
  const lt_shape *shapes;     /* by shape_id (owned by the caller) */
  size_t nshapes;
} lt_tree;

static void tree_free(lt_tree *t) {
  if (!t->borrowed) free(t->v);
  free(t->kids);
  t->v = NULL, t->kids = NULL, t->n = 0;
}

static const char *label_of(const lt_tree *t, const lt_node *nd) {
  const char *l = t->shapes[nd->shape].label;
  return l ? l : "";
}

static void put_label(tl_buf *b, const lt_tree *t, const lt_node *nd) {
  const lt_shape *s = &t->shapes[nd->shape];
  if (!s->label) return;
  tl_buf_display_label(b, s->label, s->len);
}

/* 'N007': local_node_id (printf('N%03d', local_n) in the views). */
static void put_local(tl_buf *b, const lt_node *nd) {
  tl_buf_append(b, "N", 1);
  tl_buf_i64w(b, nd->local_n, 3);
}

#define PUT_LIT(b, lit) tl_buf_append((b), "" lit, sizeof(lit) - 1)

/* ROUND(x, 3) exactly as SQLite computes it: its own printf to three decimals, read back.
** Where x lies within 0.4 thousandths of a multiple k of 0.001, that is k / 1000 (the
** printf rounds to the nearest, and the read-back of "k/1000" is the double nearest it, as
** k / 1000.0 is); only values near a half-way point (an odd total over two iterations) go
** through the printf: those are the values a naive rounding gets wrong. */
static double sql_round3(double x) {
  if (x < -4503599627370496.0 || x > 4503599627370496.0) return x;
  double ax = x < 0 ? -x : x;
  if (ax < 1073741824.0) {
    double s = ax * 1000.0;
    int64_t k = (int64_t)(s + 0.5);
    double d = s - (double)k;
    if (d > -0.4 && d < 0.4) return x < 0 ? -((double)k / 1000.0) : (double)k / 1000.0;
  }
  char buf[64];
  sqlite3_snprintf((int)sizeof buf, buf, "%.3f", x);
  return strtod(buf, NULL);
}

/* A figure of the node; 0 with *is_null set where the view's value is NULL. */
static double figure(const lt_node *nd, lt_fig f, int *is_null) {
  static const unsigned needs[NFIG] = {
      [F_TOTAL] = 1u << NS_COMPUTE | 1u << NS_COMM | 1u << NS_IDLE,
      [F_AVG_TOTAL] = 1u << NS_COMPUTE | 1u << NS_COMM | 1u << NS_IDLE,
      [F_AVG_BUSY] = 1u << NS_COMPUTE | 1u << NS_COMM,
      [F_AVG_COMPUTE] = 1u << NS_COMPUTE, [F_AVG_COMM] = 1u << NS_COMM,
      [F_AVG_IDLE] = 1u << NS_IDLE, [F_AVG_AUX] = 1u << NS_AUX, [F_AVG_SELF] = 1u << NS_SELF};
  *is_null = (nd->null_ns & needs[f]) != 0;
  if (*is_null) return 0;
  const int64_t *v = nd->ns;
  int64_t sum;
  switch (f) {
  case F_TOTAL: return nd->total;
  case F_AVG_TOTAL: sum = v[NS_COMPUTE] + v[NS_COMM] + v[NS_IDLE]; break;
  case F_AVG_BUSY: sum = v[NS_COMPUTE] + v[NS_COMM]; break;
  case F_AVG_COMPUTE: sum = v[NS_COMPUTE]; break;
  case F_AVG_COMM: sum = v[NS_COMM]; break;
  case F_AVG_IDLE: sum = v[NS_IDLE]; break;
  case F_AVG_AUX: sum = v[NS_AUX]; break;
  default: sum = v[NS_SELF]; break;
  }
  /* (sum / 1000.0) / denom, as the view divides (denom is at least 1). */
  return sql_round3((double)sum / 1000.0 / (double)nd->denom);
}

static double fig(const lt_node *nd, lt_fig f) {
  int is_null;
  return figure(nd, f, &is_null);
}

/* The shapes of the analysis, by shape_id (labels and kinds for every node line). */
static int shapes_load(sqlite3 *db, lt_shape **out, size_t *n, tl_err *e) {
  *out = NULL, *n = 0;
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(db, "SELECT shape_id, label, kind FROM traceloom_node_shape "
                             "WHERE shape_id >= 0 ORDER BY shape_id", -1, &st, NULL) != SQLITE_OK)
    return tl_fail(e, "traceloom_loop_tree needs a published analysis in this database "
                      "(run traceloom_analyze first): %s", sqlite3_errmsg(db));
  int rc = TL_OK, step;
  while (rc == TL_OK && (step = sqlite3_step(st)) == SQLITE_ROW) {
    int64_t id = sqlite3_column_int64(st, 0);
    if (id >= (int64_t)*n) {
      size_t want = (size_t)id + 1;
      lt_shape *p = realloc(*out, want * sizeof *p);
      if (!p) {
        rc = tl_nomem(e);
        break;
      }
      memset(p + *n, 0, (want - *n) * sizeof *p);
      *out = p, *n = want;
    }
    const char *label = (const char *)sqlite3_column_text(st, 1);
    const char *kind = (const char *)sqlite3_column_text(st, 2);
    (*out)[id].repeat = kind && strcmp(kind, "repeat") == 0;
    if (label && !((*out)[id].label = tl_strdup(label))) rc = tl_nomem(e);
    if (label) (*out)[id].len = strlen(label);
  }
  if (rc == TL_OK && step != SQLITE_DONE)
    rc = tl_fail(e, "traceloom_loop_tree: reading traceloom_node_shape failed: %s",
                 sqlite3_errmsg(db));
  sqlite3_finalize(st);
  return rc;
}

static void shapes_free(lt_shape *s, size_t n) {
  for (size_t i = 0; i < n; i++) free(s[i].label);
  free(s);
}

/* Reads the nodes v[lo, hi) of a tree (node_n first + lo ...) with st (NODE_SQL, on
** whichever connection); *got is how many rows there were. Touches only v[lo, hi), so two
** ranges fill at once. */
static int read_range(sqlite3_stmt *st, lt_tree *t, size_t lo, size_t hi, size_t *got,
                      tl_err *e) {
  const int64_t first = t->base;
  sqlite3_bind_int64(st, 1, first + (int64_t)lo);
  sqlite3_bind_int64(st, 2, first + (int64_t)hi);
  size_t k = lo;
  int rc;
  *got = 0;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    if (k == hi || sqlite3_column_int64(st, C_N) != first + (int64_t)k)
      return tl_fail(e, "traceloom_loop_tree: the nodes of a tree are not numbered densely in "
                        "display order");
    lt_node *nd = &t->v[k++];
    memset(nd, 0, sizeof *nd);
    int64_t shape = sqlite3_column_int64(st, C_SHAPE);
    if (shape < 0 || shape >= (int64_t)t->nshapes)
      return tl_fail(e, "traceloom_loop_tree: node %lld has shape %lld, which "
                        "traceloom_node_shape does not hold",
                     (long long)sqlite3_column_int64(st, C_N), (long long)shape);
    nd->shape = (uint32_t)shape;
    nd->repeat = (uint8_t)t->shapes[shape].repeat;
    nd->local_n = sqlite3_column_int64(st, C_LOCAL);
    nd->repeat_count = sqlite3_column_int64(st, C_REPEAT);
    nd->occ = sqlite3_column_int64(st, C_OCC);
    nd->denom = sqlite3_column_int64(st, C_DENOM);
    if (nd->denom < 1) nd->denom = 1;
    for (int c = 0; c < 3; c++) {
      if (sqlite3_column_type(st, C_COMPUTE + c) == SQLITE_NULL) nd->null_ns |= (uint8_t)(1u << c);
      else nd->ns[c] = sqlite3_column_int64(st, C_COMPUTE + c);
    }
    /* total_us = (compute + comm + idle) / 1000.0, unrounded; NULL (read as 0) if one is */
    nd->total = nd->null_ns & 7u ? 0 : (double)(nd->ns[0] + nd->ns[1] + nd->ns[2]) / 1000.0;
    if (sqlite3_column_type(st, C_PARENT) == SQLITE_NULL) {
      nd->parent = UINT32_MAX;
    } else {
      int64_t p = sqlite3_column_int64(st, C_PARENT) - first;
      if (p < 0 || p >= (int64_t)k - 1)
        return tl_fail(e, "traceloom_loop_tree: a node's parent does not come before it");
      nd->parent = (uint32_t)p;
    }
  }
  sqlite3_reset(st);
  if (rc != SQLITE_DONE) return tl_fail(e, "traceloom_loop_tree: reading the nodes failed");
  *got = k - lo;
  return TL_OK;
}

/* Trees of at least this many nodes are read in two halves, the second on a worker thread
** with its own read-only connection (tl_db_worker_path; not with the option threads 1):
** reading the nodes is most of the loop tree's time, and the rows of one half do not depend
** on the other's. Below it, opening the connection costs about what the half would save. */
enum { SPLIT_NODES = 65536 };

typedef struct half {
  const char *path;
  lt_tree *t;
  size_t lo, hi, got;
  int rc;
  tl_err e;
  double cpu; /* the worker's CPU seconds (TRACELOOM_TIMING) */
} half;

static void *read_half(void *arg) {
  half *h = arg;
  sqlite3 *db = NULL;
  sqlite3_stmt *st = NULL;
  h->rc = tl_db_open_ro(h->path, "analysis database", &db, &h->e);
  if (h->rc == TL_OK && sqlite3_prepare_v2(db, NODE_SQL, -1, &st, NULL) != SQLITE_OK)
    h->rc = tl_fail(&h->e, "traceloom_loop_tree: %s", sqlite3_errmsg(db));
  if (h->rc == TL_OK) h->rc = read_range(st, h->t, h->lo, h->hi, &h->got, &h->e);
  sqlite3_finalize(st);
  sqlite3_close(db);
  h->cpu = tl_thread_cpu_s();
  return NULL;
}

static int tree_link(lt_tree *t, tl_err *e);

/* Loads the nodes of one tree, node_n in [first, first + count) (display order: a parent
** before its children, children in slot order), and links them. */
static int tree_load(sqlite3 *db, sqlite3_stmt *st, int64_t first, int64_t count, int may_split,
                     lt_tree *t, tl_timer *tm, tl_err *e) {
  if (count < 0 || (uint64_t)count >= UINT32_MAX)
    return tl_fail(e, "traceloom_loop_tree: a tree of %lld nodes", (long long)count);
  t->v = malloc((count ? (size_t)count : 1) * sizeof *t->v);
  if (!t->v) return tl_nomem(e);
  t->base = first;
  size_t n = (size_t)count, mid = n;
  half h = {may_split ? tl_db_worker_path(db) : NULL, t, n / 2, n, 0, TL_OK, {0}, 0};
  pthread_t th;
  int threaded = n >= SPLIT_NODES && h.path && pthread_create(&th, NULL, read_half, &h) == 0;
  if (threaded) mid = n / 2;
  size_t got = 0;
  double cpu[2] = {tl_thread_cpu_s(), 0};
  int rc = read_range(st, t, 0, mid, &got, e);
  cpu[0] = tl_thread_cpu_s() - cpu[0];
  if (threaded) {
    pthread_join(th, NULL);
    cpu[1] = h.cpu;
    tl_timer_threads(tm, "read nodes", cpu, 2);
    tl_err_clear(&h.e);
    /* A worker that could not read (its own connection refused, say) leaves its half to
    ** this connection: the same rows either way. */
    if (rc == TL_OK && h.rc != TL_OK) rc = read_range(st, t, mid, n, &h.got, e);
    if (rc == TL_OK && got < mid && h.got > 0)
      rc = tl_fail(e, "traceloom_loop_tree: the nodes of a tree are not numbered densely in "
                      "display order");
    got += h.got;
  }
  if (rc != TL_OK) return rc;
  t->n = got;
  return tree_link(t, e);
}

/* Children lists by counting, then the Repeat-inside flags bottom up. */
static int tree_link(lt_tree *t, tl_err *e) {
  t->kids = malloc((t->n ? t->n : 1) * sizeof *t->kids);
  if (!t->kids) return tl_nomem(e);
  for (size_t k = 0; k < t->n; k++)
    if (t->v[k].parent != UINT32_MAX) t->v[t->v[k].parent].nchild++;
  uint32_t next = 0;
  for (size_t k = 0; k < t->n; k++) t->v[k].first_child = next, next += t->v[k].nchild, t->v[k].nchild = 0;
  for (size_t k = 0; k < t->n; k++) {
    lt_node *p = t->v[k].parent == UINT32_MAX ? NULL : &t->v[t->v[k].parent];
    if (p) t->kids[p->first_child + p->nchild++] = (uint32_t)k;
  }
  for (size_t k = t->n; k-- > 0;) {
    const lt_node *nd = &t->v[k];
    if (nd->parent != UINT32_MAX)
      t->v[nd->parent].repeat_inside |= nd->repeat || nd->repeat_inside;
  }
  return TL_OK;
}

/* Reads aux and self of node k (EXTRA_SQL, prepared on first use). */
static int load_extra(sqlite3 *db, sqlite3_stmt **st, lt_tree *t, uint32_t k, tl_err *e) {
  lt_node *nd = &t->v[k];
  if (nd->extra) return TL_OK;
  if (!*st && sqlite3_prepare_v2(db, EXTRA_SQL, -1, st, NULL) != SQLITE_OK)
    return tl_fail(e, "traceloom_loop_tree: %s", sqlite3_errmsg(db));
  sqlite3_reset(*st);
  sqlite3_bind_int64(*st, 1, t->base + (int64_t)k);
  if (sqlite3_step(*st) != SQLITE_ROW)
    return tl_fail(e, "traceloom_loop_tree: reading a node's self and aux time failed: %s",
                   sqlite3_errmsg(db));
  for (int c = 0; c < 2; c++) {
    if (sqlite3_column_type(*st, c) == SQLITE_NULL) nd->null_ns |= (uint8_t)(1u << (NS_AUX + c));
    else nd->ns[NS_AUX + c] = sqlite3_column_int64(*st, c);
  }
  nd->extra = 1;
  sqlite3_reset(*st);
  return TL_OK;
}

typedef struct ctx {
  looptree_opts o;
  tl_buf *b;
  lt_tree *t;
  sqlite3 *db;
  sqlite3_stmt *extra; /* EXTRA_SQL, prepared on first use */
} ctx;

/* "  - " at depth: two spaces a level. */
static void put_item(tl_buf *b, int depth) {
  static const char spaces[] = "                                ";
  for (int n = 2 * depth; n > 0; n -= 32) tl_buf_append(b, spaces, n < 32 ? (size_t)n : 32);
  PUT_LIT(b, "- ");
}

/* One node: "- N007 MatMul  total_us=1.234 avg_total_us=0.617", a Repeat with its
** iteration's time and busy time instead. Written without printf: a line per node of the
** expanded view, hundreds of thousands on a large tree. */
static void node_line(ctx *c, const lt_node *nd, int depth) {
  tl_buf *b = c->b;
  put_item(b, depth);
  put_local(b, nd);
  PUT_LIT(b, " ");
  put_label(b, c->t, nd);
  PUT_LIT(b, "  total_us=");
  tl_buf_f3(b, nd->total);
  if (nd->repeat) {
    PUT_LIT(b, ", per iteration: ");
    tl_buf_f3(b, fig(nd, F_AVG_TOTAL));
    PUT_LIT(b, " us (busy ");
    tl_buf_f3(b, fig(nd, F_AVG_BUSY));
    PUT_LIT(b, ")\n");
  } else {
    PUT_LIT(b, " avg_total_us=");
    tl_buf_f3(b, fig(nd, F_AVG_TOTAL));
    PUT_LIT(b, "\n");
  }
}

/* "- ... 37 more node(s), total_us=..." */
static void skipped_line(tl_buf *b, int depth, uint32_t skipped, double total) {
  put_item(b, depth);
  PUT_LIT(b, "... ");
  tl_buf_i64(b, skipped);
  PUT_LIT(b, " more node(s), total_us=");
  tl_buf_f3(b, total);
  PUT_LIT(b, "\n");
}

/* Outline from node k: its children one line each, runs of plain siblings collapsed. Past
** max_children lines the plain siblings are only counted ("- ... 37 more nodes,
** total_us=..."), and every Repeat (or node holding one) still gets its line, so no loop is
** hidden however wide the node is. */
static void outline(ctx *c, uint32_t k, int depth) {
  if (depth > c->o.max_depth) return;
  const lt_tree *t = c->t;
  const lt_node *p = &t->v[k];
  int64_t lines = 0;
  uint32_t skipped = 0;
  double skipped_total = 0;
  for (uint32_t i = 0; i < p->nchild;) {
    const lt_node *nd = &t->v[t->kids[p->first_child + i]];
    if (lines >= c->o.max_children && !nd->repeat && !nd->repeat_inside) {
      skipped++, skipped_total += nd->total, i++;
      continue;
    }
    if (skipped) {
      skipped_line(c->b, depth, skipped, skipped_total);
      skipped = 0, skipped_total = 0;
    }
    lines++;
    uint32_t j = i;
    while (j < p->nchild) {
      /* One-off: occurs once in the whole run (never in a Repeat body), no Repeat inside. */
      const lt_node *x = &t->v[t->kids[p->first_child + j]];
      if (x->occ != 1 || x->repeat || x->repeat_inside) break;
      j++;
    }
    if (j - i > RUN_COLLAPSE) {
      double total = 0;
      for (uint32_t q = i; q < j; q++) total += t->v[t->kids[p->first_child + q]].total;
      put_item(c->b, depth);
      tl_buf_i64(c->b, j - i);
      PUT_LIT(c->b, " nodes ");
      put_local(c->b, nd);
      PUT_LIT(c->b, "-");
      put_local(c->b, &t->v[t->kids[p->first_child + j - 1]]);
      PUT_LIT(c->b, " (");
      for (uint32_t q = i; q < j && q < i + RUN_NAMES; q++) {
        if (q > i) PUT_LIT(c->b, ", ");
        put_label(c->b, t, &t->v[t->kids[p->first_child + q]]);
      }
      if (j - i > RUN_NAMES) PUT_LIT(c->b, ", ...");
      PUT_LIT(c->b, "), total_us=");
      tl_buf_f3(c->b, total);
      PUT_LIT(c->b, "\n");
      i = j;
      continue;
    }
    node_line(c, nd, depth);
    if (nd->nchild) outline(c, t->kids[p->first_child + i], depth + 1);
    i++;
  }
  if (skipped) skipped_line(c->b, depth, skipped, skipped_total);
}

/* Every node under k, one line each at its depth: nothing collapsed, no limit. */
static void outline_expanded(ctx *c, uint32_t k, int depth) {
  const lt_tree *t = c->t;
  const lt_node *p = &t->v[k];
  for (uint32_t i = 0; i < p->nchild; i++) {
    uint32_t q = t->kids[p->first_child + i];
    node_line(c, &t->v[q], depth);
    if (t->v[q].nchild) outline_expanded(c, q, depth + 1);
  }
}

/* The grammar of the subtree under k: children's symbols in slot order, a Repeat as
** (body)xN; at most max_children items per level, max_depth levels. */
static void grammar(ctx *c, uint32_t k, int depth) {
  const lt_tree *t = c->t;
  const lt_node *p = &t->v[k];
  for (uint32_t i = 0; i < p->nchild; i++) {
    if ((int64_t)i >= c->o.max_children) {
      tl_buf_printf(c->b, " ...%u more", p->nchild - i);
      break;
    }
    const lt_node *nd = &t->v[t->kids[p->first_child + i]];
    if (i) tl_buf_puts(c->b, " ");
    if (!nd->nchild) {
      put_label(c->b, t, nd);
    } else if (depth >= c->o.max_depth) {
      tl_buf_printf(c->b, nd->repeat ? "(...)x%lld" : "(...)", (long long)nd->repeat_count);
    } else {
      tl_buf_puts(c->b, "(");
      grammar(c, t->kids[p->first_child + i], depth + 1);
      if (nd->repeat) tl_buf_printf(c->b, ")x%lld", (long long)nd->repeat_count);
      else tl_buf_puts(c->b, ")");
    }
  }
}

static void fmt_num(tl_buf *b, const lt_node *nd, lt_fig f) {
  int is_null;
  double v = figure(nd, f, &is_null);
  if (is_null) {
    PUT_LIT(b, " |");
  } else {
    PUT_LIT(b, " ");
    tl_buf_f3(b, v);
    PUT_LIT(b, " |");
  }
}

/* The node's path of local ids from the root, 'N001/N013/N015' (traceloom_viz_node.path). */
static void put_path(tl_buf *b, const lt_tree *t, uint32_t k) {
  uint32_t chain[256];
  size_t n = 0;
  for (uint32_t x = k; x != UINT32_MAX && n < 256; x = t->v[x].parent) chain[n++] = x;
  while (n-- > 0) {
    put_local(b, &t->v[chain[n]]);
    if (n) PUT_LIT(b, "/");
  }
}

static void table_header(tl_buf *b) {
  tl_buf_puts(b, "| node | structure | occ | total_us | avg_total_us | avg_busy_us | "
                 "avg_compute_us | avg_comm_us | avg_idle_us | avg_aux_us | avg_self_us |\n"
                 "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
}

static void table_row(tl_buf *b, const lt_tree *t, const lt_node *nd, const char *prefix) {
  PUT_LIT(b, "| ");
  tl_buf_puts(b, prefix);
  put_local(b, nd);
  PUT_LIT(b, " | ");
  put_label(b, t, nd);
  PUT_LIT(b, " | ");
  tl_buf_i64(b, nd->occ);
  PUT_LIT(b, " |");
  for (lt_fig f = F_TOTAL; f < NFIG; f++) fmt_num(b, nd, f);
  tl_buf_puts(b, "\n");
}

/* A Repeat to rank: the largest total first; on equal totals the outer (earlier) first. */
typedef struct ranked {
  double total;
  uint32_t idx;
} ranked;

static int by_total(const void *a, const void *b) {
  const ranked *x = a, *y = b;
  if (x->total != y->total) return x->total < y->total ? 1 : -1;
  return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static int render_tree(ctx *c, tl_err *e) {
  lt_tree *t = c->t;
  tl_buf *b = c->b;
  if (t->n == 0) return TL_OK;
  ranked *rk = malloc(t->n * sizeof *rk);
  if (!rk) return tl_nomem(e);
  size_t nrep = 0;
  for (size_t k = 0; k < t->n; k++)
    if (t->v[k].repeat) rk[nrep++] = (ranked){t->v[k].total, (uint32_t)k};
  qsort(rk, nrep, sizeof *rk, by_total);
  const lt_node *root = &t->v[0];
  double root_total = root->total;
  if (!c->o.compact) {
    free(rk);
    tl_buf_puts(b, "Expanded tree (every node; averages are per iteration):\n\n");
    node_line(c, root, 0);
    outline_expanded(c, 0, 1);
    return TL_OK;
  }
  tl_buf_puts(b, "Grammar: ");
  grammar(c, 0, 0);
  tl_buf_puts(b, "\n\n");
  if (nrep) {
    tl_buf_printf(b, "Repeats by time covered (%zu in all):\n\n", nrep);
    tl_buf_puts(b, "| repeat | path | iterations | total_us | share | per iteration us | busy us |\n"
                   "|---|---|---:|---:|---:|---:|---:|\n");
    for (size_t i = 0; i < nrep && (int64_t)i < c->o.max_repeats; i++) {
      const lt_node *nd = &t->v[rk[i].idx];
      PUT_LIT(b, "| ");
      put_local(b, nd);
      tl_buf_printf(b, " %s | ", label_of(t, nd));
      put_path(b, t, rk[i].idx);
      tl_buf_printf(b, " | %lld x %lld | %.3f | %.1f%% | %.3f | %.3f |\n", (long long)nd->occ,
                    (long long)nd->repeat_count,
                    nd->total, root_total > 0 ? 100.0 * nd->total / root_total : 0.0,
                    fig(nd, F_AVG_TOTAL), fig(nd, F_AVG_BUSY));
    }
    if ((int64_t)nrep > c->o.max_repeats) tl_buf_printf(b, "| ... %zu more | | | | | | |\n", nrep - (size_t)c->o.max_repeats);
    tl_buf_puts(b, "\n");
  }
  tl_buf_puts(b, "Outline (Repeat bodies indented; averages are per iteration):\n\n");
  outline(c, 0, 0);
  for (size_t i = 0; i < nrep && (int64_t)i < c->o.max_repeats; i++) {
    const lt_node *nd = &t->v[rk[i].idx];
    PUT_LIT(b, "\n### ");
    put_local(b, nd);
    tl_buf_printf(b, " %s (%lld occurrence(s) of %lld iterations)\n\n", label_of(t, nd),
                  (long long)nd->occ, (long long)nd->repeat_count);
    table_header(b);
    /* The tables show self and aux time: read for the nodes they show. */
    int err = load_extra(c->db, &c->extra, t, rk[i].idx, e);
    for (uint32_t k = 0; !err && k < nd->nchild && (int64_t)k < c->o.max_children; k++)
      err = load_extra(c->db, &c->extra, t, t->kids[nd->first_child + k], e);
    if (err) {
      free(rk);
      return err;
    }
    table_row(b, t, nd, "");
    for (uint32_t k = 0; k < nd->nchild; k++) {
      if ((int64_t)k >= c->o.max_children) {
        tl_buf_puts(b, "| ... | | | | | | | | | | |\n");
        break;
      }
      table_row(b, t, &t->v[t->kids[nd->first_child + k]], "&nbsp;&nbsp;");
    }
  }
  free(rk);
  if (c->o.expanded) {
    tl_buf_puts(b, "\nExpanded tree (every node; averages are per iteration):\n\n");
    node_line(c, root, 0);
    outline_expanded(c, 0, 1);
  }
  return TL_OK;
}

static void put_intro(tl_buf *b) {
  tl_buf_puts(b, "# Loop tree\n\n"
                 "Lenses: a node's total_us is its busy time (compute + communication) plus the "
                 "idle gaps charged to its anchors (the uncovered time before each), summed over "
                 "its occurrences; parent and child totals overlap (they are not additive across "
                 "levels). avg_* are per iteration (per occurrence outside a Repeat). The kernel "
                 "summary (traceloom_v_symbol_summary) is raw kernel duration instead: an overlay "
                 "that leaves out idle time and can overlap across streams.\n");
}

static void put_heading(tl_buf *b, int64_t db_idx, int64_t device, int64_t tokens,
                        const char *discovery) {
  tl_buf_printf(b, "\n## db %lld, device %lld (%lld anchors, %s)\n\n", (long long)db_idx,
                (long long)device, (long long)tokens, discovery ? discovery : "(null)");
}

/* The Markdown of b handed to *out, or the error of an allocation that failed in it. */
static int put_end(tl_buf *b, int ntrees, char **out, tl_err *e) {
  if (ntrees == 0) tl_buf_puts(b, "\nNo recovered tree (no anchors).\n");
  if (b->oom) return tl_nomem(e);
  *out = b->p;
  b->p = NULL;
  return TL_OK;
}

int tl_loop_tree(sqlite3 *db, const char *options_json, char **out, tl_err *e) {
  *out = NULL;
  ctx c;
  memset(&c, 0, sizeof c);
  if (parse_opts(options_json, &c.o, e)) return TL_ERROR;
  tl_buf b = {0};
  c.b = &b;
  c.db = db;
  sqlite3_stmt *trees = NULL, *nodes = NULL;
  lt_shape *shapes = NULL;
  size_t nshapes = 0;
  /* TRACELOOM_TIMING=1: reading and rendering, per tree. */
  tl_timer tm;
  tl_timer_start(&tm, "loop tree");
  int rc = shapes_load(db, &shapes, &nshapes, e);
  if (rc != TL_OK) goto done;
  if (sqlite3_prepare_v2(db,
                         "SELECT s.db_idx, s.device_id, s.token_count, s.macro_discovery, "
                         "t.first_node_n, t.node_count FROM traceloom_semantic_tree s "
                         "JOIN traceloom_tree_core t ON t.tree_n = s.tree_n "
                         "ORDER BY s.db_idx, s.device_id",
                         -1, &trees, NULL) != SQLITE_OK ||
      sqlite3_prepare_v2(db, NODE_SQL, -1, &nodes, NULL) != SQLITE_OK) {
    rc = tl_fail(e, "traceloom_loop_tree needs a published analysis in this database "
                    "(run traceloom_analyze first): %s", sqlite3_errmsg(db));
    goto done;
  }
  put_intro(&b);
  int ntrees = 0;
  while (rc == TL_OK && sqlite3_step(trees) == SQLITE_ROW) {
    ntrees++;
    put_heading(&b, sqlite3_column_int64(trees, 0), sqlite3_column_int64(trees, 1),
                sqlite3_column_int64(trees, 2), (const char *)sqlite3_column_text(trees, 3));
    lt_tree t;
    memset(&t, 0, sizeof t);
    t.shapes = shapes, t.nshapes = nshapes;
    rc = tree_load(db, nodes, sqlite3_column_int64(trees, 4), sqlite3_column_int64(trees, 5),
                   c.o.threads > 1, &t, &tm, e);
    tl_timer_mark(&tm, "read nodes");
    c.t = &t;
    if (rc == TL_OK) rc = render_tree(&c, e);
    tl_timer_mark(&tm, "render");
    tree_free(&t);
  }
  if (rc == TL_OK) rc = put_end(&b, ntrees, out, e);
done:
  sqlite3_finalize(trees), sqlite3_finalize(nodes), sqlite3_finalize(c.extra);
  shapes_free(shapes, nshapes);
  tl_buf_free(&b);
  return rc;
}

/* The nodes of an in-memory tree, checked and completed as read_range completes the
** published ones: every figure is there already (extra), so no line reads a database. */
static int tree_from_rows(tl_loop_tree_input *in, lt_tree *t, tl_err *e) {
  if ((uint64_t)in->n >= UINT32_MAX)
    return tl_fail(e, "traceloom_loop_tree: a tree of %zu nodes", in->n);
  t->v = in->rows, t->borrowed = 1;
  for (size_t k = 0; k < in->n; k++) {
    lt_node *nd = &t->v[k];
    if (nd->shape >= t->nshapes)
      return tl_fail(e, "traceloom_loop_tree: node %zu has shape %u, which is not known", k + 1,
                     nd->shape);
    if (nd->parent != UINT32_MAX && nd->parent >= k)
      return tl_fail(e, "traceloom_loop_tree: a node's parent does not come before it");
    nd->repeat = (uint8_t)t->shapes[nd->shape].repeat;
    if (nd->denom < 1) nd->denom = 1;
    nd->total = (double)(nd->ns[NS_COMPUTE] + nd->ns[NS_COMM] + nd->ns[NS_IDLE]) / 1000.0;
    nd->first_child = nd->nchild = 0;
    nd->repeat_inside = nd->null_ns = 0;
    nd->extra = 1;
  }
  t->n = in->n;
  return tree_link(t, e);
}

int tl_loop_tree_render(const char *options_json, tl_loop_tree_input *trees, size_t ntrees,
                        const tl_loop_tree_shape *shapes, size_t nshapes, char **out, tl_err *e) {
  *out = NULL;
  ctx c;
  memset(&c, 0, sizeof c);
  if (parse_opts(options_json, &c.o, e)) return TL_ERROR;
  tl_buf b = {0};
  c.b = &b;
  put_intro(&b);
  int rc = TL_OK;
  for (size_t i = 0; rc == TL_OK && i < ntrees; i++) {
    put_heading(&b, trees[i].db_idx, trees[i].device_id, trees[i].token_count,
                trees[i].macro_discovery);
    lt_tree t;
    memset(&t, 0, sizeof t);
    t.shapes = shapes, t.nshapes = nshapes;
    rc = tree_from_rows(&trees[i], &t, e);
    c.t = &t;
    if (rc == TL_OK) rc = render_tree(&c, e);
    tree_free(&t);
  }
  if (rc == TL_OK) rc = put_end(&b, (int)ntrees, out, e);
  tl_buf_free(&b);
  return rc;
}

/* ------------------------------------------------------------------ the CLI's short version */

/* "%.3f" / "%.1f" as SQLite's printf() writes them (the SQL the summary replaces). */
static void put_sqlf(tl_buf *b, const char *fmt, double x) {
  char tmp[64];
  sqlite3_snprintf((int)sizeof tmp, tmp, fmt, x);
  tl_buf_puts(b, tmp);
}

/* db < 0: one input, its lines say the device only; else "db N device M", as the
** Markdown's headings, so that the ranks of a directory are told apart. */
static void summary_line(tl_buf *b, const lt_tree *t, const lt_node *nd, int sub, int64_t db,
                         int64_t device, double root_total) {
  if (sub) {
    PUT_LIT(b, "    ");
  } else {
    if (db >= 0) {
      PUT_LIT(b, "  db ");
      tl_buf_i64(b, db);
      PUT_LIT(b, " device ");
    } else {
      PUT_LIT(b, "  device ");
    }
    tl_buf_i64(b, device);
    PUT_LIT(b, " ");
  }
  put_local(b, nd);
  PUT_LIT(b, " ");
  put_label(b, t, nd);
  PUT_LIT(b, ": ");
  tl_buf_i64(b, nd->occ);
  PUT_LIT(b, " occurrence(s), total ");
  put_sqlf(b, "%.3f", nd->total);
  PUT_LIT(b, " us");
  if (!sub && root_total > 0) {
    PUT_LIT(b, " (");
    put_sqlf(b, "%.1f", 100.0 * nd->total / root_total);
    PUT_LIT(b, "% of the device's time)");
  }
  PUT_LIT(b, ", ");
  put_sqlf(b, "%.3f", fig(nd, F_AVG_TOTAL));
  PUT_LIT(b, " us per iteration\n");
}

void tl_loop_tree_summary(const tl_loop_tree_input *trees, size_t ntrees,
                          const tl_loop_tree_shape *shapes, size_t nshapes, tl_buf *lines) {
  int shown = 0, more = 0, several_dbs = 0;
  for (size_t i = 1; i < ntrees; i++) several_dbs |= trees[i].db_idx != trees[0].db_idx;
  for (size_t i = 0; i < ntrees; i++) {
    lt_tree t = {trees[i].rows, 1, trees[i].n, NULL, 0, shapes, nshapes};
    if (!t.n) continue;
    /* loop depth: the Repeat nodes from the root to the node, itself included (preorder:
    ** a parent's before its children's) */
    uint8_t *depth = malloc(t.n);
    ranked *top = malloc(t.n * sizeof *top), *sub = malloc(t.n * sizeof *sub);
    if (!depth || !top || !sub) {
      free(depth), free(top), free(sub);
      lines->oom = 1;
      return;
    }
    size_t ntop = 0;
    for (size_t k = 0; k < t.n; k++) {
      const lt_node *nd = &t.v[k];
      int d = (nd->parent == UINT32_MAX ? 0 : depth[nd->parent]) + nd->repeat;
      depth[k] = (uint8_t)(d > 3 ? 3 : d);
      if (nd->repeat && d == 1) top[ntop++] = (ranked){nd->total, (uint32_t)k};
    }
    qsort(top, ntop, sizeof *top, by_total); /* on equal totals the earlier node first */
    /* A tree without a repeat says so: without the line a newcomer could not tell it from
    ** a device the summary forgot. */
    if (!ntop && shown >= 24) more++;
    if (!ntop && shown < 24) {
      shown++;
      PUT_LIT(lines, "  ");
      if (several_dbs) {
        PUT_LIT(lines, "db ");
        tl_buf_i64(lines, trees[i].db_idx);
        PUT_LIT(lines, " ");
      }
      PUT_LIT(lines, "device ");
      tl_buf_i64(lines, trees[i].device_id);
      PUT_LIT(lines, ": no repeat among its ");
      tl_buf_i64(lines, trees[i].token_count);
      PUT_LIT(lines, " anchors\n");
    }
    /* the root's total: the tree's first node, when it has no parent */
    double root_total = t.v[0].parent == UINT32_MAX ? t.v[0].total : 0;
    for (size_t r = 0; r < ntop && r < 3; r++) {
      if (shown < 24) shown++, summary_line(lines, &t, &t.v[top[r].idx], 0,
                                          several_dbs ? trees[i].db_idx : -1, trees[i].device_id,
                                          root_total);
      else more++;
      /* the Repeats of loop depth 2 below it: its subtree is the preorder range after it */
      size_t nsub = 0;
      for (size_t k = top[r].idx + 1; k < t.n && depth[k] >= 1; k++) {
        uint32_t x = t.v[k].parent;
        while (x != UINT32_MAX && x != top[r].idx) x = t.v[x].parent;
        if (x == UINT32_MAX) break;
        if (t.v[k].repeat && depth[k] == 2) sub[nsub++] = (ranked){t.v[k].total, (uint32_t)k};
      }
      qsort(sub, nsub, sizeof *sub, by_total);
      for (size_t q = 0; q < nsub && q < 2; q++) {
        if (shown < 24) shown++, summary_line(lines, &t, &t.v[sub[q].idx], 1, -1, 0, 0);
        else more++;
      }
    }
    free(depth), free(top), free(sub);
  }
  if (more) tl_buf_printf(lines, "  ... %d more repeat(s) in the loop tree\n", more);
}
