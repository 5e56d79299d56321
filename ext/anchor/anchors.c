/*
** anchors.c: anchor selection, ordering and auxiliary links (see anchors.h).
**
** Ordering uses two stable radix passes, by start time and then by (db_idx, device_id),
** followed by a comparison sort of the rare runs that share (db_idx, device_id, start):
** the result is the total order of recovery.md section 3 at radix-sort speed.
*/
#include "anchor/anchors.h"
#include "util/sort.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

const char *tl_anchor_role_name(tl_anchor_role r) {
  static const char *const names[] = {"compute", "comm", "sync", "graph", "unknown"};
  return (unsigned)r < 5 ? names[r] : "unknown";
}

int tl_label_is_comm_op(const tl_trace *t, const tl_label *l) {
  return strcmp(tl_str(t, l->task_type), "COMMUNICATION_OP") == 0;
}

int tl_label_is_wait(const tl_trace *t, const tl_label *l) {
  return strcasestr(tl_str(t, l->name), "wait") != NULL ||
         strcasestr(tl_str(t, l->task_type), "wait") != NULL;
}

void tl_anchors_free(tl_anchors *a) {
  free(a->event), free(a->symbol), free(a->role), free(a->other);
  free(a->link_event), free(a->link_anchor), free(a->link_order), free(a->non_anchor);
  free(a->ext_start), free(a->ext_end);
  TL_VEC_FREE(&a->groups);
  TL_VEC_FREE(&a->unplaced);
  memset(a, 0, sizeof *a);
}

/* The anchor role is the kind of work the event is (recovery.md section 3: compute, comm,
** sync, graph), whatever rule made it an anchor: an unknown_anchor kernel is still compute
** work, as the reference publishes it. That no rule matched it is the role decision's
** (`final_role` unknown_anchor), not the anchor's. */
static tl_anchor_role anchor_role_of(const tl_trace *t, const tl_derived *d, size_t i) {
  switch ((tl_kind)tl_event_label_of(t, d, i)->kind) {
    case TL_KIND_COMMUNICATION: return TL_ANCHOR_COMM;
    case TL_KIND_SYNC: return TL_ANCHOR_SYNC;
    case TL_KIND_GRAPH_LAUNCH: return TL_ANCHOR_GRAPH;
    default: return TL_ANCHOR_COMPUTE;
  }
}

/* Kind rank of the sort key: Communication 0 < GraphReplayUnit 1 < DeviceEvent 2 <
** Synchronization 3 < GraphH/L/T 4 < Unknown 5 (an unknown_anchor: no rule matched it). */
static int kind_rank(tl_anchor_role r, uint8_t role) {
  if (role == TL_ROLE_UNKNOWN_ANCHOR) return 5;
  switch (r) {
    case TL_ANCHOR_COMM: return 0;
    case TL_ANCHOR_SYNC: return 3;
    default: return 2;
  }
}

typedef struct sort_ctx {
  const tl_trace *t;
  const tl_derived *d;
  const uint8_t *rank;
  const uint32_t *symbol;
  const int64_t *merged_end;  /* per event: the end it sorts by (merged_interval); NULL: its own */
} sort_ctx;

#define CMP(a, b) \
  do { \
    if ((a) != (b)) return (a) < (b) ? -1 : 1; \
  } while (0)

/* The tail of the total key, for events sharing (db_idx, device_id, start_ns). */
static int cmp_tail(const void *pa, const void *pb, void *pctx) {
  const sort_ctx *c = pctx;
  uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
  size_t ia = a, ib = b;
  const tl_events *ea = tl_events_of(c->t, c->d, &ia), *eb = tl_events_of(c->t, c->d, &ib);
  if (c->merged_end) CMP(c->merged_end[a], c->merged_end[b]);
  else CMP(tl_events_end(ea, ia), tl_events_end(eb, ib));
  CMP(tl_events_stream_id(ea, ia), tl_events_stream_id(eb, ib));
  CMP(c->rank[a], c->rank[b]);
  CMP(c->symbol[a], c->symbol[b]);
  CMP(tl_source_ref_at(c->t, c->d, tl_events_source_ref(ea, ia))->source_id,
      tl_source_ref_at(c->t, c->d, tl_events_source_ref(eb, ib))->source_id);
  CMP(tl_i64col_get(&ea->source_rowid, ia), tl_i64col_get(&eb->source_rowid, ib));
  CMP(a, b);
  return 0;
}

/* The connection id of event i (a trace event or a derived one), and whether it is a
** communication op; the label is looked at only for events with a connection. */
static int64_t conn_of(const tl_trace *t, const tl_derived *d, size_t i, int *comm_op) {
  int64_t c = tl_event_correlation(t, d, i);
  if (c >= 0) *comm_op = tl_label_is_comm_op(t, tl_event_label_of(t, d, i));
  return c;
}

/* Marks tasks that a communication op on the same (db, device, connection) overlaps. */
static int mark_represented(const tl_trace *t, const tl_derived *d, uint8_t *non_anchor,
                            tl_err *e) {
  size_t n = tl_event_count(t, d);
  tl_i64map first = {0};
  uint32_t *next = NULL;
  size_t nops = 0;
  int op;
  for (size_t i = 0; i < n; i++)
    if (conn_of(t, d, i, &op) >= 0 && op) nops++;
  if (!nops) return TL_OK;
  next = malloc(n * sizeof *next);
  if (!next) return tl_nomem(e);
  for (size_t i = n; i-- > 0;) {
    int64_t ci = conn_of(t, d, i, &op);
    if (ci < 0 || !op) continue;
    int64_t *head = tl_i64map_get(&first, ci);
    next[i] = head ? (uint32_t)*head : UINT32_MAX;
    if (tl_i64map_put(&first, ci, (int64_t)i)) {
      free(next);
      tl_i64map_free(&first);
      return tl_nomem(e);
    }
  }
  for (size_t i = 0; i < n; i++) {
    int64_t ci = conn_of(t, d, i, &op);
    if (ci < 0 || op) continue;
    size_t ii = i;
    const tl_events *ei = tl_events_of(t, d, &ii);
    int64_t *head = tl_i64map_get(&first, ci);
    for (uint32_t j = head ? (uint32_t)*head : UINT32_MAX; j != UINT32_MAX; j = next[j]) {
      size_t jj = j;
      const tl_events *ej = tl_events_of(t, d, &jj);
      if (tl_events_db_idx(ej, jj) != tl_events_db_idx(ei, ii) || tl_events_device_id(ej, jj) != tl_events_device_id(ei, ii)) continue;
      if (ei->start_ns[ii] < tl_events_end(ej, jj) && tl_events_end(ei, ii) > ej->start_ns[jj]) {
        non_anchor[i] = TL_NA_REPRESENTED_BY_COMM_OP;
        break;
      }
    }
  }
  free(next);
  tl_i64map_free(&first);
  return TL_OK;
}

const char *const tl_semantic_role_name[TL_SEMANTIC_COUNT] = {
    [TL_SEMANTIC_ANCHOR_UNKNOWN_FIRST] = "anchor", [TL_SEMANTIC_ANCHOR_MATCHED] = "anchor",
    [TL_SEMANTIC_AUX_COMM_OP] = "aux",             [TL_SEMANTIC_AUX_REPLAY] = "aux",
    [TL_SEMANTIC_AUX_RECONCILED] = "aux",          [TL_SEMANTIC_TRANSPARENT_MATCHED] = "transparent",
    [TL_SEMANTIC_AUX_MATCHED] = "aux",
};
const char *const tl_semantic_reason_name[TL_SEMANTIC_COUNT] = {
    [TL_SEMANTIC_ANCHOR_UNKNOWN_FIRST] = "unmatched_observation_unknown_first",
    [TL_SEMANTIC_ANCHOR_MATCHED] = "matched_positive_rule",
    [TL_SEMANTIC_AUX_COMM_OP] = "represented_by_communication_op",
    [TL_SEMANTIC_AUX_REPLAY] = "owned_by_exact_replay_unit",
    [TL_SEMANTIC_AUX_RECONCILED] = "represented_by_reconciled_canonical_anchor",
    [TL_SEMANTIC_TRANSPARENT_MATCHED] = "matched_positive_rule",
    [TL_SEMANTIC_AUX_MATCHED] = "matched_positive_rule",
};

int tl_anchor_semantic_roles(const tl_anchors *a, const uint8_t *role, size_t n,
                             uint8_t **semantic, tl_err *e) {
  uint8_t *sem = malloc(n ? n : 1);
  if (!sem) return tl_nomem(e);
  for (size_t i = 0; i < n; i++) {
    switch (a->non_anchor[i]) {
      case TL_NA_NONE:
        sem[i] = role[i] == TL_ROLE_UNKNOWN_ANCHOR ? TL_SEMANTIC_ANCHOR_UNKNOWN_FIRST
                                                   : TL_SEMANTIC_ANCHOR_MATCHED;
        break;
      case TL_NA_REPRESENTED_BY_COMM_OP: sem[i] = TL_SEMANTIC_AUX_COMM_OP; break;
      case TL_NA_OWNED_BY_REPLAY: sem[i] = TL_SEMANTIC_AUX_REPLAY; break;
      case TL_NA_RECONCILED: sem[i] = TL_SEMANTIC_AUX_RECONCILED; break;
      default:
        sem[i] = role[i] == TL_ROLE_TRANSPARENT ? TL_SEMANTIC_TRANSPARENT_MATCHED
                                                : TL_SEMANTIC_AUX_MATCHED;
    }
  }
  *semantic = sem;
  return TL_OK;
}

/* First anchor of [lo, hi) whose start is >= t (anchors sorted by start); hi if none. */
static size_t first_anchor_at_or_after(const tl_anchors *a, size_t lo, size_t hi, int64_t t) {
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (tl_anchor_start(a, mid) < t)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

void tl_anchor_merges_free(tl_anchor_merges *m) {
  free(m->member), free(m->canonical), free(m->envelope);
  memset(m, 0, sizeof *m);
}

/* Reconciled pairs (recovery.md 2.5): the non-canonical members are no anchors, and the
** canonical event sorts and counts by the envelope's interval. *start and *end are per event
** (its own interval but for a canonical event), malloc'd; both NULL when there is no pair. */
static int merged_interval(const tl_anchor_input *in, size_t n, uint8_t *non_anchor, int64_t **start,
                           int64_t **end, tl_err *e) {
  const tl_anchor_merges *m = in->merges;
  *start = *end = NULL;
  if (!m || !m->n) return TL_OK;
  for (size_t i = 0; m->member && i < n; i++)
    if (m->member[i]) non_anchor[i] = TL_NA_RECONCILED;
  int64_t *s = malloc(n * sizeof *s), *en = malloc(n * sizeof *en);
  if (!s || !en) {
    free(s), free(en);
    return tl_nomem(e);
  }
  for (size_t i = 0; i < n; i++) s[i] = tl_event_start(in->t, in->derived, i), en[i] = tl_event_end(in->t, in->derived, i);
  for (size_t k = 0; k < m->n; k++)
    if (m->canonical[k] < n && m->envelope[k] < n)
      s[m->canonical[k]] = s[m->envelope[k]], en[m->canonical[k]] = en[m->envelope[k]];
  *start = s, *end = en;
  return TL_OK;
}

/* Each anchor's interval when some pair merged (ext_start/ext_end of tl_anchors). */
static int merged_anchor_extents(tl_anchors *a, const int64_t *start, const int64_t *end, tl_err *e) {
  if (!start) return TL_OK;
  a->ext_start = malloc((a->n ? a->n : 1) * sizeof *a->ext_start);
  a->ext_end = malloc((a->n ? a->n : 1) * sizeof *a->ext_end);
  if (!a->ext_start || !a->ext_end) return tl_nomem(e);
  for (size_t k = 0; k < a->n; k++) a->ext_start[k] = start[a->event[k]], a->ext_end[k] = end[a->event[k]];
  return TL_OK;
}

int tl_anchors_build(const tl_anchor_input *in, tl_anchors *a, tl_err *e) {
  const tl_trace *t = in->t;
  const tl_derived *d = in->derived;
  size_t n = tl_event_count(t, d);
  memset(a, 0, sizeof *a);
  a->t = t, a->derived = d;
  uint64_t *keys = malloc((n ? n : 1) * sizeof *keys);
  uint32_t *order = malloc((n ? n : 1) * sizeof *order);
  uint8_t *rank = malloc(n ? n : 1);
  uint32_t *count = NULL;
  int64_t *mstart = NULL, *mend = NULL;
  a->non_anchor = calloc(n ? n : 1, 1);
  if (!keys || !order || !rank || !a->non_anchor) goto nomem;
  if (mark_represented(t, d, a->non_anchor, e)) goto fail;
  if (merged_interval(in, n, a->non_anchor, &mstart, &mend, e)) goto fail;
  size_t nanchors = 0, nother = 0;
  for (size_t i = 0; i < n; i++) {
    uint8_t role = in->event_role[i];
    if (in->replay_owned && in->replay_owned[i])
      a->non_anchor[i] = TL_NA_OWNED_BY_REPLAY;
    else if (a->non_anchor[i] == TL_NA_NONE &&
             (role == TL_ROLE_AUXILIARY || role == TL_ROLE_TRANSPARENT))
      a->non_anchor[i] = TL_NA_ROLE;
    rank[i] = (uint8_t)kind_rank(anchor_role_of(t, d, i), role);
    if (a->non_anchor[i] == TL_NA_NONE)
      nanchors++;
    else if (a->non_anchor[i] != TL_NA_RECONCILED &&
             (!in->cost_treatment || in->cost_treatment[i] == TL_COST_ELIGIBLE))
      nother++;
  }
  /* Total order: radix by start, then stably by (db_idx, device_id), then the tail key. */
  for (size_t i = 0; i < n; i++)
    keys[i] = tl_order_i64(mstart ? mstart[i] : tl_event_start(t, d, i)), order[i] = (uint32_t)i;
  if (tl_radix_sort_u64(keys, order, n)) goto nomem;
  for (size_t i = 0; i < n; i++) {
    size_t j = order[i];
    const tl_events *ev = tl_events_of(t, d, &j);
    keys[i] = ((uint64_t)tl_events_db_idx(ev, j) << 32) | tl_events_device_id(ev, j);
  }
  if (tl_radix_sort_u64(keys, order, n)) goto nomem;
  sort_ctx ctx = {t, d, rank, in->event_symbol, mend};
  for (size_t i = 0; i < n;) {
    size_t j = i + 1;
    while (j < n && keys[j] == keys[i] &&
           (mstart ? mstart[order[j]] == mstart[order[i]]
                   : tl_event_start(t, d, order[j]) == tl_event_start(t, d, order[i])))
      j++;
    if (j - i > 1) qsort_r(order + i, j - i, sizeof *order, cmp_tail, &ctx);
    i = j;
  }
  a->event = malloc((nanchors ? nanchors : 1) * sizeof *a->event);
  a->symbol = malloc((nanchors ? nanchors : 1) * sizeof *a->symbol);
  a->role = malloc(nanchors ? nanchors : 1);
  a->other = malloc((nother ? nother : 1) * sizeof *a->other);
  if (!a->event || !a->symbol || !a->role || !a->other) goto nomem;
  /* Split into anchors and other events, grouped by (db_idx, device_id). */
  for (size_t i = 0; i < n;) {
    size_t j = i;
    tl_anchor_group g = {(uint16_t)(keys[i] >> 32), (uint32_t)keys[i], a->n, 0, a->nother, 0};
    while (j < n && keys[j] == keys[i]) {
      uint32_t k = order[j++];
      if (a->non_anchor[k] == TL_NA_NONE) {
        a->event[a->n] = k;
        a->symbol[a->n] = in->event_symbol[k];
        a->role[a->n] = (uint8_t)anchor_role_of(t, d, k);
        a->n++;
      } else if (a->non_anchor[k] != TL_NA_RECONCILED &&
                 (!in->cost_treatment || in->cost_treatment[k] == TL_COST_ELIGIBLE)) {
        a->other[a->nother++] = k;
      }
    }
    g.count = a->n - g.first;
    g.nevents = a->nother - g.first_event;
    if (TL_VEC_PUSH(&a->groups, g)) goto nomem;
    i = j;
  }
  if (merged_anchor_extents(a, mstart, mend, e)) goto fail;
  /* Aux links: each eligible non-anchor event (not represented by a comm op or a replay
  ** unit) links to the earliest anchor starting at or after its end. */
  a->link_event = malloc((a->nother ? a->nother : 1) * sizeof *a->link_event);
  a->link_anchor = malloc((a->nother ? a->nother : 1) * sizeof *a->link_anchor);
  a->link_order = malloc((a->nother ? a->nother : 1) * sizeof *a->link_order);
  count = calloc(a->n ? a->n : 1, sizeof *count);
  if (!a->link_event || !a->link_anchor || !a->link_order || !count) goto nomem;
  for (size_t gi = 0; gi < a->groups.n; gi++) {
    const tl_anchor_group *g = &a->groups.v[gi];
    for (size_t k = g->first_event; k < g->first_event + g->nevents; k++) {
      uint32_t x = a->other[k];
      if (a->non_anchor[x] != TL_NA_ROLE) continue;
      size_t at =
          first_anchor_at_or_after(a, g->first, g->first + g->count, tl_event_end(t, d, x));
      if (at == g->first + g->count) {
        if (TL_VEC_PUSH(&a->unplaced, x)) goto nomem;
        continue;
      }
      a->link_event[a->nlinks] = x;
      a->link_anchor[a->nlinks] = (uint32_t)at;
      a->link_order[a->nlinks] = ++count[at];
      a->nlinks++;
    }
  }
  free(count), free(keys), free(order), free(rank), free(mstart), free(mend);
  return TL_OK;
nomem:
  tl_nomem(e);
fail:
  free(count), free(keys), free(order), free(rank), free(mstart), free(mend);
  tl_anchors_free(a);
  return TL_ERROR;
}
