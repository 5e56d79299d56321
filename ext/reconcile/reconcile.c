/*
** reconcile.c: event reconciliation decisions (traceloom_event_reconciliation_decision_core,
** _member_core; views traceloom_event_reconciliation_decision, _member,
** traceloom_v_event_reconciliation), by the rules of the effective event-reconciliation policy
** (rules/event_reconciliation.yaml, recovery.md section 2.5).
**
** task rules        the tasks of one rule's task_type on one (source, device, stream, raw task
**                   id, connection id) are one group: exactly one generic envelope (context =
**                   generic_context_id, no operator names) and one detail (context =
**                   concrete_context_id, with names) contained at least min_contained_fraction
**                   in it and in the same exact replays reconcile (the detail is canonical, the
**                   envelope's interval is the one charged); a missing peer is independent, a
**                   third observation or a duplicate ambiguous, too little containment or
**                   different replays a conflict;
** task+communication_op rules
**                   each communication op named communication_op_name_prefix... on a device is
**                   one group with the tasks of op type task_op_type that touch it: exactly one
**                   such task (touching no other op of the rule), containing the op at least
**                   min_contained_fraction and in the same replays, reconciles (the task is
**                   canonical); none is independent, several ambiguous.
** Unmatched observations stay independent: no decision row.
**
** The decisions are taken before the anchors (recovery.md section 1: S2, after graph replay,
** before classification and anchor selection), in memory from the trace's task, connection and
** context ids (tl_reconcile_decide): a reconciled pair is one anchor, the canonical event's,
** with the envelope's interval (tl_reconcile_merges hands anchor selection what to fold), and
** its other members are never anchors, aux links or cost. The report stage writes the rows
** (tl_reconcile_publish, called by ext/reports), with each decision's canonical anchor.
*/
#include "reconcile/reconcile.h"
#include "publish/publish.h"
#include "publish/rows.h"

#include <stdlib.h>
#include <string.h>

#define NONE UINT32_MAX

enum { ST_RECONCILED = 0, ST_INDEPENDENT, ST_AMBIGUOUS, ST_CONFLICT };
enum { ROLE_ENVELOPE = 0, ROLE_SEMANTIC, ROLE_PROVIDER, ROLE_INDEPENDENT, ROLE_CONFLICTING };
/* reason codes, in the order of the CASE in sql/views/65_reconciliation.sql */
enum {
  R_NON_UNIQUE = 0, R_MISSING_ENVELOPE, R_MISSING_DETAIL, R_CONTAINMENT, R_REPLAY_MISMATCH,
  R_PAIR, R_MISSING_TASK, R_NON_UNIQUE_CONTAINMENT, R_TASK_CONTAINS
};

typedef struct decision {
  uint32_t rule, status, reason, canonical, envelope, members;
  uint16_t db;
  int64_t contained_ppm; /* -1: none */
} decision;

typedef struct member {
  uint32_t decision, order, event, role, timing, symbol, cost;
} member;

typedef TL_VEC(decision) decision_vec;
typedef TL_VEC(member) member_vec;
typedef TL_VEC(uint32_t) u32vec;

typedef struct ids {
  int64_t task_id, conn, context;
} ids;

/* The provider ids of the candidate events, from the trace (read before they are released). */
static void read_ids(const tl_trace *t, const u32vec *events, ids *out) {
  for (size_t k = 0; k < events->n; k++) {
    uint32_t ev = events->v[k];
    ids x = {tl_i64col_get(&t->ev.task_id, ev), tl_i64col_get(&t->ev.correlation_id, ev),
             tl_i64col_get(&t->ev.context_id, ev)};
    out[k] = x;
  }
}

/* String id 0 is "absent" in the trace's pool. */
static int has_names(const tl_trace *t, uint32_t ev) {
  const tl_label *l = tl_event_label(t, ev);
  return l->op_name || l->op_type || l->compute_task_type || l->comm_name;
}

static int provider_matches(const tl_trace *t, uint32_t ev, const char *scope) {
  if (strcmp(scope, "any") == 0) return 1;
  const tl_family_def *f = t->profile->inputs.v[tl_events_db_idx(&t->ev, ev)].family;
  return strcmp(scope, "ascend") == 0 && tl_family_provider(f) == TL_PROVIDER_ASCEND;
}

/* The exact replay unit whose body holds event ev (NONE: none). */
static uint32_t replay_of(const uint32_t *unit_of_event, uint32_t ev) {
  return unit_of_event ? unit_of_event[ev] : NONE;
}

static int64_t contained_ppm(const tl_trace *t, uint32_t outer, uint32_t inner) {
  int64_t d = tl_events_end(&t->ev, inner) - t->ev.start_ns[inner];
  if (d <= 0)
    return t->ev.start_ns[outer] <= t->ev.start_ns[inner] && tl_events_end(&t->ev, outer) >= tl_events_end(&t->ev, inner) ? 1000000 : 0;
  int64_t lo = t->ev.start_ns[outer] > t->ev.start_ns[inner] ? t->ev.start_ns[outer] : t->ev.start_ns[inner];
  int64_t hi = tl_events_end(&t->ev, outer) < tl_events_end(&t->ev, inner) ? tl_events_end(&t->ev, outer) : tl_events_end(&t->ev, inner);
  return hi > lo ? (int64_t)((__int128)(hi - lo) * 1000000 / d) : 0;
}

static int add_member(member_vec *m, uint32_t dec, uint32_t ev, uint32_t role, int timing, int symbol, int cost) {
  uint32_t order = 0;
  for (size_t k = m->n; k-- > 0 && m->v[k].decision == dec;) order++;
  member x = {dec, order, ev, role, (uint32_t)timing, (uint32_t)symbol, (uint32_t)cost};
  return TL_VEC_PUSH(m, x);
}

typedef struct group_key {
  const char *rule_id;
  uint32_t rule, source_ref, device, stream;
  int64_t task_id, conn;
  int64_t start, end;
  uint32_t event, k;
} group_key;

static int cmp_group(const void *a, const void *b) {
  const group_key *x = a, *y = b;
  int r = strcmp(x->rule_id, y->rule_id);
  if (r) return r;
#define CMP(f) if (x->f != y->f) return x->f < y->f ? -1 : 1
  CMP(source_ref); CMP(device); CMP(stream); CMP(task_id); CMP(conn); CMP(start); CMP(end); CMP(event);
#undef CMP
  return 0;
}

static int same_group(const group_key *x, const group_key *y) {
  return x->rule == y->rule && x->source_ref == y->source_ref && x->device == y->device &&
         x->stream == y->stream && x->task_id == y->task_id && x->conn == y->conn;
}

/* Every task of a task rule's task_type (the first rule by priority decides) is grouped by
** (rule, source, device, stream, raw task id, connection); groups come out in rule-id order. */
static int task_rules(const tl_trace *t, size_t nreal, const tl_reconcile_policy *p, const uint32_t *order,
                      size_t norder, const uint32_t *unit_of_event, decision_vec *dv, member_vec *mv, tl_err *e) {
  u32vec events = {0}, rules = {0};
  int rc = TL_OK;
  for (size_t i = 0; rc == TL_OK && i < nreal; i++) {
    const char *tt = tl_str(t, tl_event_label(t, i)->task_type);
    for (size_t k = 0; tt && k < norder; k++) {
      const tl_reconcile_rule *rule = &p->rules.v[order[k]];
      if (strcmp(tt, rule->task_type) != 0 || !provider_matches(t, (uint32_t)i, rule->provider_scope)) continue;
      if (TL_VEC_PUSH(&events, (uint32_t)i) || TL_VEC_PUSH(&rules, order[k])) rc = tl_nomem(e);
      break;
    }
  }
  ids *x = malloc((events.n ? events.n : 1) * sizeof *x);
  group_key *g = malloc((events.n ? events.n : 1) * sizeof *g);
  if (rc == TL_OK && (!x || !g)) rc = tl_nomem(e);
  if (rc == TL_OK) read_ids(t, &events, x);
  size_t ng = 0;
  for (size_t k = 0; rc == TL_OK && k < events.n; k++) {
    uint32_t ev = events.v[k];
    if (x[k].conn < 0) continue; /* no connection id: never grouped */
    group_key key = {p->rules.v[rules.v[k]].rule_id, rules.v[k], tl_events_source_ref(&t->ev, ev), tl_events_device_id(&t->ev, ev),
                     tl_events_stream_id(&t->ev, ev), x[k].task_id, x[k].conn, t->ev.start_ns[ev], tl_events_end(&t->ev, ev), ev,
                     (uint32_t)k};
    g[ng++] = key;
  }
  if (rc == TL_OK) qsort(g, ng, sizeof *g, cmp_group);
  for (size_t a = 0; rc == TL_OK && a < ng;) {
    size_t b = a + 1;
    while (b < ng && same_group(&g[a], &g[b])) b++;
    const tl_reconcile_rule *rule = &p->rules.v[g[a].rule];
    uint32_t generic = NONE, detail = NONE, ngeneric = 0, ndetail = 0, nother = 0;
    for (size_t k = a; k < b; k++) {
      uint32_t ev = g[k].event;
      int names = has_names(t, ev);
      int64_t ctx = x[g[k].k].context;
      if (ctx == rule->generic_context_id && !names) generic = ev, ngeneric++;
      else if (ctx == rule->concrete_context_id && names) detail = ev, ndetail++;
      else nother++;
    }
    decision d = {g[a].rule, ST_RECONCILED, R_PAIR, NONE, NONE, (uint32_t)(b - a), tl_events_db_idx(&t->ev, g[a].event), -1};
    uint32_t dn = (uint32_t)dv->n, role = ROLE_CONFLICTING;
    if (nother || ngeneric > 1 || ndetail > 1) d.status = ST_AMBIGUOUS, d.reason = R_NON_UNIQUE;
    else if (ngeneric != 1 || ndetail != 1)
      d.status = ST_INDEPENDENT, d.reason = ngeneric ? R_MISSING_DETAIL : R_MISSING_ENVELOPE, role = ROLE_INDEPENDENT;
    else {
      d.contained_ppm = contained_ppm(t, generic, detail);
      if (d.contained_ppm < rule->min_contained_ppm) d.status = ST_CONFLICT, d.reason = R_CONTAINMENT;
      else if (replay_of(unit_of_event, generic) != replay_of(unit_of_event, detail))
        d.status = ST_CONFLICT, d.reason = R_REPLAY_MISMATCH;
      else d.canonical = detail, d.envelope = generic;
    }
    if (TL_VEC_PUSH(dv, d)) rc = tl_nomem(e);
    if (rc == TL_OK && d.status == ST_RECONCILED) {
      if (add_member(mv, dn, generic, ROLE_ENVELOPE, 1, 0, 1) || add_member(mv, dn, detail, ROLE_SEMANTIC, 0, 1, 0))
        rc = tl_nomem(e);
    } else {
      for (size_t k = a; rc == TL_OK && k < b; k++)
        if (add_member(mv, dn, g[k].event, role, 0, 0, 0)) rc = tl_nomem(e);
    }
    a = b;
  }
  free(x), free(g);
  TL_VEC_FREE(&events), TL_VEC_FREE(&rules);
  return rc;
}

static int touches(const tl_trace *t, uint32_t a, uint32_t b) {
  return tl_events_device_id(&t->ev, a) == tl_events_device_id(&t->ev, b) && tl_events_db_idx(&t->ev, a) == tl_events_db_idx(&t->ev, b) &&
         t->ev.start_ns[a] <= tl_events_end(&t->ev, b) && tl_events_end(&t->ev, a) >= t->ev.start_ns[b];
}

static int op_rule(const tl_trace *t, size_t nreal, uint32_t r, const tl_reconcile_rule *rule, const uint32_t *unit_of_event,
                   uint8_t *claimed, decision_vec *dv, member_vec *mv, tl_err *e) {
  u32vec tasks = {0}, ops = {0};
  size_t plen = strlen(rule->communication_op_name_prefix);
  int rc = TL_OK;
  for (size_t i = 0; rc == TL_OK && i < nreal; i++) {
    if (!provider_matches(t, (uint32_t)i, rule->provider_scope)) continue;
    const tl_label *l = tl_event_label(t, i);
    if (tl_label_is_comm_op(t, tl_event_label(t, i))) {
      const char *name = tl_str(t, l->comm_name ? l->comm_name : l->op_name);
      if (!claimed[i] && (l->comm_name || l->op_name) && strncmp(name, rule->communication_op_name_prefix, plen) == 0) {
        claimed[i] = 1;
        if (TL_VEC_PUSH(&ops, (uint32_t)i)) rc = tl_nomem(e);
      }
    } else {
      if (l->op_type && strcmp(tl_str(t, l->op_type), rule->task_op_type) == 0 &&
          TL_VEC_PUSH(&tasks, (uint32_t)i))
        rc = tl_nomem(e);
    }
  }
  for (size_t o = 0; rc == TL_OK && o < ops.n; o++) {
    uint32_t op = ops.v[o], cand = NONE, ncand = 0;
    uint32_t dn = (uint32_t)dv->n;
    for (size_t k = 0; k < tasks.n; k++)
      if (touches(t, tasks.v[k], op)) cand = tasks.v[k], ncand++;
    decision d = {r, ST_RECONCILED, R_TASK_CONTAINS, NONE, NONE, ncand + 1, tl_events_db_idx(&t->ev, op), -1};
    if (!ncand) d.status = ST_INDEPENDENT, d.reason = R_MISSING_TASK;
    else {
      uint32_t degree = 0; /* the other ops of the rule the candidate task touches */
      for (size_t q = 0; ncand == 1 && q < ops.n; q++) degree += touches(t, cand, ops.v[q]);
      if (ncand != 1 || degree != 1) d.status = ST_AMBIGUOUS, d.reason = R_NON_UNIQUE_CONTAINMENT;
      else {
        d.contained_ppm = contained_ppm(t, cand, op);
        if (d.contained_ppm < rule->min_contained_ppm) d.status = ST_CONFLICT, d.reason = R_CONTAINMENT;
        else if (replay_of(unit_of_event, cand) != replay_of(unit_of_event, op))
          d.status = ST_CONFLICT, d.reason = R_REPLAY_MISMATCH;
        else d.canonical = d.envelope = cand;
      }
    }
    if (TL_VEC_PUSH(dv, d) || add_member(mv, dn, op, ncand ? ROLE_PROVIDER : ROLE_INDEPENDENT, 0, 0, 0)) {
      rc = tl_nomem(e);
      break;
    }
    for (size_t k = 0; rc == TL_OK && k < tasks.n; k++) {
      if (!touches(t, tasks.v[k], op)) continue;
      int ok = d.status == ST_RECONCILED;
      if (add_member(mv, dn, tasks.v[k], ncand == 1 ? ROLE_SEMANTIC : ROLE_CONFLICTING, ok, ok, ok)) rc = tl_nomem(e);
    }
  }
  TL_VEC_FREE(&tasks), TL_VEC_FREE(&ops);
  return rc;
}

typedef struct rows_ctx {
  const decision_vec *d;
  const member_vec *m;
  const tl_reconcile_policy *p;
  const uint32_t *anchor_of;  /* per event: its anchor, NONE */
  size_t row;
} rows_ctx;

static void decision_text(void *ctx, int col, const char **p, int *n) {
  const rows_ctx *c = ctx;
  (void)col;
  *p = c->p->rules.v[c->d->v[c->row].rule].rule_id;
  *n = (int)strlen(*p);
}

static int fill_decision(void *ctx, size_t i, int64_t *v, unsigned char *null) {
  rows_ctx *c = ctx;
  const decision *d = &c->d->v[i];
  c->row = i;
  v[0] = (int64_t)i, v[1] = d->db;
  v[2] = 0, v[3] = d->status, v[4] = d->reason; /* column 2: the rule id (decision_text) */
  v[5] = d->canonical, null[5] = d->canonical == NONE;
  v[6] = d->envelope, null[6] = d->envelope == NONE;
  v[7] = d->contained_ppm, null[7] = d->contained_ppm < 0;
  v[8] = d->members;
  uint32_t an = d->canonical != NONE ? c->anchor_of[d->canonical] : NONE;
  v[9] = an, null[9] = an == NONE;
  return 0;
}

static int fill_member(void *ctx, size_t i, int64_t *v, unsigned char *null) {
  const member *m = &((const rows_ctx *)ctx)->m->v[i];
  (void)null;
  v[0] = m->decision, v[1] = m->order, v[2] = m->event, v[3] = m->role;
  v[4] = m->timing, v[5] = m->symbol, v[6] = m->cost;
  return 0;
}

struct tl_reconciliation {
  const tl_reconcile_policy *p;
  decision_vec d;
  member_vec m;
};

int tl_reconcile_decide(const tl_trace *t, const tl_replay *r, const tl_rules *rules,
                        tl_reconciliation **out, tl_err *e) {
  *out = NULL;
  if (!rules) return TL_OK;
  tl_reconciliation *x = calloc(1, sizeof *x);
  if (!x) return tl_nomem(e);
  x->p = &rules->rec;
  const tl_reconcile_policy *p = x->p;
  /* replay's derived events come after the trace's and are never observations of their own */
  size_t nreal = r && r->launch_of_synthetic ? r->n_real_events : t->ev.n;
  uint8_t *claimed = calloc(t->ev.n ? t->ev.n : 1, 1);
  uint32_t *unit_of_event = NULL;
  int rc = claimed ? TL_OK : tl_nomem(e);
  if (rc == TL_OK && r && r->units.n) {
    unit_of_event = malloc((t->ev.n ? t->ev.n : 1) * sizeof *unit_of_event);
    if (!unit_of_event) rc = tl_nomem(e);
    else {
      memset(unit_of_event, 0xff, (t->ev.n ? t->ev.n : 1) * sizeof *unit_of_event);
      for (size_t m = 0; m < r->members.n; m++) {
        const tl_graph_launch *l = &r->launches.v[r->members.v[m].launch];
        if (l->unit != TL_REPLAY_NONE) unit_of_event[r->members.v[m].event] = l->unit;
      }
    }
  }
  /* task rules by priority (ties in declaration order) decide which rule a task falls under;
  ** then the op rules in the same order */
  u32vec order = {0};
  for (size_t k = 0; rc == TL_OK && k < p->rules.n; k++)
    if (TL_VEC_PUSH(&order, (uint32_t)k)) rc = tl_nomem(e);
  for (size_t a = 1; a < order.n; a++) /* stable insertion sort by priority, descending */
    for (size_t b = a; b > 0 && p->rules.v[order.v[b]].priority > p->rules.v[order.v[b - 1]].priority; b--) {
      uint32_t tmp = order.v[b];
      order.v[b] = order.v[b - 1], order.v[b - 1] = tmp;
    }
  u32vec task_order = {0};
  for (size_t k = 0; rc == TL_OK && k < order.n; k++)
    if (strcmp(p->rules.v[order.v[k]].source_domain, "task") == 0 && TL_VEC_PUSH(&task_order, order.v[k]))
      rc = tl_nomem(e);
  if (rc == TL_OK) rc = task_rules(t, nreal, p, task_order.v, task_order.n, unit_of_event, &x->d, &x->m, e);
  for (size_t k = 0; rc == TL_OK && k < order.n; k++)
    if (strcmp(p->rules.v[order.v[k]].source_domain, "task+communication_op") == 0)
      rc = op_rule(t, nreal, order.v[k], &p->rules.v[order.v[k]], unit_of_event, claimed, &x->d, &x->m, e);
  TL_VEC_FREE(&order), TL_VEC_FREE(&task_order);
  free(claimed), free(unit_of_event);
  if (rc != TL_OK) {
    tl_reconciliation_free(x);
    return rc;
  }
  *out = x;
  return TL_OK;
}

void tl_reconciliation_free(tl_reconciliation *x) {
  if (!x) return;
  TL_VEC_FREE(&x->d), TL_VEC_FREE(&x->m);
  free(x);
}

/* A reconciled decision folds every member but its canonical event into the canonical event's
** anchor, which takes the envelope's interval (the one charged: recovery.md 2.5). */
int tl_reconcile_merges(const tl_reconciliation *x, size_t nevents, tl_anchor_merges *out, tl_err *e) {
  memset(out, 0, sizeof *out);
  size_t npairs = 0;
  for (size_t k = 0; x && k < x->d.n; k++) npairs += x->d.v[k].status == ST_RECONCILED;
  if (!npairs) return TL_OK;
  out->member = calloc(nevents ? nevents : 1, 1);
  out->canonical = malloc(npairs * sizeof *out->canonical);
  out->envelope = malloc(npairs * sizeof *out->envelope);
  if (!out->member || !out->canonical || !out->envelope) {
    tl_anchor_merges_free(out);
    return tl_nomem(e);
  }
  for (size_t k = 0; k < x->d.n; k++) {
    const decision *d = &x->d.v[k];
    if (d->status != ST_RECONCILED) continue;
    out->canonical[out->n] = d->canonical, out->envelope[out->n] = d->envelope, out->n++;
  }
  for (size_t k = 0; k < x->m.n; k++) {
    const member *m = &x->m.v[k];
    const decision *d = &x->d.v[m->decision];
    if (d->status == ST_RECONCILED && m->event != d->canonical && m->event < nevents) out->member[m->event] = 1;
  }
  return TL_OK;
}

int tl_reconcile_publish(sqlite3 *db, const tl_reconciliation *x, const tl_trace *t,
                         const tl_anchors *an_in, tl_err *e) {
  if (!x) return TL_OK;
  int rc = TL_OK;
  uint32_t *anchor_of = NULL;
  if (x->d.n) {
    /* anchors' events include replay's derived launch events, numbered after the trace's */
    size_t nall = tl_event_count(t, an_in->derived);
    anchor_of = malloc((nall ? nall : 1) * sizeof *anchor_of);
    if (!anchor_of) rc = tl_nomem(e);
    else {
      memset(anchor_of, 0xff, (nall ? nall : 1) * sizeof *anchor_of);
      for (size_t k = 0; k < an_in->n; k++) anchor_of[an_in->event[k]] = (uint32_t)k;
    }
  }
  rows_ctx c = {&x->d, &x->m, x->p, anchor_of, 0};
  if (rc == TL_OK && x->d.n) {
    tl_rows src = {x->d.n, 10, fill_decision, &c, 1u << 2, decision_text};
    rc = tl_rows_insert(db, "traceloom_event_reconciliation_decision_core",
                        "decision_n, db_idx, rule_id, status, reason, canonical_event_n, "
                        "envelope_event_n, contained_ppm, member_count, canonical_anchor_n", &src, e);
  }
  /* every anchor a reconciled pair merged into, with its interval (the envelope's), read by
  ** key by the anchor views and the placements (sparse: only these) */
  if (rc == TL_OK && an_in->ext_start) {
    sqlite3_stmt *st = NULL;
    rc = tl_pub_prepare(db, "INSERT INTO main.traceloom_anchor_extent_core(anchor_n, start_ns, end_ns) "
                            "VALUES (?1, ?2, ?3)", &st, e);
    for (size_t k = 0; rc == TL_OK && k < x->d.n; k++) {
      const decision *d = &x->d.v[k];
      uint32_t an = d->status == ST_RECONCILED ? anchor_of[d->canonical] : NONE;
      if (an == NONE) continue;
      sqlite3_bind_int64(st, 1, an);
      sqlite3_bind_int64(st, 2, tl_anchor_start(an_in, an));
      sqlite3_bind_int64(st, 3, tl_anchor_end(an_in, an));
      if (sqlite3_step(st) != SQLITE_DONE) rc = tl_fail(e, "anchor extent: %s", sqlite3_errmsg(db));
      sqlite3_reset(st);
    }
    sqlite3_finalize(st);
  }
  free(anchor_of);
  if (rc == TL_OK && x->m.n) {
    tl_rows src = {x->m.n, 7, fill_member, &c, 0, NULL};
    rc = tl_rows_insert(db, "traceloom_event_reconciliation_member_core",
                        "decision_n, member_order, event_n, member_role, contributes_timing, "
                        "contributes_symbol, contributes_cost", &src, e);
  }
  return rc;
}
