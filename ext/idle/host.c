/*
** host.c: host evidence for idle explanations (idle.h).
**
** Host API events are the runtime calls whose name matches the host-API allowlist (rules.c):
** host_sync and enqueue families. Each is linked to device tasks by its exact connection id:
** unique (one task, one device, and no other call claims that connection on that device),
** one_to_many, ambiguous (several devices, or several calls for one scoped connection) or
** unresolved. A call's device is the unique link's device.
**
** With a clock model that supports cross-clock evidence for that device:
**   host_sync  the mapped call [f(start), f(end)) shrunk by epsilon on both sides; its overlap
**              with a gap is host_sync_api_present evidence (temporal_overlap); an overlap that
**              exists only when widened by epsilon is a possible_only candidate;
**   enqueue    a unique link to a task: the delay [f(end) + epsilon, task start) inside a gap is
**              queued_visible_task_delay evidence (exact_connection_id); [f(end) - epsilon,
**              task start) alone is a non_robust_delay candidate.
** Robust evidence shorter than the minimum evidence duration stays a candidate. Candidates
** never explain a gap.
*/
#include "idle/idle_int.h"

#include <stdlib.h>
#include <string.h>

#define NONE TL_IDLE_NONE

void tl_idle_host_free(tl_idle_host *h) {
  TL_VEC_FREE(&h->apis), TL_VEC_FREE(&h->targets), TL_VEC_FREE(&h->evidence), TL_VEC_FREE(&h->candidates);
}

static int64_t sat_add(int64_t v, uint64_t d) {
  return d > (uint64_t)(INT64_MAX - (v > 0 ? v : 0)) ? INT64_MAX : v + (int64_t)d;
}
static int64_t sat_sub(int64_t v, uint64_t d) {
  return v < 0 && d > (uint64_t)(v - INT64_MIN) ? INT64_MIN : (d > (uint64_t)INT64_MAX ? INT64_MIN : v - (int64_t)d);
}

typedef struct gap_ref {
  const tl_idle_device *d;
  uint32_t index;
} gap_ref;

static int add_candidate(tl_idle_host *h, uint32_t device, uint32_t gap, uint8_t category, uint8_t status,
                         uint8_t alignment, tl_idle_src src) {
  tl_idle_candidate c = {device, gap, category, status, alignment, src};
  return TL_VEC_PUSH(&h->candidates, c);
}

/* Robust [rs, re) and possible [ps, pe) intervals against every gap of device d. */
static int project(tl_idle_host *h, const tl_idle_device *d, uint8_t category, uint8_t alignment,
                   int64_t rs, int64_t re, int64_t ps, int64_t pe, uint32_t call, uint32_t task,
                   const tl_idle_options *o) {
  for (uint32_t g = 0; g < d->intervals.n; g++) {
    const tl_idle_interval *x = &d->intervals.v[g];
    if (x->kind != 1) continue;
    int64_t a = ps > x->start ? ps : x->start, b = pe < x->end ? pe : x->end;
    if (b <= a) continue;
    int64_t ra = rs > x->start ? rs : x->start, rb = re < x->end ? re : x->end;
    tl_idle_src src = {task, call, 0, NONE, a, b};
    if (re > rs && rb > ra && rb - ra >= o->minimum_evidence_ns) {
      src.overlap_start = ra, src.overlap_end = rb;
      tl_idle_host_evidence ev = {d->device_id, ra, rb, category, alignment, src};
      if (TL_VEC_PUSH(&h->evidence, ev)) return -1;
    } else if (add_candidate(h, d->device_id, g, category, category == TL_IC_HOST_SYNC ? 0 : 1,
                             alignment, src)) {
      return -1;
    }
  }
  return 0;
}

static const tl_idle_device *device_of(const tl_idle_devices *ds, uint32_t device) {
  for (size_t i = 0; i < ds->n; i++)
    if (ds->v[i].device_id == device && ds->v[i].status != 1) return &ds->v[i];
  return NULL;
}

typedef struct conn_task {
  int64_t conn;
  uint32_t event;
} conn_task;

static int cmp_conn_task(const void *a, const void *b) {
  const conn_task *x = a, *y = b;
  if (x->conn != y->conn) return x->conn < y->conn ? -1 : 1;
  return x->event < y->event ? -1 : x->event > y->event;
}

typedef struct scope_claim {
  int64_t conn;
  uint32_t device;
} scope_claim;

static int cmp_claim(const void *a, const void *b) {
  const scope_claim *x = a, *y = b;
  if (x->conn != y->conn) return x->conn < y->conn ? -1 : 1;
  return x->device < y->device ? -1 : x->device > y->device;
}

int tl_idle_host_build(const tl_idle_events *ev, tl_idle_host *h, const tl_clock_models *models,
                       const tl_idle_devices *devices, const tl_idle_options *o, tl_err *e) {
  const tl_trace *t = ev->t;
  TL_VEC(conn_task) tasks = {0};
  TL_VEC(scope_claim) claims = {0};
  int rc = TL_OK;
  /* the db's tasks by connection id (ops are not link targets) */
  for (size_t i = 0; rc == TL_OK && i < ev->nreal; i++)
    if (tl_events_db_idx(&t->ev, i) == ev->db_idx && !ev->is_op[i] && ev->conn[i] >= 0) {
      conn_task x = {ev->conn[i], (uint32_t)i};
      if (TL_VEC_PUSH(&tasks, x)) rc = tl_nomem(e);
    }
  if (rc == TL_OK && tasks.n) qsort(tasks.v, tasks.n, sizeof *tasks.v, cmp_conn_task);
  for (size_t k = 0; rc == TL_OK && k < h->apis.n; k++) {
    tl_idle_api *a = &h->apis.v[k];
    a->first_target = (uint32_t)h->targets.n, a->ntargets = 0, a->link_status = 3;
    if (a->connection < 0) continue;
    size_t lo = 0, hi = tasks.n;
    while (lo < hi) {
      size_t mid = lo + (hi - lo) / 2;
      if (tasks.v[mid].conn < a->connection) lo = mid + 1;
      else hi = mid;
    }
    for (; rc == TL_OK && lo < tasks.n && tasks.v[lo].conn == a->connection; lo++) {
      if (TL_VEC_PUSH(&h->targets, tasks.v[lo].event)) rc = tl_nomem(e);
      a->ntargets++;
    }
    if (!a->ntargets) continue;
    uint32_t dev = tl_events_device_id(&t->ev, h->targets.v[a->first_target]);
    int many_devices = 0;
    for (uint32_t j = 1; j < a->ntargets; j++) many_devices |= tl_events_device_id(&t->ev, h->targets.v[a->first_target + j]) != dev;
    if (many_devices) {
      a->link_status = 2;
      continue;
    }
    a->has_device = 1, a->device_id = dev;
    scope_claim c = {a->connection, dev};
    if (TL_VEC_PUSH(&claims, c)) rc = tl_nomem(e);
  }
  /* several calls claiming one (connection, device) make every one of them ambiguous */
  if (rc == TL_OK && claims.n) qsort(claims.v, claims.n, sizeof *claims.v, cmp_claim);
  for (size_t k = 0; rc == TL_OK && k < h->apis.n; k++) {
    tl_idle_api *a = &h->apis.v[k];
    if (!a->has_device) continue;
    scope_claim c = {a->connection, a->device_id};
    size_t lo = 0, hi = claims.n;
    while (lo < hi) {
      size_t mid = lo + (hi - lo) / 2;
      if (cmp_claim(&claims.v[mid], &c) < 0) lo = mid + 1;
      else hi = mid;
    }
    size_t count = 0;
    while (lo + count < claims.n && cmp_claim(&claims.v[lo + count], &c) == 0) count++;
    a->link_status = a->ntargets > 1 ? 1 : count > 1 ? 2 : 0;
  }
  for (size_t k = 0; rc == TL_OK && k < h->apis.n; k++) {
    const tl_idle_api *a = &h->apis.v[k];
    if (!a->has_device || (a->family == 2 && a->link_status != 0)) continue;
    const tl_clock_model *m = tl_clock_model_for(models, a->device_id);
    const tl_idle_device *d = device_of(devices, a->device_id);
    int64_t ms, me;
    if (!m || !d || !tl_clock_map(m, a->end, &me)) continue;
    if (a->family == 1) {
      if (!tl_clock_map(m, a->start, &ms) || me <= ms) continue;
      if (project(h, d, TL_IC_HOST_SYNC, m->alignment, sat_add(ms, m->epsilon_ns), sat_sub(me, m->epsilon_ns),
                  sat_sub(ms, m->epsilon_ns), sat_add(me, m->epsilon_ns), a->call, NONE, o))
        rc = tl_nomem(e);
    } else {
      uint32_t task = h->targets.v[a->first_target];
      int64_t ts = t->ev.start_ns[task];
      if (project(h, d, TL_IC_QUEUED, m->alignment, sat_add(me, m->epsilon_ns), ts, sat_sub(me, m->epsilon_ns), ts,
                  a->call, task, o))
        rc = tl_nomem(e);
    }
  }
  TL_VEC_FREE(&tasks), TL_VEC_FREE(&claims);
  return rc;
}
