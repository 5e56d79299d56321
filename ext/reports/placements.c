/*
** placements.c: the anchor that represents each communication task
** (traceloom_represented_event; read by traceloom_evidence_role_placement).
**
** Anchor selection (ext/anchor) keeps a communication task out of the tokens when a
** communication op of the same (db, device, connection id) overlaps it; the op is the anchor.
** That choice leaves no link behind, so the evidence-role placement of such a task ("which
** anchor carries this observation?") is found again here by the same rule: the lowest-
** numbered communication op of the task's (db, device, connection) that overlaps it, and the
** anchor that op became. The connection ids were freed after the events were published; they
** are read back from traceloom_event.
*/
#include "reports/reports.h"
#include "publish/publish.h"
#include "publish/rows.h"
#include "sort.h"

#include <stdlib.h>
#include <string.h>

#define NONE UINT32_MAX

typedef TL_VEC(uint32_t) u32vec;

typedef struct rep_rows {
  const uint32_t *event, *anchor;
} rep_rows;

static int fill_rep(void *ctx, size_t i, int64_t *v, unsigned char *null) {
  const rep_rows *x = ctx;
  (void)null;
  v[0] = x->event[i], v[1] = x->anchor[i];
  return 0;
}

/* (db, device, connection) of event i, for sorting and matching ops against tasks. */
static int cmp_key(const tl_trace *t, const int64_t *conn, uint32_t a, uint32_t b) {
  if (t->ev.db_idx[a] != t->ev.db_idx[b]) return t->ev.db_idx[a] < t->ev.db_idx[b] ? -1 : 1;
  if (t->ev.device_id[a] != t->ev.device_id[b]) return t->ev.device_id[a] < t->ev.device_id[b] ? -1 : 1;
  if (conn[a] != conn[b]) return conn[a] < conn[b] ? -1 : 1;
  return 0;
}

int tl_reports_placements(sqlite3 *db, const tl_reports_input *in, tl_err *e) {
  const tl_trace *t = in->trace;
  const tl_anchors *an = in->anchors;
  size_t n = t->ev.n, nrep = 0;
  for (size_t i = 0; i < n; i++) nrep += an->non_anchor[i] == TL_NA_REPRESENTED_BY_COMM_OP;
  if (!nrep) return TL_OK;
  int64_t *conn = malloc(n * sizeof *conn);
  uint32_t *anchor_of = malloc(n * sizeof *anchor_of);
  u32vec ops = {0}, rep_event = {0}, rep_anchor = {0};
  uint64_t *keys = NULL;
  int rc = conn && anchor_of ? TL_OK : tl_nomem(e);
  if (rc == TL_OK) {
    for (size_t i = 0; i < n; i++) conn[i] = TL_ABSENT, anchor_of[i] = NONE;
    for (size_t k = 0; k < an->n; k++) anchor_of[an->event[k]] = (uint32_t)k;
    sqlite3_stmt *st = NULL;
    rc = tl_pub_prepare(db, "SELECT event_n, correlation_id FROM main.traceloom_event "
                            "WHERE correlation_id IS NOT NULL", &st, e);
    int s = SQLITE_DONE;
    while (rc == TL_OK && (s = sqlite3_step(st)) == SQLITE_ROW) {
      int64_t ev = sqlite3_column_int64(st, 0);
      if (ev >= 0 && (size_t)ev < n) conn[ev] = sqlite3_column_int64(st, 1);
    }
    if (rc == TL_OK && s != SQLITE_DONE)
      rc = tl_fail(e, "reading the published event connection ids: %s", sqlite3_errmsg(db));
    sqlite3_finalize(st);
  }
  /* the communication ops that are anchors, ordered by (db, device, connection, event) */
  for (size_t i = 0; rc == TL_OK && i < n; i++)
    if (conn[i] >= 0 && anchor_of[i] != NONE && tl_event_is_comm_op(t, i) && TL_VEC_PUSH(&ops, (uint32_t)i))
      rc = tl_nomem(e);
  if (rc == TL_OK && ops.n) {
    keys = malloc(ops.n * sizeof *keys);
    if (!keys) rc = tl_nomem(e);
    for (size_t i = 0; rc == TL_OK && i < ops.n; i++) keys[i] = tl_order_i64(conn[ops.v[i]]);
    if (rc == TL_OK && tl_radix_sort_u64(keys, ops.v, ops.n)) rc = tl_nomem(e);
    for (size_t i = 0; rc == TL_OK && i < ops.n; i++)
      keys[i] = ((uint64_t)t->ev.db_idx[ops.v[i]] << 32) | t->ev.device_id[ops.v[i]];
    if (rc == TL_OK && tl_radix_sort_u64(keys, ops.v, ops.n)) rc = tl_nomem(e);
  }
  for (size_t i = 0; rc == TL_OK && ops.n && i < n; i++) {
    if (an->non_anchor[i] != TL_NA_REPRESENTED_BY_COMM_OP || conn[i] < 0) continue;
    size_t lo = 0, hi = ops.n;
    while (lo < hi) {
      size_t mid = lo + (hi - lo) / 2;
      if (cmp_key(t, conn, ops.v[mid], (uint32_t)i) < 0) lo = mid + 1;
      else hi = mid;
    }
    for (; lo < ops.n && cmp_key(t, conn, ops.v[lo], (uint32_t)i) == 0; lo++) {
      uint32_t j = ops.v[lo]; /* in event order within the key: the first overlap wins */
      if (t->ev.start_ns[i] < t->ev.end_ns[j] && t->ev.end_ns[i] > t->ev.start_ns[j]) {
        if (TL_VEC_PUSH(&rep_event, (uint32_t)i) || TL_VEC_PUSH(&rep_anchor, anchor_of[j])) rc = tl_nomem(e);
        break;
      }
    }
  }
  if (rc == TL_OK && rep_event.n) {
    rep_rows x = {rep_event.v, rep_anchor.v};
    tl_rows src = {rep_event.n, 2, fill_rep, &x, 0, NULL};
    rc = tl_rows_insert(db, "traceloom_represented_event", "event_n, anchor_n", &src, e);
  }
  free(keys), free(conn), free(anchor_of);
  TL_VEC_FREE(&ops);
  TL_VEC_FREE(&rep_event);
  TL_VEC_FREE(&rep_anchor);
  return rc;
}
