/*
** aclgraph.c: exact ACL graph replays on Ascend (recovery.md 7.1).
**
** Per (db_idx, device_id):
**   1. capture instances: CaptureStreamInfo groups (device_id, model_id) -> model streams;
**      a model stream claimed by two instances is ambiguous and never used;
**   2. launches: each MODEL_EXECUTE device task, its host aclmdlRIExecuteAsync call and
**      NOTIFY_WAIT by connectionId, and a NOTIFY_RECORD whose end is within 10,000 ns of
**      the wait's end (greedy by smallest delta), else paired in order when the leftover
**      counts are equal, else unmatched. The record names the instance: its modelId
**      (record_model_id), else its stream (record_model_stream);
**   3. bodies: the tasks on the instance's streams inside the launch interval, with equal
**      modelId where known and a normalized identity; lanes (one per stream) sorted by
**      their token sequence give the body signature;
**   4. composition: launches in host submission order (all have host calls) or device
**      order, cut into segments at launches without completion; per segment the best
**      exact periodic suffix (>= 3 full repeats) becomes the composition, classified
**      head + layer x N + tail, single graph or generic; every stretch of launches gets a
**      region with a typed status, and only recognized regions become replay units.
**
** Membership comes from these identities only. A task claimed by two launches makes the
** later launch's body ambiguous rather than guessing.
*/
#include "replay/replay.h"
#include "util/buf.h"
#include "util/i64map.h"
#include "util/sort.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOTIFY_COMPLETION_WINDOW_NS 10000

/* ------------------------------------------------------------------ event roles */

enum { CTL_NONE = 0, CTL_EXECUTE, CTL_WAIT, CTL_RECORD, CTL_INFRA };

/* Provider control tasks that carry no operator identity by design. */
static int control_kind(const char *task_type) {
  static const char *const infra[] = {
      "EVENT_RECORD",   "EVENT_WAIT",      "EVENT_RESET",     "NOP",
      "MEM_WAIT_VALUE", "MEM_WRITE_VALUE", "WRITE_VALUE",     "STREAM_ACTIVE",
      "STREAM_SWITCH",  "LABEL_SET",       "LABEL_SWITCH",    "LABEL_GOTO",
      "MODEL_END_GRAPH", "CAPTURE_RECORD", "CAPTURE_WAIT",    "MODEL_MAINTAINCE",
      "NOTIFY_RESET",   "PROFILER_TRACE",  "PROFILER_TRACE_EX", NULL};
  if (!task_type) return CTL_NONE;
  if (strcmp(task_type, "MODEL_EXECUTE") == 0) return CTL_EXECUTE;
  if (strcmp(task_type, "NOTIFY_WAIT") == 0) return CTL_WAIT;
  if (strcmp(task_type, "NOTIFY_RECORD") == 0) return CTL_RECORD;
  for (int i = 0; infra[i]; i++)
    if (strcmp(task_type, infra[i]) == 0) return CTL_INFRA;
  return CTL_NONE;
}

static const char *label_task_type(const tl_trace *t, const tl_label *l) {
  return l->task_type ? tl_str(t, l->task_type) : l->name ? tl_str(t, l->name) : NULL;
}

/* ------------------------------------------------------------------ per-device state */

typedef struct launch_work {
  uint32_t execute, wait, record; /* events or NONE */
  uint32_t host_call;
  int64_t host_start;
  int64_t instance;               /* model id of the captured instance, -1 */
  int64_t graph_conn;             /* record connectionId, -1 */
  uint8_t match, assoc;
} launch_work;

typedef struct device_ctx {
  const tl_trace *t;
  tl_replay *r;
  uint16_t db_idx;
  uint32_t device_id;
  const tl_capture_streams *caps;       /* rows of this device, sorted */
  size_t cap_first, cap_n;
  int companion_ok;
  const char *companion_detail;
  const uint8_t *ctl;              /* control kind per label (CTL_*): decided once per label */
  /* Body candidates of the device: non-control-execute events sorted by (stream, start). */
  uint32_t *cand;
  size_t ncand;
  uint8_t *claimed;               /* per event, 1 once a launch owns it as member */
  /* Member tokens per label, made on first use (a token depends on the label alone):
  ** token_done[l] says whether token[l] (NULL: no identity) and token_kind[l] are set. */
  char **token;
  uint8_t *token_kind, *token_done;
} device_ctx;

static int stream_of_model_ambiguous(const device_ctx *d, int64_t stream) {
  int64_t owner = -1;
  for (size_t i = d->cap_first; i < d->cap_first + d->cap_n; i++) {
    const tl_capture_stream *c = &d->caps->v[i];
    if (c->stream_id != stream) continue;
    if (owner >= 0 && owner != c->model_id) return 1;
    owner = c->model_id;
  }
  return 0;
}

static int model_known(const device_ctx *d, int64_t model) {
  for (size_t i = d->cap_first; i < d->cap_first + d->cap_n; i++)
    if (d->caps->v[i].model_id == model) return 1;
  return 0;
}

static int64_t model_of_stream(const device_ctx *d, int64_t stream) {
  if (stream_of_model_ambiguous(d, stream)) return -1;
  for (size_t i = d->cap_first; i < d->cap_first + d->cap_n; i++)
    if (d->caps->v[i].stream_id == stream) return d->caps->v[i].model_id;
  return -1;
}

/* Lower bound in cand of (stream, start). */
static size_t cand_lower(const device_ctx *d, uint32_t stream, int64_t start) {
  const tl_events *ev = &d->t->ev;
  size_t lo = 0, hi = d->ncand;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    uint32_t x = d->cand[mid];
    if (tl_events_stream_id(ev, x) < stream || (tl_events_stream_id(ev, x) == stream && ev->start_ns[x] < start))
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* The normalized identity token of a body task, or NULL when it has none; *oom is set
** when a token could not be allocated (never confused with "no identity"). */
static char *member_token(const tl_trace *t, uint32_t x, uint8_t *kind, int *oom) {
  const tl_label *l = tl_event_label(t, x);
  const char *tt = l->task_type ? tl_str(t, l->task_type) : "";
  if (l->comm_name) {
    const char *name = tl_str(t, l->comm_name);
    const char *cut = strstr(name, "__");
    int len = cut ? (int)(cut - name) : (int)strlen(name);
    *kind = TL_MEMBER_COMMUNICATION;
    char *tk = tl_mprintf("comm:%.*s/%s", len, name,
                          l->comm_task_type ? tl_str(t, l->comm_task_type) : tt);
    *oom = !tk;
    return tk;
  }
  const char *op = l->op_type ? tl_str(t, l->op_type) : l->op_name ? tl_str(t, l->op_name) : NULL;
  /* Memory copies and sets are named by their task type: that is their whole identity.
  ** Other unnamed tasks (an SDMA step of a collective without its communication table)
  ** have no identity. */
  if (!op && l->kind == TL_KIND_DATA_MOVE &&
      (strncmp(tt, "MEMCPY", 6) == 0 || strncmp(tt, "MEMSET", 6) == 0))
    op = tt;
  *oom = 0;
  if (!op) return NULL;
  *kind = l->kind == TL_KIND_COMMUNICATION ? TL_MEMBER_COMMUNICATION
          : l->kind == TL_KIND_DATA_MOVE   ? TL_MEMBER_DATA_MOVE
                                           : TL_MEMBER_COMPUTE;
  char *tk = tl_mprintf("%s:%s/%s/%s", tl_member_kind_name(*kind), op,
                        l->compute_task_type ? tl_str(t, l->compute_task_type) : "", tt);
  *oom = !tk;
  return tk;
}

/* member_token of event x, made once per label and kept in d (not owned by the caller). */
static const char *label_token(device_ctx *d, uint32_t x, uint8_t *kind, int *oom) {
  uint32_t lab = d->t->ev.label[x];
  *oom = 0;
  if (!d->token_done[lab]) {
    d->token[lab] = member_token(d->t, x, &d->token_kind[lab], oom);
    if (*oom) return NULL;
    d->token_done[lab] = 1;
  }
  *kind = d->token_kind[lab];
  return d->token[lab];
}

typedef struct lane {
  int64_t stream;
  char *text;           /* the lane's token sequence, one token per line */
  size_t first, n;      /* members (indices into the launch's temporary member list) */
} lane;

static int lane_cmp(const void *a, const void *b) {
  const lane *x = a, *y = b;
  int c = strcmp(x->text, y->text);
  if (c) return c;
  return x->stream < y->stream ? -1 : x->stream > y->stream;
}

/* Collects the body of launch l (already appended to r->launches at index li). */
static int collect_body(device_ctx *d, const launch_work *w, uint32_t li, tl_err *e) {
  tl_replay *r = d->r;
  tl_graph_launch *L = &r->launches.v[li];
  const tl_trace *t = d->t;
  const tl_events *ev = &t->ev;
  if (!d->companion_ok) {
    L->status = TL_LAUNCH_MISSING_BODY_CAPABILITY;
    return TL_OK;
  }
  /* Body streams: the instance's captured streams, else the record's stream alone. */
  int64_t streams[64];
  size_t ns = 0;
  if (w->instance >= 0) {
    for (size_t i = d->cap_first; i < d->cap_first + d->cap_n && ns < 64; i++) {
      const tl_capture_stream *c = &d->caps->v[i];
      if (c->model_id != w->instance) continue;
      if (stream_of_model_ambiguous(d, c->stream_id)) {
        L->status = TL_LAUNCH_AMBIGUOUS_BODY;
        return TL_OK;
      }
      if (ns == 0 || streams[ns - 1] != c->stream_id) streams[ns++] = c->stream_id;
    }
  } else if (w->record != TL_REPLAY_NONE) {
    streams[ns++] = tl_events_stream_id(ev, w->record);
  }
  if (ns == 0) {
    L->status = TL_LAUNCH_MISSING_BODY_EVIDENCE;
    return TL_OK;
  }
  TL_VEC(uint32_t) mem = {0};
  TL_VEC(uint8_t) kinds = {0};
  lane lanes[64];
  size_t nl = 0;
  int rc = TL_OK, typed = 0; /* typed: the launch got a status, not an error */
  for (size_t s = 0; s < ns && rc == TL_OK && !typed; s++) {
    size_t at = cand_lower(d, (uint32_t)streams[s], L->start_ns);
    lanes[nl].stream = streams[s];
    lanes[nl].first = mem.n;
    lanes[nl].text = NULL;
    tl_buf text = {0};
    for (; at < d->ncand; at++) {
      uint32_t x = d->cand[at];
      if (tl_events_stream_id(ev, x) != (uint32_t)streams[s] || ev->start_ns[x] > L->end_ns) break;
      if (tl_events_end(ev, x) > L->end_ns) continue;
      int64_t model = tl_i64col_get(&ev->model_id, x);
      if (w->instance >= 0 && model != TL_ABSENT && model != w->instance) continue;
      int ck = d->ctl[ev->label[x]];
      if (ck == CTL_EXECUTE || ck == CTL_WAIT || ck == CTL_RECORD) continue; /* launch controls */
      uint8_t kind = 0;
      int oom;
      const char *tk = label_token(d, x, &kind, &oom);
      if (oom) {
        rc = tl_nomem(e);
        break;
      }
      if (!tk && ck == CTL_INFRA) continue; /* an unnamed known control is no member */
      if (!tk) {
        L->status = TL_LAUNCH_MISSING_BODY_CAPABILITY;
        typed = 1;
        break;
      }
      if (d->claimed[x]) {
        L->status = TL_LAUNCH_AMBIGUOUS_BODY;
        typed = 1;
        break;
      }
      tl_buf_puts(&text, tk);
      tl_buf_puts(&text, "\n");
      if (TL_VEC_PUSH(&mem, x) || TL_VEC_PUSH(&kinds, kind)) {
        rc = tl_nomem(e);
        break;
      }
    }
    if (text.oom) rc = tl_nomem(e);
    lanes[nl].n = mem.n - lanes[nl].first;
    lanes[nl].text = text.p ? text.p : tl_strdup("");
    if (!lanes[nl].text && rc == TL_OK) rc = tl_nomem(e);
    nl++;
  }
  if (rc == TL_OK && !typed && mem.n == 0) L->status = TL_LAUNCH_MISSING_BODY_EVIDENCE;
  if (rc == TL_OK && !typed && mem.n) {
    qsort(lanes, nl, sizeof *lanes, lane_cmp);
    tl_buf sig = {0};
    tl_buf_printf(&sig, "captured_stream_set_unordered\nstream_count=%zu\n", nl);
    for (size_t k = 0; k < nl; k++) tl_buf_printf(&sig, "lane %zu\n%s", k, lanes[k].text);
    uint32_t body = sig.oom ? 0 : tl_replay_intern_body(r, sig.p);
    tl_buf_free(&sig);
    if (!body) rc = tl_nomem(e);
    L = &r->launches.v[li];
    L->body_template = body;
    L->first_member = (uint32_t)r->members.n;
    for (size_t k = 0; rc == TL_OK && k < nl; k++)
      for (size_t j = 0; j < lanes[k].n; j++) {
        size_t m = lanes[k].first + j;
        tl_graph_member gm = {li, mem.v[m], (uint32_t)k, (uint32_t)j, kinds.v[m], TL_ABSENT};
        if (TL_VEC_PUSH(&r->members, gm)) rc = tl_nomem(e);
        d->claimed[mem.v[m]] = 1;
      }
    L->nmembers = (uint32_t)(r->members.n - L->first_member);
  }
  for (size_t k = 0; k < nl; k++) free(lanes[k].text);
  TL_VEC_FREE(&mem);
  TL_VEC_FREE(&kinds);
  return rc;
}

/* ------------------------------------------------------------------ composition */

/* Why a region is not recognized, in words (NULL for recognized ones). */
static char *status_detail(uint8_t st) {
  switch (st) {
    case TL_REGION_MISSING_BODY_CAPABILITY:
      return tl_strdup("a body task has no compute or communication identity (operator type, "
                       "name or communication name) and is not a known control task, or the "
                       "capture-stream companion is unusable: membership cannot be exact");
    case TL_REGION_MISSING_BODY_EVIDENCE:
      return tl_strdup("a launch has no body task on its captured streams, or its body tasks "
                       "are also claimed by another launch");
    case TL_REGION_BODY_MISMATCH:
      return tl_strdup("launches of one captured graph instance have different bodies");
    case TL_REGION_LEADING_CONTEXT:
      return tl_strdup("launches before the exact periodic composition");
    case TL_REGION_INCOMPLETE_TAIL:
      return tl_strdup("a trailing prefix shorter than one composition period");
    case TL_REGION_MISSING_COMPLETION:
      return tl_strdup("no NOTIFY_WAIT / NOTIFY_RECORD completion pairs with these "
                       "MODEL_EXECUTE launches");
    default: return NULL;
  }
}

static int push_region(tl_replay *r, const device_ctx *d, uint8_t status, uint8_t order,
                       uint8_t shape, uint8_t boundary, uint32_t candidate, size_t first,
                       size_t n, uint32_t expected, char *detail, tl_err *e) {
  tl_graph_region g;
  memset(&g, 0, sizeof g);
  g.db_idx = d->db_idx, g.device_id = d->device_id, g.status = status, g.order_policy = order;
  g.shape_policy = shape, g.boundary_policy = boundary, g.candidate = candidate;
  g.first_launch = (uint32_t)first, g.nlaunches = (uint32_t)n, g.expected_launches = expected;
  g.start_ns = INT64_MAX, g.end_ns = INT64_MIN;
  for (size_t i = first; i < first + n; i++) {
    tl_graph_launch *l = &r->launches.v[i];
    if (l->start_ns < g.start_ns) g.start_ns = l->start_ns;
    if (l->end_ns > g.end_ns) g.end_ns = l->end_ns;
    l->region = (uint32_t)r->regions.n;
  }
  g.detail = detail ? detail : status_detail(status);
  /* Every unrecognized region says why: a missing text can only be out-of-memory. */
  if ((status != TL_REGION_RECOGNIZED && !g.detail) || TL_VEC_PUSH(&r->regions, g)) {
    free(g.detail);
    return tl_nomem(e);
  }
  return TL_OK;
}

/* 1 when ids[0..n) has the head + layer x N + tail shape. */
static int is_hlt(const int64_t *ids, size_t n) {
  if (n < 3) return 0;
  if (ids[0] == ids[1] || ids[n - 1] == ids[1] || ids[0] == ids[n - 1]) return 0;
  for (size_t i = 2; i < n - 1; i++)
    if (ids[i] != ids[1]) return 0;
  return 1;
}

/* Status a stretch of launches supports when all else is complete. */
static uint8_t stretch_status(const tl_replay *r, size_t first, size_t n) {
  uint8_t worst = TL_REGION_RECOGNIZED;
  for (size_t i = first; i < first + n; i++) {
    uint8_t s = r->launches.v[i].status, g = TL_REGION_RECOGNIZED;
    if (s == TL_LAUNCH_MISSING_BODY_CAPABILITY) g = TL_REGION_MISSING_BODY_CAPABILITY;
    else if (s == TL_LAUNCH_MISSING_BODY_EVIDENCE || s == TL_LAUNCH_AMBIGUOUS_BODY)
      g = TL_REGION_MISSING_BODY_EVIDENCE;
    else if (s == TL_LAUNCH_BODY_MISMATCH) g = TL_REGION_BODY_MISMATCH;
    if (g != TL_REGION_RECOGNIZED && (worst == TL_REGION_RECOGNIZED || g < worst)) worst = g;
  }
  return worst;
}

/* 1 when some launch of a stretch lacks body capability (recovery.md 7.1 step 3: an unnamed
** task that is no known control). That is a launch's own gate, decided before composition:
** a stretch with such a launch is unrecognized_missing_body_capability wherever it lies, a
** leading or trailing part included (as the reference has it), and is no one-shot leading
** composition, which needs full capability (step 5). */
static int lacks_capability(const tl_replay *r, size_t first, size_t n) {
  for (size_t i = first; i < first + n; i++)
    if (r->launches.v[i].status == TL_LAUNCH_MISSING_BODY_CAPABILITY) return 1;
  return 0;
}

static int make_unit(tl_replay *r, const device_ctx *d, size_t first, size_t n,
                     const uint8_t *roles, tl_err *e) {
  tl_buf sig = {0};
  tl_buf_puts(&sig, "exact_replay_composition_v1\n");
  for (size_t k = 0; k < n; k++) {
    const tl_graph_launch *l = &r->launches.v[first + k];
    tl_buf_printf(&sig, "%zu:%u:%s\n", k, (unsigned)l->body_template,
                  tl_slot_role_name(roles[k]));
  }
  uint32_t gt = sig.oom ? 0 : tl_replay_intern_graph(r, sig.p);
  tl_buf_free(&sig);
  if (!gt) return tl_nomem(e);
  tl_replay_unit u = {d->db_idx, TL_GRAPH_ACL, d->device_id, (uint32_t)first, (uint32_t)n, gt,
                      (uint32_t)r->regions.n - 1};
  for (size_t k = 0; k < n; k++) {
    tl_graph_launch *l = &r->launches.v[first + k];
    l->unit = (uint32_t)r->units.n;
    l->member_order = (uint32_t)k, l->slot_order = (uint32_t)k, l->slot_role = roles[k];
    l->status = TL_LAUNCH_EXACT;
  }
  return TL_VEC_PUSH(&r->units, u) ? tl_nomem(e) : TL_OK;
}

/* 1 when the slots [0, n) have the head + layer x N + tail shape, by their captured
** instances or by their bodies: a model that captures one graph per layer (a distinct
** instance per layer) still replays the same layer body in every middle slot, and those
** slots are its layers (the reference's ACLH, ACLL x N, ACLT). bodies[k] is 0 when the
** slot's body is unknown; unknown bodies decide nothing. */
static int slots_hlt(const int64_t *ids, const int64_t *bodies, size_t n) {
  if (is_hlt(ids, n)) return 1;
  for (size_t k = 0; k < n; k++)
    if (!bodies[k]) return 0;
  return is_hlt(bodies, n);
}

/* Roles of a composition of p slots. A period of one launch is a generic slot (ACLG,
** shape unclassified): the single_graph shape is the direct single-graph path's. */
static void shape_roles(const int64_t *ids, const int64_t *bodies, size_t p, uint8_t *roles,
                        uint8_t *shape) {
  if (slots_hlt(ids, bodies, p)) {
    for (size_t k = 0; k < p; k++)
      roles[k] = k == 0 ? TL_SLOT_HEAD : k == p - 1 ? TL_SLOT_TAIL : TL_SLOT_LAYER;
    *shape = 1;
  } else {
    for (size_t k = 0; k < p; k++) roles[k] = TL_SLOT_GENERIC;
    *shape = 0;
  }
}

/* Regions and units of one segment [first, first+n) of launches (composition order). */
static int compose_segment(tl_replay *r, const device_ctx *d, size_t first, size_t n,
                           uint8_t order, uint32_t *candidate, tl_err *e) {
  int64_t *ids = malloc((n ? n : 1) * sizeof *ids);
  int64_t *bodies = malloc((n ? n : 1) * sizeof *bodies);
  uint8_t *roles = malloc((n ? n : 1) * sizeof *roles);
  if (!ids || !bodies || !roles) {
    free(ids), free(bodies), free(roles);
    return tl_nomem(e);
  }
  for (size_t i = 0; i < n; i++)
    ids[i] = r->launches.v[first + i].graph_id, bodies[i] = r->launches.v[first + i].body_template;
  /* Best exact periodic suffix: longest covered, then more repeats, then smaller period. */
  size_t best_p = 0, best_s = 0, best_cover = 0, best_reps = 0;
  for (size_t p = 1; p * 3 <= n; p++) {
    size_t s = n - p;
    while (s > 0 && ids[s - 1] == ids[s - 1 + p]) s--;
    /* [s, n) is p-periodic; full patterns start at s (phase chosen below for H+L+T). */
    size_t cover = n - s, reps = cover / p;
    if (reps < 3) continue;
    if (cover > best_cover || (cover == best_cover && reps > best_reps)) {
      best_p = p, best_s = s, best_cover = cover, best_reps = reps;
    }
  }
  int rc = TL_OK;
  if (best_p) {
    size_t p = best_p, s = best_s;
    /* Phase: the first rotation whose pattern has the head + layer + tail shape and
    ** still leaves three full repeats; else the suffix start. */
    if (p >= 3)
      for (size_t k = 0; k < p; k++)
        if (slots_hlt(ids + s + k, bodies + s + k, p) && (n - s - k) / p >= 3) {
          s += k;
          break;
        }
    uint8_t shape;
    shape_roles(ids + s, bodies + s, p, roles, &shape);
    /* Leading launches: one period long with its own H+L+T shape and full capability is a
    ** one-shot leading composition, a candidate of its own (numbered before the periodic
    ** one, as the reference numbers them: the prefill and the decode compositions are two
    ** candidates); otherwise unrecognized leading context, or missing capability where a
    ** launch lacks it, under the periodic candidate. */
    int nocap = s > 0 && lacks_capability(r, first, s);
    int one_shot = !nocap && s > 0 && s == p && p >= 3 && p <= 1024 && slots_hlt(ids, bodies, s);
    uint32_t lead_cand = one_shot ? ++*candidate : 0;
    uint32_t cand = ++*candidate;
    if (s > 0) {
      uint8_t lshape;
      uint8_t lroles[1024];
      uint8_t st = one_shot ? stretch_status(r, first, s)
                   : nocap  ? TL_REGION_MISSING_BODY_CAPABILITY
                            : TL_REGION_LEADING_CONTEXT;
      if (one_shot) shape_roles(ids, bodies, s, lroles, &lshape);
      rc = push_region(r, d, st, order, one_shot ? lshape : 0, one_shot ? 1 : 0,
                       one_shot ? lead_cand : cand, first, s, one_shot ? (uint32_t)s : 0, NULL, e);
      if (rc == TL_OK && one_shot && st == TL_REGION_RECOGNIZED)
        rc = make_unit(r, d, first, s, lroles, e);
    }
    size_t at = s;
    for (; rc == TL_OK && at + p <= n; at += p) {
      uint8_t st = stretch_status(r, first + at, p);
      rc = push_region(r, d, st, order, shape, 0, cand, first + at, p, (uint32_t)p, NULL, e);
      if (rc == TL_OK && st == TL_REGION_RECOGNIZED) rc = make_unit(r, d, first + at, p, roles, e);
    }
    if (rc == TL_OK && at < n)
      rc = push_region(r, d,
                       lacks_capability(r, first + at, n - at) ? TL_REGION_MISSING_BODY_CAPABILITY
                                                               : TL_REGION_INCOMPLETE_TAIL,
                       order, shape, 0, cand, first + at, n - at, (uint32_t)p, NULL, e);
  } else {
    /* Direct single graphs: every launch completes adjacently, names its instance by
    ** modelId, does not overlap the previous launch and has one valid body; otherwise no
    ** launch of the segment is promoted. */
    int ok = n > 0;
    for (size_t i = 0; ok && i < n; i++) {
      const tl_graph_launch *l = &r->launches.v[first + i];
      ok = l->match_policy == TL_MATCH_NOTIFY_ADJACENT &&
           l->association_policy == TL_ASSOC_RECORD_MODEL_ID && l->end_ns > l->start_ns &&
           l->body_template != 0 && l->status == TL_LAUNCH_NOT_PROMOTED &&
           (i == 0 || l->start_ns >= r->launches.v[first + i - 1].end_ns);
    }
    for (size_t i = 0; rc == TL_OK && i < n; i++) {
      uint8_t st = stretch_status(r, first + i, 1);
      if (!ok && st == TL_REGION_RECOGNIZED) st = TL_REGION_MISSING_BODY_EVIDENCE;
      char *detail = ok ? NULL
                        : tl_strdup("direct single-graph launches need adjacent completion, "
                                    "a record modelId, no overlap and one valid body each");
      if (!ok && !detail) {
        rc = tl_nomem(e);
        break;
      }
      rc = push_region(r, d, st, order, 2, 2, 0, first + i, 1, 1, detail, e);
      uint8_t role = TL_SLOT_SINGLE;
      if (rc == TL_OK && ok) rc = make_unit(r, d, first + i, 1, &role, e);
    }
  }
  free(ids), free(bodies), free(roles);
  return rc;
}

/* ------------------------------------------------------------------ one device */

/* 1 when every launch's host call (all present) lies in a host-blocking-sync activity: the
** submissions of one host thread up to its next blocking synchronization (aclrtSynchronize*:
** Stream, StreamWithTimeout, Device, Event), so that each launch is in exactly one, the one
** its thread's next synchronization closes. A launch submitted after its thread's last
** synchronization, or on a thread that never synchronizes, is in none (the reference's
** rule: a profile without a synchronization composes in device order). One pass over the
** calls (the last synchronization start per thread), one per launch. */
static int in_sync_activities(const tl_trace *t, int db_idx, const launch_work *work,
                              size_t n, int *rc, tl_err *e) {
  tl_i64map last_sync;
  memset(&last_sync, 0, sizeof last_sync);
  const tl_calls *c = &t->calls;
  for (size_t k = 0; k < c->n; k++) {
    if (c->db_idx[k] != db_idx) continue;
    const char *name = tl_str(t, c->api_name[k]);
    if (!name || strncmp(name, "aclrtSynchronize", 16) != 0) continue;
    const tl_call_shape *sh = &c->shapes.v[c->shape[k]];
    int64_t tid = sh->global_tid != TL_ABSENT ? sh->global_tid : sh->thread_id;
    int64_t *have = tl_i64map_get(&last_sync, tid);
    if (have) {
      if (c->start_ns[k] > *have) *have = c->start_ns[k];
    } else if (tl_i64map_put(&last_sync, tid, c->start_ns[k])) {
      *rc = tl_nomem(e);
      break;
    }
  }
  int all = *rc == TL_OK;
  for (size_t i = 0; all && i < n; i++) {
    uint32_t h = work[i].host_call;
    const tl_call_shape *sh = &c->shapes.v[c->shape[h]];
    int64_t tid = sh->global_tid != TL_ABSENT ? sh->global_tid : sh->thread_id;
    int64_t *sync = tl_i64map_get(&last_sync, tid);
    all = sync && *sync >= c->end_ns[h];
  }
  tl_i64map_free(&last_sync);
  return all;
}

typedef struct pair {
  uint64_t delta;
  uint32_t launch, rec;
} pair;
typedef TL_VEC(pair) pair_vec;

static int pair_cmp(const void *a, const void *b) {
  const pair *x = a, *y = b;
  if (x->delta != y->delta) return x->delta < y->delta ? -1 : 1;
  if (x->launch != y->launch) return x->launch < y->launch ? -1 : 1;
  return (x->rec > y->rec) - (x->rec < y->rec);
}

static int process_device(device_ctx *d, const uint32_t *dev_events, size_t ndev, tl_err *e) {
  const tl_trace *t = d->t;
  const tl_events *ev = &t->ev;
  tl_replay *r = d->r;
  TL_VEC(uint32_t) execs = {0}, waits = {0}, records = {0};
  int rc = TL_OK;
  d->ncand = 0;
  for (size_t k = 0; k < ndev && rc == TL_OK; k++) {
    uint32_t x = dev_events[k];
    int ck = d->ctl[ev->label[x]];
    if (ck == CTL_EXECUTE) rc = TL_VEC_PUSH(&execs, x) ? tl_nomem(e) : TL_OK;
    else if (ck == CTL_WAIT) rc = TL_VEC_PUSH(&waits, x) ? tl_nomem(e) : TL_OK;
    else if (ck == CTL_RECORD) rc = TL_VEC_PUSH(&records, x) ? tl_nomem(e) : TL_OK;
    if (ck != CTL_EXECUTE) d->cand[d->ncand++] = x;
  }
  if (rc || execs.n == 0) goto done;
  /* Body candidates sorted by (stream, start, end, event). */
  {
    uint64_t *keys = malloc(d->ncand * sizeof *keys + 1);
    uint32_t *vals = malloc(d->ncand * sizeof *vals + 1);
    if (!keys || !vals) {
      free(keys), free(vals);
      rc = tl_nomem(e);
      goto done;
    }
    /* Two stable radix passes: by start, then by stream. */
    for (size_t k = 0; k < d->ncand; k++)
      keys[k] = tl_order_i64(ev->start_ns[d->cand[k]]), vals[k] = d->cand[k];
    if (tl_radix_sort_u64(keys, vals, d->ncand)) rc = tl_nomem(e);
    for (size_t k = 0; rc == TL_OK && k < d->ncand; k++) keys[k] = tl_events_stream_id(ev, vals[k]);
    if (rc == TL_OK && tl_radix_sort_u64(keys, vals, d->ncand)) rc = tl_nomem(e);
    if (rc == TL_OK) memcpy(d->cand, vals, d->ncand * sizeof *vals);
    free(keys), free(vals);
    if (rc) goto done;
  }
  /* Host launch calls and waits by connectionId: map to the first, chains to the rest. */
  tl_i64map host_by_conn, wait_by_conn;
  memset(&host_by_conn, 0, sizeof host_by_conn);
  memset(&wait_by_conn, 0, sizeof wait_by_conn);
  uint32_t *host_next = malloc((t->calls.n + 1) * sizeof *host_next);
  uint32_t *wait_next = malloc((waits.n + 1) * sizeof *wait_next);
  uint8_t *wait_used = calloc(waits.n + 1, 1), *rec_used = calloc(records.n + 1, 1);
  launch_work *work = calloc(execs.n, sizeof *work);
  if (!host_next || !wait_next || !wait_used || !rec_used || !work) rc = tl_nomem(e);
  uint32_t api = tl_strpool_find(t->pool, "aclmdlRIExecuteAsync", 20);
  for (size_t c = t->calls.n; rc == TL_OK && api && c-- > 0;) {
    host_next[c] = TL_REPLAY_NONE;
    int64_t conn = tl_i64col_get(&t->calls.correlation_id, c);
    if (t->calls.api_name[c] != api || t->calls.db_idx[c] != d->db_idx || conn == TL_ABSENT)
      continue;
    int64_t *have = tl_i64map_get(&host_by_conn, conn);
    if (have) host_next[c] = (uint32_t)*have, *have = (int64_t)c;
    else if (tl_i64map_put(&host_by_conn, conn, (int64_t)c)) rc = tl_nomem(e);
  }
  for (size_t k = waits.n; rc == TL_OK && k-- > 0;) {
    wait_next[k] = TL_REPLAY_NONE;
    int64_t conn = tl_i64col_get(&ev->correlation_id, waits.v[k]);
    if (conn == TL_ABSENT) continue;
    int64_t *have = tl_i64map_get(&wait_by_conn, conn);
    if (have) wait_next[k] = (uint32_t)*have, *have = (int64_t)k;
    else if (tl_i64map_put(&wait_by_conn, conn, (int64_t)k)) rc = tl_nomem(e);
  }
  for (size_t i = 0; rc == TL_OK && i < execs.n; i++) {
    uint32_t x = execs.v[i];
    launch_work *w = &work[i];
    w->execute = x, w->wait = w->record = w->host_call = TL_REPLAY_NONE;
    w->instance = w->graph_conn = -1;
    w->host_start = INT64_MAX;
    int64_t conn = tl_i64col_get(&ev->correlation_id, x);
    if (conn == TL_ABSENT) continue;
    /* host call: nearest end among the calls of this connection id */
    uint64_t bd = UINT64_MAX;
    int64_t *hc = tl_i64map_get(&host_by_conn, conn);
    for (uint32_t c = hc ? (uint32_t)*hc : TL_REPLAY_NONE; c != TL_REPLAY_NONE; c = host_next[c]) {
      int64_t dd = t->calls.end_ns[c] - tl_events_end(ev, x);
      uint64_t ad = dd < 0 ? (uint64_t)(-dd) : (uint64_t)dd;
      if (ad < bd) bd = ad, w->host_call = c, w->host_start = t->calls.start_ns[c];
    }
    /* wait: the unclaimed one of this connection id with the nearest start */
    bd = UINT64_MAX;
    int64_t *wc = tl_i64map_get(&wait_by_conn, conn);
    for (uint32_t k = wc ? (uint32_t)*wc : TL_REPLAY_NONE; k != TL_REPLAY_NONE; k = wait_next[k]) {
      if (wait_used[k]) continue;
      int64_t dd = ev->start_ns[waits.v[k]] - ev->start_ns[x];
      uint64_t ad = dd < 0 ? (uint64_t)(-dd) : (uint64_t)dd;
      if (ad < bd) bd = ad, w->wait = k;
    }
    if (w->wait != TL_REPLAY_NONE) wait_used[w->wait] = 1;
  }
  /* Records: adjacent completion, greedy by the smallest |record end - wait end|, ties by
  ** launch then record order. Records sorted by end make each window a binary search. */
  if (rc == TL_OK) {
    uint64_t *rkeys = malloc((records.n + 1) * sizeof *rkeys);
    uint32_t *rord = malloc((records.n + 1) * sizeof *rord);
    pair_vec pairs = {0};
    if (!rkeys || !rord) rc = tl_nomem(e);
    for (size_t k = 0; rc == TL_OK && k < records.n; k++)
      rkeys[k] = tl_order_i64(tl_events_end(ev, records.v[k])), rord[k] = (uint32_t)k;
    if (rc == TL_OK && tl_radix_sort_u64(rkeys, rord, records.n)) rc = tl_nomem(e);
    for (size_t i = 0; rc == TL_OK && i < execs.n; i++) {
      if (work[i].wait == TL_REPLAY_NONE) continue;
      int64_t wend = tl_events_end(ev, waits.v[work[i].wait]);
      uint64_t lo_key = tl_order_i64(wend > INT64_MIN + NOTIFY_COMPLETION_WINDOW_NS
                                         ? wend - NOTIFY_COMPLETION_WINDOW_NS : INT64_MIN);
      size_t lo = 0, hi = records.n;
      while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (rkeys[mid] < lo_key) lo = mid + 1; else hi = mid;
      }
      for (size_t k = lo; k < records.n; k++) {
        int64_t dd = tl_events_end(ev, records.v[rord[k]]) - wend;
        if (dd > NOTIFY_COMPLETION_WINDOW_NS) break;
        pair pr = {(uint64_t)(dd < 0 ? -dd : dd), (uint32_t)i, rord[k]};
        if (TL_VEC_PUSH(&pairs, pr)) {
          rc = tl_nomem(e);
          break;
        }
      }
    }
    if (pairs.n) qsort(pairs.v, pairs.n, sizeof *pairs.v, pair_cmp);
    for (size_t a = 0; a < pairs.n; a++) {
      launch_work *w = &work[pairs.v[a].launch];
      if (w->record != TL_REPLAY_NONE || rec_used[pairs.v[a].rec]) continue;
      w->record = pairs.v[a].rec, w->match = TL_MATCH_NOTIFY_ADJACENT;
      rec_used[pairs.v[a].rec] = 1;
    }
    TL_VEC_FREE(&pairs);
    free(rkeys), free(rord);
    /* Leftovers in order only when the counts agree. */
    size_t lw = 0, lr = 0;
    for (size_t i = 0; i < execs.n; i++)
      lw += work[i].wait != TL_REPLAY_NONE && work[i].record == TL_REPLAY_NONE;
    for (size_t k = 0; k < records.n; k++) lr += !rec_used[k];
    if (rc == TL_OK && lw && lw == lr) {
      size_t k = 0;
      for (size_t i = 0; i < execs.n; i++) {
        if (work[i].wait == TL_REPLAY_NONE || work[i].record != TL_REPLAY_NONE) continue;
        while (rec_used[k]) k++;
        work[i].record = (uint32_t)k, work[i].match = TL_MATCH_NOTIFY_ORDERED;
        rec_used[k] = 1;
      }
    }
  }
  /* Instances; then the launches in composition order: host submission order when every
  ** launch has its host call inside a host-blocking-sync activity (recovery.md 7.1 step 5),
  ** else device order. */
  int host_order = 1;
  for (size_t i = 0; i < execs.n; i++)
    if (work[i].host_call == TL_REPLAY_NONE) host_order = 0;
  if (rc == TL_OK && host_order) host_order = in_sync_activities(t, d->db_idx, work, execs.n, &rc, e);
  for (size_t i = 0; rc == TL_OK && i < execs.n; i++) {
    launch_work *w = &work[i];
    if (w->wait != TL_REPLAY_NONE) w->wait = waits.v[w->wait];
    if (w->record == TL_REPLAY_NONE) continue;
    w->record = records.v[w->record];
    w->graph_conn = tl_i64col_get(&ev->correlation_id, w->record);
    int64_t model = tl_i64col_get(&ev->model_id, w->record);
    if (model != TL_ABSENT && model_known(d, model)) {
      w->instance = model, w->assoc = TL_ASSOC_RECORD_MODEL_ID;
    } else {
      int64_t m = model_of_stream(d, tl_events_stream_id(ev, w->record));
      if (m >= 0) w->instance = m, w->assoc = TL_ASSOC_RECORD_MODEL_STREAM;
    }
  }
  if (rc == TL_OK) {
    uint32_t *order = malloc(execs.n * sizeof *order);
    uint64_t *keys = malloc(execs.n * sizeof *keys);
    if (!order || !keys) rc = tl_nomem(e);
    for (size_t i = 0; rc == TL_OK && i < execs.n; i++) {
      order[i] = (uint32_t)i;
      keys[i] = tl_order_i64(host_order ? work[i].host_start : ev->start_ns[work[i].execute]);
    }
    if (rc == TL_OK && tl_radix_sort_u64(keys, order, execs.n)) rc = tl_nomem(e);
    free(keys);
    size_t first = r->launches.n;
    for (size_t k = 0; rc == TL_OK && k < execs.n; k++) {
      const launch_work *w = &work[order[k]];
      tl_graph_launch L;
      memset(&L, 0, sizeof L);
      L.db_idx = d->db_idx, L.provider = TL_GRAPH_ACL, L.device_id = d->device_id;
      L.match_policy = w->record != TL_REPLAY_NONE ? w->match : TL_MATCH_UNMATCHED;
      L.association_policy = w->assoc;
      L.status = TL_LAUNCH_NOT_PROMOTED;
      L.stream_id = tl_events_stream_id(ev, w->execute);
      L.start_ns = ev->start_ns[w->execute];
      L.end_ns = tl_events_end(ev, w->execute);
      if (w->wait != TL_REPLAY_NONE && tl_events_end(ev, w->wait) > L.end_ns) L.end_ns = tl_events_end(ev, w->wait);
      if (w->record != TL_REPLAY_NONE && tl_events_end(ev, w->record) > L.end_ns)
        L.end_ns = tl_events_end(ev, w->record);
      L.correlation_id = tl_i64col_get(&ev->correlation_id, w->execute);
      L.graph_id = w->instance >= 0 ? w->instance : w->graph_conn >= 0 ? w->graph_conn : TL_ABSENT;
      L.control[0] = w->execute, L.control[1] = w->wait, L.control[2] = w->record;
      L.host_call = w->host_call;
      L.unit = L.region = L.anchor_event = TL_REPLAY_NONE;
      if (w->record == TL_REPLAY_NONE) L.status = TL_LAUNCH_MISSING_COMPLETION;
      if (TL_VEC_PUSH(&r->launches, L)) {
        rc = tl_nomem(e);
        break;
      }
      if (w->record != TL_REPLAY_NONE) rc = collect_body(d, w, (uint32_t)(r->launches.n - 1), e);
    }
    free(order);
    /* One identity, one body: the body of an identity's first launch (composition order) is
    ** the one it captured, and a later launch that replays another body is a mismatch, that
    ** launch alone (the reference's rule: its other launches are still exact replays of the
    ** captured graph, and the odd one keeps its tasks as eager work). */
    size_t n = r->launches.n - first;
    tl_i64map body_of = {0};
    for (size_t i = 0; rc == TL_OK && i < n; i++) {
      tl_graph_launch *a = &r->launches.v[first + i];
      if (!a->body_template) continue;
      int64_t *have = tl_i64map_get(&body_of, a->graph_id);
      if (!have) {
        if (tl_i64map_put(&body_of, a->graph_id, a->body_template)) rc = tl_nomem(e);
      } else if (*have != a->body_template) {
        a->status = TL_LAUNCH_BODY_MISMATCH;
      }
    }
    tl_i64map_free(&body_of);
    /* Segments broken by launches without completion evidence. */
    uint32_t candidate = 0;
    size_t seg = first;
    for (size_t i = first; rc == TL_OK && i <= r->launches.n; i++) {
      int brk = i == r->launches.n || r->launches.v[i].status == TL_LAUNCH_MISSING_COMPLETION;
      if (!brk) continue;
      if (i > seg) rc = compose_segment(r, d, seg, i - seg, host_order ? 0 : 1, &candidate, e);
      if (rc == TL_OK && i < r->launches.n) {
        size_t j = i;
        while (j < r->launches.n && r->launches.v[j].status == TL_LAUNCH_MISSING_COMPLETION) j++;
        rc = push_region(r, d, TL_REGION_MISSING_COMPLETION, host_order ? 0 : 1, 0, 3, 0, i,
                         j - i, 0, NULL, e);
        i = j - 1;
        seg = j;
      }
    }
  }
  if (rc == TL_OK && !d->companion_ok && d->companion_detail) {
    /* Say why no body could be known, once per region. */
    for (size_t g = 0; g < r->regions.n; g++) {
      tl_graph_region *reg = &r->regions.v[g];
      if (reg->db_idx != d->db_idx || reg->device_id != d->device_id ||
          reg->status != TL_REGION_MISSING_BODY_CAPABILITY)
        continue;
      free(reg->detail);
      reg->detail = tl_strdup(d->companion_detail);
      if (!reg->detail) rc = tl_nomem(e);
    }
  }
  free(wait_used), free(rec_used), free(work), free(host_next), free(wait_next);
  tl_i64map_free(&host_by_conn);
  tl_i64map_free(&wait_by_conn);
done:
  TL_VEC_FREE(&execs);
  TL_VEC_FREE(&waits);
  TL_VEC_FREE(&records);
  return rc;
}

/* ------------------------------------------------------------------ driver */

int tl_replay_acl(const tl_trace *t, const tl_profile *p, tl_replay *r, tl_err *e) {
  const tl_events *ev = &t->ev;
  /* Only Ascend inputs with MODEL_EXECUTE tasks take part. Control kinds are decided per
  ** label (a few thousand) rather than per event (millions). */
  if (!ev->n) return TL_OK;
  uint8_t *ctl = malloc(t->labels.n ? t->labels.n : 1);
  if (!ctl) return tl_nomem(e);
  int any = 0;
  for (size_t i = 0; i < t->labels.n; i++) {
    ctl[i] = (uint8_t)control_kind(label_task_type(t, &t->labels.v[i]));
    any |= ctl[i] == CTL_EXECUTE;
  }
  if (!any) {
    free(ctl);
    return TL_OK;
  }
  /* Events grouped by (db_idx, device_id), reader order inside a group. */
  uint32_t *order = malloc(ev->n * sizeof *order);
  uint64_t *keys = malloc(ev->n * sizeof *keys);
  uint32_t *cand = malloc(ev->n * sizeof *cand);
  uint8_t *claimed = calloc(ev->n, 1);
  size_t nlab = t->labels.n ? t->labels.n : 1;
  char **token = calloc(nlab, sizeof *token);
  uint8_t *token_kind = calloc(nlab, 1), *token_done = calloc(nlab, 1);
  int rc = TL_OK;
  if (!order || !keys || !cand || !claimed || !token || !token_kind || !token_done)
    rc = tl_nomem(e);
  for (size_t i = 0; rc == TL_OK && i < ev->n; i++)
    order[i] = (uint32_t)i, keys[i] = ((uint64_t)tl_events_db_idx(ev, i) << 32) | tl_events_device_id(ev, i);
  if (rc == TL_OK && tl_radix_sort_u64(keys, order, ev->n)) rc = tl_nomem(e);
  tl_capture_streams caps = {0};
  int last_db = -1;
  for (size_t i = 0; rc == TL_OK && i < ev->n;) {
    size_t j = i;
    while (j < ev->n && keys[j] == keys[i]) j++;
    uint16_t db = tl_events_db_idx(ev, order[i]);
    const tl_input *in = p && db < p->inputs.n ? &p->inputs.v[db] : NULL;
    if ((int)db != last_db) {
      caps.n = 0;
      rc = tl_read_capture_streams(p, db, &caps, e);
      last_db = db;
    }
    device_ctx d;
    memset(&d, 0, sizeof d);
    d.t = t, d.r = r, d.db_idx = db, d.device_id = tl_events_device_id(ev, order[i]);
    d.caps = &caps;
    d.cap_first = 0;
    while (d.cap_first < caps.n && caps.v[d.cap_first].device_id < (int64_t)d.device_id)
      d.cap_first++;
    while (d.cap_first + d.cap_n < caps.n &&
           caps.v[d.cap_first + d.cap_n].device_id == (int64_t)d.device_id)
      d.cap_n++;
    d.companion_ok = in && in->stream_info_path;
    d.companion_detail = in ? in->stream_info_detail : NULL;
    d.cand = cand;
    d.ctl = ctl;
    d.claimed = claimed;
    d.token = token, d.token_kind = token_kind, d.token_done = token_done;
    if (rc == TL_OK) rc = process_device(&d, order + i, j - i, e);
    i = j;
  }
  TL_VEC_FREE(&caps);
  for (size_t k = 0; token && k < t->labels.n; k++) free(token[k]);
  free(order), free(keys), free(cand), free(claimed), free(ctl);
  free(token), free(token_kind), free(token_done);
  return rc;
}
