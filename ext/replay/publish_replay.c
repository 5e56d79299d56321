/*
** publish_replay.c: writes the replay relations of sql/schema/40_replay.sql from a
** tl_replay (inside the caller's publication savepoint). The replay cost map
** (traceloom_replay_cost_*) comes from costmap.c; its per-member relations are views.
**
** Ids: graph-launch-<n> (n = launch index in composition order), graph-body-member-<n>
** (numbered over every collected body, published for promoted launches),
** aclgraph-reconstruction-region-<n>, protected-interval-<n>. The replay unit, graph template,
** body template, body (the body of launch n: n) and composition slot are bare integers from 0
** in the launch, member and cost relations, as the reference writes them (and integer keys to
** join on); the protected interval and the cost unit name their unit as text
** (replay-unit-<n>, replay-cost-unit-<n>), as the reference does there. Templates are 1-based
** in tl_replay (0: none), so their published id is the index less one.
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

/* An integer id, or NULL where absent. */
static void bind_n(sqlite3_stmt *st, int col, uint64_t n, int present) {
  if (present) sqlite3_bind_int64(st, col, (int64_t)n);
  else sqlite3_bind_null(st, col);
}

static const char *provider_name(int p) { return p == TL_GRAPH_CUDA ? "cuda" : "aclgraph"; }

/* A member's identity is the name its body signature compares, so that every contributor of
** an aggregate has it: an Ascend task's communication name or operator type (or name; the lane
** tokens, recovery.md 7.1 step 4), a CUDA graph child's own name, the raw kernel name or a
** copy's label (the body lines, 7.2), as the reference names a CUDA member (not by the
** normalized symbol its operator type carries, CudaMatMul). traceloom_graph_body_member
** (sql/views/40_replay.sql) says the same. */
static const char *member_identity(const tl_trace *t, uint32_t x, int provider) {
  uint32_t id = tl_replay_member_identity(t, x, provider);
  return id ? tl_str(t, id) : NULL;
}

enum {
  GL_LAUNCH_ID, GL_DB_IDX, GL_DEVICE_ID, GL_GRAPH_PROVIDER, GL_GRAPH_EVENT_ID, GL_ANCHOR_ID,
  GL_REPLAY_UNIT_ID, GL_GRAPH_TEMPLATE_ID, GL_GRAPH_LAUNCH_OCCURRENCE_ID,
  GL_REPLAY_BODY_TEMPLATE_ID, GL_BODY_ID, GL_MEMBER_ORDER, GL_SLOT_ORDER, GL_CORRELATION_ID,
  GL_MATCH_POLICY, GL_ASSOCIATION_POLICY, GL_START_NS, GL_END_NS, GL_DUR_US, GL_EVIDENCE_LEVEL,
  GL_SLOT_ROLE, GL_RECONSTRUCTION_STATUS, GL_REGION_ID, GL_HOST_CALL_ID, GL_MEMBER_COUNT,
  GL_FIRST_MEMBER_N, GL_LAUNCH_N, GL_ANCHOR_N, GL_GRAPH_EVENT_N, GL_RELATION_N, GL_NCOLS
};
static const tl_rows_column graph_launch_columns[GL_NCOLS] = {
    [GL_LAUNCH_ID] = {"launch_id", 1},
    [GL_DB_IDX] = {"db_idx", 0},
    [GL_DEVICE_ID] = {"device_id", 0},
    [GL_GRAPH_PROVIDER] = {"graph_provider", 1},
    [GL_GRAPH_EVENT_ID] = {"graph_event_id", 1},
    [GL_ANCHOR_ID] = {"anchor_id", 1},
    [GL_REPLAY_UNIT_ID] = {"replay_unit_id", 0},
    [GL_GRAPH_TEMPLATE_ID] = {"graph_template_id", 0},
    [GL_GRAPH_LAUNCH_OCCURRENCE_ID] = {"graph_launch_occurrence_id", 0},
    [GL_REPLAY_BODY_TEMPLATE_ID] = {"replay_body_template_id", 0},
    [GL_BODY_ID] = {"body_id", 0},
    [GL_MEMBER_ORDER] = {"member_order", 0},
    [GL_SLOT_ORDER] = {"slot_order", 0},
    [GL_CORRELATION_ID] = {"correlation_id", 1},
    [GL_MATCH_POLICY] = {"match_policy", 1},
    [GL_ASSOCIATION_POLICY] = {"association_policy", 1},
    [GL_START_NS] = {"start_ns", 0},
    [GL_END_NS] = {"end_ns", 0},
    [GL_DUR_US] = {"dur_us", 0},
    [GL_EVIDENCE_LEVEL] = {"evidence_level", 1, "'exact_direct'"},
    [GL_SLOT_ROLE] = {"slot_role", 1},
    [GL_RECONSTRUCTION_STATUS] = {"reconstruction_status", 1},
    [GL_REGION_ID] = {"region_id", 1},
    [GL_HOST_CALL_ID] = {"host_call_id", 1},
    [GL_MEMBER_COUNT] = {"member_count", 0},
    [GL_FIRST_MEMBER_N] = {"first_member_n", 0},
    [GL_LAUNCH_N] = {"launch_n", 0},
    [GL_ANCHOR_N] = {"anchor_n", 0},
    [GL_GRAPH_EVENT_N] = {"graph_event_n", 0},
    [GL_RELATION_N] = {"relation_n", 0},
};

enum {
  GC_LAUNCH_ID, GC_DB_IDX, GC_DEVICE_ID, GC_EVENT_ID, GC_CONTROL_KIND, GC_LAUNCH_N, GC_EVENT_N,
  GC_NCOLS
};
static const tl_rows_column graph_launch_control_columns[GC_NCOLS] = {
    [GC_LAUNCH_ID] = {"launch_id", 1},
    [GC_DB_IDX] = {"db_idx", 0},
    [GC_DEVICE_ID] = {"device_id", 0},
    [GC_EVENT_ID] = {"event_id", 1},
    [GC_CONTROL_KIND] = {"control_kind", 1},
    [GC_LAUNCH_N] = {"launch_n", 0},
    [GC_EVENT_N] = {"event_n", 0},
};

/* The event of replay unit u: the units' events are numbered after the trace's (the launch
** anchors' rows have negative keys: tl_event_stored_n). */
static uint32_t unit_event_n(const tl_trace *t, const tl_replay *r, size_t u) {
  (void)r;
  return (uint32_t)(t->ev.n + u);
}

/* Replay unit u's interval (its first launch's start to its last launch's end), stream and
** source database: those of its first launch's completion record (ACL: on the captured
** model's stream), else of its first member (CUDA). */
typedef struct unit_place {
  int64_t start_ns, end_ns, source_id;
  uint32_t stream;
} unit_place;

static unit_place unit_place_of(const tl_trace *t, const tl_replay *r, const tl_replay_unit *un) {
  const tl_graph_launch *first = &r->launches.v[un->first_launch];
  unit_place p = {first->start_ns, first->end_ns, 0, TL_NO_STREAM};
  for (uint32_t k = 0; k < un->nlaunches; k++) {
    const tl_graph_launch *l = &r->launches.v[un->first_launch + k];
    if (l->start_ns < p.start_ns) p.start_ns = l->start_ns;
    if (l->end_ns > p.end_ns) p.end_ns = l->end_ns;
  }
  uint32_t x = first->control[2] != TL_REPLAY_NONE ? first->control[2]
               : first->nmembers ? r->members.v[first->first_member].event : first->control[0];
  if (x != TL_REPLAY_NONE) {
    p.source_id = tl_source_ref_at(t, NULL, tl_events_source_ref(&t->ev, x))->source_id;
    p.stream = tl_events_stream_id(&t->ev, x);
  }
  return p;
}

static int publish_launches(sqlite3 *db, const tl_trace *t, const tl_replay *r,
                            const uint32_t *anchor_of_event, tl_err *e) {
  sqlite3_stmt *st, *ctl;
  if (tl_rows_prepare(db, "INSERT", "traceloom_graph_launch", graph_launch_columns, GL_NCOLS, &st,
                      e))
    return TL_ERROR;
  if (tl_rows_prepare(db, "INSERT", "traceloom_graph_launch_control", graph_launch_control_columns,
                      GC_NCOLS, &ctl, e)) {
    sqlite3_finalize(st);
    return TL_ERROR;
  }
  static const char *const ctl_kind[] = {"execute", "wait", "record"};
  /* Launch i's graph_launch relation is relation base + i: numbered after the provider
  ** relations, already published (publish_launch_relations writes the rows). */
  int64_t base = 0;
  sqlite3_stmt *q = NULL;
  int rc = sqlite3_prepare_v2(db, "SELECT COALESCE(max(relation_n) + 1, 0) FROM "
                                  "main.traceloom_runtime_device_relation_core", -1, &q, NULL);
  if (rc == SQLITE_OK && sqlite3_step(q) == SQLITE_ROW) base = sqlite3_column_int64(q, 0);
  else rc = SQLITE_ERROR;
  sqlite3_finalize(q);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(st), sqlite3_finalize(ctl);
    return tl_fail(e, "cannot number the graph_launch relations: %s", sqlite3_errmsg(db));
  }
  rc = TL_OK;
  /* Members are numbered over every launch whose body was collected, in launch order, and
  ** only a promoted launch's are published: an unpromoted body (a launch whose body differs
  ** from its instance's, a trailing launch) keeps its numbers, so the members of the other
  ** launches are named as the reference names them. */
  int64_t next_member = 0;
  for (size_t i = 0; rc == TL_OK && i < r->launches.n; i++) {
    const tl_graph_launch *l = &r->launches.v[i];
    int promoted = l->unit != TL_REPLAY_NONE;
    char lid[48];
    ID(lid, "graph-launch-%llu", i);
    sqlite3_bind_text(st, TL_PARAM(GL_LAUNCH_ID), lid, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, TL_PARAM(GL_DB_IDX), l->db_idx);
    sqlite3_bind_int64(st, TL_PARAM(GL_DEVICE_ID), l->device_id);
    sqlite3_bind_text(st, TL_PARAM(GL_GRAPH_PROVIDER), provider_name(l->provider), -1,
                      SQLITE_STATIC);
    /* a promoted launch's graph event is its unit's (publish_unit_events), as the
    ** reference's; an unpromoted ACL launch's its MODEL_EXECUTE task */
    uint32_t gev = promoted ? unit_event_n(t, r, l->unit) : l->control[0];
    bind_id(st, TL_PARAM(GL_GRAPH_EVENT_ID), "event-%llu", gev, gev != TL_REPLAY_NONE);
    uint32_t an = promoted && anchor_of_event ? anchor_of_event[l->anchor_event] : TL_REPLAY_NONE;
    bind_id(st, TL_PARAM(GL_ANCHOR_ID), "anchor-%llu", an, an != TL_REPLAY_NONE);
    bind_n(st, TL_PARAM(GL_REPLAY_UNIT_ID), l->unit, promoted);
    bind_n(st, TL_PARAM(GL_GRAPH_TEMPLATE_ID),
           promoted ? r->units.v[l->unit].graph_template - 1 : 0, promoted);
    sqlite3_bind_int64(st, TL_PARAM(GL_GRAPH_LAUNCH_OCCURRENCE_ID), (int64_t)i);
    bind_n(st, TL_PARAM(GL_REPLAY_BODY_TEMPLATE_ID), l->body_template - 1, l->body_template != 0);
    bind_n(st, TL_PARAM(GL_BODY_ID), i, l->body_template != 0);
    if (promoted) {
      sqlite3_bind_int64(st, TL_PARAM(GL_MEMBER_ORDER), l->member_order);
      sqlite3_bind_int64(st, TL_PARAM(GL_SLOT_ORDER), l->slot_order);
    } else {
      sqlite3_bind_null(st, TL_PARAM(GL_MEMBER_ORDER));
      sqlite3_bind_null(st, TL_PARAM(GL_SLOT_ORDER));
    }
    bind_id(st, TL_PARAM(GL_CORRELATION_ID), "%llu", (uint64_t)l->correlation_id,
            l->correlation_id != TL_ABSENT);
    sqlite3_bind_text(st, TL_PARAM(GL_MATCH_POLICY), tl_match_policy_name(l->match_policy), -1,
                      SQLITE_STATIC);
    sqlite3_bind_text(st, TL_PARAM(GL_ASSOCIATION_POLICY),
                      tl_assoc_policy_name(l->association_policy), -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, TL_PARAM(GL_START_NS), l->start_ns);
    sqlite3_bind_int64(st, TL_PARAM(GL_END_NS), l->end_ns);
    sqlite3_bind_double(st, TL_PARAM(GL_DUR_US), tl_ns_to_us(l->end_ns - l->start_ns));
    if (promoted)
      sqlite3_bind_text(st, TL_PARAM(GL_SLOT_ROLE), tl_slot_role_name(l->slot_role), -1,
                        SQLITE_STATIC);
    else sqlite3_bind_null(st, TL_PARAM(GL_SLOT_ROLE));
    sqlite3_bind_text(st, TL_PARAM(GL_RECONSTRUCTION_STATUS), tl_launch_status_name(l->status), -1,
                      SQLITE_STATIC);
    bind_id(st, TL_PARAM(GL_REGION_ID), "aclgraph-reconstruction-region-%llu", l->region,
            l->region != TL_REPLAY_NONE);
    /* runtime-call-<n> counts from 0, as the calls are stored (the call index). */
    bind_id(st, TL_PARAM(GL_HOST_CALL_ID), "runtime-call-%llu", (uint64_t)l->host_call,
            l->host_call != TL_REPLAY_NONE);
    sqlite3_bind_int64(st, TL_PARAM(GL_MEMBER_COUNT), promoted ? l->nmembers : 0);
    if (promoted) sqlite3_bind_int64(st, TL_PARAM(GL_FIRST_MEMBER_N), next_member);
    else sqlite3_bind_null(st, TL_PARAM(GL_FIRST_MEMBER_N));
    sqlite3_bind_int64(st, TL_PARAM(GL_LAUNCH_N), (int64_t)i);
    sqlite3_bind_int64(st, TL_PARAM(GL_RELATION_N), base + (int64_t)i);
    if (an != TL_REPLAY_NONE) sqlite3_bind_int64(st, TL_PARAM(GL_ANCHOR_N), an);
    else sqlite3_bind_null(st, TL_PARAM(GL_ANCHOR_N));
    if (gev != TL_REPLAY_NONE) sqlite3_bind_int64(st, TL_PARAM(GL_GRAPH_EVENT_N), gev);
    else sqlite3_bind_null(st, TL_PARAM(GL_GRAPH_EVENT_N));
    next_member += l->nmembers;
    rc = tl_pub_step(db, st, "traceloom_graph_launch", e);
    for (int k = 0; rc == TL_OK && k < 3; k++) {
      if (l->control[k] == TL_REPLAY_NONE) continue;
      sqlite3_bind_text(ctl, TL_PARAM(GC_LAUNCH_ID), lid, -1, SQLITE_TRANSIENT);
      sqlite3_bind_int(ctl, TL_PARAM(GC_DB_IDX), l->db_idx);
      sqlite3_bind_int64(ctl, TL_PARAM(GC_DEVICE_ID), l->device_id);
      bind_id(ctl, TL_PARAM(GC_EVENT_ID), "event-%llu", l->control[k], 1);
      sqlite3_bind_text(ctl, TL_PARAM(GC_CONTROL_KIND), ctl_kind[k], -1, SQLITE_STATIC);
      sqlite3_bind_int64(ctl, TL_PARAM(GC_LAUNCH_N), (int64_t)i);
      sqlite3_bind_int64(ctl, TL_PARAM(GC_EVENT_N), l->control[k]);
      rc = tl_pub_step(db, ctl, "traceloom_graph_launch_control", e);
    }
  }
  sqlite3_finalize(st);
  sqlite3_finalize(ctl);
  return rc;
}

/* The members, as slots (sql/schema/40_replay.sql): the launches of one body template share
** the slots of the first such launch that the slot rules give back exactly; any other launch
** (no template, another member count, or a member the rules do not give) has slots of its
** own, which say where it differs (aggregate, contributor order, share). Per launch: its
** first slot, its first member's event, aggregate and contributor order. */
typedef struct member_plan {
  uint32_t *first_slot;   /* per launch: its first slot, NONE when it publishes no members */
  uint32_t *slot_member;  /* per slot: the member (of the launch that made the slot) */
  size_t nslots;
} member_plan;

/* The aggregate of member k of the launch whose first member is m0, less member 0's. */
static int64_t aggregate_offset(const tl_replay_costs *c, uint32_t m0, uint32_t k) {
  return (int64_t)c->member_aggregate[m0 + k] - (int64_t)c->member_aggregate[m0];
}

/* What the view gives member k of the launch whose first member is m0 from that member and
** the slots made from the launch whose first member is s0: aggregate m0's + the slot's offset
** (s0's), m0's contributor order, and trunc(dur * 10^6 / task_sum) in 64-bit SQL arithmetic. */
static int member_derived(const tl_trace *t, const tl_replay *r, const tl_replay_costs *c,
                          uint32_t m0, uint32_t k, uint32_t s0) {
  uint32_t mi = m0 + k;
  const tl_graph_member *m = &r->members.v[mi];
  int64_t dur = tl_events_end(&t->ev, m->event) - t->ev.start_ns[m->event];
  return aggregate_offset(c, m0, k) == aggregate_offset(c, s0, k) &&
         c->member_contributor[mi] == c->member_contributor[m0] &&
         dur >= -INT64_MAX / 1000000 && dur <= INT64_MAX / 1000000; /* dur * 10^6 is exact */
}

/* Whether launch l's members are what the slots made from members slot0[0..) give. */
static int launch_fits(const tl_trace *t, const tl_replay *r, const tl_replay_costs *c,
                       const tl_graph_launch *l, const tl_graph_member *slot0) {
  for (uint32_t k = 0; k < l->nmembers; k++) {
    const tl_graph_member *m = &r->members.v[l->first_member + k], *s = slot0 + k;
    int64_t offset = (int64_t)s->event - (int64_t)slot0->event;
    if (m->lane_ordinal != s->lane_ordinal || m->task_ordinal != s->task_ordinal ||
        m->kind != s->kind || m->original_graph_node_id != s->original_graph_node_id ||
        (int64_t)m->event != (int64_t)r->members.v[l->first_member].event + offset ||
        !member_derived(t, r, c, l->first_member, k, (uint32_t)(slot0 - r->members.v)))
      return 0;
  }
  return 1;
}

static int plan_members(const tl_trace *t, const tl_replay *r, const tl_replay_costs *c,
                        member_plan *p, tl_err *e) {
  memset(p, 0, sizeof *p);
  size_t nl = r->launches.n, nb = r->body_templates.n + 1, cap = 0;
  uint32_t *body_launch = malloc(nb * sizeof *body_launch); /* template -> launch of its slots */
  p->first_slot = malloc((nl ? nl : 1) * sizeof *p->first_slot);
  int rc = body_launch && p->first_slot ? TL_OK : tl_nomem(e);
  for (size_t b = 0; rc == TL_OK && b < nb; b++) body_launch[b] = TL_REPLAY_NONE;
  for (size_t i = 0; rc == TL_OK && i < nl; i++) {
    const tl_graph_launch *l = &r->launches.v[i];
    p->first_slot[i] = TL_REPLAY_NONE;
    if (l->unit == TL_REPLAY_NONE || !l->nmembers) continue;
    uint32_t owner = l->body_template ? body_launch[l->body_template] : TL_REPLAY_NONE;
    if (owner != TL_REPLAY_NONE && r->launches.v[owner].nmembers == l->nmembers &&
        launch_fits(t, r, c, l, &r->members.v[r->launches.v[owner].first_member])) {
      p->first_slot[i] = p->first_slot[owner];
      continue;
    }
    if (p->nslots + l->nmembers > cap) { /* slots of its own, from its members */
      cap = (p->nslots + l->nmembers) * 2;
      uint32_t *v = realloc(p->slot_member, cap * sizeof *v);
      if (!v) {
        rc = tl_nomem(e);
        break;
      }
      p->slot_member = v;
    }
    p->first_slot[i] = (uint32_t)p->nslots;
    for (uint32_t k = 0; k < l->nmembers; k++) p->slot_member[p->nslots++] = l->first_member + k;
    /* the template's shared slots must need no correction */
    if (l->body_template && owner == TL_REPLAY_NONE && launch_fits(t, r, c, l, &r->members.v[l->first_member]))
      body_launch[l->body_template] = (uint32_t)i;
  }
  free(body_launch);
  return rc;
}

enum {
  GS_N, GS_LANE, GS_TASK, GS_KIND, GS_NODE, GS_OFFSET, GS_AGGREGATE_OFFSET, GS_AGGREGATE,
  GS_CONTRIBUTOR, GS_SHARE, GS_NCOLS
};
static const tl_rows_column slot_columns[GS_NCOLS] = {
    [GS_N] = {"slot_n", 0},          [GS_LANE] = {"lane_ordinal", 0},
    [GS_TASK] = {"task_ordinal", 0}, [GS_KIND] = {"kind", 1},
    [GS_NODE] = {"original_graph_node_id", 0}, [GS_OFFSET] = {"event_offset", 0},
    [GS_AGGREGATE_OFFSET] = {"aggregate_offset", 0},
    [GS_AGGREGATE] = {"aggregate_n", 0}, [GS_CONTRIBUTOR] = {"contributor_order", 0},
    [GS_SHARE] = {"scheduled_work_share_ppm", 0},
};

enum { GR_LAUNCH, GR_SLOT, GR_EVENT, GR_AGGREGATE, GR_CONTRIBUTOR, GR_NCOLS };
static const tl_rows_column range_columns[GR_NCOLS] = {
    [GR_LAUNCH] = {"launch_n", 0},       [GR_SLOT] = {"first_slot_n", 0},
    [GR_EVENT] = {"first_event_n", 0},   [GR_AGGREGATE] = {"first_aggregate_n", 0},
    [GR_CONTRIBUTOR] = {"contributor_order", 0},
};

/* The rows of both tables, read by traceloom_rows (rows.h). */
typedef struct member_rows {
  const tl_trace *t;
  const tl_replay *r;
  const tl_replay_costs *c;
  const member_plan *p;
  size_t launch;    /* range rows: the launch of the next row */
  const char *kind; /* the member kind of the slot row last filled */
} member_rows;

static int fill_slot(void *ctx, size_t row, int64_t *v, unsigned char *null) {
  member_rows *x = ctx;
  uint32_t mi = x->p->slot_member[row];
  const tl_graph_member *m = &x->r->members.v[mi];
  uint32_t m0 = x->r->launches.v[m->launch].first_member;
  v[GS_N] = (int64_t)row;
  v[GS_LANE] = m->lane_ordinal, null[GS_LANE] = 0;
  v[GS_TASK] = m->task_ordinal, null[GS_TASK] = 0;
  x->kind = tl_member_kind_name(m->kind), null[GS_KIND] = 0;
  v[GS_NODE] = m->original_graph_node_id, null[GS_NODE] = m->original_graph_node_id == TL_ABSENT;
  v[GS_OFFSET] = (int64_t)m->event - (int64_t)x->r->members.v[m0].event, null[GS_OFFSET] = 0;
  v[GS_AGGREGATE_OFFSET] = aggregate_offset(x->c, m0, mi - m0), null[GS_AGGREGATE_OFFSET] = 0;
  /* the corrections: NULL where the launch's first member gives the value */
  int derived = member_derived(x->t, x->r, x->c, m0, mi - m0, m0);
  v[GS_AGGREGATE] = x->c->member_aggregate[mi], null[GS_AGGREGATE] = (unsigned char)derived;
  v[GS_CONTRIBUTOR] = x->c->member_contributor[mi], null[GS_CONTRIBUTOR] = (unsigned char)derived;
  v[GS_SHARE] = x->c->member_share_ppm[mi], null[GS_SHARE] = (unsigned char)derived;
  null[GS_N] = 0;
  return 0;
}

static int fill_range(void *ctx, size_t row, int64_t *v, unsigned char *null) {
  member_rows *x = ctx;
  (void)row; /* rows are the launches with a first slot, in launch order */
  while (x->launch < x->r->launches.n && x->p->first_slot[x->launch] == TL_REPLAY_NONE)
    x->launch++;
  if (x->launch >= x->r->launches.n) return -1;
  uint32_t m0 = x->r->launches.v[x->launch].first_member;
  memset(null, 0, GR_NCOLS);
  v[GR_LAUNCH] = (int64_t)x->launch;
  v[GR_SLOT] = x->p->first_slot[x->launch];
  v[GR_EVENT] = x->r->members.v[m0].event;
  v[GR_AGGREGATE] = x->c->member_aggregate[m0];
  v[GR_CONTRIBUTOR] = x->c->member_contributor[m0];
  x->launch++;
  return 0;
}

static void slot_kind_text(void *ctx, int col, const char **p, int *n) {
  const member_rows *x = ctx;
  (void)col; /* the kind is the only text column */
  *p = x->kind, *n = (int)strlen(x->kind);
}

static int publish_members(sqlite3 *db, const tl_trace *t, const tl_replay *r,
                           const tl_replay_costs *c, tl_err *e) {
  member_plan p;
  int rc = plan_members(t, r, c, &p, e);
  size_t nranges = 0;
  for (size_t i = 0; rc == TL_OK && i < r->launches.n; i++)
    nranges += p.first_slot[i] != TL_REPLAY_NONE;
  member_rows x = {.t = t, .r = r, .c = c, .p = &p};
  if (rc == TL_OK && p.nslots)
    rc = tl_rows_publish(db, "traceloom_graph_slot_core", slot_columns, GS_NCOLS, p.nslots,
                         fill_slot, slot_kind_text, &x, e);
  if (rc == TL_OK && nranges)
    rc = tl_rows_publish(db, "traceloom_graph_member_range_core", range_columns, GR_NCOLS,
                         nranges, fill_range, NULL, &x, e);
  free(p.first_slot), free(p.slot_member);
  return rc;
}

/* The collected bodies that were not promoted (a launch whose body differs from its
** instance's, a launch a composition leaves out): one row per member task, (launch, member
** order, event), so that the operator audit counts them as the graph-body members they are
** (traceloom_operator_audit.graph_body_member_count, as the reference counts them) while the
** graph-body relations keep the members of promoted launches only. Such launches are few (a
** body mismatch, the trailing launches of a profile), so a row each costs little; the
** promoted members stay slots. */
enum { GU_LAUNCH, GU_ORDER, GU_EVENT, GU_NCOLS };
static const tl_rows_column unpromoted_member_columns[GU_NCOLS] = {
    [GU_LAUNCH] = {"launch_n", 0}, [GU_ORDER] = {"member_order", 0}, [GU_EVENT] = {"event_n", 0},
};

typedef struct unpromoted_rows {
  const tl_replay *r;
  size_t launch;  /* the launch of the next row */
  uint32_t k;     /* its next member */
} unpromoted_rows;

static int unpromoted_launch(const tl_graph_launch *l) {
  return l->unit == TL_REPLAY_NONE && l->nmembers > 0;
}

static int fill_unpromoted(void *ctx, size_t row, int64_t *v, unsigned char *null) {
  unpromoted_rows *x = ctx;
  (void)row; /* rows are the unpromoted launches' members, in launch and member order */
  while (x->launch < x->r->launches.n &&
         (!unpromoted_launch(&x->r->launches.v[x->launch]) ||
          x->k >= x->r->launches.v[x->launch].nmembers))
    x->launch++, x->k = 0;
  if (x->launch >= x->r->launches.n) return -1;
  const tl_graph_launch *l = &x->r->launches.v[x->launch];
  memset(null, 0, GU_NCOLS);
  v[GU_LAUNCH] = (int64_t)x->launch;
  v[GU_ORDER] = x->k;
  v[GU_EVENT] = x->r->members.v[l->first_member + x->k].event;
  x->k++;
  return 0;
}

static int publish_unpromoted_members(sqlite3 *db, const tl_replay *r, tl_err *e) {
  size_t n = 0;
  for (size_t i = 0; i < r->launches.n; i++)
    if (unpromoted_launch(&r->launches.v[i])) n += r->launches.v[i].nmembers;
  if (!n) return TL_OK;
  unpromoted_rows x = {.r = r};
  return tl_rows_publish(db, "traceloom_graph_unpromoted_member_core", unpromoted_member_columns,
                         GU_NCOLS, n, fill_unpromoted, NULL, &x, e);
}

enum {
  RG_REGION_ID, RG_DB_IDX, RG_DEVICE_ID, RG_GRAPH_PROVIDER, RG_CANDIDATE_ID, RG_REGION_ORDER,
  RG_STATUS, RG_BOUNDARY_POLICY, RG_ORDER_POLICY, RG_IDENTITY_POLICY, RG_SHAPE_POLICY,
  RG_FIRST_LAUNCH_OCCURRENCE_ID, RG_LAST_LAUNCH_OCCURRENCE_ID, RG_OBSERVED_LAUNCH_COUNT,
  RG_EXPECTED_LAUNCH_COUNT, RG_START_NS, RG_END_NS, RG_DUR_US, RG_RAW_JSON, RG_NCOLS
};
static const tl_rows_column aclgraph_reconstruction_region_columns[RG_NCOLS] = {
    [RG_REGION_ID] = {"region_id", 1},
    [RG_DB_IDX] = {"db_idx", 0},
    [RG_DEVICE_ID] = {"device_id", 0},
    [RG_GRAPH_PROVIDER] = {"graph_provider", 1},
    [RG_CANDIDATE_ID] = {"candidate_id", 1},
    [RG_REGION_ORDER] = {"region_order", 0},
    [RG_STATUS] = {"status", 1},
    [RG_BOUNDARY_POLICY] = {"boundary_policy", 1},
    [RG_ORDER_POLICY] = {"order_policy", 1},
    [RG_IDENTITY_POLICY] = {"identity_policy", 1},
    [RG_SHAPE_POLICY] = {"shape_policy", 1},
    [RG_FIRST_LAUNCH_OCCURRENCE_ID] = {"first_launch_occurrence_id", 0},
    [RG_LAST_LAUNCH_OCCURRENCE_ID] = {"last_launch_occurrence_id", 0},
    [RG_OBSERVED_LAUNCH_COUNT] = {"observed_launch_count", 0},
    [RG_EXPECTED_LAUNCH_COUNT] = {"expected_launch_count", 0},
    [RG_START_NS] = {"start_ns", 0},
    [RG_END_NS] = {"end_ns", 0},
    [RG_DUR_US] = {"dur_us", 0},
    [RG_RAW_JSON] = {"raw_json", 1, "json_object('detail', ?)"},
};

/* One traceloom_aclgraph_reconstruction_region row: region g numbered id, its candidate
** bound only where has_candidate, order its place in its candidate (or, without one, among
** its device's regions), provider and identity the graph family's words. The words are the
** reference's vocabulary (captured_graph_instance, exact_one_shot_leading_composition), so
** a query written against either analysis filters the same rows. A candidate's region that
** claims no launches of its pattern (the leading stretch before the period) expects 0; a
** region without a candidate claims nothing (NULL). A region lacking body capability has
** no shape: its roles could not be checked against its bodies (recovery.md 7.1 steps 3, 5). */
static int write_region(sqlite3 *db, sqlite3_stmt *st, size_t id, const tl_graph_region *g,
                        int has_candidate, uint32_t order_in_device, const char *provider,
                        const char *identity, tl_err *e) {
  static const char *const order[] = {"host_submission_order", "device_execution_order"};
  static const char *const shape[] = {"unclassified", "head_repeated_layer_tail", "single_graph"};
  static const char *const boundary[] = {"exact_periodic_suffix",
                                         "exact_one_shot_leading_composition",
                                         "direct_observed_graph_launch", "launch_segment"};
  bind_id(st, TL_PARAM(RG_REGION_ID), "aclgraph-reconstruction-region-%llu", id, 1);
  sqlite3_bind_text(st, TL_PARAM(RG_GRAPH_PROVIDER), provider, -1, SQLITE_STATIC);
  sqlite3_bind_int(st, TL_PARAM(RG_DB_IDX), g->db_idx);
  sqlite3_bind_int64(st, TL_PARAM(RG_DEVICE_ID), g->device_id);
  bind_id(st, TL_PARAM(RG_CANDIDATE_ID), "aclgraph-composition-candidate-%llu", g->candidate,
          has_candidate);
  sqlite3_bind_int64(st, TL_PARAM(RG_REGION_ORDER), order_in_device);
  sqlite3_bind_text(st, TL_PARAM(RG_STATUS), tl_region_status_name(g->status), -1, SQLITE_STATIC);
  sqlite3_bind_text(st, TL_PARAM(RG_BOUNDARY_POLICY), boundary[g->boundary_policy & 3], -1,
                    SQLITE_STATIC);
  sqlite3_bind_text(st, TL_PARAM(RG_ORDER_POLICY), order[g->order_policy & 1], -1, SQLITE_STATIC);
  sqlite3_bind_text(st, TL_PARAM(RG_IDENTITY_POLICY), identity, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, TL_PARAM(RG_SHAPE_POLICY),
                    g->status == TL_REGION_MISSING_BODY_CAPABILITY ? shape[0]
                                                                   : shape[g->shape_policy % 3],
                    -1, SQLITE_STATIC);
  sqlite3_bind_int64(st, TL_PARAM(RG_FIRST_LAUNCH_OCCURRENCE_ID), g->first_launch);
  sqlite3_bind_int64(st, TL_PARAM(RG_LAST_LAUNCH_OCCURRENCE_ID),
                     g->first_launch + g->nlaunches - 1);
  sqlite3_bind_int64(st, TL_PARAM(RG_OBSERVED_LAUNCH_COUNT), g->nlaunches);
  if (g->expected_launches || has_candidate)
    sqlite3_bind_int64(st, TL_PARAM(RG_EXPECTED_LAUNCH_COUNT), g->expected_launches);
  else sqlite3_bind_null(st, TL_PARAM(RG_EXPECTED_LAUNCH_COUNT));
  sqlite3_bind_int64(st, TL_PARAM(RG_START_NS), g->start_ns);
  sqlite3_bind_int64(st, TL_PARAM(RG_END_NS), g->end_ns);
  sqlite3_bind_double(st, TL_PARAM(RG_DUR_US), tl_ns_to_us(g->end_ns - g->start_ns));
  tl_bind_text(st, TL_PARAM(RG_RAW_JSON), g->detail);
  return tl_pub_step(db, st, "traceloom_aclgraph_reconstruction_region", e);
}

static int publish_regions(sqlite3 *db, const tl_replay *r, tl_err *e) {
  sqlite3_stmt *st;
  if (tl_rows_prepare(db, "INSERT", "traceloom_aclgraph_reconstruction_region",
                      aclgraph_reconstruction_region_columns, RG_NCOLS, &st, e))
    return TL_ERROR;
  int rc = TL_OK;
  uint32_t per_candidate = 0;
  for (size_t i = 0; rc == TL_OK && i < r->regions.n; i++) {
    const tl_graph_region *g = &r->regions.v[i];
    if (i == 0 || g->db_idx != r->regions.v[i - 1].db_idx ||
        g->device_id != r->regions.v[i - 1].device_id || g->candidate != r->regions.v[i - 1].candidate)
      per_candidate = 0;
    const tl_graph_launch *f = &r->launches.v[g->first_launch];
    tl_graph_region g0 = *g;
    if (g0.candidate) g0.candidate--; /* 1-based in tl_replay (0: none), published from 0 */
    rc = write_region(db, st, i, &g0, g->candidate != 0, per_candidate++, "aclgraph",
                      f->association_policy == TL_ASSOC_NONE ? "graph_connection"
                                                             : "captured_graph_instance",
                      e);
  }
  /* A promoted CUDA graph unit is one launch recognized on its own (a direct single graph,
  ** its identity the graph's node set): one region each, after the ACL regions, as the
  ** reference lists them, so one relation answers which launches became units. */
  size_t next = r->regions.n;
  uint32_t candidate = 0;
  for (size_t u = 0; rc == TL_OK && u < r->units.n; u++) {
    const tl_replay_unit *un = &r->units.v[u];
    if (un->provider != TL_GRAPH_CUDA) continue;
    if (u == 0 || un->db_idx != r->units.v[u - 1].db_idx ||
        un->device_id != r->units.v[u - 1].device_id)
      candidate = 0;
    const tl_graph_launch *l = &r->launches.v[un->first_launch + un->nlaunches - 1];
    const tl_graph_region g = {
        .db_idx = un->db_idx, .status = TL_REGION_RECOGNIZED, .order_policy = 0,
        .shape_policy = 2, .boundary_policy = 2, .device_id = un->device_id,
        .candidate = candidate++, .first_launch = un->first_launch, .nlaunches = un->nlaunches,
        .expected_launches = un->nlaunches,
        .start_ns = r->launches.v[un->first_launch].start_ns, .end_ns = l->end_ns,
        .detail = NULL};
    rc = write_region(db, st, next++, &g, 1, 0, "cuda", "cuda_graph_node_set", e);
  }
  sqlite3_finalize(st);
  return rc;
}

enum {
  PI_PROTECTED_INTERVAL_ID, PI_DB_IDX, PI_DEVICE_ID, PI_KIND, PI_REPLAY_UNIT_ID, PI_SUPPORT_STATE,
  PI_FIRST_ANCHOR_ID, PI_LAST_ANCHOR_ID, PI_FIRST_ANCHOR_N, PI_LAST_ANCHOR_N, PI_START_NS,
  PI_END_NS, PI_REPLAY_UNIT_N, PI_NCOLS
};
static const tl_rows_column protected_interval_columns[PI_NCOLS] = {
    [PI_PROTECTED_INTERVAL_ID] = {"protected_interval_id", 1},
    [PI_DB_IDX] = {"db_idx", 0},
    [PI_DEVICE_ID] = {"device_id", 0},
    [PI_KIND] = {"kind", 1, "'graph_replay_unit'"},
    [PI_REPLAY_UNIT_ID] = {"replay_unit_id", 1},
    [PI_SUPPORT_STATE] = {"support_state", 1},
    [PI_FIRST_ANCHOR_ID] = {"first_anchor_id", 1},
    [PI_LAST_ANCHOR_ID] = {"last_anchor_id", 1},
    [PI_FIRST_ANCHOR_N] = {"first_anchor_n", 0},
    [PI_LAST_ANCHOR_N] = {"last_anchor_n", 0},
    [PI_START_NS] = {"start_ns", 0},
    [PI_END_NS] = {"end_ns", 0},
    [PI_REPLAY_UNIT_N] = {"replay_unit_n", 0},
};

/* The span is the unit event's interval (publish_unit_events): the events wholly inside it on
** its device are the unit's protected boundary (traceloom_evidence_role_decision). */
static int publish_protected(sqlite3 *db, const tl_trace *t, const tl_replay *r,
                             const uint32_t *anchor_of_event, tl_err *e) {
  sqlite3_stmt *st;
  if (tl_rows_prepare(db, "INSERT", "traceloom_protected_interval", protected_interval_columns,
                      PI_NCOLS, &st, e))
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
    bind_id(st, TL_PARAM(PI_PROTECTED_INTERVAL_ID), "protected-interval-%llu", u, 1);
    sqlite3_bind_int(st, TL_PARAM(PI_DB_IDX), un->db_idx);
    sqlite3_bind_int64(st, TL_PARAM(PI_DEVICE_ID), un->device_id);
    bind_id(st, TL_PARAM(PI_REPLAY_UNIT_ID), "replay-unit-%llu", u, 1);
    /* The launch anchors are contiguous unless eager anchors sit between them; then each
    ** launch is an atomic token of its own. */
    sqlite3_bind_text(st, TL_PARAM(PI_SUPPORT_STATE),
                      hi - lo + 1 == un->nlaunches ? "supported" : "split_by_eager_work",
                      -1, SQLITE_STATIC);
    bind_id(st, TL_PARAM(PI_FIRST_ANCHOR_ID), "anchor-%llu", lo, lo != UINT32_MAX);
    bind_id(st, TL_PARAM(PI_LAST_ANCHOR_ID), "anchor-%llu", hi, lo != UINT32_MAX);
    if (lo != UINT32_MAX) {
      sqlite3_bind_int64(st, TL_PARAM(PI_FIRST_ANCHOR_N), lo);
      sqlite3_bind_int64(st, TL_PARAM(PI_LAST_ANCHOR_N), hi);
    } else {
      sqlite3_bind_null(st, TL_PARAM(PI_FIRST_ANCHOR_N));
      sqlite3_bind_null(st, TL_PARAM(PI_LAST_ANCHOR_N));
    }
    unit_place pl = unit_place_of(t, r, un);
    sqlite3_bind_int64(st, TL_PARAM(PI_START_NS), pl.start_ns);
    sqlite3_bind_int64(st, TL_PARAM(PI_END_NS), pl.end_ns);
    sqlite3_bind_int64(st, TL_PARAM(PI_REPLAY_UNIT_N), (int64_t)u);
    rc = tl_pub_step(db, st, "traceloom_protected_interval", e);
  }
  sqlite3_finalize(st);
  return rc;
}

enum {
  CG_GRAPH_EVENT_ID, CG_DB_IDX, CG_DEVICE_ID, CG_GRAPH_PROVIDER, CG_GRAPH_KIND,
  CG_GRAPH_EVENT_IDX, CG_EVENT_ID, CG_STEP_IDX, CG_STREAM_ID, CG_CORRELATION_ID, CG_GRAPH_ID,
  CG_GRAPH_EXEC_ID, CG_CONTEXT_ID, CG_START_NS, CG_END_NS, CG_DUR_US, CG_RAW_JSON, CG_EVENT_N,
  CG_NCOLS
};
static const tl_rows_column cuda_graph_replay_columns[CG_NCOLS] = {
    [CG_GRAPH_EVENT_ID] = {"graph_event_id", 1},
    [CG_DB_IDX] = {"db_idx", 0},
    [CG_DEVICE_ID] = {"device_id", 0},
    [CG_GRAPH_PROVIDER] = {"graph_provider", 1},
    [CG_GRAPH_KIND] = {"graph_kind", 1},
    [CG_GRAPH_EVENT_IDX] = {"graph_event_idx", 0},
    [CG_EVENT_ID] = {"event_id", 1},
    [CG_STEP_IDX] = {"step_idx", 0, "NULL"},
    [CG_STREAM_ID] = {"stream_id", 0},
    [CG_CORRELATION_ID] = {"correlation_id", 1},
    [CG_GRAPH_ID] = {"graph_id", 0},      /* bound as text or integer (publish_envelopes) */
    [CG_GRAPH_EXEC_ID] = {"graph_exec_id", 0},
    [CG_CONTEXT_ID] = {"context_id", 0},
    [CG_START_NS] = {"start_ns", 0},
    [CG_END_NS] = {"end_ns", 0},
    [CG_DUR_US] = {"dur_us", 0},
    [CG_RAW_JSON] = {"raw_json", 1},
    [CG_EVENT_N] = {"event_n", 0},
};

static int publish_envelopes(sqlite3 *db, const tl_trace *t, const tl_replay *r, tl_err *e) {
  sqlite3_stmt *st;
  if (tl_rows_prepare(db, "INSERT", "traceloom_cuda_graph_replay_core", cuda_graph_replay_columns,
                      CG_NCOLS, &st, e))
    return TL_ERROR;
  int rc = TL_OK;
  uint64_t idx = 0, cuda_ordinal = 0;
  /* Replay units first, one envelope each as in the reference: the unit's event and interval
  ** (publish_unit_events); then graph-level envelopes. What an envelope encloses (every event
  ** of its device wholly inside its interval) is not stored here: the view
  ** traceloom_cuda_graph_replay counts it from the envelope's children (ext/reports/envelopes.c). */
  for (size_t u = 0; rc == TL_OK && u < r->units.n; u++) {
    const tl_replay_unit *un = &r->units.v[u];
    const tl_graph_launch *first = &r->launches.v[un->first_launch];
    unit_place pl = unit_place_of(t, r, un);
    uint32_t ev = unit_event_n(t, r, u);
    bind_id(st, TL_PARAM(CG_GRAPH_EVENT_ID), "event-%llu", ev, 1);
    sqlite3_bind_int(st, TL_PARAM(CG_DB_IDX), un->db_idx);
    sqlite3_bind_int64(st, TL_PARAM(CG_DEVICE_ID), un->device_id);
    sqlite3_bind_text(st, TL_PARAM(CG_GRAPH_PROVIDER), provider_name(un->provider), -1,
                      SQLITE_STATIC);
    sqlite3_bind_text(st, TL_PARAM(CG_GRAPH_KIND),
                      un->provider == TL_GRAPH_CUDA ? "cuda_graph_replay" : "aclgraph_graph_replay",
                      -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, TL_PARAM(CG_GRAPH_EVENT_IDX), (int64_t)idx++);
    bind_id(st, TL_PARAM(CG_EVENT_ID), "event-%llu", ev, 1);
    if (pl.stream == TL_NO_STREAM) sqlite3_bind_null(st, TL_PARAM(CG_STREAM_ID));
    else sqlite3_bind_int64(st, TL_PARAM(CG_STREAM_ID), pl.stream);
    /* a CUDA unit is one launch: its correlation id; an ACL unit's launches have one each */
    bind_id(st, TL_PARAM(CG_CORRELATION_ID), "%llu", (uint64_t)first->correlation_id,
            un->provider == TL_GRAPH_CUDA && first->correlation_id != TL_ABSENT);
    /* The unit's graph and its execution, as the reference names them: an ACL unit's graph
    ** template (aclgraph-template-<n>) and the unit itself (aclgraph-replay-unit-<n>); a CUDA
    ** unit's graph identity (the ordinal of its node set: its own launch's graph) and its
    ** template (native-graph-template-<n>). Templates from 0, as traceloom_graph_launch. */
    uint32_t gt = un->graph_template - 1;
    if (un->provider == TL_GRAPH_CUDA) {
      tl_bind_i64_or_null(st, TL_PARAM(CG_GRAPH_ID), first->graph_id, TL_ABSENT);
      bind_id(st, TL_PARAM(CG_GRAPH_EXEC_ID), "native-graph-template-%llu", gt, 1);
    } else {
      bind_id(st, TL_PARAM(CG_GRAPH_ID), "aclgraph-template-%llu", gt, 1);
      bind_id(st, TL_PARAM(CG_GRAPH_EXEC_ID), "aclgraph-replay-unit-%llu", u, 1);
    }
    sqlite3_bind_null(st, TL_PARAM(CG_CONTEXT_ID));
    sqlite3_bind_int64(st, TL_PARAM(CG_START_NS), pl.start_ns);
    sqlite3_bind_int64(st, TL_PARAM(CG_END_NS), pl.end_ns);
    sqlite3_bind_double(st, TL_PARAM(CG_DUR_US), tl_ns_to_us(pl.end_ns - pl.start_ns));
    /* raw_json: the reference's keys where they are facts here (the template, the unit's
    ** reconstruction region: an ACL unit's region, a CUDA unit's own region after the ACL
    ** ones, publish_regions; its launches, and how many distinct captured graphs they
    ** replay); not its body_sequence_hash, a hash of its own (docs/PARITY.md). */
    uint32_t graphs = 0;
    for (uint32_t j = 0; j < un->nlaunches; j++) {
      const tl_graph_launch *l = &r->launches.v[un->first_launch + j];
      int seen = 0;
      for (uint32_t k = 0; k < j && !seen; k++)
        seen = r->launches.v[un->first_launch + k].graph_id == l->graph_id;
      graphs += !seen;
    }
    char js[256];
    snprintf(js, sizeof js,
             "{\"reconstruction\":\"exact_replay_composition\",\"graph_template_id\":%u,"
             "\"capture_group_size\":%u,\"replay_composition_region_id\":%llu,"
             "\"launch_member_count\":%u}",
             (unsigned)gt, (unsigned)graphs,
             (unsigned long long)(un->region != TL_REPLAY_NONE ? un->region
                                                               : r->regions.n + cuda_ordinal++),
             (unsigned)un->nlaunches);
    sqlite3_bind_text(st, TL_PARAM(CG_RAW_JSON), js, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, TL_PARAM(CG_EVENT_N), (int64_t)ev);
    rc = tl_pub_step(db, st, "traceloom_cuda_graph_replay", e);
  }
  for (size_t i = 0; rc == TL_OK && i < r->envelopes.n; i++) {
    const tl_graph_envelope *g = &r->envelopes.v[i];
    bind_id(st, TL_PARAM(CG_GRAPH_EVENT_ID), "graph-envelope-%llu", i, 1);
    sqlite3_bind_int(st, TL_PARAM(CG_DB_IDX), g->db_idx);
    sqlite3_bind_int64(st, TL_PARAM(CG_DEVICE_ID), g->device_id);
    sqlite3_bind_text(st, TL_PARAM(CG_GRAPH_PROVIDER), provider_name(g->provider), -1,
                      SQLITE_STATIC);
    sqlite3_bind_text(st, TL_PARAM(CG_GRAPH_KIND),
                      g->graph_kind ? g->graph_kind : "cuda_graph_trace", -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, TL_PARAM(CG_GRAPH_EVENT_IDX), (int64_t)idx++);
    bind_id(st, TL_PARAM(CG_EVENT_ID), "event-%llu", g->event, g->event != TL_REPLAY_NONE);
    if (g->stream_id == TL_NO_STREAM) sqlite3_bind_null(st, TL_PARAM(CG_STREAM_ID));
    else sqlite3_bind_int64(st, TL_PARAM(CG_STREAM_ID), g->stream_id);
    bind_id(st, TL_PARAM(CG_CORRELATION_ID), "%llu", (uint64_t)g->correlation_id,
            g->correlation_id != TL_ABSENT);
    tl_bind_i64_or_null(st, TL_PARAM(CG_GRAPH_ID), g->graph_id, TL_ABSENT);
    tl_bind_i64_or_null(st, TL_PARAM(CG_GRAPH_EXEC_ID), g->graph_exec_id, TL_ABSENT);
    tl_bind_i64_or_null(st, TL_PARAM(CG_CONTEXT_ID), g->context_id, TL_ABSENT);
    sqlite3_bind_int64(st, TL_PARAM(CG_START_NS), g->start_ns);
    sqlite3_bind_int64(st, TL_PARAM(CG_END_NS), g->end_ns);
    sqlite3_bind_double(st, TL_PARAM(CG_DUR_US), tl_ns_to_us(g->end_ns - g->start_ns));
    sqlite3_bind_text(st, TL_PARAM(CG_RAW_JSON),
                      "{\"reconstruction\":\"graph_level_envelope_only\",\"members\":null}",
                      -1, SQLITE_STATIC);
    if (g->event != TL_REPLAY_NONE) sqlite3_bind_int64(st, TL_PARAM(CG_EVENT_N), (int64_t)g->event);
    else sqlite3_bind_null(st, TL_PARAM(CG_EVENT_N));
    rc = tl_pub_step(db, st, "traceloom_cuda_graph_replay", e);
  }
  sqlite3_finalize(st);
  return rc;
}

static void bind_i64s(sqlite3_stmt *st, int first, const int64_t *v, int n) {
  for (int k = 0; k < n; k++) sqlite3_bind_int64(st, first + k, v[k]);
}

enum {
  CU_COST_UNIT_ID, CU_DB_IDX, CU_DEVICE_ID, CU_REPLAY_UNIT_ID, CU_GRAPH_TEMPLATE_ID,
  CU_LAUNCH_MEMBER_COUNT, CU_RESOLVED_LAUNCH_COUNT, CU_SUPPORT_STATUS, CU_REASON_CODES, CU_NCOLS
};
static const tl_rows_column replay_cost_unit_columns[CU_NCOLS] = {
    [CU_COST_UNIT_ID] = {"cost_unit_id", 1},
    [CU_DB_IDX] = {"db_idx", 0},
    [CU_DEVICE_ID] = {"device_id", 0},
    [CU_REPLAY_UNIT_ID] = {"replay_unit_id", 0},
    [CU_GRAPH_TEMPLATE_ID] = {"graph_template_id", 0},
    [CU_LAUNCH_MEMBER_COUNT] = {"launch_member_count", 0},
    [CU_RESOLVED_LAUNCH_COUNT] = {"resolved_launch_count", 0},
    [CU_SUPPORT_STATUS] = {"support_status", 1},
    [CU_REASON_CODES] = {"reason_codes", 1},
};

enum {
  CL_LAUNCH_ID, CL_COST_UNIT_ID, CL_DB_IDX, CL_DEVICE_ID, CL_MEMBER_ORDER,
  CL_GRAPH_LAUNCH_OCCURRENCE_ID, CL_COMPOSITION_SLOT_ID, CL_SLOT_ROLE, CL_SLOT_ORDER,
  CL_REPLAY_BODY_TEMPLATE_ID, CL_BODY_ID, CL_SUPPORT_STATUS, CL_REASON_CODE, CL_MEMBER_COUNT,
  CL_TASK_SUM_NS, CL_BUSY_UNION_NS, CL_ENVELOPE_NS, CL_COMPUTE_NS, CL_COMMUNICATION_NS,
  CL_DATA_MOVE_NS, CL_REPLAY_UNIT_ID, CL_GRAPH_TEMPLATE_ID, CL_FIRST_MEMBER_START_NS, CL_LAUNCH_N,
  CL_NCOLS
};
static const tl_rows_column replay_cost_launch_columns[CL_NCOLS] = {
    [CL_LAUNCH_ID] = {"launch_id", 1},
    [CL_COST_UNIT_ID] = {"cost_unit_id", 1},
    [CL_DB_IDX] = {"db_idx", 0},
    [CL_DEVICE_ID] = {"device_id", 0},
    [CL_MEMBER_ORDER] = {"member_order", 0},
    [CL_GRAPH_LAUNCH_OCCURRENCE_ID] = {"graph_launch_occurrence_id", 0},
    [CL_COMPOSITION_SLOT_ID] = {"composition_slot_id", 0},
    [CL_SLOT_ROLE] = {"slot_role", 1},
    [CL_SLOT_ORDER] = {"slot_order", 0},
    [CL_REPLAY_BODY_TEMPLATE_ID] = {"replay_body_template_id", 0},
    [CL_BODY_ID] = {"body_id", 0},
    [CL_SUPPORT_STATUS] = {"support_status", 1},
    [CL_REASON_CODE] = {"reason_code", 1},
    [CL_MEMBER_COUNT] = {"member_count", 0},
    [CL_TASK_SUM_NS] = {"task_sum_ns", 0},
    [CL_BUSY_UNION_NS] = {"busy_union_ns", 0},
    [CL_ENVELOPE_NS] = {"envelope_ns", 0},
    [CL_COMPUTE_NS] = {"compute_ns", 0},
    [CL_COMMUNICATION_NS] = {"communication_ns", 0},
    [CL_DATA_MOVE_NS] = {"data_move_ns", 0},
    [CL_REPLAY_UNIT_ID] = {"replay_unit_id", 0},
    [CL_GRAPH_TEMPLATE_ID] = {"graph_template_id", 0},
    [CL_FIRST_MEMBER_START_NS] = {"first_member_start_ns", 0},
    [CL_LAUNCH_N] = {"launch_n", 0},
};

enum {
  CS_LAUNCH_ID, CS_DB_IDX, CS_DEVICE_ID, CS_STREAM_ID, CS_LANE_ORDINAL, CS_LANE_CONSISTENT,
  CS_MEMBER_COUNT, CS_TASK_SUM_NS, CS_BUSY_UNION_NS, CS_COMPUTE_NS, CS_COMMUNICATION_NS,
  CS_DATA_MOVE_NS, CS_NCOLS
};
static const tl_rows_column replay_cost_stream_columns[CS_NCOLS] = {
    [CS_LAUNCH_ID] = {"launch_id", 1},
    [CS_DB_IDX] = {"db_idx", 0},
    [CS_DEVICE_ID] = {"device_id", 0},
    [CS_STREAM_ID] = {"stream_id", 0},
    [CS_LANE_ORDINAL] = {"lane_ordinal", 0},
    [CS_LANE_CONSISTENT] = {"lane_consistent", 0},
    [CS_MEMBER_COUNT] = {"member_count", 0},
    [CS_TASK_SUM_NS] = {"task_sum_ns", 0},
    [CS_BUSY_UNION_NS] = {"busy_union_ns", 0},
    [CS_COMPUTE_NS] = {"compute_ns", 0},
    [CS_COMMUNICATION_NS] = {"communication_ns", 0},
    [CS_DATA_MOVE_NS] = {"data_move_ns", 0},
};

enum {
  CA_AGGREGATE_ID, CA_DB_IDX, CA_DEVICE_ID, CA_GRAPH_TEMPLATE_ID, CA_SLOT_ROLE,
  CA_AGGREGATION_SCOPE, CA_REPLAY_BODY_TEMPLATE_ID, CA_STREAM_ID, CA_TASK_ORDINAL, CA_IDENTITY,
  CA_KIND, CA_MEMBER_OCCURRENCE_COUNT, CA_REPLAY_UNIT_COUNT, CA_LAUNCH_MEMBER_COUNT,
  CA_KIND_CONSISTENT, CA_LANE_CONSISTENT, CA_DISTRIBUTION_SUPPORTED, CA_DURATION_P25_NS,
  CA_DURATION_MEDIAN_NS, CA_DURATION_P75_NS, CA_SCHEDULED_WORK_SHARE_P25_PPM,
  CA_SCHEDULED_WORK_SHARE_MEDIAN_PPM, CA_SCHEDULED_WORK_SHARE_P75_PPM, CA_LANE_ORDINAL,
  CA_SLOT_ORDER, CA_SCHEDULED_WORK_SHARE_PPM, CA_SCHEDULED_WORK_SHARE_SUPPORTED,
  CA_SCHEDULED_WORK_DENOMINATOR_BODY_TASK_SUM_NS, CA_NCOLS
};
static const tl_rows_column replay_cost_aggregate_columns[CA_NCOLS] = {
    [CA_AGGREGATE_ID] = {"aggregate_id", 1},
    [CA_DB_IDX] = {"db_idx", 0},
    [CA_DEVICE_ID] = {"device_id", 0},
    [CA_GRAPH_TEMPLATE_ID] = {"graph_template_id", 0},
    [CA_SLOT_ROLE] = {"slot_role", 1},
    [CA_AGGREGATION_SCOPE] = {"aggregation_scope", 1, "'role_collapsed'"},
    [CA_REPLAY_BODY_TEMPLATE_ID] = {"replay_body_template_id", 0},
    [CA_STREAM_ID] = {"stream_id", 0},
    [CA_TASK_ORDINAL] = {"task_ordinal", 0},
    [CA_IDENTITY] = {"identity", 1},
    [CA_KIND] = {"kind", 1},
    [CA_MEMBER_OCCURRENCE_COUNT] = {"member_occurrence_count", 0},
    [CA_REPLAY_UNIT_COUNT] = {"replay_unit_count", 0},
    [CA_LAUNCH_MEMBER_COUNT] = {"launch_member_count", 0},
    [CA_KIND_CONSISTENT] = {"kind_consistent", 0},
    [CA_LANE_CONSISTENT] = {"lane_consistent", 0},
    [CA_DISTRIBUTION_SUPPORTED] = {"distribution_supported", 0},
    [CA_DURATION_P25_NS] = {"duration_p25_ns", 0},
    [CA_DURATION_MEDIAN_NS] = {"duration_median_ns", 0},
    [CA_DURATION_P75_NS] = {"duration_p75_ns", 0},
    [CA_SCHEDULED_WORK_SHARE_P25_PPM] = {"scheduled_work_share_p25_ppm", 0},
    [CA_SCHEDULED_WORK_SHARE_MEDIAN_PPM] = {"scheduled_work_share_median_ppm", 0},
    [CA_SCHEDULED_WORK_SHARE_P75_PPM] = {"scheduled_work_share_p75_ppm", 0},
    [CA_LANE_ORDINAL] = {"lane_ordinal", 0},
    [CA_SLOT_ORDER] = {"slot_order", 0},
    [CA_SCHEDULED_WORK_SHARE_PPM] = {"scheduled_work_share_ppm", 0},
    [CA_SCHEDULED_WORK_SHARE_SUPPORTED] = {"scheduled_work_share_supported", 0},
    [CA_SCHEDULED_WORK_DENOMINATOR_BODY_TASK_SUM_NS] =
        {"scheduled_work_denominator_body_task_sum_ns", 0},
};

enum {
  CI_ISSUE_ID, CI_DB_IDX, CI_DEVICE_ID, CI_CODE, CI_REPLAY_UNIT_ID, CI_LAUNCH_ID, CI_DETAIL,
  CI_NCOLS
};
static const tl_rows_column replay_cost_issue_columns[CI_NCOLS] = {
    [CI_ISSUE_ID] = {"issue_id", 1},
    [CI_DB_IDX] = {"db_idx", 0},
    [CI_DEVICE_ID] = {"device_id", 0},
    [CI_CODE] = {"code", 1},
    [CI_REPLAY_UNIT_ID] = {"replay_unit_id", 0},
    [CI_LAUNCH_ID] = {"launch_id", 1},
    [CI_DETAIL] = {"detail", 1},
};

/* One traceloom_replay_cost_issue row, numbered from *nissue; unit and launch are indexes
** (replay-unit-<u>, graph-launch-<i>) or TL_REPLAY_NONE for none. */
static int write_issue(sqlite3 *db, sqlite3_stmt *st, uint64_t *nissue, int64_t db_idx,
                       int64_t device_id, const char *code, size_t unit, size_t launch,
                       const char *detail, tl_err *e) {
  bind_id(st, TL_PARAM(CI_ISSUE_ID), "replay-cost-issue-%llu", (*nissue)++, 1);
  sqlite3_bind_int64(st, TL_PARAM(CI_DB_IDX), db_idx);
  sqlite3_bind_int64(st, TL_PARAM(CI_DEVICE_ID), device_id);
  sqlite3_bind_text(st, TL_PARAM(CI_CODE), code, -1, SQLITE_STATIC);
  /* an issue of no unit (no_replay_units) names unit -1, as the reference writes it */
  sqlite3_bind_int64(st, TL_PARAM(CI_REPLAY_UNIT_ID), unit != TL_REPLAY_NONE ? (int64_t)unit : -1);
  bind_id(st, TL_PARAM(CI_LAUNCH_ID), "graph-launch-%llu", launch, launch != TL_REPLAY_NONE);
  sqlite3_bind_text(st, TL_PARAM(CI_DETAIL), detail, -1, SQLITE_TRANSIENT);
  return tl_pub_step(db, st, "traceloom_replay_cost_issue", e);
}

/* Composition slot ids (traceloom_replay_cost_launch.composition_slot_id), as the reference
** numbers them: one per (composition, slot order), from 0 in launch order, where a composition
** is an ACL composition candidate of its device (the launches of every unit of one periodic
** candidate share its slots; a one-shot prefill composition is a candidate of its own) and,
** for a CUDA unit or a direct single ACL graph (no candidate), the unit itself. Within a
** device a candidate's launches come after the previous candidate's, so a slot id is the
** composition's base plus the launch's slot order, the base allocated when the composition is
** first seen. Returns per launch its slot id (unpromoted launches: unused), NULL on
** out-of-memory. */
static uint32_t *composition_slots(const tl_replay *r) {
  uint32_t *slot = calloc(r->launches.n ? r->launches.n : 1, sizeof *slot);
  if (!slot) return NULL;
  uint32_t next = 0, base = 0, width = 0;
  uint64_t key = UINT64_MAX;
  uint32_t key_db = 0, key_dev = 0;
  for (size_t i = 0; i < r->launches.n; i++) {
    const tl_graph_launch *l = &r->launches.v[i];
    if (l->unit == TL_REPLAY_NONE) continue;
    uint32_t cand = l->provider == TL_GRAPH_ACL && l->region != TL_REPLAY_NONE
                        ? r->regions.v[l->region].candidate : 0;
    /* a candidate (1-based) or, without one, the unit (above every candidate number) */
    uint64_t k = cand ? cand : (uint64_t)UINT32_MAX + 1 + l->unit;
    if (k != key || l->db_idx != key_db || l->device_id != key_dev) {
      next = base + width, base = next, width = 0;
      key = k, key_db = l->db_idx, key_dev = l->device_id;
    }
    if (l->slot_order + 1 > width) width = l->slot_order + 1;
    slot[i] = base + l->slot_order;
  }
  return slot;
}

static int publish_costs(sqlite3 *db, const tl_trace *t, const tl_replay *r,
                         const tl_replay_costs *c, uint64_t *issues, tl_err *e) {
  uint32_t *slot_id = composition_slots(r);
  if (!slot_id) return tl_nomem(e);
  sqlite3_stmt *unit = NULL, *launch = NULL, *lane = NULL, *agg = NULL, *issue = NULL;
  int rc = tl_rows_prepare(db, "INSERT", "traceloom_replay_cost_unit", replay_cost_unit_columns,
                           CU_NCOLS, &unit, e);
  if (rc == TL_OK)
    rc = tl_rows_prepare(db, "INSERT", "traceloom_replay_cost_launch", replay_cost_launch_columns,
                         CL_NCOLS, &launch, e);
  if (rc == TL_OK)
    rc = tl_rows_prepare(db, "INSERT", "traceloom_replay_cost_stream", replay_cost_stream_columns,
                         CS_NCOLS, &lane, e);
  if (rc == TL_OK)
    rc = tl_rows_prepare(db, "INSERT", "traceloom_replay_cost_aggregate",
                         replay_cost_aggregate_columns, CA_NCOLS, &agg, e);
  if (rc == TL_OK)
    rc = tl_rows_prepare(db, "INSERT", "traceloom_replay_cost_issue", replay_cost_issue_columns,
                         CI_NCOLS, &issue, e);
  uint64_t nissue = 0;
  for (size_t u = 0; rc == TL_OK && u < r->units.n; u++) {
    const tl_replay_unit *un = &r->units.v[u];
    uint32_t resolved = 0;
    for (uint32_t k = 0; k < un->nlaunches; k++) resolved += r->launches.v[un->first_launch + k].nmembers > 0;
    int ok = resolved == un->nlaunches;
    bind_id(unit, TL_PARAM(CU_COST_UNIT_ID), "replay-cost-unit-%llu", u, 1);
    sqlite3_bind_int(unit, TL_PARAM(CU_DB_IDX), un->db_idx);
    sqlite3_bind_int64(unit, TL_PARAM(CU_DEVICE_ID), un->device_id);
    bind_n(unit, TL_PARAM(CU_REPLAY_UNIT_ID), u, 1);
    bind_n(unit, TL_PARAM(CU_GRAPH_TEMPLATE_ID), un->graph_template - 1, 1);
    sqlite3_bind_int64(unit, TL_PARAM(CU_LAUNCH_MEMBER_COUNT), un->nlaunches);
    sqlite3_bind_int64(unit, TL_PARAM(CU_RESOLVED_LAUNCH_COUNT), resolved);
    sqlite3_bind_text(unit, TL_PARAM(CU_SUPPORT_STATUS), ok ? "supported" : "unsupported", -1,
                      SQLITE_STATIC);
    tl_bind_text(unit, TL_PARAM(CU_REASON_CODES), ok ? NULL : "missing_graph_launch_body");
    rc = tl_pub_step(db, unit, "traceloom_replay_cost_unit", e);
  }
  for (size_t i = 0; rc == TL_OK && i < r->launches.n; i++) {
    const tl_graph_launch *l = &r->launches.v[i];
    if (l->unit == TL_REPLAY_NONE) continue;
    const tl_launch_cost *lc = &c->launch[i];
    uint32_t gt = r->units.v[l->unit].graph_template;
    bind_id(launch, TL_PARAM(CL_LAUNCH_ID), "graph-launch-%llu", i, 1);
    bind_id(launch, TL_PARAM(CL_COST_UNIT_ID), "replay-cost-unit-%llu", l->unit, 1);
    sqlite3_bind_int(launch, TL_PARAM(CL_DB_IDX), l->db_idx);
    sqlite3_bind_int64(launch, TL_PARAM(CL_DEVICE_ID), l->device_id);
    sqlite3_bind_int64(launch, TL_PARAM(CL_MEMBER_ORDER), l->member_order);
    sqlite3_bind_int64(launch, TL_PARAM(CL_GRAPH_LAUNCH_OCCURRENCE_ID), (int64_t)i);
    sqlite3_bind_int64(launch, TL_PARAM(CL_COMPOSITION_SLOT_ID), slot_id[i]);
    sqlite3_bind_text(launch, TL_PARAM(CL_SLOT_ROLE), tl_slot_role_name(l->slot_role), -1,
                      SQLITE_STATIC);
    sqlite3_bind_int64(launch, TL_PARAM(CL_SLOT_ORDER), l->slot_order);
    bind_n(launch, TL_PARAM(CL_REPLAY_BODY_TEMPLATE_ID), l->body_template - 1,
           l->body_template != 0);
    bind_n(launch, TL_PARAM(CL_BODY_ID), i, l->body_template != 0);
    int ok = l->nmembers > 0;
    sqlite3_bind_text(launch, TL_PARAM(CL_SUPPORT_STATUS), ok ? "supported" : "unsupported", -1,
                      SQLITE_STATIC);
    tl_bind_text(launch, TL_PARAM(CL_REASON_CODE), ok ? NULL : "missing_graph_launch_body");
    sqlite3_bind_int64(launch, TL_PARAM(CL_MEMBER_COUNT), l->nmembers);
    int64_t v[6] = {lc->task_sum, lc->busy_union, lc->envelope, lc->compute, lc->communication,
                    lc->data_move};
    bind_i64s(launch, TL_PARAM(CL_TASK_SUM_NS), v, 6);
    bind_n(launch, TL_PARAM(CL_REPLAY_UNIT_ID), l->unit, 1);
    bind_n(launch, TL_PARAM(CL_GRAPH_TEMPLATE_ID), gt - 1, 1);
    sqlite3_bind_int64(launch, TL_PARAM(CL_FIRST_MEMBER_START_NS), lc->first_start);
    sqlite3_bind_int64(launch, TL_PARAM(CL_LAUNCH_N), (int64_t)i);
    rc = tl_pub_step(db, launch, "traceloom_replay_cost_launch", e);
    if (rc == TL_OK && !ok)
      rc = write_issue(db, issue, &nissue, l->db_idx, l->device_id, "missing_graph_launch_body",
                       l->unit, i, "promoted launch without exact members", e);
  }
  for (size_t k = 0; rc == TL_OK && k < c->lanes.n; k++) {
    const tl_lane_cost *lc = &c->lanes.v[k];
    const tl_graph_launch *l = &r->launches.v[lc->launch];
    bind_id(lane, TL_PARAM(CS_LAUNCH_ID), "graph-launch-%llu", lc->launch, 1);
    sqlite3_bind_int(lane, TL_PARAM(CS_DB_IDX), l->db_idx);
    sqlite3_bind_int64(lane, TL_PARAM(CS_DEVICE_ID), l->device_id);
    if (lc->stream_id == TL_NO_STREAM) sqlite3_bind_null(lane, TL_PARAM(CS_STREAM_ID));
    else sqlite3_bind_int64(lane, TL_PARAM(CS_STREAM_ID), lc->stream_id);
    sqlite3_bind_int64(lane, TL_PARAM(CS_LANE_ORDINAL), lc->lane);
    sqlite3_bind_int(lane, TL_PARAM(CS_LANE_CONSISTENT), lc->consistent);
    sqlite3_bind_int64(lane, TL_PARAM(CS_MEMBER_COUNT), (int64_t)lc->count);
    int64_t v[5] = {lc->task_sum, lc->busy_union, lc->compute, lc->communication, lc->data_move};
    bind_i64s(lane, TL_PARAM(CS_TASK_SUM_NS), v, 5);
    rc = tl_pub_step(db, lane, "traceloom_replay_cost_stream", e);
  }
  for (size_t k = 0; rc == TL_OK && k < c->aggregates.n; k++) {
    const tl_replay_aggregate *g = &c->aggregates.v[k];
    const tl_graph_member *m = &r->members.v[g->first_member];
    const tl_graph_launch *l = &r->launches.v[m->launch];
    bind_id(agg, TL_PARAM(CA_AGGREGATE_ID), "replay-cost-aggregate-%llu", k, 1);
    sqlite3_bind_int(agg, TL_PARAM(CA_DB_IDX), l->db_idx);
    sqlite3_bind_int64(agg, TL_PARAM(CA_DEVICE_ID), l->device_id);
    bind_n(agg, TL_PARAM(CA_GRAPH_TEMPLATE_ID), r->units.v[l->unit].graph_template - 1, 1);
    sqlite3_bind_text(agg, TL_PARAM(CA_SLOT_ROLE), tl_slot_role_name(l->slot_role), -1,
                      SQLITE_STATIC);
    bind_n(agg, TL_PARAM(CA_REPLAY_BODY_TEMPLATE_ID), l->body_template - 1, 1);
    uint32_t stream = tl_events_stream_id(&t->ev, m->event);
    if (stream == TL_NO_STREAM) sqlite3_bind_null(agg, TL_PARAM(CA_STREAM_ID));
    else sqlite3_bind_int64(agg, TL_PARAM(CA_STREAM_ID), stream);
    sqlite3_bind_int64(agg, TL_PARAM(CA_TASK_ORDINAL), m->task_ordinal);
    tl_bind_text(agg, TL_PARAM(CA_IDENTITY), member_identity(t, m->event, l->provider));
    sqlite3_bind_text(agg, TL_PARAM(CA_KIND), tl_member_kind_name(m->kind), -1, SQLITE_STATIC);
    sqlite3_bind_int64(agg, TL_PARAM(CA_MEMBER_OCCURRENCE_COUNT), g->count);
    sqlite3_bind_int64(agg, TL_PARAM(CA_REPLAY_UNIT_COUNT), g->units);
    sqlite3_bind_int64(agg, TL_PARAM(CA_LAUNCH_MEMBER_COUNT), g->launches);
    sqlite3_bind_int(agg, TL_PARAM(CA_KIND_CONSISTENT), !g->kind_mixed);
    /* keyed by stream, an aggregate's contributors may sit on different lane ordinals: a
    ** kind or lane disagreement suppresses the distribution (recovery.md 7.3) */
    int supported = !g->kind_mixed && !g->lane_mixed;
    sqlite3_bind_int(agg, TL_PARAM(CA_LANE_CONSISTENT), !g->lane_mixed);
    sqlite3_bind_int(agg, TL_PARAM(CA_DISTRIBUTION_SUPPORTED), supported);
    int64_t v[6] = {g->dur_p25, g->dur_p50, g->dur_p75, g->share_p25, g->share_p50, g->share_p75};
    for (int q = 0; q < 6; q++) {
      if (!supported) sqlite3_bind_null(agg, TL_PARAM(CA_DURATION_P25_NS) + q);
      else sqlite3_bind_int64(agg, TL_PARAM(CA_DURATION_P25_NS) + q, v[q]);
    }
    sqlite3_bind_int64(agg, TL_PARAM(CA_LANE_ORDINAL), m->lane_ordinal);
    sqlite3_bind_int64(agg, TL_PARAM(CA_SLOT_ORDER),
                       l->slot_order); /* the first contributor's slot */
    /* floor(1e6 * work / denominator): the reference's integer parts per million */
    sqlite3_bind_int64(agg, TL_PARAM(CA_SCHEDULED_WORK_SHARE_PPM), g->body_task_sum_ns > 0
                                    ? (int64_t)((__int128)g->work_ns * 1000000 / g->body_task_sum_ns)
                                    : 0);
    sqlite3_bind_int(agg, TL_PARAM(CA_SCHEDULED_WORK_SHARE_SUPPORTED), g->body_task_sum_ns > 0);
    sqlite3_bind_int64(agg, TL_PARAM(CA_SCHEDULED_WORK_DENOMINATOR_BODY_TASK_SUM_NS),
                       g->body_task_sum_ns);
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
      rc = write_issue(db, issue, &nissue, r->launches.v[i].db_idx, r->launches.v[i].device_id,
                       "no_replay_units", TL_REPLAY_NONE, TL_REPLAY_NONE, detail, e);
    }
    i = j;
  }
  sqlite3_finalize(unit);
  sqlite3_finalize(launch);
  sqlite3_finalize(lane);
  sqlite3_finalize(agg);
  sqlite3_finalize(issue);
  free(slot_id);
  *issues = nissue;
  return rc;
}

/* An input (db_idx) in which no graph launch was observed at all says so with one
** no_replay_units issue, as the reference does for an input without exact replay-unit
** occurrences, so that "no replay here" is a row, not an empty table (a device whose launches
** were all left unpromoted has its own issue above, with their count). The device is the
** input's lowest (0 on the inputs the reference reads); the issue ids follow the others. */
static int publish_inputs_without_launches(sqlite3 *db, const tl_trace *t, const tl_replay *r,
                                           uint64_t nissue, tl_err *e) {
  size_t ninputs = t->profile ? t->profile->inputs.n : 0;
  if (!ninputs) return TL_OK;
  /* per input: 1 + its lowest device (0: no event), and whether a launch was seen */
  int64_t *device = calloc(ninputs, sizeof *device);
  unsigned char *launched = calloc(ninputs, 1);
  if (!device || !launched) {
    free(device), free(launched);
    return tl_nomem(e);
  }
  for (size_t k = 0; k < t->ev.places.n; k++) {
    const tl_event_place *pl = &t->ev.places.v[k];
    if (pl->db_idx < ninputs && (!device[pl->db_idx] || pl->device_id + 1 < device[pl->db_idx]))
      device[pl->db_idx] = (int64_t)pl->device_id + 1;
  }
  for (size_t i = 0; i < r->launches.n; i++)
    if (r->launches.v[i].db_idx < ninputs) launched[r->launches.v[i].db_idx] = 1;
  sqlite3_stmt *issue = NULL;
  int rc = tl_rows_prepare(db, "INSERT", "traceloom_replay_cost_issue", replay_cost_issue_columns,
                           CI_NCOLS, &issue, e);
  for (size_t d = 0; rc == TL_OK && d < ninputs; d++) {
    if (launched[d]) continue;
    rc = write_issue(db, issue, &nissue, (int64_t)d, device[d] ? device[d] - 1 : 0,
                     "no_replay_units", TL_REPLAY_NONE, TL_REPLAY_NONE,
                     "input contains no exact replay-unit occurrences", e);
  }
  sqlite3_finalize(issue);
  free(device);
  free(launched);
  return rc;
}

/* Each observed launch and its launch call are one runtime-device relation of kind
** graph_launch (inputs.md 10: CUDA by the call's correlation id, supported_exact; Ascend by
** the notify completion, supported_deterministic; no call, unmatched_graph_launch, under the
** policy the launch was matched by, as the reference writes it). The work
** is the launch's own device work (traceloom_device_work, work_kind graph_launch), not an
** event: event_n is NULL, and traceloom_graph_launch.relation_n (publish_launches) names the
** relation. They are
** numbered after the provider relations, in launch order (so the call-major ranges of
** traceloom_runtime_call_core, which hold provider relations only, do not move), and their
** few shapes are added to the provider relations' shapes. */
static int publish_launch_relations(sqlite3 *db, tl_err *e) {
#define TL_LAUNCH_RELATION                                                                     \
  "WITH k AS (SELECT launch_n, db_idx, relation_n, "                                           \
  " CAST(substr(host_call_id, 14) AS INTEGER) AS call_n, host_call_id IS NOT NULL AS calls, "  \
  " CASE WHEN match_policy = 'unmatched' THEN 'unmatched_graph_launch' "                      \
  "      WHEN graph_provider = 'cuda' THEN 'cuda_graph_launch_correlation' "                   \
  "      ELSE 'ascend_' || match_policy END AS policy, "                                       \
  " CASE WHEN host_call_id IS NULL THEN 'open' "                                               \
  "      WHEN graph_provider = 'cuda' THEN 'exact_provider_identifier' "                       \
  "      ELSE 'validated_adapter_relation' END AS evidence, "                                  \
  " CASE WHEN host_call_id IS NULL THEN 'unmatched_graph_launch' "                             \
  "      WHEN graph_provider = 'cuda' THEN 'supported_exact' "                                 \
  "      ELSE 'supported_deterministic' END AS state, "                                        \
  " CASE WHEN host_call_id IS NULL THEN 'open' ELSE 'one_to_one' END AS cardinality "          \
  "FROM main.traceloom_graph_launch) "
  static const char *const sql =
      TL_LAUNCH_RELATION
      "INSERT INTO main.traceloom_runtime_device_relation_shape(shape_id, relation_kind, "
      " match_policy, evidence_level, support_state, cardinality) "
      "SELECT (SELECT COALESCE(max(shape_id), 0) FROM main.traceloom_runtime_device_relation_shape)"
      " + row_number() OVER (ORDER BY policy, evidence, state, cardinality), 'graph_launch', "
      " policy, evidence, state, cardinality "
      "FROM (SELECT DISTINCT policy, evidence, state, cardinality FROM k);"
      TL_LAUNCH_RELATION
      "INSERT INTO main.traceloom_runtime_device_relation_core(relation_n, db_idx, call_n, "
      " event_n, shape_id, runtime_candidate_count, device_candidate_count) "
      "SELECT k.relation_n, k.db_idx, k.call_n, NULL, s.shape_id, k.calls, 1 "
      "FROM k CROSS JOIN main.traceloom_runtime_device_relation_shape s "
      " ON s.relation_kind = 'graph_launch' AND s.match_policy = k.policy "
      " AND s.evidence_level = k.evidence AND s.support_state = k.state "
      " AND s.cardinality = k.cardinality "
      "ORDER BY k.relation_n;";
#undef TL_LAUNCH_RELATION
  return tl_pub_exec(db, sql, e);
}

/* One event per promoted replay unit (outputs.md section 5), as the reference publishes
** it: source table ACLGRAPH_REPLAY_UNIT / CUDA_GRAPH_REPLAY_UNIT, source key the unit's
** ordinal (an ACL unit's reconstruction region + 1, so a region left unpromoted keeps its
** number; a CUDA unit's place among the CUDA units + 1), the interval from its first
** launch's start to its last launch's end, the stream of its first launch's completion
** record (the captured model's) or first member, symbol, label
** and raw label `GraphReplayUnit ExactT<k>` / `CUDAGraph ExactT<k>` (k: its graph
** template), category, role and family `event`. It is no device work and no anchor: the
** launches are the anchors (their derived events are the anchors' intervals, not events:
** traceloom_event leaves them out, sql/schema/10_events.sql), and the unit event is what
** traceloom_graph_launch.graph_event_id and the unit's envelope name. Its shape is written
** here, after the events' (the shapes are few; a unit shape is shared by the units of one
** template and source). */
static int publish_unit_events(sqlite3 *db, const tl_trace *t, const tl_replay *r, tl_err *e) {
  if (!r->units.n) return TL_OK;
  sqlite3_stmt *shape = NULL, *core = NULL, *run = NULL;
  int rc = sqlite3_prepare_v2(
      db,
      "INSERT INTO main.traceloom_event_shape(shape_id, source_id, source_table, kind, "
      "category, role, symbol, label, raw_label, family) "
      "SELECT COALESCE((SELECT max(shape_id) FROM main.traceloom_event_shape), 0) + 1, "
      "?1, ?2, 'graph_launch', 'event', 'event', ?3, ?3, ?3, 'event' "
      "WHERE NOT EXISTS (SELECT 1 FROM main.traceloom_event_shape s WHERE s.source_id = ?1 "
      "AND s.source_table = ?2 AND s.symbol = ?3 AND s.category = 'event')",
      -1, &shape, NULL);
  if (rc == SQLITE_OK)
    rc = sqlite3_prepare_v2(
        db,
        "INSERT INTO main.traceloom_event_core(event_n, db_idx, device_id, "
        "stream_id, start_ns, dur_ns, shape_id) "
        "SELECT ?1, ?2, ?3, ?5, ?6, ?7, s.shape_id FROM main.traceloom_event_shape s "
        "WHERE s.source_id = ?8 AND s.source_table = ?9 AND s.symbol = ?10 "
        "AND s.category = 'event'",
        -1, &core, NULL);
  /* Its source key is the unit's ordinal, stored by event_n: a unit shape has no
  ** source_rowid_offset (sql/schema/10_events.sql, traceloom_event_source_key). */
  if (rc == SQLITE_OK)
    rc = sqlite3_prepare_v2(db,
                            "INSERT INTO main.traceloom_event_source_key(event_n, source_key) "
                            "VALUES (?1, ?2)",
                            -1, &run, NULL);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(shape), sqlite3_finalize(core), sqlite3_finalize(run);
    return tl_fail(e, "cannot publish the replay units' events: %s", sqlite3_errmsg(db));
  }
  rc = TL_OK;
  uint32_t cuda_units = 0;
  for (size_t u = 0; rc == TL_OK && u < r->units.n; u++) {
    const tl_replay_unit *un = &r->units.v[u];
    int cuda = un->provider == TL_GRAPH_CUDA;
    int64_t key = cuda ? (int64_t)++cuda_units
                       : (un->region != TL_REPLAY_NONE ? (int64_t)un->region + 1 : (int64_t)u + 1);
    unit_place pl = unit_place_of(t, r, un);
    int64_t source_id = pl.source_id, lo = pl.start_ns, hi = pl.end_ns;
    uint32_t stream = pl.stream;
    const char *table = cuda ? "CUDA_GRAPH_REPLAY_UNIT" : "ACLGRAPH_REPLAY_UNIT";
    char sym[64];
    snprintf(sym, sizeof sym, "%s ExactT%u", cuda ? "CUDAGraph" : "GraphReplayUnit",
             (unsigned)un->graph_template);
    sqlite3_bind_int64(shape, 1, source_id);
    sqlite3_bind_text(shape, 2, table, -1, SQLITE_STATIC);
    sqlite3_bind_text(shape, 3, sym, -1, SQLITE_TRANSIENT);
    if ((rc = tl_pub_step(db, shape, "traceloom_event_shape", e))) break;
    sqlite3_bind_int64(core, 1, (int64_t)unit_event_n(t, r, u));
    sqlite3_bind_int(core, 2, un->db_idx);
    sqlite3_bind_int64(core, 3, un->device_id);
    if (stream == TL_NO_STREAM) sqlite3_bind_null(core, 5);
    else sqlite3_bind_int64(core, 5, stream);
    sqlite3_bind_int64(core, 6, lo);
    sqlite3_bind_int64(core, 7, hi - lo);
    sqlite3_bind_int64(core, 8, source_id);
    sqlite3_bind_text(core, 9, table, -1, SQLITE_STATIC);
    sqlite3_bind_text(core, 10, sym, -1, SQLITE_TRANSIENT);
    if ((rc = tl_pub_step(db, core, "traceloom_event_core", e))) break;
    sqlite3_bind_int64(run, 1, (int64_t)unit_event_n(t, r, u));
    sqlite3_bind_int64(run, 2, key);
    rc = tl_pub_step(db, run, "traceloom_event_source_key", e);
  }
  sqlite3_finalize(shape);
  sqlite3_finalize(core);
  sqlite3_finalize(run);
  return rc;
}

int tl_publish_replay(sqlite3 *db, const tl_trace *t, const tl_replay *r,
                      const uint32_t *anchor_event, size_t nanchors, tl_err *e) {
  if (!r) return TL_OK; /* {"graph_replay": false}: nothing was looked for, nothing to say */
  if (!r->launches.n && !r->envelopes.n) return publish_inputs_without_launches(db, t, r, 0, e);
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
  rc = publish_unit_events(db, t, r, e);
  if (rc == TL_OK) rc = publish_launches(db, t, r, anchor_of_event, e);
  if (rc == TL_OK) rc = publish_launch_relations(db, e);
  tl_timer_mark(&tm, "launches");
  if (rc == TL_OK) rc = publish_members(db, t, r, &costs, e);
  if (rc == TL_OK) rc = publish_unpromoted_members(db, r, e);
  tl_timer_mark(&tm, "members");
  uint64_t issues = 0;
  if (rc == TL_OK) rc = publish_costs(db, t, r, &costs, &issues, e);
  if (rc == TL_OK) rc = publish_inputs_without_launches(db, t, r, issues, e);
  tl_timer_mark(&tm, "costs");
  if (rc == TL_OK) rc = publish_regions(db, r, e);
  if (rc == TL_OK) rc = publish_protected(db, t, r, anchor_of_event, e);
  if (rc == TL_OK) rc = publish_envelopes(db, t, r, e);
  tl_timer_mark(&tm, "regions, protected units, envelopes");
  free(anchor_of_event);
  tl_replay_costs_free(&costs);
  return rc;
}
