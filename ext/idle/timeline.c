/*
** timeline.c: E2 (productive timeline and visible gaps), E3 (per-stream states) and E4 (gap
** explanations) of one db, per device (idle.h).
**
** E2 candidates are the communication ops (the canonical communication intervals) and the
** tasks with a productive role; a productive-communication task is absorbed into the one op
** of its (device, connection id) that overlaps it in time with compatible names, and is then
** a supporting source of that op, never a second interval. The union of the candidates
** (touching intervals merge) is productive_active; its complement in the span [first start,
** last end) is visible_productive_idle.
**
** E3 per stream, the events of the stream (absorbed tasks excepted; an op carries its
** absorbed tasks as sources) clipped to the span, swept at every boundary: no event is
** empty_observed, one event its running state, two or more ambiguous_overlap (each source
** keeps the state it was observed in). Adjacent segments with the same state and sources merge.
** An event without a stream leaves the device's scan incomplete.
**
** E4 slices each gap at every stream boundary and host-evidence boundary inside it and
** explains every slice by priority (idle.h); adjacent slices with the same explanation and
** sources merge. Nothing here reads SQL: the caller gives the events' roles and connection ids.
*/
#include "idle/idle_int.h"

#include <stdlib.h>
#include <string.h>

#define NONE TL_IDLE_NONE

typedef TL_VEC(uint32_t) u32vec;

void tl_idle_devices_free(tl_idle_devices *d) {
  for (size_t i = 0; i < d->n; i++) {
    tl_idle_device *x = &d->v[i];
    TL_VEC_FREE(&x->intervals), TL_VEC_FREE(&x->interval_src), TL_VEC_FREE(&x->states);
    TL_VEC_FREE(&x->state_src), TL_VEC_FREE(&x->expl), TL_VEC_FREE(&x->expl_src);
  }
  TL_VEC_FREE(d);
}

static const char *str_or_empty(const tl_trace *t, uint32_t id) {
  const char *s = tl_str(t, id);
  return s ? s : "";
}

/* A communication task and an op are one action only when their names agree, if both carry
** names (a task without a communication name conflicts with nothing). */
static int names_compatible(const tl_trace *t, uint32_t task, uint32_t op) {
  const char *tc = str_or_empty(t, tl_event_label(t, task)->comm_name);
  if (!*tc) return 1;
  const tl_label *l = tl_event_label(t, op);
  const char *names[] = {str_or_empty(t, l->comm_name), str_or_empty(t, l->op_name),
                         str_or_empty(t, l->op_type), str_or_empty(t, l->name)};
  int any = 0;
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    if (!*names[i]) continue;
    any = 1;
    if (strcmp(names[i], tc) == 0) return 1;
  }
  return !any;
}

static int overlaps(const tl_trace *t, uint32_t a, uint32_t b) {
  return t->ev.start_ns[a] < tl_events_end(&t->ev, b) && t->ev.start_ns[b] < tl_events_end(&t->ev, a);
}

static int state_of(const tl_idle_events *ev, uint32_t i) {
  return ev->is_op[i] ? TL_IS_COMM : ev->role[i]; /* roles and running states share codes */
}

static int src_push(tl_idle_srcs *v, const tl_idle_events *ev, uint32_t event) {
  tl_idle_src s = {event, NONE, (uint8_t)state_of(ev, event), ev->is_op[event] ? NONE : ev->rule[event], 0, 0};
  return TL_VEC_PUSH(v, s);
}

/* (op, absorbed task) pairs of a device, sorted by op then task. */
typedef struct absorption {
  uint32_t op, task;
} absorption;
typedef TL_VEC(absorption) absorptions;

static int cmp_absorption(const void *a, const void *b) {
  const absorption *x = a, *y = b;
  if (x->op != y->op) return x->op < y->op ? -1 : 1;
  return x->task < y->task ? -1 : x->task > y->task;
}

/* The sources of stream event i: itself, and for an op the tasks it absorbed. */
static int event_sources(const tl_idle_events *ev, const absorptions *ab, uint32_t i, tl_idle_srcs *out) {
  if (src_push(out, ev, i)) return -1;
  if (!ev->is_op[i]) return 0;
  size_t lo = 0, hi = ab->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (ab->v[mid].op < i) lo = mid + 1;
    else hi = mid;
  }
  for (; lo < ab->n && ab->v[lo].op == i; lo++) {
    tl_idle_src s = {ab->v[lo].task, NONE, TL_IS_COMM, ev->rule[ab->v[lo].task], 0, 0};
    if (TL_VEC_PUSH(out, s)) return -1;
  }
  return 0;
}

/* ------------------------------------------------------------------ E2 */

typedef struct cand {
  int64_t start, end;
  uint32_t event;            /* the op or task the candidate stands for */
  uint32_t order;            /* input order, for a deterministic sort */
} cand;

static int cmp_cand(const void *a, const void *b) {
  const cand *x = a, *y = b;
  if (x->start != y->start) return x->start < y->start ? -1 : 1;
  return x->order < y->order ? -1 : x->order > y->order;
}

static int productive(const tl_idle_events *ev, tl_idle_device *d, const u32vec *events,
                      uint8_t *absorbed, absorptions *ab, int *invalid, tl_err *e) {
  const tl_trace *t = ev->t;
  TL_VEC(cand) cands = {0};
  u32vec ops = {0};
  int rc = TL_OK;
  for (size_t k = 0; rc == TL_OK && k < events->n; k++) {
    uint32_t i = events->v[k];
    if (!ev->is_op[i]) continue;
    if (tl_events_end(&t->ev, i) <= t->ev.start_ns[i]) {
      *invalid = 1;
      continue;
    }
    cand c = {t->ev.start_ns[i], tl_events_end(&t->ev, i), i, (uint32_t)cands.n};
    if (TL_VEC_PUSH(&cands, c) || TL_VEC_PUSH(&ops, i)) rc = tl_nomem(e);
  }
  for (size_t k = 0; rc == TL_OK && k < events->n; k++) {
    uint32_t i = events->v[k];
    uint8_t role = ev->role[i];
    if (ev->is_op[i] || (role != TL_IR_COMPUTE && role != TL_IR_COMM && role != TL_IR_DATA_MOVE))
      continue;
    if (tl_events_end(&t->ev, i) <= t->ev.start_ns[i]) {
      *invalid = 1;
      continue;
    }
    if (role == TL_IR_COMM && ev->conn[i] >= 0) {
      uint32_t match = NONE;
      int keep = 0;
      for (size_t o = 0; o < ops.n && !keep; o++) {
        uint32_t op = ops.v[o];
        if (ev->conn[op] != ev->conn[i] || !overlaps(t, i, op)) continue;
        if (!names_compatible(t, i, op) || match != NONE) keep = 1;
        else match = op;
      }
      if (!keep && match != NONE) {
        absorbed[i] = 1;
        absorption a = {match, i};
        if (TL_VEC_PUSH(ab, a)) rc = tl_nomem(e);
        continue;
      }
    }
    cand c = {t->ev.start_ns[i], tl_events_end(&t->ev, i), i, (uint32_t)cands.n};
    if (TL_VEC_PUSH(&cands, c)) rc = tl_nomem(e);
  }
  if (rc == TL_OK) {
    if (ab->n) qsort(ab->v, ab->n, sizeof *ab->v, cmp_absorption); /* qsort(NULL, 0) is UB */
    if (cands.n) qsort(cands.v, cands.n, sizeof *cands.v, cmp_cand);
  }
  if (rc == TL_OK && !cands.n) d->status = 1; /* no_productive_span */
  if (rc == TL_OK && cands.n) {
    d->span_start = cands.v[0].start;
    int64_t cursor = d->span_start;
    size_t c = 0;
    while (rc == TL_OK && c < cands.n) {
      int64_t s = cands.v[c].start, end = cands.v[c].end;
      uint32_t first = (uint32_t)d->interval_src.n;
      for (; c < cands.n && cands.v[c].start <= end; c++) {
        if (cands.v[c].end > end) end = cands.v[c].end;
        if (event_sources(ev, ab, cands.v[c].event, &d->interval_src)) rc = tl_nomem(e);
      }
      tl_idle_interval gap = {cursor, s, 1, first, 0}, prod = {s, end, 0, first, (uint32_t)d->interval_src.n - first};
      if (rc == TL_OK && s > cursor && TL_VEC_PUSH(&d->intervals, gap)) rc = tl_nomem(e);
      if (rc == TL_OK && TL_VEC_PUSH(&d->intervals, prod)) rc = tl_nomem(e);
      cursor = end;
    }
    d->span_end = cursor;
  }
  TL_VEC_FREE(&cands), TL_VEC_FREE(&ops);
  return rc;
}

/* ------------------------------------------------------------------ E3 */

typedef struct action {
  int64_t t;
  int add;                   /* removals (0) before additions (1) at one time */
  uint32_t event;
} action;

static int cmp_action(const void *a, const void *b) {
  const action *x = a, *y = b;
  if (x->t != y->t) return x->t < y->t ? -1 : 1;
  if (x->add != y->add) return x->add - y->add;
  return x->event < y->event ? -1 : x->event > y->event;
}

static int cmp_src(const void *a, const void *b) {
  const tl_idle_src *x = a, *y = b;
  if (x->event != y->event) return x->event < y->event ? -1 : 1;
  if (x->call != y->call) return x->call < y->call ? -1 : 1;
  return (int)x->state - (int)y->state;
}

static int same_srcs(const tl_idle_srcs *v, uint32_t a, uint32_t na, uint32_t b, uint32_t nb) {
  if (na != nb) return 0;
  for (uint32_t k = 0; k < na; k++)
    if (cmp_src(&v->v[a + k], &v->v[b + k]) != 0) return 0;
  return 1;
}

/* One segment [s, t) of a stream from its active events (ascending event numbers). */
static int push_segment(const tl_idle_events *ev, const absorptions *ab, tl_idle_device *d,
                        uint32_t stream, int64_t s, int64_t t, const u32vec *active) {
  tl_idle_state_row row = {stream, s, t, TL_IS_EMPTY, (uint32_t)d->state_src.n, 0};
  if (active->n == 1) row.state = (uint8_t)state_of(ev, active->v[0]);
  else if (active->n > 1) row.state = TL_IS_AMBIGUOUS;
  for (size_t k = 0; k < active->n; k++)
    if (event_sources(ev, ab, active->v[k], &d->state_src)) return -1;
  row.nsrc = (uint32_t)d->state_src.n - row.first_src;
  if (row.nsrc) qsort(d->state_src.v + row.first_src, row.nsrc, sizeof *d->state_src.v, cmp_src);
  tl_idle_state_row *last = d->states.n ? &d->states.v[d->states.n - 1] : NULL;
  if (last && last->stream == stream && last->end == s && last->state == row.state &&
      same_srcs(&d->state_src, last->first_src, last->nsrc, row.first_src, row.nsrc)) {
    last->end = t;
    d->state_src.n = row.first_src;
    return 0;
  }
  return TL_VEC_PUSH(&d->states, row);
}

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

/* The stream events of a device sorted by (stream, event). */
typedef struct stream_event {
  uint32_t stream, event;
} stream_event;

static int cmp_stream_event(const void *a, const void *b) {
  const stream_event *x = a, *y = b;
  if (x->stream != y->stream) return x->stream < y->stream ? -1 : 1;
  return x->event < y->event ? -1 : x->event > y->event;
}

static int streams(const tl_idle_events *ev, tl_idle_device *d, const u32vec *events,
                   const uint8_t *absorbed, const absorptions *ab, int *invalid, tl_err *e) {
  const tl_trace *t = ev->t;
  TL_VEC(stream_event) se = {0};
  TL_VEC(action) acts = {0};
  u32vec active = {0};
  int rc = TL_OK;
  d->scan_complete = 1;
  for (size_t k = 0; rc == TL_OK && k < events->n; k++) {
    uint32_t i = events->v[k];
    if (absorbed[i]) continue;
    if (tl_events_end(&t->ev, i) <= t->ev.start_ns[i]) {
      *invalid = 1, d->scan_complete = 0;
      continue;
    }
    if (tl_events_stream_id(&t->ev, i) == TL_NO_STREAM) {
      d->scan_complete = 0; /* observable but not placeable on a stream */
      continue;
    }
    if (tl_events_end(&t->ev, i) <= d->span_start || t->ev.start_ns[i] >= d->span_end) continue;
    stream_event x = {tl_events_stream_id(&t->ev, i), i};
    if (TL_VEC_PUSH(&se, x)) rc = tl_nomem(e);
  }
  if (rc == TL_OK && se.n) qsort(se.v, se.n, sizeof *se.v, cmp_stream_event);
  for (size_t a = 0; rc == TL_OK && a < se.n;) {
    size_t b = a;
    while (b < se.n && se.v[b].stream == se.v[a].stream) b++;
    d->stream_count++;
    acts.n = 0, active.n = 0;
    for (size_t k = a; rc == TL_OK && k < b; k++) {
      uint32_t i = se.v[k].event;
      int64_t s = t->ev.start_ns[i] < d->span_start ? d->span_start : t->ev.start_ns[i];
      int64_t f = tl_events_end(&t->ev, i) > d->span_end ? d->span_end : tl_events_end(&t->ev, i);
      action x = {s, 1, i}, y = {f, 0, i};
      if (TL_VEC_PUSH(&acts, x) || TL_VEC_PUSH(&acts, y)) rc = tl_nomem(e);
    }
    if (rc == TL_OK && acts.n) qsort(acts.v, acts.n, sizeof *acts.v, cmp_action);
    int64_t cursor = d->span_start;
    for (size_t k = 0; rc == TL_OK && k < acts.n; k++) {
      const action *x = &acts.v[k];
      if (x->t > cursor) {
        if (push_segment(ev, ab, d, se.v[a].stream, cursor, x->t, &active)) rc = tl_nomem(e);
        cursor = x->t;
      }
      if (x->add) {
        if (TL_VEC_PUSH(&active, x->event)) rc = tl_nomem(e);
        else qsort(active.v, active.n, sizeof *active.v, cmp_u32);
      } else {
        for (size_t j = 0; j < active.n; j++)
          if (active.v[j] == x->event) {
            memmove(active.v + j, active.v + j + 1, (active.n - j - 1) * sizeof *active.v);
            active.n--;
            break;
          }
      }
    }
    if (rc == TL_OK && cursor < d->span_end &&
        push_segment(ev, ab, d, se.v[a].stream, cursor, d->span_end, &active))
      rc = tl_nomem(e);
    a = b;
  }
  TL_VEC_FREE(&se), TL_VEC_FREE(&acts), TL_VEC_FREE(&active);
  return rc;
}

int tl_idle_timelines(const tl_idle_events *ev, tl_idle_devices *out, tl_err *e) {
  const tl_trace *t = ev->t;
  uint8_t *absorbed = calloc(ev->nreal ? ev->nreal : 1, 1);
  u32vec devs = {0};
  int rc = absorbed ? TL_OK : tl_nomem(e);
  /* the devices of the db, ascending */
  for (size_t i = 0; rc == TL_OK && i < ev->nreal; i++) {
    if (tl_events_db_idx(&t->ev, i) != ev->db_idx) continue;
    int seen = 0;
    for (size_t k = 0; k < devs.n && !seen; k++) seen = devs.v[k] == tl_events_device_id(&t->ev, i);
    if (!seen && TL_VEC_PUSH(&devs, tl_events_device_id(&t->ev, i))) rc = tl_nomem(e);
  }
  if (rc == TL_OK && devs.n) qsort(devs.v, devs.n, sizeof *devs.v, cmp_u32);
  u32vec events = {0};
  for (size_t k = 0; rc == TL_OK && k < devs.n; k++) {
    tl_idle_device d;
    memset(&d, 0, sizeof d);
    d.device_id = devs.v[k];
    events.n = 0;
    for (size_t i = 0; rc == TL_OK && i < ev->nreal; i++)
      if (tl_events_db_idx(&t->ev, i) == ev->db_idx && tl_events_device_id(&t->ev, i) == d.device_id &&
          TL_VEC_PUSH(&events, (uint32_t)i))
        rc = tl_nomem(e);
    absorptions ab = {0};
    int invalid = 0;
    if (rc == TL_OK) rc = productive(ev, &d, &events, absorbed, &ab, &invalid, e);
    if (rc == TL_OK && d.status == 0) rc = streams(ev, &d, &events, absorbed, &ab, &invalid, e);
    if (invalid && d.status == 0) d.status = 2; /* invalid_input: no absence claims */
    TL_VEC_FREE(&ab);
    if (TL_VEC_PUSH(out, d)) {
      tl_idle_devices one = {&d, 1, 1};
      tl_idle_devices_free(&one);
      rc = tl_nomem(e);
    }
  }
  TL_VEC_FREE(&events), TL_VEC_FREE(&devs);
  free(absorbed);
  return rc;
}

/* ------------------------------------------------------------------ E4 */

enum { LEVEL_DIRECT = 0, LEVEL_CORRELATED, LEVEL_NONE };
enum { REL_DEVICE_EVENT = 0, REL_ABSENCE, REL_EXACT_CONNECTION, REL_TEMPORAL_OVERLAP, REL_NONE };

static int state_in_category(uint8_t state, int category) {
  switch (category) {
    case TL_IC_WAIT: return state == TL_IS_WAIT;
    case TL_IC_CAPTURE: return state == TL_IS_CAPTURE;
    case TL_IC_RUNTIME: return state == TL_IS_RECORD || state == TL_IS_RUNTIME;
    default: return state == TL_IS_UNKNOWN; /* TL_IC_UNATTRIBUTED: unknown-role sources */
  }
}

static int cmp_i64(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

static const char *const REASON[] = {
    "profiler-visible wait task covers this interval",
    "capture/control task covers this interval",
    "record or runtime-control task covers this interval",
    "validated unique enqueue-to-visible-task robust delay covers this interval",
    "calibrated host-sync robust-overlap interval covers this interval",
    "all observed streams are empty and collection completeness is attested",
    "no stronger explanation evidence covers this interval"};

/* The stream ranges of d->states (rows are pushed stream by stream, in time order). */
typedef struct stream_range {
  size_t first, end, cursor;
} stream_range;

static int same_pick(const tl_idle_srcs *stored, const tl_idle_expl *last, const tl_idle_srcs *pick) {
  if (last->nsrc != pick->n) return 0;
  for (size_t k = 0; k < pick->n; k++)
    if (cmp_src(&stored->v[last->first_src + k], &pick->v[k]) != 0) return 0;
  return 1;
}

static int cmp_evidence(const void *a, const void *b) {
  const tl_idle_host_evidence *x = a, *y = b;
  if (x->start != y->start) return x->start < y->start ? -1 : 1;
  if (x->end != y->end) return x->end < y->end ? -1 : 1;
  return (int)x->category - (int)y->category;
}

int tl_idle_explain(const tl_idle_events *ev, tl_idle_device *d, const tl_idle_host_evidences *host,
                    int allow_absence_run, uint8_t unattributed_alignment, tl_err *e) {
  (void)ev;
  TL_VEC(int64_t) cuts = {0};
  TL_VEC(stream_range) ranges = {0};
  tl_idle_host_evidences hv = {0};
  tl_idle_srcs pick = {0};
  int rc = TL_OK;
  int allow = allow_absence_run && d->scan_complete && d->status == 0;
  for (size_t k = 0; rc == TL_OK && k < d->states.n; k++) {
    if (k && d->states.v[k].stream == d->states.v[k - 1].stream) continue;
    size_t j = k;
    while (j < d->states.n && d->states.v[j].stream == d->states.v[k].stream) j++;
    stream_range r = {k, j, k};
    if (TL_VEC_PUSH(&ranges, r)) rc = tl_nomem(e);
  }
  /* this device's host evidence, by start: each piece lies inside one gap */
  for (size_t h = 0; rc == TL_OK && host && h < host->n; h++)
    if (host->v[h].device_id == d->device_id && TL_VEC_PUSH(&hv, host->v[h])) rc = tl_nomem(e);
  if (rc == TL_OK && hv.n) qsort(hv.v, hv.n, sizeof *hv.v, cmp_evidence);
  size_t hcur = 0;
  for (uint32_t g = 0; rc == TL_OK && g < d->intervals.n; g++) {
    const tl_idle_interval *gap = &d->intervals.v[g];
    if (gap->kind != 1) continue;
    cuts.n = 0;
    if (TL_VEC_PUSH(&cuts, gap->start) || TL_VEC_PUSH(&cuts, gap->end)) rc = tl_nomem(e);
    for (size_t r = 0; rc == TL_OK && r < ranges.n; r++) {
      stream_range *sr = &ranges.v[r];
      while (sr->cursor < sr->end && d->states.v[sr->cursor].end <= gap->start) sr->cursor++;
      for (size_t k = sr->cursor; rc == TL_OK && k < sr->end && d->states.v[k].start < gap->end; k++) {
        const tl_idle_state_row *x = &d->states.v[k];
        if (TL_VEC_PUSH(&cuts, x->start > gap->start ? x->start : gap->start) ||
            TL_VEC_PUSH(&cuts, x->end < gap->end ? x->end : gap->end))
          rc = tl_nomem(e);
      }
    }
    while (hcur < hv.n && hv.v[hcur].start < gap->start) hcur++;
    size_t hend = hcur;
    while (hend < hv.n && hv.v[hend].start < gap->end) hend++;
    for (size_t h = hcur; rc == TL_OK && h < hend; h++)
      if (TL_VEC_PUSH(&cuts, hv.v[h].start) || TL_VEC_PUSH(&cuts, hv.v[h].end < gap->end ? hv.v[h].end : gap->end))
        rc = tl_nomem(e);
    if (rc) break;
    if (cuts.n) qsort(cuts.v, cuts.n, sizeof *cuts.v, cmp_i64);
    for (size_t c = 0; rc == TL_OK && c + 1 < cuts.n; c++) {
      int64_t s = cuts.v[c], f = cuts.v[c + 1];
      if (f <= s) continue;
      /* each stream's state covering [s, f) (the partitions cover the span) */
      int found[TL_IC_UNATTRIBUTED + 1] = {0};
      int all_empty = 1;
      uint8_t host_alignment[2] = {0, 0};
      for (size_t r = 0; r < ranges.n; r++) {
        stream_range *sr = &ranges.v[r];
        size_t k = sr->cursor;
        while (k < sr->end && d->states.v[k].end <= s) k++;
        if (k == sr->end || d->states.v[k].start > s || d->states.v[k].end < f) {
          all_empty = 0; /* an incomplete partition never supports an absence claim */
          continue;
        }
        const tl_idle_state_row *x = &d->states.v[k];
        if (x->state != TL_IS_EMPTY) all_empty = 0;
        for (uint32_t j = 0; j < x->nsrc; j++) {
          uint8_t st = d->state_src.v[x->first_src + j].state;
          for (int cat = TL_IC_WAIT; cat <= TL_IC_RUNTIME; cat++) found[cat] |= state_in_category(st, cat);
        }
      }
      for (size_t h = hcur; h < hend; h++)
        if (hv.v[h].start <= s && hv.v[h].end >= f) {
          found[hv.v[h].category] = 1;
          host_alignment[hv.v[h].category == TL_IC_QUEUED ? 0 : 1] = hv.v[h].alignment;
        }
      tl_idle_expl row = {g, s, f, TL_IC_UNATTRIBUTED, LEVEL_NONE, REL_NONE, unattributed_alignment,
                          NULL, 0, 0};
      for (int k = TL_IC_WAIT; k <= TL_IC_HOST_SYNC; k++)
        if (found[k]) {
          row.category = (uint8_t)k;
          row.level = k <= TL_IC_RUNTIME ? LEVEL_DIRECT : LEVEL_CORRELATED;
          row.relation = k <= TL_IC_RUNTIME ? REL_DEVICE_EVENT
                         : k == TL_IC_QUEUED ? REL_EXACT_CONNECTION : REL_TEMPORAL_OVERLAP;
          row.alignment = k <= TL_IC_RUNTIME ? TL_AL_NOT_REQUIRED : host_alignment[k == TL_IC_QUEUED ? 0 : 1];
          break;
        }
      if (row.category == TL_IC_UNATTRIBUTED && allow && all_empty && ranges.n) {
        row.category = TL_IC_ABSENT, row.level = LEVEL_DIRECT, row.relation = REL_ABSENCE;
        row.alignment = TL_AL_NOT_REQUIRED;
      }
      row.reason = REASON[row.category];
      /* the sources of the chosen category: the covering states' sources in that category
      ** (unknown-role sources stay as the diagnostic lineage of an unattributed slice) */
      pick.n = 0;
      if (row.category <= TL_IC_RUNTIME || row.category == TL_IC_UNATTRIBUTED) {
        for (size_t r = 0; rc == TL_OK && r < ranges.n; r++) {
          size_t k = ranges.v[r].cursor;
          while (k < ranges.v[r].end && d->states.v[k].end <= s) k++;
          if (k == ranges.v[r].end || d->states.v[k].start > s) continue;
          const tl_idle_state_row *x = &d->states.v[k];
          for (uint32_t j = 0; j < x->nsrc; j++)
            if (state_in_category(d->state_src.v[x->first_src + j].state, row.category) &&
                TL_VEC_PUSH(&pick, d->state_src.v[x->first_src + j]))
              rc = tl_nomem(e);
        }
      } else if (row.category != TL_IC_ABSENT) {
        for (size_t h = hcur; rc == TL_OK && h < hend; h++)
          if (hv.v[h].category == row.category && hv.v[h].start <= s && hv.v[h].end >= f &&
              TL_VEC_PUSH(&pick, hv.v[h].src))
            rc = tl_nomem(e);
      }
      if (rc) break;
      if (pick.n) qsort(pick.v, pick.n, sizeof *pick.v, cmp_src);
      size_t u = 0; /* one source once */
      for (size_t k = 0; k < pick.n; k++)
        if (!u || cmp_src(&pick.v[u - 1], &pick.v[k]) != 0) pick.v[u++] = pick.v[k];
      pick.n = u;
      tl_idle_expl *last = d->expl.n ? &d->expl.v[d->expl.n - 1] : NULL;
      if (last && last->gap == g && last->end == s && last->category == row.category &&
          last->level == row.level && last->relation == row.relation &&
          last->alignment == row.alignment && same_pick(&d->expl_src, last, &pick)) {
        last->end = f;
        continue;
      }
      row.first_src = (uint32_t)d->expl_src.n, row.nsrc = (uint32_t)pick.n;
      for (size_t k = 0; rc == TL_OK && k < pick.n; k++)
        if (TL_VEC_PUSH(&d->expl_src, pick.v[k])) rc = tl_nomem(e);
      if (rc == TL_OK && TL_VEC_PUSH(&d->expl, row)) rc = tl_nomem(e);
    }
  }
  TL_VEC_FREE(&cuts), TL_VEC_FREE(&pick), TL_VEC_FREE(&ranges), TL_VEC_FREE(&hv);
  return rc;
}
