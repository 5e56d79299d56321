/*
** publish_structure.c: writing anchors, cost packets and the recovered trees.
**
** Tables (sql/schema/30_structure.sql): traceloom_anchor (with its cost packet and owning
** atom), traceloom_aux_link, the semantic tree (view_name 'anchor_tree'), the report tree
** (view_name 'native_report_tree'), refinements and occurrences (with their summed costs).
** Relations with a row per member, edge, bubble or (occurrence x anchor) are views over
** these (sql/views/30_structure.sql). Identifiers follow outputs.md section 0.1.
*/
#include "util/timing.h"
#include "structure/publish_structure.h"
#include "publish/publish.h"
#include "util/buf.h"
#include "publish/shapes.h"
#include "publish/rows.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VIEW_TREE "anchor_tree"
#define VIEW_REPORT "native_report_tree"

static double us(int64_t ns) { return tl_ns_to_us(ns); }

/* ------------------------------------------------------------------ anchors */

/* The integer columns of anchor n, for the bulk insert (rows.h); rows come in order, so
** the group is a cursor. */
typedef struct anchor_rows {
  const tl_structure_input *in;
  const uint32_t *nlinked, *shape_id, *occurrence_idx; /* occurrence_idx 0: no tree */
  size_t group;
} anchor_rows;

static int fill_anchor(void *ctx, size_t n, int64_t *v, unsigned char *null) {
  anchor_rows *r = ctx;
  const tl_anchors *a = r->in->anchors;
  const tl_anchor_group *g = &a->groups.v[r->group];
  while (n >= g->first + g->count) g = &a->groups.v[++r->group];
  uint32_t x = a->event[n];
  tl_packet pk = tl_packet_at(r->in->packets, n);
  memset(null, 0, 17);
  v[0] = (int64_t)n;
  v[1] = g->db_idx;
  v[2] = g->device_id;
  v[3] = (int64_t)(n - g->first) + 1;
  v[4] = x;
  v[5] = r->shape_id[n];
  v[6] = tl_anchor_start(a, n);
  v[7] = tl_anchor_end(a, n);
  v[8] = pk.compute_ns, v[9] = pk.comm_ns, v[10] = pk.idle_ns, v[11] = pk.self_ns;
  v[12] = pk.aux_events, v[13] = pk.aux_ns;
  v[14] = r->nlinked[n];
  v[15] = tl_i64col_get(&r->in->forest->linked_ns, n);
  v[16] = r->occurrence_idx[n];
  null[16] = r->occurrence_idx[n] == 0;
  return 0;
}

static int publish_anchors(sqlite3 *db, const tl_structure_input *in, tl_err *e) {
  const tl_trace *t = in->trace;
  const tl_anchors *a = in->anchors;
  sqlite3_stmt *shape = NULL;
  int rc = tl_pub_prepare(db,
                          "INSERT INTO traceloom_anchor_shape(shape_id, symbol, role, label, family, "
                          "node_id) VALUES (?1,?2,?3,?4,?5,?6)",
                          &shape, e);
  tl_shapes shapes;
  tl_shapes_init(&shapes, 5);
  /* Per anchor: linked aux events (their durations are the forest's linked_ns), shape and
  ** the occurrence_idx of its atom. */
  size_t na = a->n ? a->n : 1;
  uint32_t *nlinked = calloc(na, sizeof *nlinked);
  uint32_t *shape_of = malloc(na * sizeof *shape_of), *occ_idx = malloc(na * sizeof *occ_idx);
  if (rc == TL_OK && (!nlinked || !shape_of || !occ_idx)) rc = tl_nomem(e);
  for (size_t k = 0; rc == TL_OK && k < a->nlinks; k++) nlinked[a->link_anchor[k]]++;
  /* The tree of each group, for the owning atom occurrence of each anchor. */
  const tl_tree **tree_of_group = calloc(a->groups.n ? a->groups.n : 1, sizeof *tree_of_group);
  if (rc == TL_OK && !tree_of_group) rc = tl_nomem(e);
  for (size_t i = 0; rc == TL_OK && i < in->forest->trees.n; i++)
    tree_of_group[in->forest->trees.v[i].group] = &in->forest->trees.v[i];
  /* The shapes first (few rows, written as they are met), then every anchor in one
  ** INSERT ... SELECT. */
  char nid[96];
  for (size_t gi = 0; rc == TL_OK && gi < a->groups.n; gi++) {
    const tl_anchor_group *g = &a->groups.v[gi];
    const tl_tree *tr = tree_of_group[gi];
    uint32_t atom_cursor = 0; /* atom occurrences come in token order (walk order) */
    for (size_t k = 0; rc == TL_OK && k < g->count; k++) {
      size_t n = g->first + k;
      uint32_t label = tl_label_display(tl_event_label_of(t, a->derived, a->event[n]));
      const tl_occurrence *oc = tr ? tl_tree_next_atom(tr, &atom_cursor) : NULL;
      if (tr && (!oc || oc->start != k)) {
        rc = tl_fail(e, "structure of %s: anchor %zu has no atom occurrence", tr->tree_id, k + 1);
        break;
      }
      /* The shape: symbol, role, label, family (per input) and owning position. */
      uint64_t key[5] = {a->symbol[n], a->role[n], label, g->db_idx,
                         oc ? (uint64_t)oc->position + 1 : 0};
      int fresh;
      int64_t shape_id = tl_shapes_intern(&shapes, key, &fresh);
      if (shape_id < 0) {
        rc = tl_nomem(e);
        break;
      }
      if (fresh) {
        sqlite3_bind_int64(shape, 1, shape_id);
        tl_bind_str(shape, 2, t->pool, a->symbol[n]);
        sqlite3_bind_text(shape, 3, tl_anchor_role_name((tl_anchor_role)a->role[n]), -1,
                          SQLITE_STATIC);
        tl_bind_str(shape, 4, t->pool, label);
        sqlite3_bind_text(shape, 5, tl_family_source_kind(t->profile->inputs.v[g->db_idx].family),
                          -1, SQLITE_STATIC);
        if (oc) {
          snprintf(nid, sizeof nid, "%sN%03u", tr->node_prefix, oc->position + 1);
          sqlite3_bind_text(shape, 6, nid, -1, SQLITE_STATIC);
        } else {
          sqlite3_bind_null(shape, 6);
        }
        if ((rc = tl_pub_step(db, shape, "traceloom_anchor_shape", e))) break;
      }
      shape_of[n] = (uint32_t)shape_id;
      occ_idx[n] = oc ? oc->occurrence_idx : 0; /* occurrence_idx is 1-based */
    }
  }
  if (rc == TL_OK && a->n) {
    anchor_rows ctx = {.in = in, .nlinked = nlinked, .shape_id = shape_of,
                       .occurrence_idx = occ_idx, .group = 0};
    tl_rows rows = {.nrows = a->n, .ncols = 17, .fill = fill_anchor, .ctx = &ctx};
    rc = tl_rows_insert(db, "traceloom_anchor_core",
                        "anchor_n, db_idx, device_id, anchor_idx, event_n, shape_id, start_ns, "
                        "end_ns, compute_ns, comm_ns, idle_ns, self_ns, aux_events, aux_ns, "
                        "linked_aux_events, linked_aux_ns, occurrence_idx",
                        &rows, e);
  }
  free(nlinked), free(shape_of), free(occ_idx), free(tree_of_group);
  tl_shapes_free(&shapes);
  sqlite3_finalize(shape);
  return rc;
}

static int publish_aux_links(sqlite3 *db, const tl_structure_input *in, tl_err *e) {
  const tl_trace *t = in->trace;
  const tl_anchors *a = in->anchors;
  const tl_events *ev = &t->ev;
  sqlite3_stmt *st;
  if (tl_pub_prepare(db,
                     "INSERT INTO traceloom_aux_link(anchor_id, aux_event_id, db_idx, device_id, "
                     "aux_order, link_type, reason, aux_kind, aux_dur_us) VALUES (?1,?2,?3,?4,?5,"
                     "?6,?7,?8,?9)",
                     &st, e))
    return TL_ERROR;
  int rc = TL_OK;
  char aid[40], evid[40];
  for (size_t k = 0; rc == TL_OK && k < a->nlinks + a->unplaced.n; k++) {
    int linked = k < a->nlinks;
    uint32_t x = linked ? a->link_event[k] : a->unplaced.v[k - a->nlinks];
    if (linked) {
      int n = snprintf(aid, sizeof aid, "anchor-%u", a->link_anchor[k]);
      sqlite3_bind_text(st, 1, aid, n, SQLITE_STATIC);
      sqlite3_bind_int64(st, 5, a->link_order[k]);
    } else {
      sqlite3_bind_null(st, 1);
      sqlite3_bind_null(st, 5);
    }
    int n = snprintf(evid, sizeof evid, "event-%u", x);
    sqlite3_bind_text(st, 2, evid, n, SQLITE_STATIC);
    sqlite3_bind_int(st, 3, ev->db_idx[x]);
    sqlite3_bind_int64(st, 4, ev->device_id[x]);
    sqlite3_bind_text(st, 6, linked ? "prelude" : "retained_unplaced", -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 7,
                      linked ? "unanchored_event_before_anchor"
                             : "omitted_event_without_auxiliary_link",
                      -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 8, tl_kind_name((tl_kind)tl_event_label(t, x)->kind), -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 9, us(ev->end_ns[x] - ev->start_ns[x]));
    rc = tl_pub_step(db, st, "traceloom_aux_link", e);
  }
  sqlite3_finalize(st);
  return rc;
}

/* ------------------------------------------------------------------ trees */

typedef struct stmts {
  sqlite3_stmt *tree, *snode, *vnode;
  int64_t occurrences;  /* occurrence rows published so far (occurrence_n of the last) */
} stmts;

static void stmts_free(stmts *s) {
  sqlite3_finalize(s->tree), sqlite3_finalize(s->snode);
  sqlite3_finalize(s->vnode);
}

static int stmts_prepare(sqlite3 *db, stmts *s, tl_err *e) {
  memset(s, 0, sizeof *s);
  struct { sqlite3_stmt **st; const char *sql; } all[] = {
      {&s->tree, "INSERT INTO traceloom_semantic_tree(tree_id, db_idx, device_id, view_name, "
                 "tree_kind, stem, root_node_id, schema_version, semantic_projection, "
                 "macro_discovery, readable_macro_mode, auxiliary_attribution, token_count, "
                 "position_count, occurrence_count) VALUES (?1,?2,?3,'" VIEW_TREE "','" VIEW_TREE
                 "',?4,?5,'1','" VIEW_REPORT "',?6,'full','prelude_to_following_anchor',?7,?8,?9)"},
      {&s->snode, "INSERT INTO traceloom_semantic_node(node_id, tree_id, db_idx, device_id, "
                  "view_name, tree_kind, local_node_id, parent_node_id, parent_local_node_id, "
                  "preorder_idx, sibling_order, path, depth, display_depth, loop_depth, node_type, "
                  "semantic_kind, symbol, label, category, repeat_count, occurrence_count, "
                  "anchor_count, first_anchor_idx, last_anchor_idx, start_ns, end_ns, compute_us, "
                  "comm_us, idle_us, total_us, avg_compute_us, avg_comm_us, avg_idle_us, "
                  "avg_total_us, self_us, aux_event_count, aux_us, hidden_aux_event_count, "
                  "hidden_aux_us) VALUES (?1,?2,?3,?4,'" VIEW_TREE "','" VIEW_TREE "',?5,?6,?7,?8,"
                  "?9,?10,?11,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20,?21,?22,?23,?24,?25,?26,?27,"
                  "?28,?29,?30,?31,?32,?33,?34,?35,0,0.0)"},
      {&s->vnode, "INSERT INTO traceloom_viz_node(node_id, db_idx, device_id, view_name, "
                  "local_node_id, path, node_type, kind, symbol, label, category, depth, level, "
                  "repeat_label, repeat_count, occurrence_count, anchor_count, "
                  "anchors_per_occurrence, first_anchor_idx, last_anchor_idx, compute_us, comm_us, "
                  "idle_us, total_us, avg_compute_us, avg_comm_us, avg_idle_us, avg_total_us, "
                  "self_us, aux_events, aux_us) VALUES (?1,?2,?3,'" VIEW_REPORT "',?4,?5,?6,?7,?8,"
                  "?9,?10,?11,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20,?21,?22,?23,?24,?25,?26,?27,"
                  "?28,?29)"},
  };
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
    if (tl_pub_prepare(db, all[i].sql, all[i].st, e)) {
      stmts_free(s);
      return TL_ERROR;
    }
  return TL_OK;
}

/* Per-position aggregates gathered while walking the occurrences. */
typedef struct pos_agg {
  uint32_t first_occ;          /* walk index of the first occurrence */
  uint32_t first_token, last_token;
  int64_t start_ns, end_ns;
  int64_t sum[TL_SUM_COUNT];
} pos_agg;

/* Ids and paths are formatted by hand: a tree has as many occurrences as anchors (millions),
** each with two paths of several ids, and snprintf was a third of publishing them. */

/* Decimal v, zero-padded to at least min_digits; returns the length written (<= 10). */
static size_t fmt_u32(char *out, uint32_t v, size_t min_digits) {
  char t[10];
  size_t n = 0;
  do t[n++] = (char)('0' + v % 10), v /= 10; while (v);
  while (n < min_digits) t[n++] = '0';
  for (size_t k = 0; k < n; k++) out[k] = t[n - 1 - k];
  return n;
}

/* "N007": the local id of position pos. out needs 12 bytes. */
static size_t fmt_local(char *out, uint32_t pos) {
  out[0] = 'N';
  size_t n = 1 + fmt_u32(out + 1, pos + 1, 3);
  out[n] = '\0';
  return n;
}

static void local_id(char *buf, size_t cap, uint32_t pos) {
  char t[12];
  fmt_local(t, pos);
  snprintf(buf, cap, "%s", t);
}

/* prefix + "N007" (+ "-occurrence-<k>" for an occurrence id), NUL-terminated; cap >= 96. */
static size_t fmt_node(const tl_tree *tr, char *out, size_t cap, uint32_t pos) {
  size_t plen = strlen(tr->node_prefix);
  if (plen + 12 > cap) plen = cap - 12;
  memcpy(out, tr->node_prefix, plen);
  return plen + fmt_local(out + plen, pos);
}

static void node_id(const tl_tree *tr, char *buf, size_t cap, uint32_t pos) {
  fmt_node(tr, buf, cap, pos);
}

static size_t fmt_occ(const tl_tree *tr, char *out, size_t cap, uint32_t o) {
  const tl_occurrence *oc = &tr->st.occurrences[o];
  size_t n = fmt_node(tr, out, cap - 23, oc->position);
  memcpy(out + n, "-occurrence-", 12);
  n += 12;
  n += fmt_u32(out + n, oc->occurrence_idx, 1);
  out[n] = '\0';
  return n;
}

/* rooted_position_path (occurrence_path when with_occurrence) of occurrence o. */
static void occ_path(const tl_tree *tr, uint32_t o, int with_occurrence, tl_buf *b) {
  uint32_t chain[256];
  size_t n = 0;
  for (uint32_t x = o; x != TL_RECOVER_NONE && n < 256; x = tr->st.occurrences[x].parent)
    chain[n++] = x;
  tl_buf_reset(b);
  char id[128];
  while (n-- > 0) {
    const tl_occurrence *oc = &tr->st.occurrences[chain[n]];
    size_t k = 0;
    if (oc->parent != TL_RECOVER_NONE) {
      id[k++] = '/', id[k++] = 's';
      k += fmt_u32(id + k, oc->slot, 1);
      id[k++] = '/';
      if (with_occurrence) {
        id[k++] = 'r';
        k += fmt_u32(id + k, oc->member_order, 1);
        id[k++] = '/';
      }
    }
    k += with_occurrence ? fmt_occ(tr, id + k, sizeof id - k, chain[n])
                         : fmt_node(tr, id + k, sizeof id - k, oc->position);
    tl_buf_append(b, id, k);
  }
}

/* "N002:3,N005:1": the enclosing repeat iterations of occurrence o, outer to inner. */
static void repeat_context(const tl_tree *tr, uint32_t o, tl_buf *b) {
  uint32_t chain[256];
  size_t n = 0;
  for (uint32_t x = o; x != TL_RECOVER_NONE && n < 256; x = tr->st.occurrences[x].parent)
    chain[n++] = x;
  tl_buf_reset(b);
  char item[32];
  while (n-- > 0) {
    const tl_occurrence *oc = &tr->st.occurrences[chain[n]];
    if (oc->parent == TL_RECOVER_NONE) continue;
    uint32_t ppos = tr->st.occurrences[oc->parent].position;
    if (tr->st.positions[ppos].kind != TL_POS_REPEAT) continue;
    size_t k = 0;
    if (b->n) item[k++] = ',';
    k += fmt_local(item + k, ppos);
    item[k++] = ':';
    k += fmt_u32(item + k, oc->member_order, 1);
    tl_buf_append(b, item, k);
  }
}

static const char *node_type(uint32_t kind) {
  return kind == TL_POS_ATOM ? "Atom" : kind == TL_POS_REPEAT ? "Repeat" : "Seq";
}

static int is_repeat_child(const tl_tree *tr, const tl_occurrence *oc) {
  return oc->parent != TL_RECOVER_NONE &&
         tr->st.positions[tr->st.occurrences[oc->parent].position].kind == TL_POS_REPEAT;
}

/* The columns of occurrence o of one tree, for the bulk insert; called once per
** occurrence in walk order, it also accumulates the per-position aggregates. */
typedef struct occ_rows {
  const tl_structure_input *in;
  const tl_tree *tr;
  pos_agg *agg;
  uint32_t *child_count;
  int64_t base;             /* occurrence rows published before this tree */
  tl_buf path, opath, ctx;  /* the text columns of the row last filled */
  size_t filled;
} occ_rows;

#define OCCURRENCE_COLUMNS \
  "occurrence_n, db_idx, device_id, node_device, position_local, occurrence_idx, parent_n, " \
  "parent_local, parent_occurrence_idx, is_atom, repeat_iteration, token_start_ordinal, " \
  "token_end_exclusive, slot_ordinal, member_order, edge_order, anchor_first_n, anchor_end_n, " \
  "start_ns, end_ns, compute_ns, comm_ns, idle_ns, self_ns, aux_events, aux_ns, " \
  "linked_aux_ns, rooted_position_path, occurrence_path, repeat_context"

static int fill_occurrence(void *vctx, size_t row, int64_t *v, unsigned char *null) {
  occ_rows *r = vctx;
  const tl_tree *tr = r->tr;
  const tl_structure *st = &tr->st;
  const tl_anchors *a = r->in->anchors;
  const tl_anchor_group *g = &a->groups.v[tr->group];
  uint32_t o = (uint32_t)row;
  const tl_occurrence *oc = &st->occurrences[o];
  const tl_position *pos = &st->positions[oc->position];
  pos_agg *pa = &r->agg[oc->position];
  r->filled++;
  if (pa->first_occ == UINT32_MAX) pa->first_occ = o;
  if (oc->start < pa->first_token) pa->first_token = oc->start;
  if (oc->end > pa->last_token) pa->last_token = oc->end;
  tl_sums occ_sums;
  tl_tree_sums(tr, oc->start, oc->end, &occ_sums);
  const int64_t *sums = occ_sums.v;
  for (int f = 0; f < TL_SUM_COUNT; f++) pa->sum[f] += sums[f];
  int64_t start_ns = INT64_MAX, end_ns = INT64_MIN;
  for (uint32_t k = oc->start; k < oc->end; k++) {
    int64_t xs = tl_anchor_start(a, g->first + k), xe = tl_anchor_end(a, g->first + k);
    if (xs < start_ns) start_ns = xs;
    if (xe > end_ns) end_ns = xe;
  }
  if (start_ns < pa->start_ns) pa->start_ns = start_ns;
  if (end_ns > pa->end_ns) pa->end_ns = end_ns;
  memset(null, 0, 30);
  /* Paths and repeat context only where children will extend them: an atom's are its
  ** parent's plus one step, computed by the traceloom_position_occurrence view. */
  int stored = pos->kind != TL_POS_ATOM || oc->parent == TL_RECOVER_NONE;
  if (stored) {
    occ_path(tr, o, 0, &r->path);
    occ_path(tr, o, 1, &r->opath);
    repeat_context(tr, o, &r->ctx);
    if (r->path.oom || r->opath.oom || r->ctx.oom) return -1;
  }
  v[0] = r->base + o + 1;
  v[1] = tr->db_idx;
  v[2] = tr->device_id;
  v[3] = tr->device_id, null[3] = !tr->node_device;
  v[4] = (int64_t)oc->position + 1;
  v[5] = oc->occurrence_idx;
  if (oc->parent != TL_RECOVER_NONE) {
    const tl_occurrence *par = &st->occurrences[oc->parent];
    v[6] = r->base + oc->parent + 1;
    v[7] = (int64_t)par->position + 1;
    v[8] = par->occurrence_idx;
    v[15] = ++r->child_count[oc->parent];
  } else {
    null[6] = null[7] = null[8] = null[15] = 1;
  }
  v[9] = pos->kind == TL_POS_ATOM;
  v[10] = oc->member_order, null[10] = !is_repeat_child(tr, oc);
  v[11] = oc->start;
  v[12] = oc->end;
  v[13] = oc->slot;
  v[14] = oc->member_order;
  v[16] = (int64_t)(g->first + oc->start);
  v[17] = (int64_t)(g->first + oc->end);
  v[18] = start_ns;
  v[19] = end_ns;
  v[20] = sums[TL_SUM_COMPUTE];
  v[21] = sums[TL_SUM_COMM];
  v[22] = sums[TL_SUM_IDLE];
  v[23] = sums[TL_SUM_SELF];
  v[24] = sums[TL_SUM_AUX_EVENTS];
  v[25] = sums[TL_SUM_AUX];
  v[26] = sums[TL_SUM_LINKED_AUX];
  null[27] = null[28] = !stored;
  null[29] = !stored || r->ctx.n == 0;
  return 0;
}

/* The text columns of the occurrence last filled: its paths and repeat context. */
static void occurrence_text(void *vctx, int col, const char **p, int *n) {
  const occ_rows *r = vctx;
  const tl_buf *b = col == 27 ? &r->path : col == 28 ? &r->opath : &r->ctx;
  *p = b->p, *n = (int)b->n;
}

/* The refinement rows of one tree: slot j of position k, positions in order. */
typedef struct slot_rows {
  const tl_tree *tr;
  uint32_t pos, slot;          /* the next row's position and 0-based slot */
  char parent[96], child[96];  /* the ids of the row last filled */
  const char *edge_kind;
  size_t filled;
} slot_rows;

static int fill_slot(void *ctx, size_t row, int64_t *v, unsigned char *null) {
  slot_rows *r = ctx;
  const tl_structure *st = &r->tr->st;
  (void)row;
  while (r->pos < st->npositions && r->slot >= st->positions[r->pos].nslots) r->pos++, r->slot = 0;
  if (r->pos >= st->npositions) return -1; /* more rows asked for than there are slots */
  const tl_position *pos = &st->positions[r->pos];
  node_id(r->tr, r->parent, sizeof r->parent, r->pos);
  node_id(r->tr, r->child, sizeof r->child, st->slots[pos->first_slot + r->slot]);
  r->edge_kind = pos->kind == TL_POS_REPEAT ? "repeat_body" : "sequence";
  memset(null, 0, 8);
  v[1] = ++r->slot;
  v[3] = r->tr->db_idx;
  v[4] = r->tr->device_id;
  r->filled++;
  return 0;
}

static void slot_text(void *ctx, int col, const char **p, int *n) {
  const slot_rows *r = ctx;
  *p = col == 0 ? r->parent : col == 2 ? r->child : col == 5 ? r->tr->tree_id
       : col == 6 ? VIEW_TREE : r->edge_kind;
  *n = (int)strlen(*p);
}

static int publish_tree(sqlite3 *db, const tl_structure_input *in, const tl_tree *tr, stmts *s,
                        tl_err *e) {
  const tl_trace *t = in->trace;
  const tl_anchors *a = in->anchors;
  const tl_anchor_group *g = &a->groups.v[tr->group];
  const tl_structure *st = &tr->st;
  pos_agg *agg = calloc(st->npositions ? st->npositions : 1, sizeof *agg);
  uint32_t *child_count = calloc(st->noccurrences ? st->noccurrences : 1, sizeof *child_count);
  tl_buf path = {0}, opath = {0}, ctx = {0};
  int rc = TL_OK;
  if (!agg || !child_count) rc = tl_nomem(e);
  for (size_t k = 0; k < st->npositions && rc == TL_OK; k++) {
    agg[k].first_occ = UINT32_MAX;
    agg[k].start_ns = INT64_MAX, agg[k].end_ns = INT64_MIN;
    agg[k].first_token = UINT32_MAX;
  }
  char nid[96], pnid[96], lid[24], eid[200];
  /* Occurrences (walk order: parents first), in one INSERT ... SELECT whose rows are
  ** computed as SQLite asks for them (fill_occurrence). Members, edges and per-anchor
  ** packet rows are views over these rows and the anchors (sql/views/30_structure.sql). */
  occ_rows orows = {.in = in, .tr = tr, .agg = agg, .child_count = child_count,
                    .base = s->occurrences};
  if (rc == TL_OK && st->noccurrences) {
    tl_rows rows = {.nrows = st->noccurrences, .ncols = 30, .fill = fill_occurrence,
                    .ctx = &orows, .text_cols = 7u << 27, .text = occurrence_text};
    rc = tl_rows_insert(db, "traceloom_position_occurrence_core", OCCURRENCE_COLUMNS, &rows, e);
    if (rc == TL_OK && orows.filled != st->noccurrences)
      rc = tl_fail(e, "internal error: %zu of %zu occurrences of %s published", orows.filled,
                   st->noccurrences, tr->tree_id);
  }
  tl_buf_free(&orows.path), tl_buf_free(&orows.opath), tl_buf_free(&orows.ctx);
  s->occurrences += st->noccurrences;
  /* Positions (display order = position index), their slots and edges. */
  for (uint32_t k = 0; rc == TL_OK && k < st->npositions; k++) {
    const tl_position *pos = &st->positions[k];
    const pos_agg *pa = &agg[k];
    const tl_occurrence *first = &st->occurrences[pa->first_occ];
    node_id(tr, nid, sizeof nid, k);
    local_id(lid, sizeof lid, k);
    occ_path(tr, pa->first_occ, 0, &path);
    int parent = first->parent != TL_RECOVER_NONE;
    uint32_t ppos = parent ? st->occurrences[first->parent].position : 0;
    char plid[24] = "";
    if (parent) node_id(tr, pnid, sizeof pnid, ppos), local_id(plid, sizeof plid, ppos);
    /* Loop depth: Repeat positions on the first occurrence's ancestor chain, itself included. */
    uint32_t loop_depth = 0;
    for (uint32_t x = pa->first_occ; x != TL_RECOVER_NONE; x = st->occurrences[x].parent)
      loop_depth += st->positions[st->occurrences[x].position].kind == TL_POS_REPEAT;
    char label[64];
    const char *symbol = NULL, *kind, *category = NULL;
    if (pos->kind == TL_POS_ATOM) {
      symbol = tl_str(t, pos->symbol);
      snprintf(label, sizeof label, "%.63s", symbol);
      tl_anchor_role r = (tl_anchor_role)a->role[g->first + first->start];
      kind = r == TL_ANCHOR_COMM ? "comm" : r == TL_ANCHOR_GRAPH ? "graph" : "exec";
      category = tl_anchor_role_name(r);
    } else if (pos->kind == TL_POS_REPEAT) {
      snprintf(label, sizeof label, "Rep x%u", pos->repeat_count);
      kind = "repeat";
    } else if (pos->unit_template) {
      snprintf(label, sizeof label, "ReplayUnit T%u", pos->unit_template);
      kind = "seq";
      category = "graph_unit";
    } else {
      snprintf(label, sizeof label, "root");
      kind = "seq";
    }
    uint64_t denom = pos->occurrence_count ? pos->occurrence_count : 1;
    if (pos->kind == TL_POS_REPEAT && pos->repeat_count) denom *= pos->repeat_count;
    int64_t total = pa->sum[TL_SUM_COMPUTE] + pa->sum[TL_SUM_COMM] + pa->sum[TL_SUM_IDLE];
    int64_t anchors = (int64_t)pos->occurrence_count * (int64_t)pos->token_len;
    /* Semantic node. */
    sqlite3_stmt *q = s->snode;
    sqlite3_bind_text(q, 1, nid, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 2, tr->tree_id, -1, SQLITE_STATIC);
    sqlite3_bind_int(q, 3, tr->db_idx);
    sqlite3_bind_int64(q, 4, tr->device_id);
    sqlite3_bind_text(q, 5, lid, -1, SQLITE_STATIC);
    tl_bind_text(q, 6, parent ? pnid : NULL);
    tl_bind_text(q, 7, parent ? plid : NULL);
    sqlite3_bind_int64(q, 8, k + 1);
    if (parent) sqlite3_bind_int64(q, 9, first->slot); else sqlite3_bind_null(q, 9);
    sqlite3_bind_text(q, 10, path.p, (int)path.n, SQLITE_TRANSIENT);
    sqlite3_bind_int64(q, 11, pos->depth);
    sqlite3_bind_int64(q, 12, loop_depth);
    sqlite3_bind_text(q, 13, node_type(pos->kind), -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 14, pos->kind == TL_POS_ATOM ? "atom" : pos->kind == TL_POS_REPEAT ? "repeat" : "seq", -1, SQLITE_STATIC);
    tl_bind_text(q, 15, symbol);
    sqlite3_bind_text(q, 16, label, -1, SQLITE_TRANSIENT);
    tl_bind_text(q, 17, category);
    if (pos->kind == TL_POS_REPEAT) sqlite3_bind_int64(q, 18, pos->repeat_count); else sqlite3_bind_null(q, 18);
    sqlite3_bind_int64(q, 19, pos->occurrence_count);
    sqlite3_bind_int64(q, 20, anchors);
    sqlite3_bind_int64(q, 21, (int64_t)pa->first_token + 1);
    sqlite3_bind_int64(q, 22, (int64_t)pa->last_token);
    sqlite3_bind_int64(q, 23, pa->start_ns);
    sqlite3_bind_int64(q, 24, pa->end_ns);
    sqlite3_bind_double(q, 25, us(pa->sum[TL_SUM_COMPUTE]));
    sqlite3_bind_double(q, 26, us(pa->sum[TL_SUM_COMM]));
    sqlite3_bind_double(q, 27, us(pa->sum[TL_SUM_IDLE]));
    sqlite3_bind_double(q, 28, us(total));
    sqlite3_bind_double(q, 29, tl_round3(us(pa->sum[TL_SUM_COMPUTE]) / (double)denom));
    sqlite3_bind_double(q, 30, tl_round3(us(pa->sum[TL_SUM_COMM]) / (double)denom));
    sqlite3_bind_double(q, 31, tl_round3(us(pa->sum[TL_SUM_IDLE]) / (double)denom));
    sqlite3_bind_double(q, 32, tl_round3(us(total) / (double)denom));
    sqlite3_bind_double(q, 33, us(pa->sum[TL_SUM_SELF]));
    sqlite3_bind_int64(q, 34, pa->sum[TL_SUM_AUX_EVENTS]);
    sqlite3_bind_double(q, 35, us(pa->sum[TL_SUM_AUX]));
    rc = tl_pub_step(db, q, "traceloom_semantic_node", e);
    if (rc) break;
    /* Report node. */
    q = s->vnode;
    sqlite3_bind_text(q, 1, nid, -1, SQLITE_STATIC);
    sqlite3_bind_int(q, 2, tr->db_idx);
    sqlite3_bind_int64(q, 3, tr->device_id);
    sqlite3_bind_text(q, 4, lid, -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 5, path.p, (int)path.n, SQLITE_TRANSIENT);
    sqlite3_bind_text(q, 6, node_type(pos->kind), -1, SQLITE_STATIC);
    sqlite3_bind_text(q, 7, kind, -1, SQLITE_STATIC);
    tl_bind_text(q, 8, symbol);
    sqlite3_bind_text(q, 9, label, -1, SQLITE_TRANSIENT);
    tl_bind_text(q, 10, category);
    sqlite3_bind_int64(q, 11, pos->depth);
    if (pos->kind == TL_POS_REPEAT) {
      sqlite3_bind_text(q, 12, label, -1, SQLITE_TRANSIENT);
      sqlite3_bind_int64(q, 13, pos->repeat_count);
    } else {
      sqlite3_bind_null(q, 12);
      sqlite3_bind_null(q, 13);
    }
    sqlite3_bind_int64(q, 14, pos->occurrence_count);
    sqlite3_bind_int64(q, 15, anchors);
    sqlite3_bind_int64(q, 16, (int64_t)pos->token_len);
    sqlite3_bind_int64(q, 17, (int64_t)pa->first_token + 1);
    sqlite3_bind_int64(q, 18, (int64_t)pa->last_token);
    sqlite3_bind_double(q, 19, us(pa->sum[TL_SUM_COMPUTE]));
    sqlite3_bind_double(q, 20, us(pa->sum[TL_SUM_COMM]));
    sqlite3_bind_double(q, 21, us(pa->sum[TL_SUM_IDLE]));
    sqlite3_bind_double(q, 22, us(total));
    sqlite3_bind_double(q, 23, tl_round3(us(pa->sum[TL_SUM_COMPUTE]) / (double)denom));
    sqlite3_bind_double(q, 24, tl_round3(us(pa->sum[TL_SUM_COMM]) / (double)denom));
    sqlite3_bind_double(q, 25, tl_round3(us(pa->sum[TL_SUM_IDLE]) / (double)denom));
    sqlite3_bind_double(q, 26, tl_round3(us(total) / (double)denom));
    sqlite3_bind_double(q, 27, us(pa->sum[TL_SUM_SELF]));
    sqlite3_bind_int64(q, 28, pa->sum[TL_SUM_AUX_EVENTS]);
    sqlite3_bind_double(q, 29, us(pa->sum[TL_SUM_AUX]));
    rc = tl_pub_step(db, q, "traceloom_viz_node", e);
  }
  /* Slots: the refinements (the two edge projections are views over them), position by
  ** position, in one INSERT ... SELECT. */
  if (rc == TL_OK && st->nslots) {
    slot_rows sr = {.tr = tr};
    tl_rows rows = {.nrows = st->nslots, .ncols = 8, .fill = fill_slot, .ctx = &sr,
                    .text_cols = 1u << 0 | 1u << 2 | 1u << 5 | 1u << 6 | 1u << 7,
                    .text = slot_text};
    rc = tl_rows_insert(db, "traceloom_position_refinement",
                        "parent_position_id, slot_ordinal, child_position_id, db_idx, device_id, "
                        "tree_id, view_name, edge_kind",
                        &rows, e);
    if (rc == TL_OK && sr.filled != st->nslots)
      rc = tl_fail(e, "internal error: %zu of %zu slots of %s published", sr.filled,
                   st->nslots, tr->tree_id);
  }
  /* The tree. */
  if (rc == TL_OK) {
    node_id(tr, nid, sizeof nid, 0);
    snprintf(eid, sizeof eid, "db%u:dev%u", (unsigned)tr->db_idx, (unsigned)tr->device_id);
    sqlite3_bind_text(s->tree, 1, tr->tree_id, -1, SQLITE_STATIC);
    sqlite3_bind_int(s->tree, 2, tr->db_idx);
    sqlite3_bind_int64(s->tree, 3, tr->device_id);
    sqlite3_bind_text(s->tree, 4, eid, -1, SQLITE_STATIC);
    sqlite3_bind_text(s->tree, 5, nid, -1, SQLITE_STATIC);
    sqlite3_bind_text(s->tree, 6, tr->macro_discovery, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s->tree, 7, (int64_t)st->ntokens);
    sqlite3_bind_int64(s->tree, 8, (int64_t)st->npositions);
    sqlite3_bind_int64(s->tree, 9, (int64_t)st->noccurrences);
    rc = tl_pub_step(db, s->tree, "traceloom_semantic_tree", e);
  }
  free(agg), free(child_count);
  tl_buf_free(&path), tl_buf_free(&opath), tl_buf_free(&ctx);
  return rc;
}

int tl_publish_structure(sqlite3 *db, const tl_structure_input *in, tl_err *e) {
  tl_timer tm;
  tl_timer_start(&tm, "structure");
  int rc = publish_anchors(db, in, e);
  tl_timer_mark(&tm, "anchors");
  if (rc == TL_OK) rc = publish_aux_links(db, in, e);
  tl_timer_mark(&tm, "aux links");
  if (rc != TL_OK) return rc;
  stmts s;
  if (stmts_prepare(db, &s, e)) return TL_ERROR;
  s.occurrences = 0;
  for (size_t i = 0; rc == TL_OK && i < in->forest->trees.n; i++)
    rc = publish_tree(db, in, &in->forest->trees.v[i], &s, e);
  stmts_free(&s);
  tl_timer_mark(&tm, "trees");
  return rc;
}
