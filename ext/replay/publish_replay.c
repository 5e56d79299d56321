/*
** publish_replay.c: writes the replay relations of sql/schema/40_replay.sql from a
** tl_replay (inside the caller's publication savepoint). The replay cost map
** (traceloom_replay_cost_*) comes from costmap.c; its per-member relations are views.
**
** Ids: graph-launch-<n> (n = launch index in composition order), graph-body-member-<n>
** (dense over published members), replay-unit-<n>, graph-template-<n>,
** replay-body-template-<n>, graph-body-<n> (the body of launch n),
** aclgraph-reconstruction-region-<n>, protected-interval-<n>.
*/
#include "replay/replay.h"
#include "publish/publish.h"
#include "publish/rows.h"
#include "util/timing.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ID(buf, fmt, n) (snprintf(buf, sizeof buf, fmt, (unsigned long long)(n)), buf)

static void bind_id(sqlite3_stmt *st, int col, const char *fmt, uint64_t n, int present) {
  if (!present) {
    sqlite3_bind_null(st, col);
    return;
  }
  char b[64];
  snprintf(b, sizeof b, fmt, (unsigned long long)n);
  sqlite3_bind_text(st, col, b, -1, SQLITE_TRANSIENT);
}

static const char *provider_name(int p) { return p == TL_GRAPH_CUDA ? "cuda" : "aclgraph"; }

static const char *member_identity(const tl_trace *t, uint32_t x) {
  const tl_label *l = tl_event_label(t, x);
  uint32_t id = l->comm_name ? l->comm_name : l->op_type ? l->op_type : l->op_name ? l->op_name : l->name;
  return id ? tl_str(t, id) : NULL;
}

static int publish_launches(sqlite3 *db, const tl_trace *t, const tl_replay *r,
                            const uint32_t *anchor_of_event, tl_err *e) {
  sqlite3_stmt *st, *ctl;
  if (tl_pub_prepare(db,
                     "INSERT INTO traceloom_graph_launch VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,"
                     "?11,?12,?13,?14,?15,?16,?17,?18,?19,'exact_direct',?20,?21,?22,?23,?24,?25,?26,?27,"
                     "?28)",
                     &st, e))
    return TL_ERROR;
  if (tl_pub_prepare(db, "INSERT INTO traceloom_graph_launch_control VALUES(?1,?2,?3,?4,?5,?6,?7)",
                     &ctl, e)) {
    sqlite3_finalize(st);
    return TL_ERROR;
  }
  static const char *const ctl_kind[] = {"execute", "wait", "record"};
  int rc = TL_OK;
  int64_t next_member = 0; /* members are numbered densely over promoted launches */
  for (size_t i = 0; rc == TL_OK && i < r->launches.n; i++) {
    const tl_graph_launch *l = &r->launches.v[i];
    int promoted = l->unit != TL_REPLAY_NONE;
    char lid[48];
    ID(lid, "graph-launch-%llu", i);
    sqlite3_bind_text(st, 1, lid, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 2, l->db_idx);
    sqlite3_bind_int64(st, 3, l->device_id);
    sqlite3_bind_text(st, 4, provider_name(l->provider), -1, SQLITE_STATIC);
    uint32_t gev = promoted ? l->anchor_event : l->control[0];
    bind_id(st, 5, "event-%llu", gev, gev != TL_REPLAY_NONE);
    uint32_t an = promoted && anchor_of_event ? anchor_of_event[l->anchor_event] : TL_REPLAY_NONE;
    bind_id(st, 6, "anchor-%llu", an, an != TL_REPLAY_NONE);
    bind_id(st, 7, "replay-unit-%llu", l->unit, promoted);
    bind_id(st, 8, "graph-template-%llu",
            promoted ? r->units.v[l->unit].graph_template : 0, promoted);
    sqlite3_bind_int64(st, 9, (int64_t)i);
    bind_id(st, 10, "replay-body-template-%llu", l->body_template, l->body_template != 0);
    bind_id(st, 11, "graph-body-%llu", i, l->body_template != 0);
    if (promoted) {
      sqlite3_bind_int64(st, 12, l->member_order);
      sqlite3_bind_int64(st, 13, l->slot_order);
    } else {
      sqlite3_bind_null(st, 12);
      sqlite3_bind_null(st, 13);
    }
    bind_id(st, 14, "%llu", (uint64_t)l->correlation_id, l->correlation_id != TL_ABSENT);
    sqlite3_bind_text(st, 15, tl_match_policy_name(l->match_policy), -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 16, tl_assoc_policy_name(l->association_policy), -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 17, l->start_ns);
    sqlite3_bind_int64(st, 18, l->end_ns);
    sqlite3_bind_double(st, 19, tl_ns_to_us(l->end_ns - l->start_ns));
    if (promoted) sqlite3_bind_text(st, 20, tl_slot_role_name(l->slot_role), -1, SQLITE_STATIC);
    else sqlite3_bind_null(st, 20);
    sqlite3_bind_text(st, 21, tl_launch_status_name(l->status), -1, SQLITE_STATIC);
    bind_id(st, 22, "aclgraph-reconstruction-region-%llu", l->region, l->region != TL_REPLAY_NONE);
    /* runtime-call-<n> counts from 0, as the calls are stored (the call index). */
    bind_id(st, 23, "runtime-call-%llu", (uint64_t)l->host_call, l->host_call != TL_REPLAY_NONE);
    sqlite3_bind_int64(st, 24, promoted ? l->nmembers : 0);
    if (promoted) sqlite3_bind_int64(st, 25, next_member);
    else sqlite3_bind_null(st, 25);
    sqlite3_bind_int64(st, 26, (int64_t)i);
    if (an != TL_REPLAY_NONE) sqlite3_bind_int64(st, 27, an); else sqlite3_bind_null(st, 27);
    if (gev != TL_REPLAY_NONE) sqlite3_bind_int64(st, 28, gev); else sqlite3_bind_null(st, 28);
    if (promoted) next_member += l->nmembers;
    rc = tl_pub_step(db, st, "traceloom_graph_launch", e);
    for (int k = 0; rc == TL_OK && k < 3; k++) {
      if (l->control[k] == TL_REPLAY_NONE) continue;
      sqlite3_bind_text(ctl, 1, lid, -1, SQLITE_TRANSIENT);
      sqlite3_bind_int(ctl, 2, l->db_idx);
      sqlite3_bind_int64(ctl, 3, l->device_id);
      bind_id(ctl, 4, "event-%llu", l->control[k], 1);
      sqlite3_bind_text(ctl, 5, ctl_kind[k], -1, SQLITE_STATIC);
      sqlite3_bind_int64(ctl, 6, (int64_t)i);
      sqlite3_bind_int64(ctl, 7, l->control[k]);
      rc = tl_pub_step(db, ctl, "traceloom_graph_launch_control", e);
    }
  }
  (void)t;
  sqlite3_finalize(st);
  sqlite3_finalize(ctl);
  return rc;
}

/* The member rows: every member of every promoted launch, launches in order (rows.h). */
typedef struct member_rows {
  const tl_replay *r;
  const tl_replay_costs *c;
  size_t launch;   /* the launch of the next row */
  uint32_t k;      /* its next member */
  const char *kind; /* the member kind of the row last filled */
  size_t filled;
} member_rows;

static int fill_member(void *ctx, size_t row, int64_t *v, unsigned char *null) {
  member_rows *x = ctx;
  const tl_replay *r = x->r;
  while (x->launch < r->launches.n && (r->launches.v[x->launch].unit == TL_REPLAY_NONE ||
                                       x->k >= r->launches.v[x->launch].nmembers))
    x->launch++, x->k = 0;
  if (x->launch >= r->launches.n) return -1; /* more rows asked for than there are members */
  const tl_graph_launch *l = &r->launches.v[x->launch];
  uint32_t mi = l->first_member + x->k;
  const tl_graph_member *m = &r->members.v[mi];
  memset(null, 0, 11);
  v[0] = (int64_t)row;
  v[1] = (int64_t)x->launch;
  v[2] = m->event;
  v[3] = x->k;
  v[4] = m->lane_ordinal;
  v[5] = m->task_ordinal;
  x->kind = tl_member_kind_name(m->kind);
  v[7] = m->original_graph_node_id, null[7] = m->original_graph_node_id == TL_ABSENT;
  v[8] = x->c->member_share_ppm[mi];
  v[9] = x->c->member_aggregate[mi];
  v[10] = x->c->member_contributor[mi];
  x->k++;
  x->filled++;
  return 0;
}

static void member_text(void *ctx, int col, const char **p, int *n) {
  const member_rows *x = ctx;
  (void)col; /* the member kind is the only text column */
  *p = x->kind, *n = (int)strlen(x->kind);
}

static int publish_members(sqlite3 *db, const tl_replay *r, const tl_replay_costs *c,
                           tl_err *e) {
  size_t n = 0;
  for (size_t i = 0; i < r->launches.n; i++)
    if (r->launches.v[i].unit != TL_REPLAY_NONE) n += r->launches.v[i].nmembers;
  if (!n) return TL_OK;
  member_rows x = {.r = r, .c = c};
  tl_rows rows = {.nrows = n, .ncols = 11, .fill = fill_member, .ctx = &x,
                  .text_cols = 1u << 6, .text = member_text};
  int rc = tl_rows_insert(db, "traceloom_graph_member_core",
                          "member_n, launch_n, event_n, member_order, lane_ordinal, task_ordinal, "
                          "kind, original_graph_node_id, scheduled_work_share_ppm, aggregate_n, "
                          "contributor_order",
                          &rows, e);
  if (rc == TL_OK && x.filled != n)
    rc = tl_fail(e, "internal error: %zu of %zu graph members published", x.filled, n);
  return rc;
}

static int publish_regions(sqlite3 *db, const tl_replay *r, tl_err *e) {
  static const char *const order[] = {"host_submission_order", "device_execution_order"};
  static const char *const shape[] = {"unclassified", "head_repeated_layer_tail", "single_graph"};
  static const char *const boundary[] = {"exact_periodic_suffix", "one_shot_leading_composition",
                                         "direct_observed_graph_launch", "launch_segment"};
  sqlite3_stmt *st;
  if (tl_pub_prepare(db,
                     "INSERT INTO traceloom_aclgraph_reconstruction_region VALUES(?1,?2,?3,"
                     "'aclgraph',?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,"
                     "json_object('detail', ?18))",
                     &st, e))
    return TL_ERROR;
  int rc = TL_OK;
  uint32_t per_device = 0;
  for (size_t i = 0; rc == TL_OK && i < r->regions.n; i++) {
    const tl_graph_region *g = &r->regions.v[i];
    if (i == 0 || g->db_idx != r->regions.v[i - 1].db_idx ||
        g->device_id != r->regions.v[i - 1].device_id)
      per_device = 0;
    const tl_graph_launch *f = &r->launches.v[g->first_launch];
    bind_id(st, 1, "aclgraph-reconstruction-region-%llu", i, 1);
    sqlite3_bind_int(st, 2, g->db_idx);
    sqlite3_bind_int64(st, 3, g->device_id);
    bind_id(st, 4, "aclgraph-composition-candidate-%llu", g->candidate, g->candidate != 0);
    sqlite3_bind_int64(st, 5, per_device++);
    sqlite3_bind_text(st, 6, tl_region_status_name(g->status), -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 7, boundary[g->boundary_policy & 3], -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 8, order[g->order_policy & 1], -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 9,
                      f->association_policy == TL_ASSOC_NONE ? "graph_connection"
                                                             : "captured_instance",
                      -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 10, shape[g->shape_policy % 3], -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 11, g->first_launch);
    sqlite3_bind_int64(st, 12, g->first_launch + g->nlaunches - 1);
    sqlite3_bind_int64(st, 13, g->nlaunches);
    if (g->expected_launches) sqlite3_bind_int64(st, 14, g->expected_launches);
    else sqlite3_bind_null(st, 14);
    sqlite3_bind_int64(st, 15, g->start_ns);
    sqlite3_bind_int64(st, 16, g->end_ns);
    sqlite3_bind_double(st, 17, tl_ns_to_us(g->end_ns - g->start_ns));
    tl_bind_text(st, 18, g->detail);
    rc = tl_pub_step(db, st, "traceloom_aclgraph_reconstruction_region", e);
  }
  sqlite3_finalize(st);
  return rc;
}

static int publish_protected(sqlite3 *db, const tl_replay *r, const uint32_t *anchor_of_event,
                             tl_err *e) {
  sqlite3_stmt *st;
  if (tl_pub_prepare(db,
                     "INSERT INTO traceloom_protected_interval VALUES(?1,?2,?3,"
                     "'graph_replay_unit',?4,?5,?6,?7,?8,?9)",
                     &st, e))
    return TL_ERROR;
  int rc = TL_OK;
  for (size_t u = 0; rc == TL_OK && u < r->units.n; u++) {
    const tl_replay_unit *un = &r->units.v[u];
    uint32_t lo = UINT32_MAX, hi = 0;
    for (uint32_t k = 0; k < un->nlaunches; k++) {
      uint32_t a = anchor_of_event[r->launches.v[un->first_launch + k].anchor_event];
      if (a == TL_REPLAY_NONE) continue;
      if (a < lo) lo = a;
      if (a > hi) hi = a;
    }
    bind_id(st, 1, "protected-interval-%llu", u, 1);
    sqlite3_bind_int(st, 2, un->db_idx);
    sqlite3_bind_int64(st, 3, un->device_id);
    bind_id(st, 4, "replay-unit-%llu", u, 1);
    /* The launch anchors are contiguous unless eager anchors sit between them; then each
    ** launch is an atomic token of its own. */
    sqlite3_bind_text(st, 5, hi - lo + 1 == un->nlaunches ? "supported" : "split_by_eager_work",
                      -1, SQLITE_STATIC);
    bind_id(st, 6, "anchor-%llu", lo, lo != UINT32_MAX);
    bind_id(st, 7, "anchor-%llu", hi, lo != UINT32_MAX);
    if (lo != UINT32_MAX) {
      sqlite3_bind_int64(st, 8, lo);
      sqlite3_bind_int64(st, 9, hi);
    } else {
      sqlite3_bind_null(st, 8);
      sqlite3_bind_null(st, 9);
    }
    rc = tl_pub_step(db, st, "traceloom_protected_interval", e);
  }
  sqlite3_finalize(st);
  return rc;
}

static int publish_envelopes(sqlite3 *db, const tl_trace *t, const tl_replay *r, tl_err *e) {
  sqlite3_stmt *st;
  if (tl_pub_prepare(db,
                     "INSERT INTO traceloom_cuda_graph_replay VALUES(?1,?2,?3,?4,?5,?6,?7,NULL,"
                     "?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20,?21)",
                     &st, e))
    return TL_ERROR;
  int rc = TL_OK;
  uint64_t idx = 0;
  /* Promoted launches first (their envelope is the launch interval, their enclosed work
  ** the exact members), then graph-level envelopes without members. */
  for (size_t i = 0; rc == TL_OK && i < r->launches.n; i++) {
    const tl_graph_launch *l = &r->launches.v[i];
    if (l->unit == TL_REPLAY_NONE) continue;
    int64_t kern_ns = 0, all_ns = 0, nk = 0;
    for (uint32_t k = 0; k < l->nmembers; k++) {
      const tl_graph_member *m = &r->members.v[l->first_member + k];
      int64_t d = t->ev.end_ns[m->event] - t->ev.start_ns[m->event];
      all_ns += d;
      if (m->kind != TL_MEMBER_DATA_MOVE) kern_ns += d, nk++;
    }
    bind_id(st, 1, "event-%llu", l->anchor_event, 1);
    sqlite3_bind_int(st, 2, l->db_idx);
    sqlite3_bind_int64(st, 3, l->device_id);
    sqlite3_bind_text(st, 4, provider_name(l->provider), -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 5,
                      l->provider == TL_GRAPH_CUDA ? "cuda_graph_node_replay" : "aclgraph_graph_replay",
                      -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 6, (int64_t)idx++);
    bind_id(st, 7, "event-%llu", l->anchor_event, 1);
    if (l->stream_id == TL_NO_STREAM) sqlite3_bind_null(st, 8);
    else sqlite3_bind_int64(st, 8, l->stream_id);
    bind_id(st, 9, "%llu", (uint64_t)l->correlation_id, l->correlation_id != TL_ABSENT);
    tl_bind_i64_or_null(st, 10, l->graph_id, TL_ABSENT);
    sqlite3_bind_null(st, 11);
    sqlite3_bind_null(st, 12);
    sqlite3_bind_int64(st, 13, l->start_ns);
    sqlite3_bind_int64(st, 14, l->end_ns);
    sqlite3_bind_double(st, 15, tl_ns_to_us(l->end_ns - l->start_ns));
    sqlite3_bind_int64(st, 16, l->nmembers);
    sqlite3_bind_double(st, 17, tl_ns_to_us(all_ns));
    sqlite3_bind_int64(st, 18, nk);
    sqlite3_bind_double(st, 19, tl_ns_to_us(kern_ns));
    char js[96];
    snprintf(js, sizeof js, "{\"reconstruction\":\"exact_replay_composition\",\"launch_id\":\"graph-launch-%zu\"}", i);
    sqlite3_bind_text(st, 20, js, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 21, (int64_t)l->anchor_event);
    rc = tl_pub_step(db, st, "traceloom_cuda_graph_replay", e);
  }
  for (size_t i = 0; rc == TL_OK && i < r->envelopes.n; i++) {
    const tl_graph_envelope *g = &r->envelopes.v[i];
    bind_id(st, 1, "graph-envelope-%llu", i, 1);
    sqlite3_bind_int(st, 2, g->db_idx);
    sqlite3_bind_int64(st, 3, g->device_id);
    sqlite3_bind_text(st, 4, provider_name(g->provider), -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 5, g->graph_kind ? g->graph_kind : "cuda_graph_trace", -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 6, (int64_t)idx++);
    bind_id(st, 7, "event-%llu", g->event, g->event != TL_REPLAY_NONE);
    if (g->stream_id == TL_NO_STREAM) sqlite3_bind_null(st, 8);
    else sqlite3_bind_int64(st, 8, g->stream_id);
    bind_id(st, 9, "%llu", (uint64_t)g->correlation_id, g->correlation_id != TL_ABSENT);
    tl_bind_i64_or_null(st, 10, g->graph_id, TL_ABSENT);
    tl_bind_i64_or_null(st, 11, g->graph_exec_id, TL_ABSENT);
    tl_bind_i64_or_null(st, 12, g->context_id, TL_ABSENT);
    sqlite3_bind_int64(st, 13, g->start_ns);
    sqlite3_bind_int64(st, 14, g->end_ns);
    sqlite3_bind_double(st, 15, tl_ns_to_us(g->end_ns - g->start_ns));
    for (int c = 16; c <= 19; c++) sqlite3_bind_null(st, c); /* temporal only: no members */
    sqlite3_bind_text(st, 20, "{\"reconstruction\":\"graph_level_envelope_only\",\"members\":null}",
                      -1, SQLITE_STATIC);
    if (g->event != TL_REPLAY_NONE) sqlite3_bind_int64(st, 21, (int64_t)g->event);
    else sqlite3_bind_null(st, 21);
    rc = tl_pub_step(db, st, "traceloom_cuda_graph_replay", e);
  }
  sqlite3_finalize(st);
  return rc;
}

static void bind_i64s(sqlite3_stmt *st, int first, const int64_t *v, int n) {
  for (int k = 0; k < n; k++) sqlite3_bind_int64(st, first + k, v[k]);
}

static int publish_costs(sqlite3 *db, const tl_trace *t, const tl_replay *r,
                         const tl_replay_costs *c, tl_err *e) {
  sqlite3_stmt *unit = NULL, *launch = NULL, *lane = NULL, *agg = NULL, *issue = NULL;
  int rc = tl_pub_prepare(db, "INSERT INTO traceloom_replay_cost_unit VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9)",
                          &unit, e);
  if (rc == TL_OK)
    rc = tl_pub_prepare(db,
                        "INSERT INTO traceloom_replay_cost_launch VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,"
                        "?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20,?21,?22,?23,?24)",
                        &launch, e);
  if (rc == TL_OK)
    rc = tl_pub_prepare(db,
                        "INSERT INTO traceloom_replay_cost_stream VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,"
                        "?10,?11,?12)",
                        &lane, e);
  if (rc == TL_OK)
    rc = tl_pub_prepare(db,
                        "INSERT INTO traceloom_replay_cost_aggregate VALUES(?1,?2,?3,?4,?5,"
                        "'role_collapsed',?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20,"
                        "?21,?22,?23,?24,?25,?26,?27)",
                        &agg, e);
  if (rc == TL_OK)
    rc = tl_pub_prepare(db, "INSERT INTO traceloom_replay_cost_issue VALUES(?1,?2,?3,?4,?5,?6,?7)",
                        &issue, e);
  uint64_t nissue = 0;
  for (size_t u = 0; rc == TL_OK && u < r->units.n; u++) {
    const tl_replay_unit *un = &r->units.v[u];
    uint32_t resolved = 0;
    for (uint32_t k = 0; k < un->nlaunches; k++) resolved += r->launches.v[un->first_launch + k].nmembers > 0;
    int ok = resolved == un->nlaunches;
    bind_id(unit, 1, "replay-cost-unit-%llu", u, 1);
    sqlite3_bind_int(unit, 2, un->db_idx);
    sqlite3_bind_int64(unit, 3, un->device_id);
    bind_id(unit, 4, "replay-unit-%llu", u, 1);
    bind_id(unit, 5, "graph-template-%llu", un->graph_template, 1);
    sqlite3_bind_int64(unit, 6, un->nlaunches);
    sqlite3_bind_int64(unit, 7, resolved);
    sqlite3_bind_text(unit, 8, ok ? "supported" : "unsupported", -1, SQLITE_STATIC);
    tl_bind_text(unit, 9, ok ? NULL : "missing_graph_launch_body");
    rc = tl_pub_step(db, unit, "traceloom_replay_cost_unit", e);
  }
  for (size_t i = 0; rc == TL_OK && i < r->launches.n; i++) {
    const tl_graph_launch *l = &r->launches.v[i];
    if (l->unit == TL_REPLAY_NONE) continue;
    const tl_launch_cost *lc = &c->launch[i];
    uint32_t gt = r->units.v[l->unit].graph_template;
    bind_id(launch, 1, "graph-launch-%llu", i, 1);
    bind_id(launch, 2, "replay-cost-unit-%llu", l->unit, 1);
    sqlite3_bind_int(launch, 3, l->db_idx);
    sqlite3_bind_int64(launch, 4, l->device_id);
    sqlite3_bind_int64(launch, 5, l->member_order);
    sqlite3_bind_int64(launch, 6, (int64_t)i);
    char slot[64];
    snprintf(slot, sizeof slot, "graph-template-%u:slot-%u", (unsigned)gt, (unsigned)l->slot_order);
    sqlite3_bind_text(launch, 7, slot, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(launch, 8, tl_slot_role_name(l->slot_role), -1, SQLITE_STATIC);
    sqlite3_bind_int64(launch, 9, l->slot_order);
    bind_id(launch, 10, "replay-body-template-%llu", l->body_template, l->body_template != 0);
    bind_id(launch, 11, "graph-body-%llu", i, l->body_template != 0);
    int ok = l->nmembers > 0;
    sqlite3_bind_text(launch, 12, ok ? "supported" : "unsupported", -1, SQLITE_STATIC);
    tl_bind_text(launch, 13, ok ? NULL : "missing_graph_launch_body");
    sqlite3_bind_int64(launch, 14, l->nmembers);
    int64_t v[6] = {lc->task_sum, lc->busy_union, lc->envelope, lc->compute, lc->communication,
                    lc->data_move};
    bind_i64s(launch, 15, v, 6);
    bind_id(launch, 21, "replay-unit-%llu", l->unit, 1);
    bind_id(launch, 22, "graph-template-%llu", gt, 1);
    sqlite3_bind_int64(launch, 23, lc->first_start);
    sqlite3_bind_int64(launch, 24, (int64_t)i);
    rc = tl_pub_step(db, launch, "traceloom_replay_cost_launch", e);
    if (rc == TL_OK && !ok) {
      bind_id(issue, 1, "replay-cost-issue-%llu", nissue++, 1);
      sqlite3_bind_int(issue, 2, l->db_idx);
      sqlite3_bind_int64(issue, 3, l->device_id);
      sqlite3_bind_text(issue, 4, "missing_graph_launch_body", -1, SQLITE_STATIC);
      bind_id(issue, 5, "replay-unit-%llu", l->unit, 1);
      bind_id(issue, 6, "graph-launch-%llu", i, 1);
      sqlite3_bind_text(issue, 7, "promoted launch without exact members", -1, SQLITE_STATIC);
      rc = tl_pub_step(db, issue, "traceloom_replay_cost_issue", e);
    }
  }
  for (size_t k = 0; rc == TL_OK && k < c->lanes.n; k++) {
    const tl_lane_cost *lc = &c->lanes.v[k];
    const tl_graph_launch *l = &r->launches.v[lc->launch];
    bind_id(lane, 1, "graph-launch-%llu", lc->launch, 1);
    sqlite3_bind_int(lane, 2, l->db_idx);
    sqlite3_bind_int64(lane, 3, l->device_id);
    if (lc->stream_id == TL_NO_STREAM) sqlite3_bind_null(lane, 4);
    else sqlite3_bind_int64(lane, 4, lc->stream_id);
    sqlite3_bind_int64(lane, 5, lc->lane);
    sqlite3_bind_int(lane, 6, lc->consistent);
    sqlite3_bind_int64(lane, 7, (int64_t)lc->count);
    int64_t v[5] = {lc->task_sum, lc->busy_union, lc->compute, lc->communication, lc->data_move};
    bind_i64s(lane, 8, v, 5);
    rc = tl_pub_step(db, lane, "traceloom_replay_cost_stream", e);
  }
  for (size_t k = 0; rc == TL_OK && k < c->aggregates.n; k++) {
    const tl_replay_aggregate *g = &c->aggregates.v[k];
    const tl_graph_member *m = &r->members.v[g->first_member];
    const tl_graph_launch *l = &r->launches.v[m->launch];
    bind_id(agg, 1, "replay-cost-aggregate-%llu", k, 1);
    sqlite3_bind_int(agg, 2, l->db_idx);
    sqlite3_bind_int64(agg, 3, l->device_id);
    bind_id(agg, 4, "graph-template-%llu", r->units.v[l->unit].graph_template, 1);
    sqlite3_bind_text(agg, 5, tl_slot_role_name(l->slot_role), -1, SQLITE_STATIC);
    bind_id(agg, 6, "replay-body-template-%llu", l->body_template, 1);
    uint32_t stream = t->ev.stream_id[m->event];
    if (stream == TL_NO_STREAM) sqlite3_bind_null(agg, 7);
    else sqlite3_bind_int64(agg, 7, stream);
    sqlite3_bind_int64(agg, 8, m->task_ordinal);
    tl_bind_text(agg, 9, member_identity(t, m->event));
    sqlite3_bind_text(agg, 10, tl_member_kind_name(m->kind), -1, SQLITE_STATIC);
    sqlite3_bind_int64(agg, 11, g->count);
    sqlite3_bind_int64(agg, 12, g->units);
    sqlite3_bind_int64(agg, 13, g->launches);
    sqlite3_bind_int(agg, 14, !g->kind_mixed);
    sqlite3_bind_int(agg, 15, 1); /* one lane ordinal by the aggregate key */
    sqlite3_bind_int(agg, 16, !g->kind_mixed);
    int64_t v[6] = {g->dur_p25, g->dur_p50, g->dur_p75, g->share_p25, g->share_p50, g->share_p75};
    for (int q = 0; q < 6; q++) {
      if (g->kind_mixed) sqlite3_bind_null(agg, 17 + q);
      else sqlite3_bind_int64(agg, 17 + q, v[q]);
    }
    sqlite3_bind_int64(agg, 23, m->lane_ordinal);
    sqlite3_bind_int64(agg, 24, l->slot_order); /* the first contributor's slot */
    /* floor(1e6 * work / denominator): the reference's integer parts per million */
    sqlite3_bind_int64(agg, 25, g->body_task_sum_ns > 0
                                    ? (int64_t)((__int128)g->work_ns * 1000000 / g->body_task_sum_ns)
                                    : 0);
    sqlite3_bind_int(agg, 26, g->body_task_sum_ns > 0);
    sqlite3_bind_int64(agg, 27, g->body_task_sum_ns);
    rc = tl_pub_step(db, agg, "traceloom_replay_cost_aggregate", e);
  }
  /* A device with launches but no replay unit says so. */
  for (size_t i = 0; rc == TL_OK && i < r->launches.n;) {
    size_t j = i, promoted = 0;
    while (j < r->launches.n && r->launches.v[j].db_idx == r->launches.v[i].db_idx &&
           r->launches.v[j].device_id == r->launches.v[i].device_id)
      promoted += r->launches.v[j++].unit != TL_REPLAY_NONE;
    if (!promoted) {
      char detail[96];
      snprintf(detail, sizeof detail,
               "%zu graph launch(es) observed, none promoted to an exact replay unit", j - i);
      bind_id(issue, 1, "replay-cost-issue-%llu", nissue++, 1);
      sqlite3_bind_int(issue, 2, r->launches.v[i].db_idx);
      sqlite3_bind_int64(issue, 3, r->launches.v[i].device_id);
      sqlite3_bind_text(issue, 4, "no_replay_units", -1, SQLITE_STATIC);
      sqlite3_bind_null(issue, 5);
      sqlite3_bind_null(issue, 6);
      sqlite3_bind_text(issue, 7, detail, -1, SQLITE_TRANSIENT);
      rc = tl_pub_step(db, issue, "traceloom_replay_cost_issue", e);
    }
    i = j;
  }
  sqlite3_finalize(unit);
  sqlite3_finalize(launch);
  sqlite3_finalize(lane);
  sqlite3_finalize(agg);
  sqlite3_finalize(issue);
  return rc;
}

int tl_publish_replay(sqlite3 *db, const tl_trace *t, const tl_replay *r,
                      const uint32_t *anchor_event, size_t nanchors, tl_err *e) {
  if (!r || (!r->launches.n && !r->envelopes.n)) return TL_OK;
  size_t nev = tl_event_count(t, &r->launch_events); /* launch anchors included */
  uint32_t *anchor_of_event = malloc((nev + 1) * sizeof *anchor_of_event);
  if (!anchor_of_event) return tl_nomem(e);
  for (size_t i = 0; i < nev; i++) anchor_of_event[i] = TL_REPLAY_NONE;
  for (size_t k = 0; k < nanchors; k++) anchor_of_event[anchor_event[k]] = (uint32_t)k;
  tl_timer tm;
  tl_timer_start(&tm, "replay");
  tl_replay_costs costs;
  int rc = tl_replay_costs_build(t, r, &costs, e);
  if (rc) {
    free(anchor_of_event);
    return rc;
  }
  tl_timer_mark(&tm, "cost map");
  rc = publish_launches(db, t, r, anchor_of_event, e);
  tl_timer_mark(&tm, "launches");
  if (rc == TL_OK) rc = publish_members(db, r, &costs, e);
  tl_timer_mark(&tm, "members");
  if (rc == TL_OK) rc = publish_costs(db, t, r, &costs, e);
  tl_timer_mark(&tm, "costs");
  if (rc == TL_OK) rc = publish_regions(db, r, e);
  if (rc == TL_OK) rc = publish_protected(db, r, anchor_of_event, e);
  if (rc == TL_OK) rc = publish_envelopes(db, t, r, e);
  tl_timer_mark(&tm, "regions, protected units, envelopes");
  free(anchor_of_event);
  tl_replay_costs_free(&costs);
  return rc;
}
