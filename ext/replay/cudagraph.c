/*
** cudagraph.c: exact CUDA graph replays from Nsight Systems exports (recovery.md 7.2).
**
** tl_replay_cuda() appends to a tl_replay (replay.h):
**
**   launches   one per cudaGraphLaunch* runtime call (provider cuda, correlationId present)
**              of an input on the node-level path, i.e. whose CUDA_GRAPH_NODE_EVENTS has
**              rows. A graph-level export (no node table) gets no launches at all.
**   members    the launch's children: KERNEL, MEMCPY and MEMSET events carrying graphNodeId
**              whose correlationId is the launch's, matched by identity only (never by
**              time). Kinds compute / communication (NCCL collective kernels) / data_move.
**   units      one single-graph unit per promoted launch (symbol CUDAGraph)
**   envelopes  one per CUPTI_ACTIVITY_KIND_GRAPH_TRACE event: temporal evidence only. An
**              envelope never creates members and never claims tasks it encloses.
**
** Status of a launch, first match wins:
**   capability gate   a graphNodeId outside KERNEL/MEMCPY/MEMSET (CUDA_GRAPH_NODE_EVENTS
**                     aside), or a graph child with a NULL required column (contextId,
**                     correlationId; MEMCPY bytes and copyKind; MEMSET bytes), or a child
**                     table lacking those columns -> every launch of the input
**                     TL_LAUNCH_MISSING_BODY_CAPABILITY
**   ambiguous         another graph launch with the same correlationId, or children on
**                     more than one device or context -> TL_LAUNCH_AMBIGUOUS_BODY
**   no children       TL_LAUNCH_MISSING_BODY_EVIDENCE
**   body mismatch     the launch's identity (its raw node set) was seen with another body
**                     -> TL_LAUNCH_BODY_MISMATCH
**   seen once         the identity occurs in fewer than 2 launches of the input
**                     -> TL_LAUNCH_INSUFFICIENT_REPEAT_EVIDENCE
**   else              TL_LAUNCH_EXACT: promoted, one unit of its own
** The first three leave the launch without members; the last three keep members and body.
** A launch with a body has policies cuda_runtime_correlation / cuda_graph_node_set and the
** interval, device and context of its members; one without keeps unmatched / none, the
** host call's interval and the call's device (0 when it has none). graph_id numbers the
** distinct identities from 1 in launch order; a promoted unit's graph template is keyed
** "exact_replay_composition_v1\n0:body=<body template>:single_graph\n".
**
** Signatures. Identity: "cuda_graph_raw_node_set_v1\ndevice=D\ncontext=C\n" and the
** sorted distinct graphNodeIds, one a line. Body: "cuda_graph_observed_stream_set_v1\n
** stream_count=N\n" then per lane (the children of one stream in (start, end, event)
** order) "lane_begin\n", a line "<kernel|communication|memcpy|memset>\t<label>\tnode=<k>\n"
** per child (k = rank of its graphNodeId in the node set) and "lane_end\n"; lanes are
** sorted by their text, then raw stream id, which gives lane_ordinal. Member order is
** (lane_ordinal, task_ordinal); the launch's stream is its first member's.
**
** Reading: the few facts the trace does not carry come from the Nsight reader
** (tl_cuda_graph_facts, ext/source/nsys_graph.c): whether CUDA_GRAPH_NODE_EVENTS has rows,
** the capability gate over the other tables, graphNodeId -> originalGraphNodeId (kept only
** when unique), and GRAPH_TRACE graphId/graphExecId by rowid. A trace built
** without a profile (tests) stands on the trace alone: the node-level path is on when a
** child event carries a graphNodeId, the gate checks the events.
**
** Cost: one pass over events and calls, hash joins on correlationId, per-launch sorts:
** O(n + m log m) for n events and m graph children. Output order is deterministic:
** launches by (db_idx, device_id, start, correlation_id, call), envelopes by (db_idx,
** device_id, start, end, stream, event).
*/
#include "replay/replay.h"
#include "util/buf.h"
#include "util/i64map.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KERNEL_TABLE "CUPTI_ACTIVITY_KIND_KERNEL"
#define MEMCPY_TABLE "CUPTI_ACTIVITY_KIND_MEMCPY"
#define MEMSET_TABLE "CUPTI_ACTIVITY_KIND_MEMSET"
#define GRAPH_TRACE_TABLE "CUPTI_ACTIVITY_KIND_GRAPH_TRACE"
#define MIN_REPEATS 2

/* ------------------------------------------------------------------ per input */

/* What one input says beyond the trace (its family's cuda_graph_facts, source.h). */
typedef struct db_facts {
  int nsys;             /* an input with CUDA graph facts (or any input of a profile-less trace) */
  tl_cuda_graph_facts g;
} db_facts;

static void db_facts_free(db_facts *f) { tl_cuda_graph_facts_free(&f->g); }

/* ------------------------------------------------------------------ signatures */

/* Exact string interning with 1-based ids (identities and bodies of this pass). */
typedef struct sig_table {
  TL_VEC(char *) s;
  TL_VEC(uint32_t) next;   /* chain of equal hashes, index + 1 */
  tl_i64map head;          /* hash -> index + 1 */
} sig_table;

static uint64_t fnv1a(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
  return h;
}

/* Returns the id of text (copied on first sight), 0 on out-of-memory. */
static uint32_t sig_intern(sig_table *t, const char *text, size_t n) {
  int64_t h = (int64_t)fnv1a(text, n);
  int64_t *hd = tl_i64map_get(&t->head, h);
  for (uint32_t k = hd ? (uint32_t)*hd : 0; k; k = t->next.v[k - 1])
    if (strlen(t->s.v[k - 1]) == n && memcmp(t->s.v[k - 1], text, n) == 0) return k;
  char *copy = malloc(n + 1);
  if (!copy) return 0;
  memcpy(copy, text, n);
  copy[n] = 0;
  uint32_t prev = hd ? (uint32_t)*hd : 0;
  if (TL_VEC_PUSH(&t->s, copy)) return free(copy), 0;
  if (TL_VEC_PUSH(&t->next, prev) || tl_i64map_put(&t->head, h, (int64_t)t->s.n)) return 0;
  return (uint32_t)t->s.n;
}

static void sig_table_free(sig_table *t) {
  for (size_t i = 0; i < t->s.n; i++) free(t->s.v[i]);
  TL_VEC_FREE(&t->s);
  TL_VEC_FREE(&t->next);
  tl_i64map_free(&t->head);
}

/* ------------------------------------------------------------------ the algorithm */

enum { SRC_OTHER = 0, SRC_KERNEL, SRC_MEMCPY, SRC_MEMSET, SRC_GRAPH_TRACE };

/* One graph launch being reconstructed. */
typedef struct launch_work {
  uint32_t call;
  uint16_t db;
  uint8_t status;
  uint8_t dup;               /* another launch of the input has its correlationId */
  uint32_t first, n;         /* its children: kid[first ..), in member order once built */
  uint32_t device, stream;
  int64_t start, end, corr, context;
  uint32_t identity, body;   /* sig_table ids, 0 = none */
  uint32_t chain;            /* next launch with the same correlationId, index + 1 */
} launch_work;

/* One child while its body is built. */
typedef struct kid_sort {
  uint32_t stream, event;
  int64_t start, end;
} kid_sort;

typedef struct lane_sort {
  const char *text;
  size_t len;
  uint32_t stream, first, n;
} lane_sort;

typedef struct cuda_pass {
  const tl_trace *t;
  tl_replay *r;
  tl_err *e;
  size_t ndb;
  db_facts *db;
  uint8_t *src_class;        /* per trace source_ref */
  TL_VEC(launch_work) launches;
  TL_VEC(uint32_t) kids;     /* child events, grouped by launch */
  uint32_t *lane, *task;     /* per kid, once bodies are built */
  sig_table identities, bodies;
  tl_buf text;               /* scratch for signatures */
  size_t first_launch;       /* r->launches.n before this pass */
} cuda_pass;

static int cmp_kid(const void *a, const void *b) {
  const kid_sort *x = a, *y = b;
  if (x->stream != y->stream) return x->stream < y->stream ? -1 : 1;
  if (x->start != y->start) return x->start < y->start ? -1 : 1;
  if (x->end != y->end) return x->end < y->end ? -1 : 1;
  return x->event < y->event ? -1 : x->event > y->event;
}

static int cmp_lane(const void *a, const void *b) {
  const lane_sort *x = a, *y = b;
  size_t n = x->len < y->len ? x->len : y->len;
  int c = memcmp(x->text, y->text, n);
  if (c) return c;
  if (x->len != y->len) return x->len < y->len ? -1 : 1;
  return x->stream < y->stream ? -1 : x->stream > y->stream;
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

static int contains_graph_launch(const char *s) {
  static const char needle[] = "cudagraphlaunch";
  for (; *s; s++) {
    size_t k = 0;
    while (needle[k] && s[k] && (s[k] | 0x20) == needle[k]) k++;
    if (!needle[k]) return 1;
  }
  return 0;
}

static uint8_t source_class(const char *table) {
  if (strcmp(table, KERNEL_TABLE) == 0) return SRC_KERNEL;
  if (strcmp(table, MEMCPY_TABLE) == 0) return SRC_MEMCPY;
  if (strcmp(table, MEMSET_TABLE) == 0) return SRC_MEMSET;
  if (strcmp(table, GRAPH_TRACE_TABLE) == 0) return SRC_GRAPH_TRACE;
  return SRC_OTHER;
}

/* Per-input facts: from the file for an Nsight input of a profile, from nothing else
** otherwise (the event pass below completes them). */
static int load_facts(cuda_pass *x, const tl_profile *p) {
  const tl_trace *t = x->t;
  size_t ndb = p ? p->inputs.n : 0;
  for (size_t i = 0; i < t->ev.n; i++)
    if ((size_t)tl_events_db_idx(&t->ev, i) + 1 > ndb) ndb = (size_t)tl_events_db_idx(&t->ev, i) + 1;
  for (size_t i = 0; i < t->calls.n; i++)
    if ((size_t)t->calls.db_idx[i] + 1 > ndb) ndb = (size_t)t->calls.db_idx[i] + 1;
  x->ndb = ndb;
  x->db = calloc(ndb ? ndb : 1, sizeof *x->db);
  x->src_class = calloc(t->source_refs.n ? t->source_refs.n : 1, 1);
  if (!x->db || !x->src_class) return tl_nomem(x->e);
  for (size_t s = 0; s < t->source_refs.n; s++)
    x->src_class[s] = source_class(tl_trace_source_table(t, (uint16_t)s));
  uint8_t *has_trace = calloc(ndb ? ndb : 1, 1);
  if (!has_trace) return tl_nomem(x->e);
  for (size_t i = 0; i < t->ev.n; i++)
    if (x->src_class[tl_events_source_ref(&t->ev, i)] == SRC_GRAPH_TRACE) has_trace[tl_events_db_idx(&t->ev, i)] = 1;
  int rc = TL_OK;
  for (size_t d = 0; rc == TL_OK && d < ndb; d++) {
    db_facts *f = &x->db[d];
    if (!p) {
      f->nsys = 1, f->g.capable = 1; /* node_level: set by the event pass */
    } else if (d < p->inputs.n && p->inputs.v[d].family->cuda_graph_facts) {
      f->nsys = 1;
      rc = p->inputs.v[d].family->cuda_graph_facts(p, (int)d, has_trace[d], &f->g, x->e);
    }
  }
  free(has_trace);
  return rc;
}

/* The event pass: graph children (grouped later) and the event side of the gate. */
static int collect_children(cuda_pass *x, const tl_profile *p) {
  const tl_events *ev = &x->t->ev;
  for (size_t i = 0; i < ev->n; i++) {
    if (tl_i64col_get(&ev->graph_node_id, i) == TL_ABSENT) continue;
    db_facts *f = &x->db[tl_events_db_idx(ev, i)];
    if (!f->nsys) continue;
    uint8_t c = x->src_class[tl_events_source_ref(ev, i)];
    if (c == SRC_OTHER || c == SRC_GRAPH_TRACE) {
      f->g.capable = 0;
      continue;
    }
    if (!p) f->g.node_level = 1;
    if (tl_i64col_get(&ev->correlation_id, i) == TL_ABSENT ||
        tl_i64col_get(&ev->context_id, i) == TL_ABSENT) {
      f->g.capable = 0;
      continue;
    }
    if (TL_VEC_PUSH(&x->kids, (uint32_t)i)) return tl_nomem(x->e);
  }
  return TL_OK;
}

/* Launch calls of node-level inputs, chained by correlationId in corr_map. */
static int collect_launches(cuda_pass *x, tl_i64map *corr_map) {
  const tl_trace *t = x->t;
  const tl_calls *c = &t->calls;
  tl_i64map is_launch = {0}; /* api_name id -> 0/1, so names are scanned once */
  int rc = TL_OK;
  for (size_t i = 0; i < c->n && rc == TL_OK; i++) {
    db_facts *f = &x->db[c->db_idx[i]];
    if (!f->nsys || !f->g.node_level || c->provider[i] != TL_PROVIDER_CUDA ||
        tl_i64col_get(&c->correlation_id, i) == TL_ABSENT)
      continue;
    int64_t *known = tl_i64map_get(&is_launch, c->api_name[i]);
    int yes = known ? (int)*known : contains_graph_launch(tl_str(t, c->api_name[i]));
    if (!known && tl_i64map_put(&is_launch, c->api_name[i], yes)) rc = tl_nomem(x->e);
    if (!yes || rc) continue;
    launch_work w;
    memset(&w, 0, sizeof w);
    w.call = (uint32_t)i;
    w.db = c->db_idx[i];
    w.corr = tl_i64col_get(&c->correlation_id, i);
    int64_t device = tl_i64col_get(&c->device_id, i);
    w.device = device >= 0 && device <= (int64_t)UINT32_MAX ? (uint32_t)device : 0;
    w.stream = TL_NO_STREAM;
    w.start = c->start_ns[i], w.end = c->end_ns[i];
    w.context = TL_ABSENT;
    int64_t *hd = tl_i64map_get(corr_map, w.corr);
    for (uint32_t k = hd ? (uint32_t)*hd : 0; k; k = x->launches.v[k - 1].chain)
      if (x->launches.v[k - 1].db == w.db) w.dup = 1, x->launches.v[k - 1].dup = 1;
    w.chain = hd ? (uint32_t)*hd : 0;
    if (TL_VEC_PUSH(&x->launches, w) ||
        tl_i64map_put(corr_map, w.corr, (int64_t)x->launches.n))
      rc = tl_nomem(x->e);
  }
  tl_i64map_free(&is_launch);
  return rc;
}

/* The launch of (db, corr) through the chains of corr_map, 0 when none; launch index + 1. */
static uint32_t find_launch(const launch_work *l, const tl_i64map *corr_map, uint16_t db,
                            int64_t corr) {
  int64_t *hd = tl_i64map_get(corr_map, corr);
  for (uint32_t k = hd ? (uint32_t)*hd : 0; k; k = l[k - 1].chain)
    if (l[k - 1].db == db) return k;
  return 0;
}

/* Regroups x->kids by launch (stable, so each group stays in event order); children
** without a launch are dropped. */
static int group_children(cuda_pass *x, const tl_i64map *corr_map) {
  const tl_events *ev = &x->t->ev;
  size_t nl = x->launches.n, nk = x->kids.n;
  uint32_t *owner = malloc((nk ? nk : 1) * sizeof *owner);
  uint32_t *grouped = malloc((nk ? nk : 1) * sizeof *grouped);
  if (!owner || !grouped) return free(owner), free(grouped), tl_nomem(x->e);
  for (size_t k = 0; k < nk; k++) {
    uint32_t i = x->kids.v[k];
    owner[k] = find_launch(x->launches.v, corr_map, tl_events_db_idx(ev, i),
                           tl_i64col_get(&ev->correlation_id, i));
    if (owner[k]) x->launches.v[owner[k] - 1].n++;
  }
  uint32_t at = 0;
  for (size_t l = 0; l < nl; l++) {
    x->launches.v[l].first = at;
    at += x->launches.v[l].n;
    x->launches.v[l].n = 0;
  }
  for (size_t k = 0; k < nk; k++) {
    if (!owner[k]) continue;
    launch_work *w = &x->launches.v[owner[k] - 1];
    grouped[w->first + w->n++] = x->kids.v[k];
  }
  free(owner);
  free(x->kids.v);
  x->kids.v = grouped;
  x->kids.n = x->kids.cap = at;
  return TL_OK;
}

static const char *kid_word(const cuda_pass *x, uint32_t event) {
  const tl_trace *t = x->t;
  switch (x->src_class[tl_events_source_ref(&t->ev, event)]) {
    case SRC_MEMCPY: return "memcpy";
    case SRC_MEMSET: return "memset";
    default: return tl_event_label(t, event)->kind == TL_KIND_COMMUNICATION ? "communication"
                                                                            : "kernel";
  }
}

/* Builds the body of one launch with children: status (ambiguous or pending), identity,
** body, lanes and tasks; reorders its children into member order. */
static int build_body(cuda_pass *x, launch_work *w) {
  const tl_events *ev = &x->t->ev;
  uint32_t *kid = x->kids.v + w->first;
  uint32_t n = w->n;
  uint32_t device = tl_events_device_id(ev, kid[0]);
  int64_t context = tl_i64col_get(&ev->context_id, kid[0]);
  for (uint32_t k = 1; k < n; k++)
    if (tl_events_device_id(ev, kid[k]) != device || tl_i64col_get(&ev->context_id, kid[k]) != context) {
      w->status = TL_LAUNCH_AMBIGUOUS_BODY;
      return TL_OK;
    }
  w->device = device, w->context = context;
  kid_sort *ks = malloc(n * sizeof *ks);
  int64_t *nodes = malloc(n * sizeof *nodes);
  lane_sort *lanes = malloc(n * sizeof *lanes);
  size_t *lane_off = malloc(n * sizeof *lane_off);
  if (!ks || !nodes || !lanes || !lane_off) goto nomem;
  w->start = INT64_MAX, w->end = INT64_MIN;
  for (uint32_t k = 0; k < n; k++) {
    uint32_t i = kid[k];
    ks[k] = (kid_sort){tl_events_stream_id(ev, i), i, ev->start_ns[i], tl_events_end(ev, i)};
    nodes[k] = tl_i64col_get(&ev->graph_node_id, i);
    if (ev->start_ns[i] < w->start) w->start = ev->start_ns[i];
    if (tl_events_end(ev, i) > w->end) w->end = tl_events_end(ev, i);
  }
  qsort(ks, n, sizeof *ks, cmp_kid);
  qsort(nodes, n, sizeof *nodes, cmp_i64);
  uint32_t nnodes = 0;
  for (uint32_t k = 0; k < n; k++)
    if (!nnodes || nodes[nnodes - 1] != nodes[k]) nodes[nnodes++] = nodes[k];

  /* Identity: device, context and the raw node set. The input is part of the key only,
  ** since node ids are per process. */
  tl_buf *b = &x->text;
  tl_buf_reset(b);
  tl_buf_printf(b, "%u\ncuda_graph_raw_node_set_v1\ndevice=%" PRIu32 "\ncontext=%" PRId64 "\n",
                (unsigned)w->db, w->device, w->context);
  for (uint32_t k = 0; k < nnodes; k++) tl_buf_printf(b, "%" PRId64 "\n", nodes[k]);
  if (b->oom) goto nomem;
  if (!(w->identity = sig_intern(&x->identities, b->p, b->n))) goto nomem;

  /* Lanes: the text of each stream's children, in one buffer. */
  tl_buf_reset(b);
  uint32_t nlanes = 0;
  for (uint32_t k = 0; k < n; k++) {
    if (k == 0 || ks[k].stream != ks[k - 1].stream) {
      lanes[nlanes] = (lane_sort){NULL, 0, ks[k].stream, k, 0};
      lane_off[nlanes++] = b->n;
    }
    lanes[nlanes - 1].n++;
    uint32_t i = ks[k].event;
    int64_t node = tl_i64col_get(&ev->graph_node_id, i);
    int64_t *pos = bsearch(&node, nodes, nnodes, sizeof *nodes, cmp_i64);
    tl_buf_printf(b, "%s\t%s\tnode=%u\n", kid_word(x, i), tl_str(x->t, tl_event_label(x->t, i)->name),
                  (unsigned)(pos - nodes));
  }
  if (b->oom) goto nomem;
  for (uint32_t l = 0; l < nlanes; l++) {
    lanes[l].text = b->p + lane_off[l];
    lanes[l].len = (l + 1 < nlanes ? lane_off[l + 1] : b->n) - lane_off[l];
  }
  qsort(lanes, nlanes, sizeof *lanes, cmp_lane);
  tl_buf body = {0};
  tl_buf_printf(&body, "cuda_graph_observed_stream_set_v1\nstream_count=%u\n", (unsigned)nlanes);
  uint32_t m = 0;
  for (uint32_t l = 0; l < nlanes; l++) {
    tl_buf_puts(&body, "lane_begin\n");
    tl_buf_append(&body, lanes[l].text, lanes[l].len);
    tl_buf_puts(&body, "lane_end\n");
    for (uint32_t k = 0; k < lanes[l].n; k++, m++) {
      kid[m] = ks[lanes[l].first + k].event;
      x->lane[w->first + m] = l;
      x->task[w->first + m] = k;
    }
  }
  w->stream = lanes[0].stream;
  w->body = body.oom ? 0 : sig_intern(&x->bodies, body.p, body.n);
  tl_buf_free(&body);
  if (!w->body) goto nomem;
  free(ks), free(nodes), free(lanes), free(lane_off);
  return TL_OK;
nomem:
  free(ks), free(nodes), free(lanes), free(lane_off);
  return tl_nomem(x->e);
}

/* Statuses of every launch; bodies for those that can have one. */
static int decide(cuda_pass *x) {
  size_t nl = x->launches.n;
  x->lane = malloc((x->kids.n ? x->kids.n : 1) * sizeof *x->lane);
  x->task = malloc((x->kids.n ? x->kids.n : 1) * sizeof *x->task);
  if (!x->lane || !x->task) return tl_nomem(x->e);
  for (size_t l = 0; l < nl; l++) {
    launch_work *w = &x->launches.v[l];
    if (!x->db[w->db].g.capable) w->status = TL_LAUNCH_MISSING_BODY_CAPABILITY;
    else if (w->dup) w->status = TL_LAUNCH_AMBIGUOUS_BODY;
    else if (!w->n) w->status = TL_LAUNCH_MISSING_BODY_EVIDENCE;
    else if (build_body(x, w)) return TL_ERROR;
    /* Launches that stay without a body keep no children. */
    if (!w->body) w->n = 0;
  }
  /* Per identity: how many launches, and whether they all share one body. */
  size_t ni = x->identities.s.n;
  uint32_t *seen = calloc(ni + 1, sizeof *seen), *body_of = calloc(ni + 1, sizeof *body_of);
  uint8_t *mismatch = calloc(ni + 1, 1);
  if (!seen || !body_of || !mismatch) {
    free(seen), free(body_of), free(mismatch);
    return tl_nomem(x->e);
  }
  for (size_t l = 0; l < nl; l++) {
    launch_work *w = &x->launches.v[l];
    if (!w->body) continue;
    seen[w->identity]++;
    if (!body_of[w->identity]) body_of[w->identity] = w->body;
    else if (body_of[w->identity] != w->body) mismatch[w->identity] = 1;
  }
  for (size_t l = 0; l < nl; l++) {
    launch_work *w = &x->launches.v[l];
    if (!w->body) continue;
    w->status = mismatch[w->identity]      ? TL_LAUNCH_BODY_MISMATCH
                : seen[w->identity] < MIN_REPEATS ? TL_LAUNCH_INSUFFICIENT_REPEAT_EVIDENCE
                                                  : TL_LAUNCH_EXACT;
  }
  free(seen), free(body_of), free(mismatch);
  return TL_OK;
}

static int cmp_launch(const void *a, const void *b) {
  const launch_work *x = a, *y = b;
  if (x->db != y->db) return x->db < y->db ? -1 : 1;
  if (x->device != y->device) return x->device < y->device ? -1 : 1;
  if (x->start != y->start) return x->start < y->start ? -1 : 1;
  if (x->corr != y->corr) return x->corr < y->corr ? -1 : 1;
  return x->call < y->call ? -1 : x->call > y->call;
}

/* Appends launches, members and units to r in launch order. */
static int publish_launches(cuda_pass *x) {
  tl_replay *r = x->r;
  const tl_events *ev = &x->t->ev;
  size_t nl = x->launches.n;
  uint32_t *graph_id = calloc(x->identities.s.n + 1, sizeof *graph_id);
  uint32_t *body_id = calloc(x->bodies.s.n + 1, sizeof *body_id);
  if (!graph_id || !body_id) goto nomem;
  /* Sort a copy of the keys: children ranges keep pointing into kids/lane/task. */
  launch_work *sorted = malloc((nl ? nl : 1) * sizeof *sorted);
  if (!sorted) goto nomem;
  if (nl) {
    memcpy(sorted, x->launches.v, nl * sizeof *sorted);
    qsort(sorted, nl, sizeof *sorted, cmp_launch);
  }
  uint32_t next_graph = 0;
  for (size_t s = 0; s < nl; s++) {
    const launch_work *w = &sorted[s];
    tl_graph_launch L;
    memset(&L, 0, sizeof L);
    L.db_idx = w->db;
    L.provider = TL_GRAPH_CUDA;
    L.match_policy = w->body ? TL_MATCH_CUDA_CORRELATION : TL_MATCH_UNMATCHED;
    L.association_policy = w->body ? TL_ASSOC_CUDA_NODE_SET : TL_ASSOC_NONE;
    L.status = w->status;
    L.slot_role = TL_SLOT_NONE;
    L.device_id = w->device;
    L.stream_id = w->stream;
    L.start_ns = w->start, L.end_ns = w->end;
    L.correlation_id = w->corr;
    L.graph_id = TL_ABSENT;
    if (w->identity) {
      if (!graph_id[w->identity]) graph_id[w->identity] = ++next_graph;
      L.graph_id = graph_id[w->identity];
    }
    L.control[0] = L.control[1] = L.control[2] = TL_REPLAY_NONE;
    L.host_call = w->call;
    L.first_member = (uint32_t)r->members.n;
    L.nmembers = w->n;
    if (w->body) {
      if (!body_id[w->body] &&
          !(body_id[w->body] = tl_replay_intern_body(r, x->bodies.s.v[w->body - 1])))
        goto nomem_sorted;
      L.body_template = body_id[w->body];
    }
    L.unit = L.region = L.anchor_event = TL_REPLAY_NONE;
    L.member_order = L.slot_order = TL_REPLAY_NONE;
    uint32_t launch_idx = (uint32_t)r->launches.n;
    if (w->status == TL_LAUNCH_EXACT) {
      char sig[96];
      snprintf(sig, sizeof sig, "exact_replay_composition_v1\n0:body=%u:single_graph\n",
               (unsigned)L.body_template);
      tl_replay_unit u = {w->db, TL_GRAPH_CUDA, w->device, launch_idx, 1,
                          tl_replay_intern_graph(r, sig), TL_REPLAY_NONE};
      if (!u.graph_template) goto nomem_sorted;
      L.unit = (uint32_t)r->units.n;
      L.member_order = L.slot_order = 0;
      L.slot_role = TL_SLOT_CUDA;
      if (TL_VEC_PUSH(&r->units, u)) goto nomem_sorted;
    }
    if (TL_VEC_PUSH(&r->launches, L) || TL_VEC_RESERVE(&r->members, r->members.n + w->n))
      goto nomem_sorted;
    for (uint32_t k = 0; k < w->n; k++) {
      uint32_t i = x->kids.v[w->first + k];
      tl_graph_member m;
      memset(&m, 0, sizeof m);
      m.launch = launch_idx;
      m.event = i;
      m.lane_ordinal = x->lane[w->first + k];
      m.task_ordinal = x->task[w->first + k];
      uint8_t c = x->src_class[tl_events_source_ref(&x->t->ev, i)];
      m.kind = c == SRC_MEMCPY || c == SRC_MEMSET ? TL_MEMBER_DATA_MOVE
               : tl_event_label(x->t, i)->kind == TL_KIND_COMMUNICATION ? TL_MEMBER_COMMUNICATION
                                                                        : TL_MEMBER_COMPUTE;
      int64_t *orig = tl_i64map_get(&x->db[w->db].g.original, tl_i64col_get(&ev->graph_node_id, i));
      m.original_graph_node_id = orig && *orig != TL_ORIGINAL_AMBIGUOUS ? *orig : TL_ABSENT;
      r->members.v[r->members.n++] = m;
    }
  }
  free(sorted), free(graph_id), free(body_id);
  return TL_OK;
nomem_sorted:
  free(sorted);
nomem:
  free(graph_id), free(body_id);
  return tl_nomem(x->e);
}

static int cmp_envelope(const void *a, const void *b) {
  const tl_graph_envelope *x = a, *y = b;
  if (x->db_idx != y->db_idx) return x->db_idx < y->db_idx ? -1 : 1;
  if (x->device_id != y->device_id) return x->device_id < y->device_id ? -1 : 1;
  if (x->start_ns != y->start_ns) return x->start_ns < y->start_ns ? -1 : 1;
  if (x->end_ns != y->end_ns) return x->end_ns < y->end_ns ? -1 : 1;
  if (x->stream_id != y->stream_id) return x->stream_id < y->stream_id ? -1 : 1;
  return x->event < y->event ? -1 : x->event > y->event;
}

/* Graph-level GRAPH_TRACE envelopes: temporal evidence only, never members. Each names the
** published launch of the same (input, correlationId) when exactly one exists. */
static int publish_envelopes(cuda_pass *x) {
  tl_replay *r = x->r;
  const tl_events *ev = &x->t->ev;
  size_t first = r->envelopes.n;
  /* correlationId -> published launch + 1, or 0 when two share it (per input, chained). */
  tl_i64map corr_map = {0};
  uint32_t *chain = NULL;
  int rc = TL_OK;
  size_t base = x->first_launch;
  size_t nl = r->launches.n - base;
  if (nl && !(chain = calloc(nl, sizeof *chain))) return tl_nomem(x->e);
  for (size_t l = 0; l < nl && rc == TL_OK; l++) {
    int64_t c = r->launches.v[base + l].correlation_id;
    int64_t *hd = tl_i64map_get(&corr_map, c);
    chain[l] = hd ? (uint32_t)*hd : 0;
    if (tl_i64map_put(&corr_map, c, (int64_t)l + 1)) rc = tl_nomem(x->e);
  }
  for (size_t i = 0; i < ev->n && rc == TL_OK; i++) {
    if (x->src_class[tl_events_source_ref(ev, i)] != SRC_GRAPH_TRACE || !x->db[tl_events_db_idx(ev, i)].nsys)
      continue;
    const db_facts *f = &x->db[tl_events_db_idx(ev, i)];
    tl_graph_envelope g;
    memset(&g, 0, sizeof g);
    g.db_idx = tl_events_db_idx(ev, i);
    g.provider = TL_GRAPH_CUDA;
    g.device_id = tl_events_device_id(ev, i), g.stream_id = tl_events_stream_id(ev, i);
    g.event = (uint32_t)i;
    g.launch = TL_REPLAY_NONE;
    g.start_ns = ev->start_ns[i], g.end_ns = tl_events_end(ev, i);
    g.correlation_id = tl_i64col_get(&ev->correlation_id, i);
    g.context_id = tl_i64col_get(&ev->context_id, i);
    int64_t *gid = tl_i64map_get(&f->g.graph_id, tl_i64col_get(&ev->source_rowid, i));
    int64_t *xid = tl_i64map_get(&f->g.exec_id, tl_i64col_get(&ev->source_rowid, i));
    g.graph_id = gid ? *gid : TL_ABSENT;
    g.graph_exec_id = xid ? *xid : TL_ABSENT;
    g.graph_kind = "cuda_graph_trace";
    if (g.correlation_id != TL_ABSENT) {
      int64_t *hd = tl_i64map_get(&corr_map, g.correlation_id);
      int found = 0;
      for (uint32_t k = hd ? (uint32_t)*hd : 0; k; k = chain[k - 1])
        if (r->launches.v[base + k - 1].db_idx == g.db_idx) {
          found++;
          g.launch = (uint32_t)(base + k - 1);
        }
      if (found != 1) g.launch = TL_REPLAY_NONE;
    }
    if (TL_VEC_PUSH(&r->envelopes, g)) rc = tl_nomem(x->e);
  }
  free(chain);
  tl_i64map_free(&corr_map);
  if (rc == TL_OK && r->envelopes.n > first)
    qsort(r->envelopes.v + first, r->envelopes.n - first, sizeof *r->envelopes.v, cmp_envelope);
  return rc;
}

/* A graph launch of an input whose family gives launch envelopes (Kineto), while its kernels
** are gathered: its interval, place and how many device events carry its correlation id. */
typedef struct corr_launch {
  uint16_t db;
  int64_t corr;
  int dup;             /* another launch of the input has the same correlation id */
  size_t events;
  int64_t start, end;
  uint32_t device, stream;
  int64_t context;
  int mixed_device;    /* events on more than one device: no envelope (fail closed) */
} corr_launch;

static int corr_launch_order(const void *a, const void *b) {
  const corr_launch *x = a, *y = b;
  if (x->db != y->db) return x->db < y->db ? -1 : 1;
  return x->corr < y->corr ? -1 : x->corr > y->corr;
}

/* Kineto: a replayed kernel carries its cudaGraphLaunch's correlation id but no graph or node
** id, so no body is exact (inputs.md section 8: "only envelopes are available otherwise").
** Each launch whose id no other launch of its input shares, and whose device events (kernels,
** copies, sets with that id) lie on one device, gives a graph-level envelope over their
** interval: temporal evidence only, as a GRAPH_TRACE row is, with no event of its own (the
** trace has none for the launch) and no exact launch. Its stream is theirs when they share
** one. */
static int correlation_envelopes(cuda_pass *x, const tl_profile *p) {
  const tl_trace *t = x->t;
  const tl_calls *c = &t->calls;
  const tl_events *ev = &t->ev;
  if (!p) return TL_OK;
  int any = 0;
  for (size_t d = 0; d < p->inputs.n; d++) any |= p->inputs.v[d].family->launch_envelopes;
  if (!any) return TL_OK;
  TL_VEC(corr_launch) L = {0};
  tl_i64map is_launch = {0}; /* api_name id -> 0/1 */
  int rc = TL_OK;
  for (size_t i = 0; i < c->n && rc == TL_OK; i++) {
    uint16_t db = c->db_idx[i];
    if (db >= p->inputs.n || !p->inputs.v[db].family->launch_envelopes ||
        tl_i64col_get(&c->correlation_id, i) == TL_ABSENT)
      continue;
    int64_t *known = tl_i64map_get(&is_launch, c->api_name[i]);
    int yes = known ? (int)*known : contains_graph_launch(tl_str(t, c->api_name[i]));
    if (!known && tl_i64map_put(&is_launch, c->api_name[i], yes)) rc = tl_nomem(x->e);
    corr_launch l = {db, tl_i64col_get(&c->correlation_id, i), 0, 0, 0, 0, 0, TL_NO_STREAM,
                     TL_ABSENT, 0};
    if (yes && rc == TL_OK && TL_VEC_PUSH(&L, l)) rc = tl_nomem(x->e);
  }
  tl_i64map_free(&is_launch);
  if (rc != TL_OK || !L.n) {
    TL_VEC_FREE(&L);
    return rc;
  }
  qsort(L.v, L.n, sizeof *L.v, corr_launch_order);
  for (size_t k = 1; k < L.n; k++)
    if (L.v[k].db == L.v[k - 1].db && L.v[k].corr == L.v[k - 1].corr) L.v[k].dup = L.v[k - 1].dup = 1;
  for (size_t i = 0; i < ev->n; i++) {
    int64_t corr = tl_i64col_get(&ev->correlation_id, i);
    if (corr == TL_ABSENT) continue;
    corr_launch key = {.db = tl_events_db_idx(ev, i), .corr = corr};
    corr_launch *l = bsearch(&key, L.v, L.n, sizeof *L.v, corr_launch_order);
    if (!l || l->dup) continue;
    uint32_t dev = tl_events_device_id(ev, i), stream = tl_events_stream_id(ev, i);
    int64_t end = tl_events_end(ev, i);
    if (!l->events++) {
      l->start = ev->start_ns[i], l->end = end, l->device = dev, l->stream = stream;
      l->context = tl_i64col_get(&ev->context_id, i);
      continue;
    }
    if (ev->start_ns[i] < l->start) l->start = ev->start_ns[i];
    if (end > l->end) l->end = end;
    if (dev != l->device) l->mixed_device = 1;
    if (stream != l->stream) l->stream = TL_NO_STREAM;
    if (tl_i64col_get(&ev->context_id, i) != l->context) l->context = TL_ABSENT;
  }
  size_t first = x->r->envelopes.n;
  for (size_t k = 0; k < L.n && rc == TL_OK; k++) {
    const corr_launch *l = &L.v[k];
    if (l->dup || !l->events || l->mixed_device) continue;
    tl_graph_envelope g;
    memset(&g, 0, sizeof g);
    g.db_idx = l->db;
    g.provider = TL_GRAPH_CUDA;
    g.device_id = l->device, g.stream_id = l->stream;
    g.event = TL_REPLAY_NONE, g.launch = TL_REPLAY_NONE;
    g.start_ns = l->start, g.end_ns = l->end;
    g.correlation_id = l->corr, g.context_id = l->context;
    g.graph_id = g.graph_exec_id = TL_ABSENT;
    g.graph_kind = "cuda_graph_launch_correlation";
    if (TL_VEC_PUSH(&x->r->envelopes, g)) rc = tl_nomem(x->e);
  }
  TL_VEC_FREE(&L);
  if (rc == TL_OK && x->r->envelopes.n > first)
    qsort(x->r->envelopes.v + first, x->r->envelopes.n - first, sizeof *x->r->envelopes.v,
          cmp_envelope);
  return rc;
}

int tl_replay_cuda(const tl_trace *t, const tl_profile *p, tl_replay *r, tl_err *e) {
  cuda_pass x;
  memset(&x, 0, sizeof x);
  x.t = t, x.r = r, x.e = e;
  x.first_launch = r->launches.n;
  tl_i64map corr_map = {0};
  int rc = load_facts(&x, p);
  if (rc == TL_OK) rc = collect_children(&x, p);
  if (rc == TL_OK) rc = collect_launches(&x, &corr_map);
  if (rc == TL_OK) rc = group_children(&x, &corr_map);
  if (rc == TL_OK) rc = decide(&x);
  if (rc == TL_OK) rc = publish_launches(&x);
  if (rc == TL_OK) rc = publish_envelopes(&x);
  if (rc == TL_OK) rc = correlation_envelopes(&x, p);
  tl_i64map_free(&corr_map);
  for (size_t d = 0; x.db && d < x.ndb; d++) db_facts_free(&x.db[d]);
  free(x.db);
  free(x.src_class);
  TL_VEC_FREE(&x.launches);
  TL_VEC_FREE(&x.kids);
  free(x.lane), free(x.task);
  sig_table_free(&x.identities);
  sig_table_free(&x.bodies);
  tl_buf_free(&x.text);
  return rc;
}
