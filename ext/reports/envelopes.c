/*
** envelopes.c: the device events inside each graph replay envelope
** (traceloom_graph_envelope_child_run_core, traceloom_graph_envelope_anchor; views
** traceloom_graph_envelope_child, traceloom_cuda_graph_envelope, traceloom_v_cuda_graph_envelope,
** traceloom_cuda_graph_replay, whose enclosed_* counts are these children, and
** traceloom_v_cuda_graph_replay).
**
** An envelope is a row of traceloom_cuda_graph_replay_core (the interval of a promoted replay
** unit, a graph-level GRAPH_TRACE row, or a Kineto graph launch's kernels, which has no event
** of its own). Its children are the real device events of its (db, device) whose [start, end)
** lies inside [start, end] of the envelope, the envelope's own event excepted, by one binary
** search into the device's events sorted by start. Containment in
** time is temporal evidence only: exact membership is traceloom_graph_body_member.
*/
#include "reports/reports.h"
#include "publish/publish.h"
#include "publish/rows.h"
#include "util/sort.h"

#include <stdlib.h>
#include <string.h>

#define NONE UINT32_MAX

typedef TL_VEC(uint32_t) u32vec;

/* Real events sorted by (db, device, start, end, index): the key packs db and device above
** the start, so one radix sort of (start) then one of (db, device) orders them. */
static int sort_events(const tl_trace *t, size_t n, uint32_t **out, tl_err *e) {
  uint32_t *order = malloc((n ? n : 1) * sizeof *order);
  uint64_t *keys = malloc((n ? n : 1) * sizeof *keys);
  if (!order || !keys) return free(order), free(keys), tl_nomem(e);
  for (size_t i = 0; i < n; i++) order[i] = (uint32_t)i, keys[i] = tl_order_i64(tl_events_end(&t->ev, i));
  int bad = tl_radix_sort_u64(keys, order, n);
  for (size_t i = 0; !bad && i < n; i++) keys[i] = tl_order_i64(t->ev.start_ns[order[i]]);
  bad = bad || tl_radix_sort_u64(keys, order, n);
  for (size_t i = 0; !bad && i < n; i++)
    keys[i] = ((uint64_t)tl_events_db_idx(&t->ev, order[i]) << 32) | tl_events_device_id(&t->ev, order[i]);
  bad = bad || tl_radix_sort_u64(keys, order, n);
  free(keys);
  if (bad) return free(order), tl_nomem(e);
  *out = order;
  return TL_OK;
}

static int before(const tl_trace *t, uint32_t ev, uint16_t db, uint32_t dev, int64_t start) {
  if (tl_events_db_idx(&t->ev, ev) != db) return tl_events_db_idx(&t->ev, ev) < db;
  if (tl_events_device_id(&t->ev, ev) != dev) return tl_events_device_id(&t->ev, ev) < dev;
  return t->ev.start_ns[ev] < start;
}

/* Children are stored as runs of consecutive event numbers (readers give a device's events
** mostly in time order, so an envelope's children are a few runs): a run is (envelope, child
** order of its first event, first event, length) in runs->v[4 * i ..]. */
static int push_child(u32vec *runs, uint32_t idx, uint32_t order, uint32_t ev) {
  uint32_t *last = runs->n ? &runs->v[runs->n - 4] : NULL;
  if (last && last[0] == idx && last[1] + last[3] == order && last[2] + last[3] == ev) {
    last[3]++;
    return 0;
  }
  return TL_VEC_PUSH(runs, idx) || TL_VEC_PUSH(runs, order) || TL_VEC_PUSH(runs, ev) ||
         TL_VEC_PUSH(runs, 1u);
}

static int fill_child(void *ctx, size_t i, int64_t *v, unsigned char *null) {
  const u32vec *rows = ctx;
  (void)null;
  for (int k = 0; k < 4; k++) v[k] = rows->v[4 * i + (size_t)k];
  return 0;
}

static int fill_anchor(void *ctx, size_t i, int64_t *v, unsigned char *null) {
  const u32vec *rows = ctx;
  (void)null;
  v[0] = rows->v[2 * i], v[1] = rows->v[2 * i + 1];
  return 0;
}

int tl_reports_envelopes(sqlite3 *db, const tl_reports_input *in, tl_err *e) {
  const tl_trace *t = in->trace;
  size_t nreal = in->replay && in->replay->launch_of_synthetic ? in->replay->n_real_events : t->ev.n;
  sqlite3_stmt *st;
  if (tl_pub_prepare(db,
                     "SELECT graph_event_idx, db_idx, device_id, coalesce(event_n, -1), "
                     "start_ns, end_ns FROM main.traceloom_cuda_graph_replay_core "
                     "WHERE start_ns IS NOT NULL AND end_ns IS NOT NULL "
                     "ORDER BY graph_event_idx",
                     &st, e))
    return TL_ERROR;
  uint32_t *order = NULL, *anchor_of = NULL;
  u32vec children = {0}, anchors = {0};
  /* child orders run 1.. over every envelope's children in envelope order, as the reference
  ** numbers its envelope rows (envelope_idx, envelope_id) */
  uint32_t k = 0;
  int rc = TL_OK, s;
  while (rc == TL_OK && (s = sqlite3_step(st)) == SQLITE_ROW) {
    if (!order) {
      rc = sort_events(t, nreal, &order, e);
      /* anchors' events include replay's derived launch events, numbered after the trace's */
      size_t nall = tl_event_count(t, in->anchors->derived);
      anchor_of = malloc((nall ? nall : 1) * sizeof *anchor_of);
      if (rc == TL_OK && !anchor_of) rc = tl_nomem(e);
      if (rc) break;
      memset(anchor_of, 0xff, (nall ? nall : 1) * sizeof *anchor_of);
      for (size_t k = 0; k < in->anchors->n; k++) anchor_of[in->anchors->event[k]] = (uint32_t)k;
    }
    uint32_t idx = (uint32_t)sqlite3_column_int64(st, 0);
    uint16_t dbi = (uint16_t)sqlite3_column_int(st, 1);
    uint32_t dev = (uint32_t)sqlite3_column_int64(st, 2);
    int64_t own = sqlite3_column_int64(st, 3);
    int64_t start = sqlite3_column_int64(st, 4), end = sqlite3_column_int64(st, 5);
    if (own >= 0 && (size_t)own < t->ev.n && anchor_of[own] != NONE &&
        (TL_VEC_PUSH(&anchors, idx) || TL_VEC_PUSH(&anchors, anchor_of[own]))) {
      rc = tl_nomem(e);
      break;
    }
    size_t lo = 0, hi = nreal;
    while (lo < hi) {
      size_t mid = lo + (hi - lo) / 2;
      if (before(t, order[mid], dbi, dev, start)) lo = mid + 1;
      else hi = mid;
    }
    for (size_t i = lo; i < nreal; i++) {
      uint32_t ev = order[i];
      if (tl_events_db_idx(&t->ev, ev) != dbi || tl_events_device_id(&t->ev, ev) != dev || t->ev.start_ns[ev] > end) break;
      if ((int64_t)ev == own || tl_events_end(&t->ev, ev) > end) continue;
      if (push_child(&children, idx, ++k, ev)) {
        rc = tl_nomem(e);
        break;
      }
    }
  }
  if (rc == TL_OK && s != SQLITE_DONE)
    rc = tl_fail(e, "reading the published graph envelopes: %s", sqlite3_errmsg(db));
  sqlite3_finalize(st);
  if (rc == TL_OK && children.n) {
    tl_rows src = {children.n / 4, 4, fill_child, &children, 0, NULL};
    rc = tl_rows_insert(db, "traceloom_graph_envelope_child_run_core",
                        "graph_event_idx, first_child_order, first_event_n, run_length", &src, e);
  }
  if (rc == TL_OK && anchors.n) {
    tl_rows src = {anchors.n / 2, 2, fill_anchor, &anchors, 0, NULL};
    rc = tl_rows_insert(db, "traceloom_graph_envelope_anchor", "graph_event_idx, anchor_n", &src, e);
  }
  TL_VEC_FREE(&children);
  TL_VEC_FREE(&anchors);
  free(order), free(anchor_of);
  return rc;
}
