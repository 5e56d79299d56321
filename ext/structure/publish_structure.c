/*
** publish_structure.c: writing anchors, cost packets and the recovered trees.
**
** Tables (sql/schema/30_structure.sql): traceloom_anchor_core (each anchor with its cost
** packet and atom occurrence), traceloom_aux_link, and per tree traceloom_tree_core, its
** nodes (traceloom_node_core: one per structural position) and their occurrences
** (traceloom_position_occurrence_core, node-major). Every public relation of the structure
** is a view over these (sql/views/30_structure.sql). Identifiers follow outputs.md 0.1.
**
** Numbering: anchor_n is the anchor's index (dense over the anchor groups, which are the
** trees' order); node_n is 1 + the count of nodes of earlier trees + the node's preorder
** index; occurrence_n is 1 + the count of occurrences of earlier trees + the occurrence's
** node-major rank (tl_tree_node.first_rank + occurrence_idx - 1).
*/
#include "util/timing.h"
#include "structure/publish_structure.h"
#include "publish/publish.h"
#include "util/buf.h"
#include "publish/shapes.h"
#include "publish/rows.h"
#include "util/sort.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Decimal v, zero-padded to at least min_digits; returns the length written (<= 10). Ids
** and paths are formatted by hand: snprintf was a third of publishing them. */
static size_t fmt_u32(char *out, uint32_t v, size_t min_digits) {
  char t[10];
  size_t n = 0;
  do t[n++] = (char)('0' + v % 10), v /= 10; while (v);
  while (n < min_digits) t[n++] = '0';
  for (size_t k = 0; k < n; k++) out[k] = t[n - 1 - k];
  return n;
}

/* "N007": the local id of node index k. out needs 12 bytes. */
static size_t fmt_local(char *out, uint32_t k) {
  out[0] = 'N';
  return 1 + fmt_u32(out + 1, k + 1, 3);
}

/* The node prefix of a tree's ids: "node-", or "node-d<dev>-" when a DB holds several. */
static size_t fmt_prefix(const tl_tree *tr, char *out) {
  size_t plen = strlen(tr->node_prefix);
  memcpy(out, tr->node_prefix, plen);
  return plen;
}

/* ------------------------------------------------------------------ per-tree numbering */

/* The occurrences of a tree in node-major order (order[rank] is the occurrence). The rank of
** an occurrence, its inverse, is not held: an occurrence is reached through its rank, and
** its parent's and ancestors' indexes follow by the tree's arithmetic (tl_tree_parent_idx). */
typedef struct tree_ranks {
  uint32_t *order;
} tree_ranks;

/* seen: scratch of one uint32 per node (the caller's, reused afterwards). */
static int ranks_build(const tl_tree *tr, tree_ranks *r, uint32_t *seen) {
  size_t n = tr->st.noccurrences ? tr->st.noccurrences : 1;
  if (!(r->order = malloc(n * sizeof *r->order))) return -1;
  memset(seen, 0, (tr->nnodes ? tr->nnodes : 1) * sizeof *seen);
  for (uint32_t o = 0; o < tr->st.noccurrences; o++) {
    uint32_t nd = tr->occ_node[o];
    r->order[tr->nodes[nd].first_rank + seen[nd]++] = o;
  }
  return 0;
}

static void ranks_free(tree_ranks *r) {
  free(r->order);
  r->order = NULL;
}

/* occurrence_idx (1-based, per node) of the parent of occurrence o, whose index is idx. */
static uint32_t parent_idx(const tl_tree *tr, uint32_t o, uint32_t idx) {
  return tl_tree_parent_idx(tl_tree_occ_position(tr, tr->occ[o].parent), idx,
                            tl_tree_occ_member(tr, o));
}

/* ------------------------------------------------------------------ anchors */

enum {
  A_N, A_DB, A_DEVICE, A_EVENT, A_SHAPE, A_OCCURRENCE, A_COMPUTE, A_COMM, A_IDLE,
  A_AUX_EVENTS, A_AUX, A_LINKED_EVENTS, A_LINKED, A_HOST_CALL, A_NCOLS
};
static const tl_rows_column anchor_columns[A_NCOLS] = {
    [A_N] = {"anchor_n", 0},           [A_DB] = {"db_idx", 0},
    [A_DEVICE] = {"device_id", 0},     [A_EVENT] = {"event_n", 0},
    [A_SHAPE] = {"shape_id", 0},       [A_OCCURRENCE] = {"occurrence_n", 0},
    [A_COMPUTE] = {"compute_ns", 0},
    [A_COMM] = {"comm_ns", 0},         [A_IDLE] = {"idle_ns", 0},
    [A_AUX_EVENTS] = {"aux_events", 0}, [A_AUX] = {"aux_ns", 0},
    [A_LINKED_EVENTS] = {"linked_aux_events", 0}, [A_LINKED] = {"linked_aux_ns", 0},
    [A_HOST_CALL] = {"host_call_n", 0},
};

/* The rows of the anchors, in order: groups are a cursor, and so are the atom occurrences
** of the group's tree (walk order is token order), counted per node for their index, and the
** linked events' anchors in anchor order. An anchor's shape is looked up again (the shape
** pass interned them all): no per-anchor array is held while the anchors are written, which
** with threads >= 2 happens beside the trees' publication (ARCHITECTURE.md Memory). */
typedef struct anchor_rows {
  const tl_structure_input *in;
  const uint32_t *linked; /* link_anchor sorted: each anchor's links are a run */
  size_t nlinked, link_cursor;
  tl_shapes *shapes;
  const tl_tree *const *tree_of_group;
  const int64_t *occurrence_base; /* per group: occurrence_n before its tree's first */
  size_t group;
  uint32_t atom_cursor;
  uint32_t *node_seen; /* per node of the group's tree: occurrences met so far */
  size_t node_cap;
} anchor_rows;

/* The shape key of anchor n of group g: symbol, role, display label, input. */
static void anchor_shape_key(const tl_structure_input *in, const tl_anchor_group *g, size_t n,
                             uint64_t key[4]) {
  const tl_anchors *a = in->anchors;
  key[0] = a->symbol[n], key[1] = a->role[n];
  key[2] = tl_label_display(tl_event_label_of(in->trace, a->derived, a->event[n]));
  key[3] = g->db_idx;
}

static int anchor_group_begin(anchor_rows *r) {
  const tl_tree *tr = r->tree_of_group[r->group];
  r->atom_cursor = 0;
  if (!tr) return 0;
  if (tr->nnodes > r->node_cap) {
    uint32_t *p = realloc(r->node_seen, tr->nnodes * sizeof *p);
    if (!p) return -1;
    r->node_seen = p, r->node_cap = tr->nnodes;
  }
  memset(r->node_seen, 0, tr->nnodes * sizeof *r->node_seen);
  return 0;
}

static int fill_anchor(void *ctx, size_t n, int64_t *v, unsigned char *null) {
  anchor_rows *r = ctx;
  const tl_anchors *a = r->in->anchors;
  if (n == 0 && anchor_group_begin(r)) return -1;
  while (n >= a->groups.v[r->group].first + a->groups.v[r->group].count) {
    r->group++;
    if (anchor_group_begin(r)) return -1;
  }
  const tl_anchor_group *g = &a->groups.v[r->group];
  const tl_tree *tr = r->tree_of_group[r->group];
  uint32_t x = a->event[n];
  tl_packet pk = tl_packet_at(r->in->packets, n);
  uint64_t key[4];
  int fresh;
  anchor_shape_key(r->in, g, n, key);
  int64_t shape_id = tl_shapes_intern(r->shapes, key, &fresh);
  if (shape_id < 0 || fresh) return -1; /* interned by the shape pass: cannot be new */
  uint32_t nlinked = 0;
  while (r->link_cursor < r->nlinked && r->linked[r->link_cursor] == n) r->link_cursor++, nlinked++;
  memset(null, 0, A_NCOLS);
  v[A_N] = (int64_t)n;
  v[A_DB] = g->db_idx;
  v[A_DEVICE] = g->device_id;
  v[A_EVENT] = tl_event_stored_n(r->in->trace, x);
  v[A_SHAPE] = shape_id;
  if (tr) {
    if (tl_tree_next_atom(tr, &r->atom_cursor) == UINT32_MAX)
      return -1; /* checked by the shape pass: cannot happen */
    uint32_t nd = tr->occ_node[r->atom_cursor - 1];
    v[A_OCCURRENCE] = r->occurrence_base[r->group] + tr->nodes[nd].first_rank + ++r->node_seen[nd];
  } else {
    null[A_OCCURRENCE] = 1;
  }
  /* self_ns is the event's duration (traceloom_event_core.dur_ns): not stored again */
  v[A_COMPUTE] = pk.compute_ns, v[A_COMM] = pk.comm_ns, v[A_IDLE] = pk.idle_ns;
  v[A_AUX_EVENTS] = pk.aux_events, v[A_AUX] = pk.aux_ns;
  v[A_LINKED_EVENTS] = nlinked;
  v[A_LINKED] = tl_i64col_get(&r->in->forest->linked_ns, n);
  const uint32_t *call = r->in->anchor_call;
  if (call && call[n] != UINT32_MAX) v[A_HOST_CALL] = call[n];
  else null[A_HOST_CALL] = 1;
  return 0;
}

static int cmp_u32(const void *x, const void *y) {
  uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
  return (a > b) - (a < b);
}

enum { AS_ID, AS_SYMBOL, AS_ROLE, AS_LABEL, AS_FAMILY, AS_NCOLS };
static const tl_rows_column anchor_shape_columns[AS_NCOLS] = {
    [AS_ID] = {"shape_id", 0}, [AS_SYMBOL] = {"symbol", 1}, [AS_ROLE] = {"role", 1},
    [AS_LABEL] = {"label", 1}, [AS_FAMILY] = {"family", 1},
};

static int publish_anchors(sqlite3 *db, const tl_structure_input *in,
                           const tl_tree *const *tree_of_group, const int64_t *occurrence_base,
                           tl_err *e) {
  const tl_trace *t = in->trace;
  const tl_anchors *a = in->anchors;
  sqlite3_stmt *shape = NULL;
  int rc = tl_rows_prepare(db, "INSERT", "traceloom_anchor_shape", anchor_shape_columns,
                           AS_NCOLS, &shape, e);
  tl_shapes shapes;
  tl_shapes_init(&shapes, 4);
  /* the anchor of each aux link, in anchor order (few: a per-anchor count would be 4 bytes
  ** an anchor) */
  uint32_t *linked = malloc((a->nlinks ? a->nlinks : 1) * sizeof *linked);
  if (rc == TL_OK && !linked) rc = tl_nomem(e);
  if (rc == TL_OK && a->nlinks) {
    memcpy(linked, a->link_anchor, a->nlinks * sizeof *linked);
    qsort(linked, a->nlinks, sizeof *linked, cmp_u32);
  }
  /* The shapes first (few rows, written as they are met), checking that every anchor of a
  ** tree is the terminal of its next atom occurrence; then every anchor in one INSERT. */
  for (size_t gi = 0; rc == TL_OK && gi < a->groups.n; gi++) {
    const tl_anchor_group *g = &a->groups.v[gi];
    const tl_tree *tr = tree_of_group[gi];
    uint32_t atom_cursor = 0;
    for (size_t k = 0; rc == TL_OK && k < g->count; k++) {
      size_t n = g->first + k;
      uint32_t o = tr ? tl_tree_next_atom(tr, &atom_cursor) : UINT32_MAX;
      if (tr && (o == UINT32_MAX || tr->occ[o].start != k)) {
        rc = tl_fail(e, "structure of %s: anchor %zu has no atom occurrence", tr->tree_id, k + 1);
        break;
      }
      uint64_t key[4];
      anchor_shape_key(in, g, n, key);
      int fresh;
      int64_t shape_id = tl_shapes_intern(&shapes, key, &fresh);
      if (shape_id < 0) {
        rc = tl_nomem(e);
        break;
      }
      if (fresh) {
        sqlite3_bind_int64(shape, TL_PARAM(AS_ID), shape_id);
        tl_bind_str(shape, TL_PARAM(AS_SYMBOL), t->pool, a->symbol[n]);
        sqlite3_bind_text(shape, TL_PARAM(AS_ROLE),
                          tl_anchor_role_name((tl_anchor_role)a->role[n]), -1, SQLITE_STATIC);
        tl_bind_str(shape, TL_PARAM(AS_LABEL), t->pool, (uint32_t)key[2]);
        const char *family = tl_family_source_kind(t->profile->inputs.v[g->db_idx].family);
        sqlite3_bind_text(shape, TL_PARAM(AS_FAMILY), family, -1, SQLITE_STATIC);
        if ((rc = tl_pub_step(db, shape, "traceloom_anchor_shape", e))) break;
      }
    }
  }
  if (rc == TL_OK && a->n) {
    anchor_rows ctx = {.in = in, .linked = linked, .nlinked = a->nlinks, .shapes = &shapes,
                       .tree_of_group = tree_of_group, .occurrence_base = occurrence_base};
    rc = tl_rows_publish(db, "traceloom_anchor_core", anchor_columns, A_NCOLS, a->n, fill_anchor,
                         NULL, &ctx, e);
    free(ctx.node_seen);
  }
  free(linked);
  tl_shapes_free(&shapes);
  sqlite3_finalize(shape);
  return rc;
}

enum {
  AL_ANCHOR, AL_EVENT, AL_DB, AL_DEVICE, AL_ORDER, AL_TYPE, AL_REASON, AL_KIND, AL_DUR,
  AL_EVENT_N, AL_ANCHOR_N, AL_NCOLS
};
static const tl_rows_column aux_link_columns[AL_NCOLS] = {
    [AL_ANCHOR] = {"anchor_id", 1},    [AL_EVENT] = {"aux_event_id", 1},
    [AL_DB] = {"db_idx", 0},           [AL_DEVICE] = {"device_id", 0},
    [AL_ORDER] = {"aux_order", 0},     [AL_TYPE] = {"link_type", 1},
    [AL_REASON] = {"reason", 1},       [AL_KIND] = {"aux_kind", 1},
    [AL_DUR] = {"aux_dur_us", 0},      [AL_EVENT_N] = {"aux_event_n", 0},
    [AL_ANCHOR_N] = {"anchor_n", 0},
};

static int publish_aux_links(sqlite3 *db, const tl_structure_input *in, tl_err *e) {
  const tl_trace *t = in->trace;
  const tl_anchors *a = in->anchors;
  const tl_events *ev = &t->ev;
  sqlite3_stmt *st;
  if (tl_rows_prepare(db, "INSERT", "traceloom_aux_link", aux_link_columns, AL_NCOLS, &st, e))
    return TL_ERROR;
  int rc = TL_OK;
  char aid[40], evid[40];
  for (size_t k = 0; rc == TL_OK && k < a->nlinks + a->unplaced.n; k++) {
    int linked = k < a->nlinks;
    uint32_t x = linked ? a->link_event[k] : a->unplaced.v[k - a->nlinks];
    if (linked) {
      int n = snprintf(aid, sizeof aid, "anchor-%u", a->link_anchor[k]);
      sqlite3_bind_text(st, TL_PARAM(AL_ANCHOR), aid, n, SQLITE_STATIC);
      sqlite3_bind_int64(st, TL_PARAM(AL_ORDER), a->link_order[k]);
      sqlite3_bind_int64(st, TL_PARAM(AL_ANCHOR_N), a->link_anchor[k]);
    } else {
      sqlite3_bind_null(st, TL_PARAM(AL_ANCHOR));
      sqlite3_bind_null(st, TL_PARAM(AL_ORDER));
      sqlite3_bind_null(st, TL_PARAM(AL_ANCHOR_N));
    }
    int n = snprintf(evid, sizeof evid, "event-%u", x);
    sqlite3_bind_text(st, TL_PARAM(AL_EVENT), evid, n, SQLITE_STATIC);
    sqlite3_bind_int(st, TL_PARAM(AL_DB), tl_events_db_idx(ev, x));
    sqlite3_bind_int64(st, TL_PARAM(AL_DEVICE), tl_events_device_id(ev, x));
    sqlite3_bind_text(st, TL_PARAM(AL_TYPE), linked ? "prelude" : "retained_unplaced", -1,
                      SQLITE_STATIC);
    sqlite3_bind_text(st, TL_PARAM(AL_REASON),
                      linked ? "unanchored_event_before_anchor"
                             : "omitted_event_without_auxiliary_link",
                      -1, SQLITE_STATIC);
    sqlite3_bind_text(st, TL_PARAM(AL_KIND), tl_kind_name((tl_kind)tl_event_label(t, x)->kind),
                      -1, SQLITE_STATIC);
    sqlite3_bind_double(st, TL_PARAM(AL_DUR), tl_ns_to_us(tl_events_end(ev, x) - ev->start_ns[x]));
    sqlite3_bind_int64(st, TL_PARAM(AL_EVENT_N), x);
    rc = tl_pub_step(db, st, "traceloom_aux_link", e);
  }
  sqlite3_finalize(st);
  return rc;
}

/* ------------------------------------------------------------------ symbol summary */

/* The kernel summary per (db_idx, device_id, structural symbol): count, total, min, median,
** p90 and max of the anchors' raw durations (outputs.md 4.2, nearest rank: rank ceil(q n)).
** Percentiles need each symbol's durations ranked, which SQL can only get by sorting every
** anchor on every query; here they are computed once at publication. Only two ranks per
** symbol are read, so nothing is sorted: one counting pass over a device's anchors buckets
** their durations by symbol (8 bytes an anchor), and each bucket selects its two ranks in
** place (tl_select_i64). Sorting the whole device by (symbol, duration) held 24 bytes an
** anchor (keys, indices and the radix sort's copies): 178 MB at the 10M bench's 7.4M anchors,
** the analysis' peak (ARCHITECTURE.md Memory). */
enum {
  SS_DB, SS_DEVICE, SS_SYMBOL, SS_COUNT, SS_TOTAL, SS_MIN, SS_MEDIAN, SS_P90, SS_MAX, SS_NCOLS
};
static const tl_rows_column symbol_summary_columns[SS_NCOLS] = {
    [SS_DB] = {"db_idx", 0},          [SS_DEVICE] = {"device_id", 0},
    [SS_SYMBOL] = {"symbol", 1},      [SS_COUNT] = {"anchor_count", 0},
    [SS_TOTAL] = {"total_ns", 0},     [SS_MIN] = {"min_ns", 0},
    [SS_MEDIAN] = {"median_ns", 0},   [SS_P90] = {"p90_ns", 0},
    [SS_MAX] = {"max_ns", 0},
};

/* One row of traceloom_symbol_summary_core. */
typedef struct symbol_summary_row {
  uint32_t db_idx, symbol;
  int64_t device_id, count, total, min, median, p90, max;
} symbol_summary_row;

struct tl_symbol_summary {
  symbol_summary_row *v;
  size_t n, cap;
};

void tl_structure_summary_free(tl_symbol_summary *s) {
  if (!s) return;
  free(s->v);
  free(s);
}

/* The rows in publication order (groups in order, symbols ascending); arrays only, so that
** they may be computed on another thread than the writer's. */
int tl_structure_summary_build(const tl_structure_input *in, tl_symbol_summary **out, tl_err *e) {
  const tl_anchors *a = in->anchors;
  tl_symbol_summary *sum = calloc(1, sizeof *sum);
  *out = sum;
  if (!sum) return tl_nomem(e);
  int rc = TL_OK;
  int64_t *dur = NULL;  /* a group's durations, bucketed by symbol */
  uint32_t *end = NULL; /* per symbol id: the end of its bucket in dur */
  for (size_t gi = 0; rc == TL_OK && gi < a->groups.n; gi++) {
    const tl_anchor_group *g = &a->groups.v[gi];
    if (!g->count) continue;
    const uint32_t *sym = a->symbol + g->first;
    uint32_t max_sym = 0;
    for (size_t k = 0; k < g->count; k++)
      if (sym[k] > max_sym) max_sym = sym[k];
    int64_t *d2 = realloc(dur, g->count * sizeof *dur);
    if (d2) dur = d2;
    free(end);
    /* pool ids: as many as the distinct strings read, not the anchors */
    end = d2 ? calloc((size_t)max_sym + 2, sizeof *end) : NULL;
    if (!d2 || !end) {
      rc = tl_nomem(e);
      break;
    }
    /* end[s + 1] counts symbol s, then is summed into s + 1's start; the scatter moves each
    ** start to its bucket's end */
    for (size_t k = 0; k < g->count; k++) end[sym[k] + 1]++;
    for (size_t s = 0; s <= max_sym; s++) end[s + 1] += end[s];
    for (size_t k = 0; k < g->count; k++)
      dur[end[sym[k]]++] = tl_packet_at(in->packets, g->first + k).self_ns;
    size_t lo = 0;
    for (size_t s = 0; s <= max_sym; lo = end[s++]) {
      size_t n = end[s] - lo;
      if (!n) continue;
      int64_t *b = dur + lo, total = 0, min = b[0], max = b[0];
      for (size_t k = 0; k < n; k++) {
        total += b[k];
        if (b[k] < min) min = b[k];
        if (b[k] > max) max = b[k];
      }
      /* the p90's rank first: the values before it are the smaller ones, the median among them */
      size_t r90 = (9 * n + 9) / 10, r50 = (n + 1) / 2;
      tl_select_i64(b, n, r90 - 1);
      if (r50 < r90) tl_select_i64(b, r90 - 1, r50 - 1);
      if (sum->n == sum->cap) {
        size_t cap = sum->cap ? 2 * sum->cap : 64;
        symbol_summary_row *v = realloc(sum->v, cap * sizeof *v);
        if (!v) {
          rc = tl_nomem(e);
          break;
        }
        sum->v = v, sum->cap = cap;
      }
      sum->v[sum->n++] = (symbol_summary_row){
          .db_idx = g->db_idx, .symbol = (uint32_t)s, .device_id = g->device_id, .count = (int64_t)n,
          .total = total, .min = min, .median = b[r50 - 1], .p90 = b[r90 - 1], .max = max};
    }
  }
  free(dur), free(end);
  return rc;
}

int tl_structure_summary_write(sqlite3 *db, const tl_structure_input *in,
                               const tl_symbol_summary *sum, tl_err *e) {
  sqlite3_stmt *st;
  if (tl_rows_prepare(db, "INSERT", "traceloom_symbol_summary_core", symbol_summary_columns,
                      SS_NCOLS, &st, e))
    return TL_ERROR;
  int rc = TL_OK;
  for (size_t i = 0; rc == TL_OK && i < sum->n; i++) {
    const symbol_summary_row *r = &sum->v[i];
    sqlite3_bind_int(st, TL_PARAM(SS_DB), (int)r->db_idx);
    sqlite3_bind_int64(st, TL_PARAM(SS_DEVICE), r->device_id);
    tl_bind_str(st, TL_PARAM(SS_SYMBOL), in->trace->pool, r->symbol);
    sqlite3_bind_int64(st, TL_PARAM(SS_COUNT), r->count);
    sqlite3_bind_int64(st, TL_PARAM(SS_TOTAL), r->total);
    sqlite3_bind_int64(st, TL_PARAM(SS_MIN), r->min);
    sqlite3_bind_int64(st, TL_PARAM(SS_MEDIAN), r->median);
    sqlite3_bind_int64(st, TL_PARAM(SS_P90), r->p90);
    sqlite3_bind_int64(st, TL_PARAM(SS_MAX), r->max);
    rc = tl_pub_step(db, st, "traceloom_symbol_summary_core", e);
  }
  sqlite3_finalize(st);
  return rc;
}

static int publish_symbol_summary(sqlite3 *db, const tl_structure_input *in, tl_err *e) {
  tl_symbol_summary *sum = NULL;
  int rc = tl_structure_summary_build(in, &sum, e);
  if (rc == TL_OK) rc = tl_structure_summary_write(db, in, sum, e);
  tl_structure_summary_free(sum);
  return rc;
}

/* ------------------------------------------------------------------ per-node aggregates */

typedef struct node_agg {
  uint32_t first_token, end_token;
  int64_t start_ns, end_ns;
  int64_t sum[TL_SUM_COUNT];
} node_agg;

/* Times of the anchors [start, end) of a tree. */
static void span_times(const tl_structure_input *in, const tl_tree *tr, uint32_t start,
                       uint32_t end, int64_t *lo, int64_t *hi) {
  const tl_anchors *a = in->anchors;
  *lo = INT64_MAX, *hi = INT64_MIN;
  for (uint32_t k = start; k < end; k++) {
    int64_t s = tl_anchor_start(a, tr->first_anchor + k), t = tl_anchor_end(a, tr->first_anchor + k);
    if (s < *lo) *lo = s;
    if (t > *hi) *hi = t;
  }
}

/* Sums, span and times of node k over its occurrences (node-major: ranks first_rank ..
** first_rank + occurrence_count - 1 of rk). Computed for each node row as it is written, not
** held for the whole tree: a tree of millions of nodes would hold 80 bytes per node. */
static void node_aggregate(const tl_structure_input *in, const tl_tree *tr, const tree_ranks *rk,
                           uint32_t k, node_agg *na) {
  memset(na, 0, sizeof *na);
  na->first_token = UINT32_MAX;
  na->start_ns = INT64_MAX, na->end_ns = INT64_MIN;
  const tl_tree_node *nd = &tr->nodes[k];
  for (uint32_t j = 0; j < nd->occurrence_count; j++) {
    uint32_t o = rk->order[nd->first_rank + j];
    uint32_t start = tr->occ[o].start, end = tl_tree_occ_end(tr, o);
    tl_sums s;
    tl_tree_sums(tr, start, end, &s);
    for (int f = 0; f < TL_SUM_COUNT; f++) na->sum[f] += s.v[f];
    if (start < na->first_token) na->first_token = start;
    if (end > na->end_token) na->end_token = end;
    int64_t lo, hi;
    span_times(in, tr, start, end, &lo, &hi);
    if (lo < na->start_ns) na->start_ns = lo;
    if (hi > na->end_ns) na->end_ns = hi;
  }
}

/* ------------------------------------------------------------------ paths */

/* The nodes from the root down to node k, root first; returns their count. */
static size_t node_chain(const tl_tree *tr, uint32_t k, uint32_t *chain, size_t cap) {
  size_t n = 0;
  for (uint32_t x = k; x != TL_RECOVER_NONE && n < cap; x = tr->nodes[x].parent) chain[n++] = x;
  for (size_t i = 0; i < n / 2; i++) {
    uint32_t t = chain[i];
    chain[i] = chain[n - 1 - i], chain[n - 1 - i] = t;
  }
  return n;
}

enum { PATH_MAX_DEPTH = 256 };

/* 'N001/N003/N004' (rooted = 0) or 'node-N001/s2/node-N003/s1/node-N004' (rooted = 1). */
static void node_path(const tl_tree *tr, uint32_t k, int rooted, tl_buf *b) {
  uint32_t chain[PATH_MAX_DEPTH];
  size_t n = node_chain(tr, k, chain, PATH_MAX_DEPTH);
  tl_buf_reset(b);
  char id[128];
  for (size_t i = 0; i < n; i++) {
    size_t m = 0;
    if (i) {
      id[m++] = '/';
      if (rooted) {
        id[m++] = 's';
        m += fmt_u32(id + m, tr->nodes[chain[i]].slot, 1);
        id[m++] = '/';
      }
    }
    if (rooted) m += fmt_prefix(tr, id + m);
    m += fmt_local(id + m, chain[i]);
    tl_buf_append(b, id, m);
  }
}

/* occurrence_path of occurrence o:
** 'node-N001-occurrence-1/s2/r1/node-N003-occurrence-1/s1/r3/node-N004-occurrence-3'. */
static void occurrence_path(const tl_tree *tr, uint32_t o, uint32_t idx, tl_buf *b) {
  uint32_t chain[PATH_MAX_DEPTH], chain_idx[PATH_MAX_DEPTH];
  size_t n = 0;
  for (uint32_t x = o; x != TL_RECOVER_NONE && n < PATH_MAX_DEPTH; x = tr->occ[x].parent) {
    chain[n] = x, chain_idx[n++] = idx;
    if (tr->occ[x].parent != TL_RECOVER_NONE) idx = parent_idx(tr, x, idx);
  }
  tl_buf_reset(b);
  char id[128];
  while (n-- > 0) {
    size_t m = 0;
    if (tr->occ[chain[n]].parent != TL_RECOVER_NONE) {
      id[m++] = '/', id[m++] = 's';
      m += fmt_u32(id + m, tl_tree_occ_slot(tr, chain[n]), 1);
      id[m++] = '/', id[m++] = 'r';
      m += fmt_u32(id + m, tl_tree_occ_member(tr, chain[n]), 1);
      id[m++] = '/';
    }
    m += fmt_prefix(tr, id + m);
    m += fmt_local(id + m, tr->occ_node[chain[n]]);
    memcpy(id + m, "-occurrence-", 12);
    m += 12;
    m += fmt_u32(id + m, chain_idx[n], 1);
    tl_buf_append(b, id, m);
  }
}

/* "N002:3,N005:1": the enclosing repeat iterations of occurrence o, outer to inner. */
static void repeat_context(const tl_tree *tr, uint32_t o, tl_buf *b) {
  uint32_t chain[PATH_MAX_DEPTH];
  size_t n = 0;
  for (uint32_t x = o; x != TL_RECOVER_NONE && n < PATH_MAX_DEPTH; x = tr->occ[x].parent)
    chain[n++] = x;
  tl_buf_reset(b);
  char item[32];
  while (n-- > 0) {
    uint32_t parent = tr->occ[chain[n]].parent;
    if (parent == TL_RECOVER_NONE) continue;
    uint32_t pnode = tr->occ_node[parent];
    if (tr->st.positions[tr->nodes[pnode].position].kind != TL_POS_REPEAT) continue;
    size_t k = 0;
    if (b->n) item[k++] = ',';
    k += fmt_local(item + k, pnode);
    item[k++] = ':';
    k += fmt_u32(item + k, tl_tree_occ_member(tr, chain[n]), 1);
    tl_buf_append(b, item, k);
  }
}

/* ------------------------------------------------------------------ occurrences */

/* An occurrence's row in traceloom_position_occurrence_core; one with children (not an atom)
** also has one in traceloom_position_occurrence_body, its span, summed packet and paths (an
** atom's are its anchor's, read by the view): nearly every occurrence is an atom, and eleven
** columns NULL on each would still cost a serial-type byte each. */
enum {
  O_N, O_NODE, O_NODE_LOCAL, O_NODE_DEVICE, O_IDX, O_PARENT, O_MEMBER, O_ANCHOR_FIRST, O_NCOLS
};
static const tl_rows_column occurrence_columns[O_NCOLS] = {
    [O_N] = {"occurrence_n", 0},          [O_NODE] = {"node_n", 0},
    [O_NODE_LOCAL] = {"node_local", 0},   [O_NODE_DEVICE] = {"node_device", 0},
    [O_IDX] = {"occurrence_idx", 0},      [O_PARENT] = {"parent_n", 0},
    [O_MEMBER] = {"member_order", 0},     [O_ANCHOR_FIRST] = {"anchor_first_n", 0},
};

enum {
  OB_N, OB_START, OB_END, OB_COMPUTE, OB_COMM, OB_IDLE, OB_SELF, OB_AUX_EVENTS, OB_AUX,
  OB_LINKED, OB_PATH, OB_CONTEXT, OB_NCOLS
};
static const tl_rows_column occurrence_body_columns[OB_NCOLS] = {
    [OB_N] = {"occurrence_n", 0},         [OB_START] = {"start_ns", 0},
    [OB_END] = {"end_ns", 0},             [OB_COMPUTE] = {"compute_ns", 0},
    [OB_COMM] = {"comm_ns", 0},           [OB_IDLE] = {"idle_ns", 0},
    [OB_SELF] = {"self_ns", 0},           [OB_AUX_EVENTS] = {"aux_events", 0},
    [OB_AUX] = {"aux_ns", 0},             [OB_LINKED] = {"linked_aux_ns", 0},
    [OB_PATH] = {"occurrence_path", 1},   [OB_CONTEXT] = {"repeat_context", 1},
};

typedef struct occ_rows {
  const tl_structure_input *in;
  const tl_tree *tr;
  const tree_ranks *rk;
  int64_t occurrence_base, node_base; /* occurrence_n and node_n before the tree's first */
  size_t first;                       /* the node-major rank of the producer's row 0 */
  const uint32_t *body;               /* body rows: the node-major rank of each, ascending */
  tl_buf path, ctx;                   /* the text columns of the body row last filled */
} occ_rows;

static int occ_is_atom(const tl_tree *tr, uint32_t o) {
  return tl_tree_occ_position(tr, o)->kind == TL_POS_ATOM;
}

static int fill_occurrence(void *vctx, size_t prow, int64_t *v, unsigned char *null) {
  occ_rows *r = vctx;
  size_t row = r->first + prow;
  const tl_tree *tr = r->tr;
  uint32_t o = r->rk->order[row];
  const tl_tree_occ *oc = &tr->occ[o];
  uint32_t nd = tr->occ_node[o];
  /* row is the occurrence's node-major rank */
  uint32_t idx = (uint32_t)row - tr->nodes[nd].first_rank + 1;
  memset(null, 0, O_NCOLS);
  v[O_N] = r->occurrence_base + (int64_t)row + 1;
  v[O_NODE] = r->node_base + nd + 1;
  v[O_NODE_LOCAL] = (int64_t)nd + 1;
  v[O_NODE_DEVICE] = tr->device_id, null[O_NODE_DEVICE] = !tr->node_device;
  v[O_IDX] = idx;
  if (oc->parent != TL_RECOVER_NONE)
    v[O_PARENT] = r->occurrence_base + tr->nodes[tr->occ_node[oc->parent]].first_rank +
                  parent_idx(tr, o, idx);
  else
    null[O_PARENT] = 1;
  v[O_MEMBER] = tl_tree_occ_member(tr, o);
  v[O_ANCHOR_FIRST] = (int64_t)(tr->first_anchor + oc->start);
  return 0;
}

static int fill_occurrence_body(void *vctx, size_t prow, int64_t *v, unsigned char *null) {
  occ_rows *r = vctx;
  size_t row = r->body[prow];
  const tl_tree *tr = r->tr;
  uint32_t o = r->rk->order[row];
  const tl_tree_occ *oc = &tr->occ[o];
  uint32_t idx = (uint32_t)row - tr->nodes[tr->occ_node[o]].first_rank + 1;
  memset(null, 0, OB_NCOLS);
  v[OB_N] = r->occurrence_base + (int64_t)row + 1;
  tl_sums s;
  uint32_t end = tl_tree_occ_end(tr, o);
  tl_tree_sums(tr, oc->start, end, &s);
  span_times(r->in, tr, oc->start, end, &v[OB_START], &v[OB_END]);
  v[OB_COMPUTE] = s.v[TL_SUM_COMPUTE], v[OB_COMM] = s.v[TL_SUM_COMM];
  v[OB_IDLE] = s.v[TL_SUM_IDLE], v[OB_SELF] = s.v[TL_SUM_SELF];
  v[OB_AUX_EVENTS] = s.v[TL_SUM_AUX_EVENTS], v[OB_AUX] = s.v[TL_SUM_AUX];
  v[OB_LINKED] = s.v[TL_SUM_LINKED_AUX];
  occurrence_path(tr, o, idx, &r->path);
  repeat_context(tr, o, &r->ctx);
  if (r->path.oom || r->ctx.oom) return -1;
  null[OB_CONTEXT] = r->ctx.n == 0;
  return 0;
}

static void occurrence_text(void *vctx, int col, const char **p, int *n) {
  const occ_rows *r = vctx;
  const tl_buf *b = col == OB_PATH ? &r->path : &r->ctx;
  *p = b->p, *n = (int)b->n;
}

/* The occurrences of tree ranks [from, to): every one into the core, then those with
** children into the body table (both in occurrence_n order, each at SQLite's append path). */
static int publish_occurrences(sqlite3 *db, occ_rows *r, size_t from, size_t to, tl_err *e) {
  int rc = tl_rows_publish(db, "traceloom_position_occurrence_core", occurrence_columns,
                           O_NCOLS, to - from, fill_occurrence, NULL, r, e);
  if (rc != TL_OK) return rc;
  size_t nbody = 0;
  for (size_t row = from; row < to; row++) nbody += !occ_is_atom(r->tr, r->rk->order[row]);
  if (!nbody) return TL_OK;
  uint32_t *body = malloc(nbody * sizeof *body);
  if (!body) return tl_nomem(e);
  nbody = 0;
  for (size_t row = from; row < to; row++)
    if (!occ_is_atom(r->tr, r->rk->order[row])) body[nbody++] = (uint32_t)row;
  r->body = body;
  rc = tl_rows_publish(db, "traceloom_position_occurrence_body", occurrence_body_columns,
                       OB_NCOLS, nbody, fill_occurrence_body, occurrence_text, r, e);
  r->body = NULL;
  free(body);
  return rc;
}

/* ------------------------------------------------------------------ nodes */

enum {
  N_N, N_TREE, N_DB, N_DEVICE, N_NODE_DEVICE, N_LOCAL, N_PARENT, N_SLOT,
  N_KIND, N_SHAPE, N_DEFINITION, N_REPEAT, N_CHILDREN, N_DEPTH, N_LOOP_DEPTH, N_OCCURRENCES,
  N_FIRST_OCCURRENCE, N_TOKEN_LEN, N_FIRST_TOKEN, N_END_TOKEN, N_START, N_END, N_COMPUTE,
  N_COMM, N_IDLE, N_SELF, N_AUX_EVENTS, N_AUX, N_LINKED, N_PATH, N_ROOTED_PATH, N_NCOLS
};
static const tl_rows_column node_columns[N_NCOLS] = {
    [N_N] = {"node_n", 0},                 [N_TREE] = {"tree_n", 0},
    [N_DB] = {"db_idx", 0},                [N_DEVICE] = {"device_id", 0},
    [N_NODE_DEVICE] = {"node_device", 0},  [N_LOCAL] = {"local_n", 0},
    [N_PARENT] = {"parent_n", 0},          [N_SLOT] = {"slot_ordinal", 0},
    [N_KIND] = {"node_kind", 0},
    [N_SHAPE] = {"shape_id", 0},           [N_DEFINITION] = {"definition_local", 0},
    [N_REPEAT] = {"repeat_count", 0},      [N_CHILDREN] = {"child_count", 0},
    [N_DEPTH] = {"depth", 0},              [N_LOOP_DEPTH] = {"loop_depth", 0},
    [N_OCCURRENCES] = {"occurrence_count", 0}, [N_FIRST_OCCURRENCE] = {"first_occurrence_n", 0},
    [N_TOKEN_LEN] = {"token_len", 0},      [N_FIRST_TOKEN] = {"first_token", 0},
    [N_END_TOKEN] = {"end_token", 0},      [N_START] = {"start_ns", 0},
    [N_END] = {"end_ns", 0},               [N_COMPUTE] = {"compute_ns", 0},
    [N_COMM] = {"comm_ns", 0},             [N_IDLE] = {"idle_ns", 0},
    [N_SELF] = {"self_ns", 0},             [N_AUX_EVENTS] = {"aux_events", 0},
    [N_AUX] = {"aux_ns", 0},               [N_LINKED] = {"linked_aux_ns", 0},
    [N_PATH] = {"path", 1},                [N_ROOTED_PATH] = {"rooted_path", 1},
};

typedef struct node_rows {
  const tl_structure_input *in;
  const tl_tree *tr;
  const tree_ranks *rk;
  const uint32_t *shape_id;
  int64_t tree_n, node_base, occurrence_base;
  tl_buf path, rooted;
} node_rows;

static int fill_node(void *vctx, size_t row, int64_t *v, unsigned char *null) {
  node_rows *r = vctx;
  const tl_tree *tr = r->tr;
  const tl_tree_node *nd = &tr->nodes[row];
  const tl_position *pos = &tr->st.positions[nd->position];
  memset(null, 0, N_NCOLS);
  v[N_N] = r->node_base + (int64_t)row + 1;
  v[N_TREE] = r->tree_n;
  v[N_DB] = tr->db_idx;
  v[N_DEVICE] = tr->device_id;
  v[N_NODE_DEVICE] = tr->device_id, null[N_NODE_DEVICE] = !tr->node_device;
  v[N_LOCAL] = (int64_t)row + 1;
  /* (the parent's local_n is not stored again: the views read the parent's row by key) */
  v[N_PARENT] = r->node_base + nd->parent + 1, null[N_PARENT] = nd->parent == TL_RECOVER_NONE;
  v[N_SLOT] = nd->slot;
  v[N_KIND] = pos->kind;
  v[N_SHAPE] = r->shape_id[row];
  v[N_DEFINITION] = (int64_t)nd->position + 1;
  v[N_REPEAT] = pos->repeat_count, null[N_REPEAT] = pos->kind != TL_POS_REPEAT;
  v[N_CHILDREN] = pos->nslots;
  /* depth and loop depth (Repeat nodes from the root, this one included), by the parents */
  v[N_DEPTH] = v[N_LOOP_DEPTH] = 0;
  for (uint32_t x = (uint32_t)row; x != TL_RECOVER_NONE; x = tr->nodes[x].parent) {
    if (tr->nodes[x].parent != TL_RECOVER_NONE) v[N_DEPTH]++;
    v[N_LOOP_DEPTH] += tr->st.positions[tr->nodes[x].position].kind == TL_POS_REPEAT;
  }
  v[N_OCCURRENCES] = nd->occurrence_count;
  v[N_FIRST_OCCURRENCE] = r->occurrence_base + nd->first_rank + 1;
  v[N_TOKEN_LEN] = (int64_t)pos->token_len;
  if (nd->occurrence_count == 1) { /* the single occurrence's values (traceloom_v_node_stats) */
    for (int k = N_FIRST_TOKEN; k <= N_LINKED; k++) null[k] = 1;
  } else {
    node_agg na;
    node_aggregate(r->in, tr, r->rk, (uint32_t)row, &na);
    v[N_FIRST_TOKEN] = na.first_token;
    v[N_END_TOKEN] = na.end_token;
    v[N_START] = na.start_ns;
    v[N_END] = na.end_ns;
    v[N_COMPUTE] = na.sum[TL_SUM_COMPUTE], v[N_COMM] = na.sum[TL_SUM_COMM];
    v[N_IDLE] = na.sum[TL_SUM_IDLE], v[N_SELF] = na.sum[TL_SUM_SELF];
    v[N_AUX_EVENTS] = na.sum[TL_SUM_AUX_EVENTS], v[N_AUX] = na.sum[TL_SUM_AUX];
    v[N_LINKED] = na.sum[TL_SUM_LINKED_AUX];
  }
  if (pos->kind == TL_POS_ATOM && nd->parent != TL_RECOVER_NONE) {
    null[N_PATH] = null[N_ROOTED_PATH] = 1; /* the parent's plus one step (the view) */
  } else {
    node_path(tr, (uint32_t)row, 0, &r->path);
    node_path(tr, (uint32_t)row, 1, &r->rooted);
    if (r->path.oom || r->rooted.oom) return -1;
  }
  return 0;
}

static void node_text(void *vctx, int col, const char **p, int *n) {
  const node_rows *r = vctx;
  const tl_buf *b = col == N_PATH ? &r->path : &r->rooted;
  *p = b->p, *n = (int)b->n;
}

/* The text of a node: type, kind, symbol, label, category (traceloom_node_shape). */
enum { NS_ID, NS_TYPE, NS_KIND, NS_SYMBOL, NS_LABEL, NS_CATEGORY, NS_NCOLS };
static const tl_rows_column node_shape_columns[NS_NCOLS] = {
    [NS_ID] = {"shape_id", 0}, [NS_TYPE] = {"node_type", 1},  [NS_KIND] = {"kind", 1},
    [NS_SYMBOL] = {"symbol", 1}, [NS_LABEL] = {"label", 1}, [NS_CATEGORY] = {"category", 1},
};

/* The label and kind of each node shape by shape_id, kept for the loop tree Markdown. */
typedef struct shape_labels {
  tl_loop_tree_shape *v;
  size_t n;
} shape_labels;

static int keep_label(shape_labels *l, int64_t id, const char *label, int repeat) {
  if ((size_t)id >= l->n) {
    size_t want = (size_t)id + 1;
    tl_loop_tree_shape *p = realloc(l->v, want * sizeof *p);
    if (!p) return -1;
    memset(p + l->n, 0, (want - l->n) * sizeof *p);
    l->v = p, l->n = want;
  }
  l->v[id].repeat = repeat;
  l->v[id].len = strlen(label);
  return (l->v[id].label = tl_strdup(label)) ? 0 : -1;
}

static int node_shapes(sqlite3 *db, const tl_structure_input *in, const tl_tree *tr,
                       const uint32_t *names, const tree_ranks *rk, sqlite3_stmt *ins,
                       tl_shapes *shapes, uint32_t *shape_of, shape_labels *labels, tl_err *e) {
  const tl_anchors *a = in->anchors;
  static const char *const type[] = {"", "Atom", "Seq", "Repeat"};
  static const char *const kind[] = {"", "atom", "seq", "repeat"};
  for (size_t k = 0; k < tr->nnodes; k++) {
    const tl_tree_node *nd = &tr->nodes[k];
    const tl_position *pos = &tr->st.positions[nd->position];
    /* An atom's category is its anchor's role: every anchor of one atom node has the same
    ** symbol and, the role following from the symbol's class, the same role. */
    uint32_t role = 0;
    if (pos->kind == TL_POS_ATOM)
      role = a->role[tr->first_anchor + tr->occ[rk->order[nd->first_rank]].start];
    uint32_t name = names && pos->kind == TL_POS_REPEAT ? names[k] : 0;
    uint64_t key[5] = {pos->kind, pos->kind == TL_POS_ATOM ? pos->symbol : pos->repeat_count,
                       pos->unit_template, role, name};
    int fresh;
    int64_t id = tl_shapes_intern(shapes, key, &fresh);
    if (id < 0) return tl_nomem(e);
    shape_of[k] = (uint32_t)id;
    if (!fresh) continue;
    /* An atom's label and symbol are its anchors' symbol, whole: a CUDA kernel's raw name
    ** runs to hundreds of characters and two kernels can share a long prefix. Structural
    ** labels are short and built in the buffer. */
    char buf[64], symbol[64];
    const char *label = buf;
    const char *category = NULL;
    if (pos->kind == TL_POS_ATOM) {
      label = tl_str(in->trace, pos->symbol);
      tl_anchor_role r = (tl_anchor_role)role;
      category = r == TL_ANCHOR_COMM ? "comm" : r == TL_ANCHOR_GRAPH ? "graph" : "exec";
    } else if (pos->kind == TL_POS_REPEAT) {
      /* The symbol stays structural; a name from the trace's hierarchy goes to the label. */
      snprintf(buf, sizeof buf, "Rep x%u", pos->repeat_count);
      if (name) {
        const char *nm = tl_str(in->trace, name);
        char count[16];
        int cn = snprintf(count, sizeof count, " x%u", pos->repeat_count);
        snprintf(buf, sizeof buf, "%.*s%s", (int)(sizeof buf - 1 - (size_t)cn), nm, count);
      }
    } else if (pos->unit_template) {
      snprintf(buf, sizeof buf, "ReplayUnit T%u", pos->unit_template);
      category = "graph_unit";
    } else {
      snprintf(buf, sizeof buf, "Seq");
    }
    sqlite3_bind_int64(ins, TL_PARAM(NS_ID), id);
    sqlite3_bind_text(ins, TL_PARAM(NS_TYPE), type[pos->kind], -1, SQLITE_STATIC);
    sqlite3_bind_text(ins, TL_PARAM(NS_KIND), kind[pos->kind], -1, SQLITE_STATIC);
    if (pos->kind == TL_POS_REPEAT) snprintf(symbol, sizeof symbol, "Rep x%u", pos->repeat_count);
    sqlite3_bind_text(ins, TL_PARAM(NS_SYMBOL), pos->kind == TL_POS_REPEAT ? symbol : label, -1,
                      SQLITE_TRANSIENT);
    sqlite3_bind_text(ins, TL_PARAM(NS_LABEL), label, -1, SQLITE_TRANSIENT);
    if (keep_label(labels, id, label, pos->kind == TL_POS_REPEAT)) return tl_nomem(e);
    tl_bind_text(ins, TL_PARAM(NS_CATEGORY), category);
    if (tl_pub_step(db, ins, "traceloom_node_shape", e)) return TL_ERROR;
  }
  return TL_OK;
}

/* ------------------------------------------------------------------ trees */

enum {
  TR_N, TR_DB, TR_DEVICE, TR_NODE_DEVICE, TR_DISCOVERY, TR_FIRST_ANCHOR, TR_ANCHORS,
  TR_FIRST_NODE, TR_NODES, TR_FIRST_OCCURRENCE, TR_OCCURRENCES, TR_DEFINITIONS, TR_NCOLS
};
static const tl_rows_column tree_columns[TR_NCOLS] = {
    [TR_N] = {"tree_n", 0},                 [TR_DB] = {"db_idx", 0},
    [TR_DEVICE] = {"device_id", 0},         [TR_NODE_DEVICE] = {"node_device", 0},
    [TR_DISCOVERY] = {"macro_discovery", 1}, [TR_FIRST_ANCHOR] = {"first_anchor_n", 0},
    [TR_ANCHORS] = {"anchor_count", 0},     [TR_FIRST_NODE] = {"first_node_n", 0},
    [TR_NODES] = {"node_count", 0},         [TR_FIRST_OCCURRENCE] = {"first_occurrence_n", 0},
    [TR_OCCURRENCES] = {"occurrence_count", 0}, [TR_DEFINITIONS] = {"definition_count", 0},
};

/* The row of tree tree_n (1-based) in traceloom_tree_core. */
static int publish_tree_row(sqlite3 *db, sqlite3_stmt *q, const tl_tree *tr, int64_t tree_n,
                            int64_t node_base, int64_t occurrence_base, tl_err *e) {
  const tl_structure *st = &tr->st;
  sqlite3_bind_int64(q, TL_PARAM(TR_N), tree_n);
  sqlite3_bind_int(q, TL_PARAM(TR_DB), tr->db_idx);
  sqlite3_bind_int64(q, TL_PARAM(TR_DEVICE), tr->device_id);
  if (tr->node_device) sqlite3_bind_int64(q, TL_PARAM(TR_NODE_DEVICE), tr->device_id);
  else sqlite3_bind_null(q, TL_PARAM(TR_NODE_DEVICE));
  sqlite3_bind_text(q, TL_PARAM(TR_DISCOVERY), tr->macro_discovery, -1, SQLITE_STATIC);
  sqlite3_bind_int64(q, TL_PARAM(TR_FIRST_ANCHOR), (int64_t)tr->first_anchor);
  sqlite3_bind_int64(q, TL_PARAM(TR_ANCHORS), (int64_t)tr->ntokens);
  sqlite3_bind_int64(q, TL_PARAM(TR_FIRST_NODE), node_base + 1);
  sqlite3_bind_int64(q, TL_PARAM(TR_NODES), (int64_t)tr->nnodes);
  sqlite3_bind_int64(q, TL_PARAM(TR_FIRST_OCCURRENCE), occurrence_base + 1);
  sqlite3_bind_int64(q, TL_PARAM(TR_OCCURRENCES), (int64_t)st->noccurrences);
  sqlite3_bind_int64(q, TL_PARAM(TR_DEFINITIONS), (int64_t)st->npositions);
  return tl_pub_step(db, q, "traceloom_tree_core", e);
}

/* The anchors and what hangs off them: traceloom_anchor_shape and _core, the aux links. */
int tl_publish_structure_anchors(sqlite3 *db, const tl_structure_input *in, tl_err *e) {
  const tl_anchors *a = in->anchors;
  const tl_forest *f = in->forest;
  tl_timer tm;
  tl_timer_start(&tm, "structure");
  /* The tree of each anchor group, and the numbering bases of each tree. */
  const tl_tree **tree_of_group = calloc(a->groups.n ? a->groups.n : 1, sizeof *tree_of_group);
  int64_t *occurrence_base = calloc(a->groups.n ? a->groups.n : 1, sizeof *occurrence_base);
  if (!tree_of_group || !occurrence_base) {
    free(tree_of_group), free(occurrence_base);
    return tl_nomem(e);
  }
  int64_t occurrences = 0;
  for (size_t i = 0; i < f->trees.n; i++) {
    tree_of_group[f->trees.v[i].group] = &f->trees.v[i];
    occurrence_base[f->trees.v[i].group] = occurrences;
    occurrences += (int64_t)f->trees.v[i].st.noccurrences;
  }
  int rc = publish_anchors(db, in, tree_of_group, occurrence_base, e);
  tl_timer_mark(&tm, "anchors");
  if (rc == TL_OK) rc = publish_aux_links(db, in, e);
  tl_timer_mark(&tm, "aux links");
  free(tree_of_group), free(occurrence_base);
  return rc;
}

int tl_publish_structure_summary(sqlite3 *db, const tl_structure_input *in, tl_err *e) {
  tl_timer tm;
  tl_timer_start(&tm, "structure");
  int rc = publish_symbol_summary(db, in, e);
  tl_timer_mark(&tm, "symbol summary");
  return rc;
}

/* What the node rows and the occurrence rows of every tree both read: the tree's occurrences
** in node-major order and its nodes' shapes (whose rows are written as they are interned). */
struct tl_structure_trees {
  const tl_structure_input *in;
  size_t n;            /* trees */
  tree_ranks *rk;      /* per tree */
  uint32_t **shape_of; /* per tree, per node: its shape_id */
  shape_labels labels; /* per shape_id */
};

void tl_structure_trees_free(tl_structure_trees *t) {
  if (!t) return;
  for (size_t i = 0; i < t->n; i++) {
    if (t->rk) ranks_free(&t->rk[i]);
    if (t->shape_of) free(t->shape_of[i]);
  }
  free(t->rk), free(t->shape_of);
  for (size_t i = 0; i < t->labels.n; i++) free(t->labels.v[i].label);
  free(t->labels.v);
  free(t);
}

int tl_structure_trees_prepare(sqlite3 *db, const tl_structure_input *in,
                               tl_structure_trees **out, tl_err *e) {
  const tl_forest *f = in->forest;
  tl_timer tm;
  tl_timer_start(&tm, "structure");
  tl_structure_trees *t = calloc(1, sizeof *t);
  if (t) {
    t->in = in, t->n = f->trees.n;
    t->rk = calloc(t->n ? t->n : 1, sizeof *t->rk);
    t->shape_of = calloc(t->n ? t->n : 1, sizeof *t->shape_of);
  }
  *out = t;
  if (!t || !t->rk || !t->shape_of) return tl_nomem(e);
  sqlite3_stmt *shape_ins = NULL;
  int rc = tl_rows_prepare(db, "INSERT", "traceloom_node_shape", node_shape_columns, NS_NCOLS,
                           &shape_ins, e);
  tl_shapes shapes;
  tl_shapes_init(&shapes, 5);
  for (size_t i = 0; rc == TL_OK && i < t->n; i++) {
    const tl_tree *tr = &f->trees.v[i];
    /* shape_of is the ranks' scratch first, then node_shapes fills it */
    t->shape_of[i] = malloc((tr->nnodes ? tr->nnodes : 1) * sizeof *t->shape_of[i]);
    if (!t->shape_of[i] || ranks_build(tr, &t->rk[i], t->shape_of[i])) {
      rc = tl_nomem(e);
      break;
    }
    const uint32_t *names = in->node_name ? in->node_name[i] : NULL;
    rc = node_shapes(db, in, tr, names, &t->rk[i], shape_ins, &shapes, t->shape_of[i], &t->labels,
                     e);
  }
  tl_shapes_free(&shapes);
  sqlite3_finalize(shape_ins);
  tl_timer_mark(&tm, "node shapes");
  return rc;
}

int tl_structure_trees_nodes(sqlite3 *db, const tl_structure_trees *t, tl_err *e) {
  const tl_forest *f = t->in->forest;
  tl_timer tm;
  tl_timer_start(&tm, "structure");
  int rc = TL_OK;
  int64_t node_base = 0, occ_base = 0;
  for (size_t i = 0; rc == TL_OK && i < t->n; i++) {
    const tl_tree *tr = &f->trees.v[i];
    node_rows nr = {.in = t->in, .tr = tr, .rk = &t->rk[i], .shape_id = t->shape_of[i],
                    .tree_n = (int64_t)i + 1, .node_base = node_base,
                    .occurrence_base = occ_base};
    rc = tl_rows_publish(db, "traceloom_node_core", node_columns, N_NCOLS, tr->nnodes, fill_node,
                         node_text, &nr, e);
    tl_buf_free(&nr.path), tl_buf_free(&nr.rooted);
    node_base += (int64_t)tr->nnodes;
    occ_base += (int64_t)tr->st.noccurrences;
  }
  tl_timer_mark(&tm, "nodes");
  return rc;
}

/* ------------------------------------------------------------------ shared definitions */

/* One row per definition (structural position of st.positions) that nodes of the tree use:
** what traceloom_v_shared_definition sums over the definition's nodes, summed here over the
** few definitions (186 at a million anchors) so that the view does not read every node's
** packet (a search of its occurrence, anchor and event per node) to add it up. */
enum {
  D_TREE, D_DEFINITION, D_SHAPE, D_NODES, D_OCCURRENCES, D_ANCHORS, D_COMPUTE, D_COMM, D_IDLE,
  D_SELF, D_NCOLS
};
static const tl_rows_column definition_columns[D_NCOLS] = {
    [D_TREE] = {"tree_n", 0},           [D_DEFINITION] = {"definition_local", 0},
    [D_SHAPE] = {"shape_id", 0},        [D_NODES] = {"node_count", 0},
    [D_OCCURRENCES] = {"occurrence_count", 0}, [D_ANCHORS] = {"anchor_count", 0},
    [D_COMPUTE] = {"compute_ns", 0},    [D_COMM] = {"comm_ns", 0},
    [D_IDLE] = {"idle_ns", 0},          [D_SELF] = {"self_ns", 0},
};

typedef struct definition_sum {
  int64_t v[D_NCOLS];
} definition_sum;

/* The definition rows of tree i (tree_n i + 1). Every node of a definition has its type,
** kind and symbol (they follow from the position); only a Repeat's label can differ between
** its nodes (a loop name from the trace's hierarchy), and the view shows the least label,
** as MIN(label) did: the shape kept is that of a node with the least label (BINARY order,
** strcmp's). The sums are traceloom_v_node_stats's summed over the nodes (as loop_row has
** them per node), taken here occurrence by occurrence in storage order: a node's sums are its
** occurrences', and a single-occurrence atom's self time is its event's duration. */
static int publish_definition_rows(sqlite3 *db, sqlite3_stmt *q, const tl_structure_trees *t,
                                   size_t i, tl_err *e) {
  const tl_tree *tr = &t->in->forest->trees.v[i];
  size_t np = tr->st.npositions;
  definition_sum *d = calloc(np ? np : 1, sizeof *d);
  if (!d) return tl_nomem(e);
  for (uint32_t k = 0; k < tr->nnodes; k++) {
    const tl_tree_node *nd = &tr->nodes[k];
    definition_sum *x = &d[nd->position];
    uint32_t shape = t->shape_of[i][k];
    const char *label = t->labels.v[shape].label, *least = t->labels.v[x->v[D_SHAPE]].label;
    if (x->v[D_NODES]++ == 0 ||
        ((int64_t)shape != x->v[D_SHAPE] && label && (!least || strcmp(label, least) < 0)))
      x->v[D_SHAPE] = shape;
    x->v[D_OCCURRENCES] += nd->occurrence_count;
    x->v[D_ANCHORS] +=
        (int64_t)nd->occurrence_count * (int64_t)tr->st.positions[nd->position].token_len;
  }
  for (uint32_t o = 0; o < tr->st.noccurrences; o++) {
    const tl_tree_node *nd = &tr->nodes[tr->occ_node[o]];
    definition_sum *x = &d[nd->position];
    tl_sums s;
    tl_tree_sums(tr, tr->occ[o].start, tl_tree_occ_end(tr, o), &s);
    if (nd->occurrence_count == 1 && tl_tree_occ_position(tr, o)->kind == TL_POS_ATOM) {
      size_t a = tr->first_anchor + tr->occ[o].start;
      s.v[TL_SUM_SELF] = tl_anchor_end(t->in->anchors, a) - tl_anchor_start(t->in->anchors, a);
    }
    x->v[D_COMPUTE] += s.v[TL_SUM_COMPUTE], x->v[D_COMM] += s.v[TL_SUM_COMM];
    x->v[D_IDLE] += s.v[TL_SUM_IDLE], x->v[D_SELF] += s.v[TL_SUM_SELF];
  }
  int rc = TL_OK;
  for (size_t p = 0; rc == TL_OK && p < np; p++) {
    if (d[p].v[D_NODES] == 0) continue; /* a definition no node uses has no row */
    d[p].v[D_TREE] = (int64_t)i + 1, d[p].v[D_DEFINITION] = (int64_t)p + 1;
    for (int c = 0; c < D_NCOLS; c++) sqlite3_bind_int64(q, TL_PARAM(c), d[p].v[c]);
    rc = tl_pub_step(db, q, "traceloom_definition_core", e);
  }
  free(d);
  return rc;
}

/* The occurrences numbered [lo, hi) (0-based over every tree, node-major within each) and,
** with tree_rows, the traceloom_tree_core rows, tree by tree. */
static int publish_trees(sqlite3 *db, const tl_structure_trees *t, size_t lo, size_t hi,
                         int tree_rows, tl_err *e) {
  const tl_forest *f = t->in->forest;
  tl_timer tm;
  tl_timer_start(&tm, "structure");
  sqlite3_stmt *tree_ins = NULL, *definition_ins = NULL;
  int rc = tree_rows ? tl_rows_prepare(db, "INSERT", "traceloom_tree_core", tree_columns,
                                       TR_NCOLS, &tree_ins, e)
                     : TL_OK;
  if (rc == TL_OK && tree_rows)
    rc = tl_rows_prepare(db, "INSERT", "traceloom_definition_core", definition_columns, D_NCOLS,
                         &definition_ins, e);
  int64_t node_base = 0, occ_base = 0;
  for (size_t i = 0; rc == TL_OK && i < t->n; i++) {
    const tl_tree *tr = &f->trees.v[i];
    /* this tree's occurrences within [lo, hi), as ranks of the tree */
    size_t from = (size_t)occ_base, to = from + tr->st.noccurrences;
    from = from > lo ? from : lo, to = to < hi ? to : hi;
    if (from < to) {
      occ_rows orows = {.in = t->in, .tr = tr, .rk = &t->rk[i], .occurrence_base = occ_base,
                        .node_base = node_base, .first = from - (size_t)occ_base};
      rc = publish_occurrences(db, &orows, from - (size_t)occ_base, to - (size_t)occ_base, e);
      tl_buf_free(&orows.path), tl_buf_free(&orows.ctx);
    }
    if (rc == TL_OK && tree_rows)
      rc = publish_tree_row(db, tree_ins, tr, (int64_t)i + 1, node_base, occ_base, e);
    if (rc == TL_OK && tree_rows) rc = publish_definition_rows(db, definition_ins, t, i, e);
    node_base += (int64_t)tr->nnodes;
    occ_base += (int64_t)tr->st.noccurrences;
  }
  sqlite3_finalize(tree_ins), sqlite3_finalize(definition_ins);
  tl_timer_mark(&tm, hi > lo && tree_rows ? "occurrences and trees"
                     : hi > lo            ? "occurrences"
                                          : "trees");
  return rc;
}

size_t tl_structure_trees_occurrences(const tl_structure_trees *t) {
  size_t n = 0;
  for (size_t i = 0; i < t->n; i++) n += t->in->forest->trees.v[i].st.noccurrences;
  return n;
}

int tl_structure_trees_rest(sqlite3 *db, const tl_structure_trees *t, tl_err *e) {
  return publish_trees(db, t, 0, tl_structure_trees_occurrences(t), 1, e);
}

const char *const tl_structure_staged_tables[] = {"traceloom_node_core",
                                                  "traceloom_position_occurrence_core",
                                                  "traceloom_position_occurrence_body", NULL};

int tl_structure_trees_staged(sqlite3 *db, const tl_structure_trees *t, size_t from, tl_err *e) {
  int rc = tl_structure_trees_nodes(db, t, e);
  return rc == TL_OK ? publish_trees(db, t, from, tl_structure_trees_occurrences(t), 0, e) : rc;
}

int tl_structure_trees_lower(sqlite3 *db, const tl_structure_trees *t, size_t to, tl_err *e) {
  return publish_trees(db, t, 0, to, 0, e);
}

int tl_structure_trees_rows(sqlite3 *db, const tl_structure_trees *t, tl_err *e) {
  return publish_trees(db, t, 0, 0, 1, e);
}

/* ------------------------------------------------------------------ the loop tree's rows */

/* Node k's figures as traceloom_v_node_stats gives them: a node with several occurrences is
** the sum of its occurrences' (the node row's); with one, that occurrence's (its row), or,
** for an atom, its anchor's packet and, as self time, its event's duration. */
static void loop_row(const tl_structure_trees *t, size_t i, uint32_t k, tl_loop_tree_row *r) {
  const tl_tree *tr = &t->in->forest->trees.v[i];
  const tl_tree_node *nd = &tr->nodes[k];
  const tl_position *pos = &tr->st.positions[nd->position];
  memset(r, 0, sizeof *r);
  r->local_n = (int64_t)k + 1;
  r->parent = nd->parent == TL_RECOVER_NONE ? UINT32_MAX : nd->parent;
  r->shape = t->shape_of[i][k];
  r->repeat_count = pos->kind == TL_POS_REPEAT ? pos->repeat_count : 0;
  r->occ = nd->occurrence_count;
  r->denom = nd->occurrence_count == 0 ? 1
             : (int64_t)nd->occurrence_count *
                   (pos->kind == TL_POS_REPEAT && pos->repeat_count > 0 ? pos->repeat_count : 1);
  int64_t sum[TL_SUM_COUNT] = {0};
  for (uint32_t j = 0; j < nd->occurrence_count; j++) {
    uint32_t o = t->rk[i].order[nd->first_rank + j];
    tl_sums s;
    tl_tree_sums(tr, tr->occ[o].start, tl_tree_occ_end(tr, o), &s);
    for (int f = 0; f < TL_SUM_COUNT; f++) sum[f] += s.v[f];
  }
  if (nd->occurrence_count == 1 && pos->kind == TL_POS_ATOM) {
    size_t a = tr->first_anchor + tr->occ[t->rk[i].order[nd->first_rank]].start;
    sum[TL_SUM_SELF] = tl_anchor_end(t->in->anchors, a) - tl_anchor_start(t->in->anchors, a);
  }
  r->ns[TL_LT_COMPUTE] = sum[TL_SUM_COMPUTE], r->ns[TL_LT_COMM] = sum[TL_SUM_COMM];
  r->ns[TL_LT_IDLE] = sum[TL_SUM_IDLE], r->ns[TL_LT_AUX] = sum[TL_SUM_AUX];
  r->ns[TL_LT_SELF] = sum[TL_SUM_SELF];
}

void tl_structure_loop_trees_free(tl_structure_loop_trees *lt) {
  for (size_t i = 0; i < lt->ntrees; i++) {
    free((void *)lt->trees[i].rows);
    free((void *)lt->trees[i].macro_discovery);
  }
  for (size_t i = 0; i < lt->nshapes; i++) free(lt->shapes[i].label);
  free(lt->trees), free(lt->shapes);
  memset(lt, 0, sizeof *lt);
}

static int loop_trees_build(const tl_structure_trees *t, tl_structure_loop_trees *out,
                            tl_err *e) {
  const tl_forest *f = t->in->forest;
  memset(out, 0, sizeof *out);
  out->trees = calloc(t->n ? t->n : 1, sizeof *out->trees);
  out->shapes = calloc(t->labels.n ? t->labels.n : 1, sizeof *out->shapes);
  if (!out->trees || !out->shapes) return tl_structure_loop_trees_free(out), tl_nomem(e);
  out->nshapes = t->labels.n;
  for (size_t s = 0; s < t->labels.n; s++) {
    out->shapes[s] = t->labels.v[s];
    if (t->labels.v[s].label && !(out->shapes[s].label = tl_strdup(t->labels.v[s].label)))
      return tl_structure_loop_trees_free(out), tl_nomem(e);
  }
  /* the published order: by (db_idx, device_id); trees are few, an insertion sort */
  for (size_t i = 0; i < t->n; i++) {
    const tl_tree *tr = &f->trees.v[i];
    tl_loop_tree_input in = {tr->db_idx, tr->device_id, (int64_t)tr->ntokens, NULL, NULL,
                             tr->nnodes};
    tl_loop_tree_row *rows = malloc((tr->nnodes ? tr->nnodes : 1) * sizeof *rows);
    in.rows = rows;
    if (rows && tr->macro_discovery && !(in.macro_discovery = tl_strdup(tr->macro_discovery)))
      free(rows), rows = NULL;
    if (!rows) return tl_structure_loop_trees_free(out), tl_nomem(e);
    for (uint32_t k = 0; k < tr->nnodes; k++) loop_row(t, i, k, &rows[k]);
    size_t at = out->ntrees++;
    while (at > 0 && (out->trees[at - 1].db_idx > in.db_idx ||
                      (out->trees[at - 1].db_idx == in.db_idx &&
                       out->trees[at - 1].device_id > in.device_id))) {
      out->trees[at] = out->trees[at - 1];
      at--;
    }
    out->trees[at] = in;
  }
  return TL_OK;
}

int tl_structure_loop_trees_build(const tl_structure_trees *t, tl_structure_loop_trees *out,
                                  tl_err *e) {
  tl_timer tm;
  tl_timer_start(&tm, "structure");
  int rc = loop_trees_build(t, out, e);
  tl_timer_mark(&tm, "loop tree rows");
  return rc;
}

int tl_publish_structure(sqlite3 *db, const tl_structure_input *in, tl_structure_loop_trees *loop,
                         tl_err *e) {
  tl_structure_trees *t = NULL;
  int rc = tl_publish_structure_anchors(db, in, e);
  if (rc == TL_OK) rc = tl_publish_structure_summary(db, in, e);
  if (rc == TL_OK) rc = tl_structure_trees_prepare(db, in, &t, e);
  if (rc == TL_OK) rc = tl_structure_trees_nodes(db, t, e);
  if (rc == TL_OK) rc = tl_structure_trees_rest(db, t, e);
  if (rc == TL_OK && loop) rc = tl_structure_loop_trees_build(t, loop, e);
  tl_structure_trees_free(t);
  return rc;
}
