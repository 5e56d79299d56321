/*
** packets.c: cost packets by sweeping sorted interval endpoints (see packets.h).
*/
#include "cost/packets.h"
#include "util/sort.h"

#include <stdlib.h>
#include <string.h>

typedef struct interval {
  int64_t s, e;
} interval;

typedef TL_VEC(interval) intervals;

/* Min-heap of uint32 keys. */
typedef struct heap {
  uint32_t *v;
  size_t n, cap;
} heap;

static int heap_push(heap *h, uint32_t x) {
  if (h->n == h->cap) {
    size_t cap = h->cap ? h->cap * 2 : 64;
    uint32_t *v = realloc(h->v, cap * sizeof *v);
    if (!v) return -1;
    h->v = v, h->cap = cap;
  }
  size_t i = h->n++;
  while (i > 0 && h->v[(i - 1) / 2] > x) {
    h->v[i] = h->v[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  h->v[i] = x;
  return 0;
}

static void heap_pop(heap *h) {
  uint32_t x = h->v[--h->n];
  size_t i = 0;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= h->n) break;
    if (c + 1 < h->n && h->v[c + 1] < h->v[c]) c++;
    if (h->v[c] >= x) break;
    h->v[i] = h->v[c];
    i = c;
  }
  if (h->n) h->v[i] = x;
}

/* Union of intervals already sorted by start. */
static int union_push(intervals *u, int64_t s, int64_t e) {
  if (e <= s) return 0;
  if (u->n && s <= u->v[u->n - 1].e) {
    if (e > u->v[u->n - 1].e) u->v[u->n - 1].e = e;
    return 0;
  }
  interval iv = {s, e};
  return TL_VEC_PUSH(u, iv);
}

/* a \ b for sorted disjoint lists. */
static int subtract(const intervals *a, const intervals *b, intervals *out) {
  size_t j = 0;
  for (size_t i = 0; i < a->n; i++) {
    int64_t s = a->v[i].s, e = a->v[i].e;
    while (j < b->n && b->v[j].e <= s) j++;
    size_t k = j;
    while (s < e && k < b->n && b->v[k].s < e) {
      if (b->v[k].s > s) {
        interval iv = {s, b->v[k].s};
        if (TL_VEC_PUSH(out, iv)) return -1;
      }
      if (b->v[k].e > s) s = b->v[k].e;
      k++;
    }
    if (s < e) {
      interval iv = {s, e};
      if (TL_VEC_PUSH(out, iv)) return -1;
    }
  }
  return 0;
}

/* |[s, e) ∩ u| with a cursor that only moves forward (windows come in order). */
static int64_t covered(const intervals *u, size_t *cur, int64_t s, int64_t e) {
  while (*cur < u->n && u->v[*cur].e <= s) (*cur)++;
  int64_t len = 0;
  for (size_t k = *cur; k < u->n && u->v[k].s < e; k++) {
    int64_t lo = u->v[k].s > s ? u->v[k].s : s;
    int64_t hi = u->v[k].e < e ? u->v[k].e : e;
    if (hi > lo) len += hi - lo;
  }
  return len;
}

/* Anchor shares of one group: sweep starts (anchor order) and ends (sorted). */
static int shares(const tl_anchors *a, const tl_anchor_group *g, tl_packets *p) {
  size_t n = g->count;
  if (!n) return 0;
  uint64_t *ek = malloc(n * sizeof *ek);
  uint32_t *ei = malloc(n * sizeof *ei);
  uint8_t *ended = calloc(n, 1);
  heap comm = {0}, other = {0};
  int rc = -1;
  if (!ek || !ei || !ended) goto out;
  for (size_t k = 0; k < n; k++)
    ek[k] = tl_order_i64(tl_anchor_end(a, g->first + k)), ei[k] = (uint32_t)k;
  if (tl_radix_sort_u64(ek, ei, n)) goto out;
  size_t si = 0, xi = 0;
  int64_t prev = 0;
  int have_prev = 0;
  while (si < n || xi < n) {
    int64_t ts = si < n ? tl_anchor_start(a, g->first + si) : INT64_MAX;
    int64_t te = xi < n ? tl_anchor_end(a, g->first + ei[xi]) : INT64_MAX;
    int64_t now = ts < te ? ts : te;
    if (have_prev && now > prev) {
      /* The slice [prev, now) goes to the lowest active comm anchor, else the lowest other. */
      while (comm.n && ended[comm.v[0]]) heap_pop(&comm);
      while (other.n && ended[other.v[0]]) heap_pop(&other);
      if (comm.n) {
        if (tl_i64col_add(&p->comm_ns, g->first + comm.v[0], now - prev)) goto out;
      } else if (other.n) {
        if (tl_i64col_add(&p->compute_ns, g->first + other.v[0], now - prev)) goto out;
      }
    }
    prev = now, have_prev = 1;
    while (xi < n && tl_anchor_end(a, g->first + ei[xi]) == now) ended[ei[xi++]] = 1;
    while (si < n && tl_anchor_start(a, g->first + si) == now) {
      uint32_t k = (uint32_t)si++;
      if (tl_anchor_end(a, g->first + k) <= now) continue; /* zero-length anchors are skipped */
      ended[k] = 0;
      if (heap_push(a->role[g->first + k] == TL_ANCHOR_COMM ? &comm : &other, k)) goto out;
    }
  }
  rc = 0;
out:
  free(ek), free(ei), free(ended), free(comm.v), free(other.v);
  return rc;
}

/* Prelude windows of one group, classified against the non-anchor events. */
static int windows(const tl_anchors *a, const tl_anchor_group *g, tl_packets *p) {
  const tl_trace *t = a->t;
  const tl_derived *d = a->derived;
  intervals ucomm = {0}, uexec = {0}, uexec_only = {0};
  TL_VEC(uint32_t) active = {0}; /* the group's other events that may overlap a window */
  int rc = -1;
  const uint32_t *other = a->other + g->first_event;
  for (size_t k = 0; k < g->nevents; k++) {
    size_t x = other[k];
    const tl_label *l = tl_event_label_of(t, d, x);
    int64_t xs = tl_event_start(t, d, x), xe = tl_event_end(t, d, x);
    if (l->kind == TL_KIND_COMMUNICATION) {
      if (union_push(&ucomm, xs, xe)) goto out;
    } else if (!tl_label_is_wait(t, l)) {
      if (union_push(&uexec, xs, xe)) goto out;
    }
  }
  if (subtract(&uexec, &ucomm, &uexec_only)) goto out;
  size_t cc = 0, ce = 0, next_event = 0;
  int64_t frontier = 0;
  for (size_t k = 0; k < g->count; k++) {
    size_t n = g->first + k;
    int64_t s = tl_anchor_start(a, n), e = tl_anchor_end(a, n);
    if (tl_i64col_set(&p->self_ns, n, e - s)) goto out;
    if (k == 0) frontier = s;
    if (s > frontier) {
      int64_t len = s - frontier;
      int64_t c = covered(&ucomm, &cc, frontier, s);
      int64_t x2 = covered(&uexec_only, &ce, frontier, s);
      int64_t aux_ns = 0;
      uint32_t aux_events = 0;
      /* Overlay: eligible events overlapping the window, each counted with its overlap.
      ** `active` keeps events that started before s and may still overlap later windows. */
      while (next_event < g->nevents && tl_event_start(t, d, other[next_event]) < s) {
        if (TL_VEC_PUSH(&active, (uint32_t)next_event)) goto out;
        next_event++;
      }
      size_t keep = 0;
      for (size_t h = 0; h < active.n; h++) {
        size_t y = other[active.v[h]];
        int64_t ys = tl_event_start(t, d, y), ye = tl_event_end(t, d, y);
        if (ye <= frontier) continue; /* ended before this window: never again */
        active.v[keep++] = active.v[h];
        int64_t lo = ys > frontier ? ys : frontier;
        int64_t hi = ye < s ? ye : s;
        if (hi > lo) {
          aux_ns += hi - lo;
          aux_events++;
        }
      }
      active.n = keep;
      if (tl_i64col_add(&p->comm_ns, n, c) || tl_i64col_add(&p->compute_ns, n, x2) ||
          tl_i64col_add(&p->idle_ns, n, len - c - x2) || tl_i64col_add(&p->aux_ns, n, aux_ns) ||
          tl_i64col_add(&p->aux_events, n, aux_events))
        goto out;
    }
    if (e > frontier) frontier = e;
  }
  rc = 0;
out:
  TL_VEC_FREE(&ucomm), TL_VEC_FREE(&uexec), TL_VEC_FREE(&uexec_only);
  TL_VEC_FREE(&active);
  return rc;
}

void tl_packets_free(tl_packets *p) {
  tl_i64col_free(&p->compute_ns), tl_i64col_free(&p->comm_ns), tl_i64col_free(&p->idle_ns);
  tl_i64col_free(&p->self_ns), tl_i64col_free(&p->aux_ns), tl_i64col_free(&p->aux_events);
  p->n = 0;
}

int tl_packets_build(const tl_trace *t, const tl_anchors *a, tl_packets *out, tl_err *e) {
  tl_i64col *cols[] = {&out->compute_ns, &out->comm_ns, &out->idle_ns, &out->self_ns,
                       &out->aux_ns, &out->aux_events};
  out->n = a->n;
  int bad = 0;
  for (size_t k = 0; k < sizeof cols / sizeof cols[0]; k++) {
    tl_i64col_init(cols[k], 0);
    if (tl_i64col_grow(cols[k], a->n ? a->n : 1)) bad = 1;
  }
  for (size_t gi = 0; !bad && gi < a->groups.n; gi++) {
    const tl_anchor_group *g = &a->groups.v[gi];
    if (shares(a, g, out) || windows(a, g, out)) bad = 1;
  }
  if (bad) {
    tl_packets_free(out);
    return tl_nomem(e);
  }
  return TL_OK;
}
