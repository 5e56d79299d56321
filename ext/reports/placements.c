/*
** placements.c: the anchor that represents each communication task
** (traceloom_represented_event_run_core, expanded by the view traceloom_represented_event; read
** by traceloom_evidence_role_placement).
**
** Anchor selection (ext/anchor) keeps a communication task out of the tokens when a
** communication op of the same (db, device, connection id) overlaps it; the op is the anchor.
** That choice leaves no link behind, so the evidence-role placement of such a task ("which
** anchor carries this observation?") is found again here. The task is known to overlap an op
** of its own connection; when exactly one communication-op anchor of its device overlaps it,
** that is the op. When several do (concurrent collectives), the connection ids decide as
** anchor selection did (the lowest-numbered overlapping op of the task's connection): they
** were freed after the events were published and are read back from traceloom_event, for
** those events only.
**
** The tasks one op represents are mostly consecutive events (the op's per-rank tasks follow each
** other in reader order), so they are stored as runs: one row per run of consecutive event
** numbers with the same anchor (about 127k runs for 381k tasks on the 1M-task Ascend bench),
** each a key range of traceloom_event_core that the view expands.
*/
#include "reports/reports.h"
#include "publish/publish.h"
#include "publish/rows.h"
#include "util/sort.h"

#include <stdlib.h>
#include <string.h>

#define NONE UINT32_MAX

typedef TL_VEC(uint32_t) u32vec;

/* runs as (anchor, first event, last event) triples, in (anchor, first event) order: the key */
static int fill_run(void *ctx, size_t i, int64_t *v, unsigned char *null) {
  const uint32_t *run = (const uint32_t *)ctx + 3 * i;
  (void)null;
  v[0] = run[0], v[1] = run[1], v[2] = run[2];
  return 0;
}

/* The connection (correlation) id of event ev, read back from the published events. */
static int connection(sqlite3_stmt *st, uint32_t ev, int64_t *out) {
  sqlite3_bind_int64(st, 1, ev);
  int s = sqlite3_step(st);
  *out = s == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL ? sqlite3_column_int64(st, 0) : TL_ABSENT;
  sqlite3_reset(st);
  return s == SQLITE_ROW || s == SQLITE_DONE ? 0 : -1;
}

int tl_reports_placements(sqlite3 *db, const tl_reports_input *in, tl_err *e) {
  const tl_trace *t = in->trace;
  const tl_anchors *an = in->anchors;
  size_t n = t->ev.n, nrep = 0;
  for (size_t i = 0; i < n; i++) nrep += an->non_anchor[i] == TL_NA_REPRESENTED_BY_COMM_OP;
  if (!nrep) return TL_OK;
  u32vec rep_event = {0}, rep_anchor = {0}, hits = {0};
  sqlite3_stmt *st = NULL;
  int rc = tl_pub_prepare(db, "SELECT correlation_id FROM main.traceloom_event WHERE event_n = ?1", &st, e);
  /* per device group, the communication-op anchors sorted by start (anchors already are) */
  for (size_t g = 0; rc == TL_OK && g < an->groups.n; g++) {
    const tl_anchor_group *gr = &an->groups.v[g];
    u32vec ops = {0}; /* global anchor indices of the group's communication ops */
    int64_t max_len = 0;
    for (size_t k = gr->first; rc == TL_OK && k < gr->first + gr->count; k++)
      if (tl_label_is_comm_op(t, tl_event_label_of(t, an->derived, an->event[k]))) {
        /* a communication op is a trace event (derived events are graph launches) */
        if (TL_VEC_PUSH(&ops, (uint32_t)k)) rc = tl_nomem(e);
        int64_t len = tl_events_end(&t->ev, an->event[k]) - t->ev.start_ns[an->event[k]];
        if (len > max_len) max_len = len;
      }
    for (size_t i = 0; rc == TL_OK && ops.n && i < n; i++) {
      if (an->non_anchor[i] != TL_NA_REPRESENTED_BY_COMM_OP || tl_events_db_idx(&t->ev, i) != gr->db_idx ||
          tl_events_device_id(&t->ev, i) != gr->device_id)
        continue;
      /* ops starting before the task ends and after (task start - longest op) may overlap it */
      int64_t from = t->ev.start_ns[i] - max_len;
      size_t lo = 0, hi = ops.n;
      while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (t->ev.start_ns[an->event[ops.v[mid]]] < from) lo = mid + 1;
        else hi = mid;
      }
      hits.n = 0;
      for (size_t k = lo; rc == TL_OK && k < ops.n && t->ev.start_ns[an->event[ops.v[k]]] < tl_events_end(&t->ev, i); k++) {
        uint32_t op = an->event[ops.v[k]];
        if (tl_events_end(&t->ev, op) > t->ev.start_ns[i] && TL_VEC_PUSH(&hits, ops.v[k])) rc = tl_nomem(e);
      }
      uint32_t pick = hits.n == 1 ? hits.v[0] : NONE;
      if (rc == TL_OK && hits.n > 1) {
        int64_t ci, co;
        if (connection(st, (uint32_t)i, &ci)) rc = tl_fail(e, "reading event connection ids: %s", sqlite3_errmsg(db));
        for (size_t h = 0; rc == TL_OK && h < hits.n; h++) {
          if (connection(st, an->event[hits.v[h]], &co)) rc = tl_fail(e, "reading event connection ids: %s", sqlite3_errmsg(db));
          if (ci >= 0 && co == ci && (pick == NONE || an->event[hits.v[h]] < an->event[pick])) pick = hits.v[h];
        }
      }
      if (rc == TL_OK && pick != NONE && (TL_VEC_PUSH(&rep_event, (uint32_t)i) || TL_VEC_PUSH(&rep_anchor, pick)))
        rc = tl_nomem(e);
    }
    TL_VEC_FREE(&ops);
  }
  sqlite3_finalize(st);
  /* (anchor, event) order, then one run per stretch of consecutive events of one anchor */
  if (rc == TL_OK && rep_event.n) {
    uint64_t *keys = malloc(rep_event.n * sizeof *keys);
    uint32_t *idx = malloc(rep_event.n * sizeof *idx); /* the sort's payload, unread */
    if (!keys || !idx) rc = tl_nomem(e);
    for (size_t k = 0; rc == TL_OK && k < rep_event.n; k++)
      keys[k] = (uint64_t)rep_anchor.v[k] << 32 | rep_event.v[k], idx[k] = (uint32_t)k;
    if (rc == TL_OK && tl_radix_sort_u64(keys, idx, rep_event.n)) rc = tl_nomem(e);
    u32vec runs = {0};
    for (size_t k = 0; rc == TL_OK && k < rep_event.n; k++) {
      uint32_t anchor = (uint32_t)(keys[k] >> 32), ev = (uint32_t)keys[k];
      if (runs.n && runs.v[runs.n - 3] == anchor && runs.v[runs.n - 1] + 1 == ev) runs.v[runs.n - 1] = ev;
      else if (TL_VEC_PUSH(&runs, anchor) || TL_VEC_PUSH(&runs, ev) || TL_VEC_PUSH(&runs, ev)) rc = tl_nomem(e);
    }
    if (rc == TL_OK) {
      tl_rows src = {runs.n / 3, 3, fill_run, runs.v, 0, NULL};
      rc = tl_rows_insert(db, "traceloom_represented_event_run_core", "anchor_n, first_event_n, last_event_n",
                          &src, e);
    }
    TL_VEC_FREE(&runs);
    free(keys), free(idx);
  }
  TL_VEC_FREE(&rep_event), TL_VEC_FREE(&rep_anchor), TL_VEC_FREE(&hits);
  return rc;
}
