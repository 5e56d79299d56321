/*
** link.c: the identity-only join chain from scheduler steps to device events
** (context-observer.md section 5).
**
**   execution (marker_state emitted, step present)
**     -> exactly one PYTORCH_API row named traceloom.execution.<id> in a profile file
**     -> CANN runtime calls of that file on the marker's thread inside the marker
**        (same_thread_host_scope), or inside the Dequeue@ row paired by connection id with
**        an Enqueue@ row inside the marker (task_queue_connection)
**     -> a call claimed by exactly one execution (supported_host_scope)
**     -> supported_exact / supported_deterministic provider relations -> device events
**     -> for an ACL graph launch (its MODEL_EXECUTE control event): every body member
**
** The marker and task-queue rows (PYTORCH_API of Ascend profiles) come from the reader of
** each file's family (tl_family_def.host_marks, ext/source/msprof_marks.c); runtime calls
** and relations from the trace. The
** result is one step (or "more than one") per device event, the partition map of
** step-constrained recovery (section 7), and the audit rows publish_context.c writes.
** Device-side candidate rows are views over the published tables; this file only decides
** what the partition map needs, by the same rules.
*/
#include "context/context.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MARKER_PREFIX "traceloom.execution."

int tl_ctx_exec_marker_supported(const tl_context *c, size_t x) {
  const tl_ctx_exec *ex = &c->execs.v[x];
  return ex->step != TL_CTX_NONE && ex->marker_emitted && c->marker_count &&
         c->marker_count[x] == 1;
}

/* ------------------------------------------------------------------ host rows */

/* The marker and queue rows of one profile file (its family's host_marks), as context
** markers (of the execution each names) and queue rows. */
static int add_host_rows(tl_context *c, const tl_profile *p, size_t file,
                         const tl_i64map *marker_exec, tl_err *e) {
  tl_host_marks hm;
  int rc = p->inputs.v[p->files.v[file].db_idx].family->host_marks(p, file, MARKER_PREFIX, &hm, e);
  if (rc != TL_OK) return rc; /* hm is empty */
  for (size_t i = 0; rc == TL_OK && i < hm.markers.n; i++) {
    const tl_host_mark *m = &hm.markers.v[i];
    const char *name = hm.text.p + m->name;
    uint32_t id = tl_strpool_find(c->pool, name, strlen(name));
    int64_t *x = id == TL_STR_NOMEM ? NULL : tl_i64map_get(marker_exec, id);
    if (!x) continue;
    tl_ctx_marker cm = {(uint32_t)*x, (int)file, m->rowid, m->start_ns, m->end_ns, m->global_tid};
    if (TL_VEC_PUSH(&c->markers, cm)) rc = tl_nomem(e);
  }
  for (size_t i = 0; rc == TL_OK && i < hm.queue.n; i++) {
    const tl_host_mark *m = &hm.queue.v[i];
    tl_ctx_queue q = {(int)file, m->dequeue, m->rowid, m->start_ns, m->end_ns, m->global_tid,
                      m->connection_id};
    if (TL_VEC_PUSH(&c->queue, q)) rc = tl_nomem(e);
  }
  tl_host_marks_free(&hm);
  return rc;
}

/* ------------------------------------------------------------------ host scope */

/* Rows on a host thread ordered by (source_id, global_tid, start, index): Ascend runtime
** calls (call = call index) and task-queue pairs (call = pair index, keyed by the enqueue). */
typedef struct call_key {
  int source_id;
  int64_t gtid, start, end;
  uint32_t call;
} call_key;

static int cmp_call_key(const void *pa, const void *pb) {
  const call_key *a = pa, *b = pb;
  if (a->source_id != b->source_id) return a->source_id < b->source_id ? -1 : 1;
  if (a->gtid != b->gtid) return a->gtid < b->gtid ? -1 : 1;
  if (a->start != b->start) return a->start < b->start ? -1 : 1;
  return a->call < b->call ? -1 : a->call > b->call;
}

/* First key >= (source_id, gtid, start). */
static size_t lower_bound(const call_key *k, size_t n, int source_id, int64_t gtid, int64_t start) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    const call_key *m = &k[mid];
    int less = m->source_id != source_id ? m->source_id < source_id
               : m->gtid != gtid         ? m->gtid < gtid
                                         : m->start < start;
    if (less)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* Claims every call of (source_id, gtid) with lo <= start <= hi and end <= hi. */
static int claim_calls(tl_context *c, const call_key *k, size_t n, uint32_t exec, int source_id,
                       int64_t gtid, int64_t lo, int64_t hi, uint8_t basis, uint32_t pair,
                       tl_err *e) {
  for (size_t i = lower_bound(k, n, source_id, gtid, lo);
       i < n && k[i].source_id == source_id && k[i].gtid == gtid && k[i].start <= hi; i++) {
    if (k[i].end > hi) continue;
    tl_ctx_claim cl = {exec, k[i].call, pair, basis};
    if (TL_VEC_PUSH(&c->claims, cl)) return tl_nomem(e);
  }
  return TL_OK;
}

static int cmp_claim(const void *pa, const void *pb) {
  const tl_ctx_claim *a = pa, *b = pb;
  if (a->exec != b->exec) return a->exec < b->exec ? -1 : 1;
  if (a->call != b->call) return a->call < b->call ? -1 : 1;
  if (a->basis != b->basis) return a->basis < b->basis ? -1 : 1;
  return a->pair < b->pair ? -1 : a->pair > b->pair;
}

/* Queue rows by (source, connection, dequeue, rowid). */
typedef struct qkey {
  int source_id;
  int64_t conn, rowid;
  uint8_t dequeue;
  uint32_t idx;
} qkey;

static int cmp_qkey(const void *pa, const void *pb) {
  const qkey *a = pa, *b = pb;
  if (a->source_id != b->source_id) return a->source_id < b->source_id ? -1 : 1;
  if (a->conn != b->conn) return a->conn < b->conn ? -1 : 1;
  if (a->dequeue != b->dequeue) return a->dequeue < b->dequeue ? -1 : 1;
  if (a->rowid != b->rowid) return a->rowid < b->rowid ? -1 : 1;
  return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/* Unique pairs: exactly one enqueue and one dequeue per (source, connection id), each row
** mapped to that one connection only, enqueue.start <= dequeue.start, same process. */
static int pair_queue(tl_context *c, tl_err *e) {
  size_t n = c->queue.n;
  if (!n) return TL_OK;
  qkey *k = malloc(n * sizeof *k);
  if (!k) return tl_nomem(e);
  for (size_t i = 0; i < n; i++) {
    const tl_ctx_queue *q = &c->queue.v[i];
    k[i] = (qkey){q->source_id, q->connection_id, q->rowid, q->dequeue, (uint32_t)i};
  }
  qsort(k, n, sizeof *k, cmp_qkey);
  int rc = TL_OK;
  /* A row key is unique when (source, rowid) occurs once among the queue rows: rows are read
  ** ordered by rowid per source, so equal keys are adjacent in c->queue. */
  uint8_t *multi = calloc(n, 1);
  if (!multi) rc = tl_nomem(e);
  for (size_t i = 1; rc == TL_OK && i < n; i++)
    if (c->queue.v[i].source_id == c->queue.v[i - 1].source_id &&
        c->queue.v[i].rowid == c->queue.v[i - 1].rowid)
      multi[i] = multi[i - 1] = 1;
  for (size_t i = 0; rc == TL_OK && i < n;) {
    size_t j = i;
    while (j < n && k[j].source_id == k[i].source_id && k[j].conn == k[i].conn) j++;
    /* group [i, j): enqueues first (dequeue = 0) */
    if (j - i == 2 && k[i].dequeue == 0 && k[i + 1].dequeue == 1) {
      const tl_ctx_queue *en = &c->queue.v[k[i].idx], *de = &c->queue.v[k[i + 1].idx];
      if (!multi[k[i].idx] && !multi[k[i + 1].idx] && en->start_ns <= de->start_ns &&
          (uint64_t)en->global_tid >> 32 == (uint64_t)de->global_tid >> 32) {
        tl_ctx_pair p = {k[i].idx, k[i + 1].idx};
        if (TL_VEC_PUSH(&c->pairs, p)) rc = tl_nomem(e);
      }
    }
    i = j;
  }
  free(multi);
  free(k);
  return rc;
}

static int host_scope(tl_context *c, const tl_trace *t, tl_err *e) {
  const tl_calls *ca = &t->calls;
  size_t nk = 0;
  call_key *k = malloc((ca->n ? ca->n : 1) * sizeof *k);
  if (!k) return tl_nomem(e);
  for (size_t i = 0; i < ca->n; i++) {
    const tl_call_shape *cs = tl_call_shape_of(t, i);
    int64_t gtid = cs->global_tid;
    if (ca->provider[i] != TL_PROVIDER_ASCEND || gtid == TL_ABSENT) continue;
    k[nk++] = (call_key){t->source_refs.v[cs->source_ref].source_id, gtid,
                         ca->start_ns[i], ca->end_ns[i], (uint32_t)i};
  }
  qsort(k, nk, sizeof *k, cmp_call_key);
  size_t np = c->pairs.n;
  call_key *pk = malloc((np ? np : 1) * sizeof *pk);
  if (!pk) {
    free(k);
    return tl_nomem(e);
  }
  for (size_t i = 0; i < np; i++) {
    const tl_ctx_queue *en = &c->queue.v[c->pairs.v[i].enq];
    pk[i] = (call_key){en->source_id, en->global_tid, en->start_ns, en->end_ns, (uint32_t)i};
  }
  qsort(pk, np, sizeof *pk, cmp_call_key);
  int rc = TL_OK;
  for (size_t m = 0; rc == TL_OK && m < c->markers.n; m++) {
    const tl_ctx_marker *mk = &c->markers.v[m];
    if (!tl_ctx_exec_marker_supported(c, mk->exec)) continue;
    rc = claim_calls(c, k, nk, mk->exec, mk->source_id, mk->global_tid, mk->start_ns, mk->end_ns,
                     TL_BASIS_SAME_THREAD, TL_CTX_NONE, e);
    /* Enqueues on the marker's thread inside the marker. */
    size_t lo = lower_bound(pk, np, mk->source_id, mk->global_tid, mk->start_ns);
    for (size_t i = lo; rc == TL_OK && i < np && pk[i].source_id == mk->source_id &&
                        pk[i].gtid == mk->global_tid && pk[i].start <= mk->end_ns;
         i++) {
      const tl_ctx_pair *p = &c->pairs.v[pk[i].call];
      const tl_ctx_queue *en = &c->queue.v[p->enq], *de = &c->queue.v[p->deq];
      if (en->end_ns > mk->end_ns) continue;
      rc = claim_calls(c, k, nk, mk->exec, de->source_id, de->global_tid, de->start_ns, de->end_ns,
                       TL_BASIS_TASK_QUEUE, pk[i].call, e);
    }
  }
  free(k);
  free(pk);
  if (rc) return rc;
  if (c->claims.n > 1) qsort(c->claims.v, c->claims.n, sizeof *c->claims.v, cmp_claim);
  size_t w = 0;
  for (size_t i = 0; i < c->claims.n; i++)
    if (!w || cmp_claim(&c->claims.v[w - 1], &c->claims.v[i]) != 0) c->claims.v[w++] = c->claims.v[i];
  c->claims.n = w;
  return TL_OK;
}

/* ------------------------------------------------------------------ device side */

#define MULTI (UINT32_MAX - 1)

/* Adds step s (closed: both files closed) to event i. */
static void add_step(tl_context *c, size_t i, uint32_t s, int closed, uint8_t *open) {
  if (c->event_nsteps[i] == 0) {
    c->event_step[i] = s;
    c->event_nsteps[i] = 1;
  } else if (c->event_step[i] != s) {
    c->event_nsteps[i] = 2;
  }
  if (!closed) open[i] = 1;
}

static int step_closed(const tl_context *c, uint32_t exec) {
  const tl_ctx_exec *x = &c->execs.v[exec];
  return c->sources.v[x->source].capture == TL_CAPTURE_CLOSED &&
         c->sources.v[c->steps.v[x->step].source].capture == TL_CAPTURE_CLOSED;
}

/* The connection id of event i (a trace event or a derived one), and whether it is device
** work; the label is looked at only for events with a connection. */
static int64_t conn_of(const tl_trace *t, const tl_derived *d, size_t i, int *work) {
  int64_t c = tl_event_correlation(t, d, i);
  if (c >= 0) *work = tl_label_is_device_work(t, tl_event_label_of(t, d, i));
  return c;
}

static int device_side(tl_context *c, const tl_trace *t, const tl_relations *rel,
                       const tl_replay *replay, tl_err *e) {
  /* Every event: the trace's and the launch anchors replay derived (numbered after them). */
  const tl_derived *d = replay ? &replay->launch_events : NULL;
  size_t n = tl_event_count(t, d);
  c->nevents = n;
  c->event_step = malloc((n ? n : 1) * sizeof *c->event_step);
  c->event_nsteps = calloc(n ? n : 1, 1);
  c->event_partition = malloc((n ? n : 1) * sizeof *c->event_partition);
  uint8_t *open = calloc(n ? n : 1, 1);
  tl_i64map claimer = {0}; /* call -> execution, or MULTI */
  int rc = TL_OK;
  if (!c->event_step || !c->event_nsteps || !c->event_partition || !open) rc = tl_nomem(e);
  for (size_t i = 0; rc == TL_OK && i < n; i++)
    c->event_step[i] = TL_CTX_NONE, c->event_partition[i] = TL_CTX_NO_PARTITION;
  for (size_t i = 0; rc == TL_OK && i < c->claims.n; i++) {
    const tl_ctx_claim *cl = &c->claims.v[i];
    int64_t *v = tl_i64map_get(&claimer, cl->call);
    if (!v)
      rc = tl_i64map_put(&claimer, cl->call, cl->exec) ? tl_nomem(e) : TL_OK;
    else if (*v != (int64_t)cl->exec)
      *v = MULTI;
  }
  for (size_t i = 0; rc == TL_OK && i < rel->n; i++) {
    const tl_relation *r = &rel->v[i];
    if (r->state != TL_SUPPORTED_EXACT && r->state != TL_SUPPORTED_DETERMINISTIC) continue;
    if (r->call < 0 || r->work < 0 || (size_t)r->work >= n) continue;
    int64_t *v = tl_i64map_get(&claimer, r->call);
    if (!v || *v == MULTI) continue;
    uint32_t x = (uint32_t)*v;
    add_step(c, (size_t)r->work, c->execs.v[x].step, step_closed(c, x), open);
  }
  /* Exact replay members take their launch's step: the launch's graph_launch device work
  ** (its MODEL_EXECUTE control event) decides, from its direct candidates only. */
  if (rc == TL_OK && replay) {
    size_t nl = replay->launches.n;
    uint32_t *lstep = malloc((nl ? nl : 1) * sizeof *lstep);
    uint8_t *lcount = calloc(nl ? nl : 1, 1), *lopen = calloc(nl ? nl : 1, 1);
    if (!lstep || !lcount || !lopen) rc = tl_nomem(e);
    for (size_t l = 0; rc == TL_OK && l < nl; l++) {
      const tl_graph_launch *L = &replay->launches.v[l];
      uint32_t ex = L->control[0];
      lstep[l] = TL_CTX_NONE;
      if (ex == TL_REPLAY_NONE || ex >= n ||
          tl_event_label_of(t, d, ex)->kind != TL_KIND_GRAPH_LAUNCH)
        continue;
      lstep[l] = c->event_step[ex], lcount[l] = c->event_nsteps[ex], lopen[l] = open[ex];
    }
    for (size_t l = 0; rc == TL_OK && l < nl; l++) {
      if (!lcount[l]) continue;
      const tl_graph_launch *L = &replay->launches.v[l];
      for (uint32_t m = 0; m < L->nmembers && L->first_member + m < replay->members.n; m++) {
        uint32_t ev = replay->members.v[L->first_member + m].event;
        if (ev >= n) continue;
        add_step(c, ev, lstep[l], !lopen[l], open);
        if (lcount[l] > 1) c->event_nsteps[ev] = 2;
      }
    }
    /* The synthetic launch anchor takes the launch occurrence's step (partition only). */
    for (size_t l = 0; rc == TL_OK && l < nl; l++) {
      const tl_graph_launch *L = &replay->launches.v[l];
      if (L->anchor_event == TL_REPLAY_NONE || L->anchor_event >= n) continue;
      if (lcount[l] == 1 && !lopen[l]) c->event_partition[L->anchor_event] = lstep[l];
    }
    free(lstep), free(lcount), free(lopen);
  }
  for (size_t i = 0; rc == TL_OK && i < n; i++) {
    if (c->event_nsteps[i] == 1) {
      c->stats.events_single_step++;
      if (!open[i]) c->event_partition[i] = c->event_step[i];
    } else if (c->event_nsteps[i] > 1) {
      c->stats.events_ambiguous++;
    }
  }
  /* A communication op takes the one step of the tasks it represents (same db, device and
  ** connection id, overlapping: the identity the anchor stage uses), when they agree. */
  tl_i64map first = {0};
  uint32_t *next = NULL;
  size_t nops = 0;
  int work;
  for (size_t i = 0; rc == TL_OK && i < n; i++)
    if (conn_of(t, d, i, &work) >= 0 && !work) nops++;
  if (rc == TL_OK && nops) {
    next = malloc(n * sizeof *next);
    if (!next) rc = tl_nomem(e);
    for (size_t i = n; rc == TL_OK && i-- > 0;) {
      int64_t ci = conn_of(t, d, i, &work);
      if (ci < 0 || work) continue;
      int64_t *head = tl_i64map_get(&first, ci);
      next[i] = head ? (uint32_t)*head : UINT32_MAX;
      if (tl_i64map_put(&first, ci, (int64_t)i)) rc = tl_nomem(e);
    }
    uint32_t *op_step = rc == TL_OK ? malloc(n * sizeof *op_step) : NULL;
    uint8_t *op_state = rc == TL_OK ? calloc(n, 1) : NULL; /* 0 none, 1 agreed, 2 conflict */
    if (rc == TL_OK && (!op_step || !op_state)) rc = tl_nomem(e);
    for (size_t i = 0; rc == TL_OK && i < n; i++) {
      int64_t ci = conn_of(t, d, i, &work);
      if (ci < 0 || !work) continue;
      size_t ii = i;
      const tl_events *ei = tl_events_of(t, d, &ii);
      int64_t *head = tl_i64map_get(&first, ci);
      for (uint32_t j = head ? (uint32_t)*head : UINT32_MAX; j != UINT32_MAX; j = next[j]) {
        size_t jj = j;
        const tl_events *ej = tl_events_of(t, d, &jj);
        if (tl_events_db_idx(ej, jj) != tl_events_db_idx(ei, ii) || tl_events_device_id(ej, jj) != tl_events_device_id(ei, ii)) continue;
        if (!(ei->start_ns[ii] < tl_events_end(ej, jj) && tl_events_end(ei, ii) > ej->start_ns[jj])) continue;
        uint32_t p = c->event_partition[i];
        if (p == TL_CTX_NO_PARTITION)
          op_state[j] = 2;
        else if (op_state[j] == 0)
          op_state[j] = 1, op_step[j] = p;
        else if (op_step[j] != p)
          op_state[j] = 2;
      }
    }
    for (size_t i = 0; rc == TL_OK && i < n; i++)
      if (op_state[i] == 1) c->event_partition[i] = op_step[i];
    free(op_step), free(op_state);
  }
  free(next);
  tl_i64map_free(&first);
  for (size_t i = 0; rc == TL_OK && i < n; i++)
    c->stats.events_partitioned += c->event_partition[i] != TL_CTX_NO_PARTITION;
  {
    size_t supported = 0;
    for (size_t i = 0; i < c->claims.n; i++) {
      if (i && c->claims.v[i - 1].exec == c->claims.v[i].exec &&
          c->claims.v[i - 1].call == c->claims.v[i].call)
        continue;
      int64_t *v = tl_i64map_get(&claimer, c->claims.v[i].call);
      supported += v && *v != MULTI;
    }
    c->stats.runtime_calls_supported = supported;
  }
  free(open);
  tl_i64map_free(&claimer);
  return rc;
}

/* ------------------------------------------------------------------ entry */

int tl_context_link(tl_context *c, const tl_trace *t, const tl_relations *rel,
                    const tl_profile *p, const tl_replay *replay, tl_err *e) {
  if (c->linked) return tl_fail(e, "tl_context_link: the context is already linked");
  c->linked = 1;
  c->marker_count = calloc(c->execs.n ? c->execs.n : 1, sizeof *c->marker_count);
  if (!c->marker_count) return tl_nomem(e);
  tl_i64map marker_exec = {0};
  int rc = TL_OK;
  for (size_t i = 0; rc == TL_OK && i < c->execs.n; i++)
    if (tl_i64map_put(&marker_exec, c->execs.v[i].marker, (int64_t)i)) rc = tl_nomem(e);
  /* Marker and queue rows of every profile file that has them (source_id = file index). */
  for (size_t f = 0; rc == TL_OK && p && f < p->files.n; f++) {
    char *path = tl_strdup(p->files.v[f].path);
    if (!path || TL_VEC_PUSH(&c->file_paths, path)) {
      free(path);
      rc = tl_nomem(e);
      break;
    }
    if (!p->inputs.v[p->files.v[f].db_idx].family->host_marks) continue;
    if (c->execs.n) rc = add_host_rows(c, p, f, &marker_exec, e);
  }
  tl_i64map_free(&marker_exec);
  for (size_t i = 0; rc == TL_OK && i < c->markers.n; i++) c->marker_count[c->markers.v[i].exec]++;
  if (rc == TL_OK) rc = pair_queue(c, e);
  if (rc == TL_OK) rc = host_scope(c, t, e);
  if (rc == TL_OK) rc = device_side(c, t, rel, replay, e);
  if (rc == TL_OK) {
    c->stats.markers = c->markers.n;
    c->stats.queue_rows = c->queue.n;
    c->stats.queue_pairs = c->pairs.n;
    for (size_t i = 0; i < c->execs.n; i++) c->stats.supported_markers += tl_ctx_exec_marker_supported(c, i);
  }
  return rc;
}

uint32_t tl_context_event_partition(const tl_context *c, size_t event) {
  if (!c || !c->event_partition || event >= c->nevents) return TL_CTX_NO_PARTITION;
  return c->event_partition[event];
}

int tl_context_partition_events(const tl_context *c, const uint32_t *events, size_t n,
                                uint32_t **out, tl_err *e) {
  uint32_t *p = malloc((n ? n : 1) * sizeof *p);
  if (!p) return tl_nomem(e);
  for (size_t k = 0; k < n; k++) p[k] = tl_context_event_partition(c, events[k]);
  *out = p;
  return TL_OK;
}
