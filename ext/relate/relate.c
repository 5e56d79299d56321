/*
** relate.c: runtime call <-> device work relations (see relate.h).
*/
#include "relate/relate.h"
#include "util/sort.h"

#include <stdlib.h>
#include <string.h>

const char *tl_support_state_name(tl_support_state s) {
  static const char *const names[] = {
      "supported_exact",         "supported_deterministic",     "missing_device_identifier",
      "missing_runtime_identifier", "unsupported_provider_schema", "unmatched_device_work",
      "unmatched_runtime_call",  "ambiguous_runtime_candidates", "ambiguous_device_scope",
      "device_scope_mismatch",   "rejected_reused_correlation_id"};
  return (unsigned)s < sizeof names / sizeof names[0] ? names[s] : "unknown";
}

const char *tl_relation_evidence_level(const tl_relation *r) {
  switch (r->state) {
    case TL_SUPPORTED_EXACT: return "direct_provider_identifier";
    case TL_SUPPORTED_DETERMINISTIC: return "direct_identifier_time_disambiguated";
    case TL_AMBIGUOUS_RUNTIME_CANDIDATES:
    case TL_AMBIGUOUS_DEVICE_SCOPE: return "candidate_provider_identifier";
    case TL_DEVICE_SCOPE_MISMATCH:
    case TL_REJECTED_REUSED_CORRELATION_ID: return "rejected_provider_identifier";
    default: return "open";
  }
}

const char *tl_relation_cardinality(const tl_relation *r) {
  if (r->call < 0 || r->work < 0) return "open";
  if (r->call_candidates <= 1) return r->work_candidates <= 1 ? "one_to_one" : "one_to_many";
  return r->work_candidates <= 1 ? "many_to_one" : "many_to_many";
}

const char *tl_relation_match_policy(const tl_trace *t, const tl_relation *r) {
  if (r->state == TL_MISSING_DEVICE_IDENTIFIER) return "missing_provider_identifier";
  if (r->time_disambiguated) return "cuda_correlation_id_time_containment";
  tl_provider p = tl_family_provider(t->profile->inputs.v[r->db_idx].family);
  switch (p) {
    case TL_PROVIDER_ASCEND: return "ascend_connection_id";
    case TL_PROVIDER_CUDA: return "cuda_correlation_id";
    default: return "unsupported";
  }
}

int tl_label_is_device_work(const tl_trace *t, const tl_label *l) {
  /* Communication-op envelopes (COMMUNICATION_OP, HCCLOP, HCCLOpSingleDevice rows) carry
  ** the task type COMMUNICATION_OP in every Ascend reader. */
  static const char comm_op[] = "COMMUNICATION_OP";
  uint32_t id = tl_strpool_find(t->pool, comm_op, sizeof comm_op - 1);
  return id == TL_STR_NOMEM || l->task_type != id;
}

int tl_event_is_device_work(const tl_trace *t, size_t i) {
  return tl_label_is_device_work(t, tl_event_label(t, i));
}

typedef TL_VEC(uint32_t) u32vec;

/* Items (calls or device work) that carry an id, ordered by (db_idx, correlation, index). */
typedef struct keyed {
  uint64_t *keys;  /* scratch */
  uint32_t *idx;   /* item indices in key order */
  size_t n;
} keyed;

static void keyed_free(keyed *k) {
  free(k->keys), free(k->idx);
  memset(k, 0, sizeof *k);
}

/* Collects item indices with a correlation id (the others go to *missing), then sorts
** them by correlation and, stably, by db_idx: two radix sorts, no packing limits. */
static int build_keys(const tl_trace *t, size_t n, const uint16_t *db, const tl_i64col *corr,
                      int work, keyed *k, u32vec *missing) {
  k->keys = malloc((n ? n : 1) * sizeof *k->keys);
  k->idx = malloc((n ? n : 1) * sizeof *k->idx);
  k->n = 0;
  if (!k->keys || !k->idx) return -1;
  for (size_t i = 0; i < n; i++) {
    if (work && !tl_event_is_device_work(t, i)) continue;
    int64_t c = tl_i64col_get(corr, i);
    if (c < 0) {
      if (TL_VEC_PUSH(missing, (uint32_t)i)) return -1;
      continue;
    }
    k->idx[k->n] = (uint32_t)i;
    k->keys[k->n] = tl_order_i64(c);
    k->n++;
  }
  if (tl_radix_sort_u64(k->keys, k->idx, k->n)) return -1;
  /* work: the events' database is their place's (db is NULL) */
  for (size_t j = 0; j < k->n; j++)
    k->keys[j] = work ? tl_events_db_idx(&t->ev, k->idx[j]) : db[k->idx[j]];
  int rc = tl_radix_sort_u64(k->keys, k->idx, k->n);
  free(k->keys); /* only the order is needed from here on */
  k->keys = NULL;
  return rc;
}

static int emit(tl_relations *out, int64_t call, int64_t work, uint16_t db,
                tl_support_state st, uint32_t ncalls, uint32_t nworks, int time) {
  tl_relation r = {(int32_t)call, (int32_t)work, ncalls, nworks, db, (uint8_t)st, (uint8_t)time};
  return TL_VEC_PUSH(out, r);
}

int64_t tl_relation_correlation_id(const tl_trace *t, const tl_relation *r) {
  int64_t v = r->work >= 0   ? tl_i64col_get(&t->ev.correlation_id, (size_t)r->work)
              : r->call >= 0 ? tl_i64col_get(&t->calls.correlation_id, (size_t)r->call)
                             : TL_ABSENT;
  return v < 0 ? TL_ABSENT : v; /* a negative id is a missing one (build_keys) */
}

/* One (db_idx, correlation) group: calls c[0..nc), work w[0..nw). */
static int relate_group(const tl_trace *t, const uint32_t *c, size_t nc, const uint32_t *w,
                        size_t nw, tl_relations *out) {
  const tl_events *ev = &t->ev;
  const tl_calls *ca = &t->calls;
  uint16_t db = nw ? tl_events_db_idx(ev, w[0]) : ca->db_idx[c[0]];
  tl_provider prov = tl_family_provider(t->profile->inputs.v[db].family);
  if (nc == 0) {
    for (size_t j = 0; j < nw; j++)
      if (emit(out, -1, w[j], db, TL_UNMATCHED_DEVICE_WORK, 0, (uint32_t)nw, 0)) return -1;
    return 0;
  }
  if (nw == 0) {
    for (size_t j = 0; j < nc; j++)
      if (emit(out, c[j], -1, db, TL_UNMATCHED_RUNTIME_CALL, (uint32_t)nc, 0, 0)) return -1;
    return 0;
  }
  if (prov != TL_PROVIDER_ASCEND && prov != TL_PROVIDER_CUDA) {
    for (size_t j = 0; j < nw; j++)
      if (emit(out, -1, w[j], db, TL_UNSUPPORTED_PROVIDER_SCHEMA, (uint32_t)nc,
               (uint32_t)nw, 0))
        return -1;
    return 0;
  }
  if (nc > 1) {
    for (size_t j = 0; j < nw; j++) {
      size_t i = w[j];
      int sync = t->labels.v[ev->label[i]].kind == TL_KIND_SYNC;
      size_t found = 0, which = 0;
      if (prov == TL_PROVIDER_CUDA && sync) {
        for (size_t k = 0; k < nc; k++)
          if (ca->start_ns[c[k]] <= ev->start_ns[i] && tl_events_end(ev, i) <= ca->end_ns[c[k]])
            found++, which = k;
      }
      if (found == 1) {
        for (size_t k = 0; k < nc; k++)
          if (emit(out, c[k], (int64_t)i, db,
                   k == which ? TL_SUPPORTED_DETERMINISTIC : TL_REJECTED_REUSED_CORRELATION_ID,
                   (uint32_t)nc, (uint32_t)nw, 1))
            return -1;
      } else if (emit(out, -1, (int64_t)i, db, TL_AMBIGUOUS_RUNTIME_CANDIDATES,
                      (uint32_t)nc, (uint32_t)nw, 0)) {
        return -1;
      }
    }
    return 0;
  }
  int64_t call_dev = tl_i64col_get(&ca->device_id, c[0]);
  int spans = 0;
  for (size_t j = 1; j < nw; j++)
    if (tl_events_device_id(ev, w[j]) != tl_events_device_id(ev, w[0])) spans = 1;
  for (size_t j = 0; j < nw; j++) {
    tl_support_state st = TL_SUPPORTED_EXACT;
    if (call_dev >= 0 && (uint32_t)call_dev != tl_events_device_id(ev, w[j]))
      st = TL_DEVICE_SCOPE_MISMATCH;
    else if (call_dev < 0 && spans)
      st = TL_AMBIGUOUS_DEVICE_SCOPE;
    if (emit(out, c[0], w[j], db, st, 1, (uint32_t)nw, 0)) return -1;
  }
  return 0;
}

int tl_relate(const tl_trace *t, tl_relations *out, tl_err *e) {
  memset(out, 0, sizeof *out);
  if (t->ev.n > INT32_MAX || t->calls.n > INT32_MAX)
    return tl_fail(e, "relating runtime calls to device work: %zu events and %zu calls; at most "
                      "%d of each are supported", t->ev.n, t->calls.n, INT32_MAX);
  keyed kw = {0}, kc = {0};
  u32vec miss_w = {0}, miss_c = {0};
  const tl_events *ev = &t->ev;
  const tl_calls *ca = &t->calls;
  if (build_keys(t, ev->n, NULL, &ev->correlation_id, 1, &kw, &miss_w) ||
      build_keys(t, ca->n, ca->db_idx, &ca->correlation_id, 0, &kc, &miss_c))
    goto nomem;
  size_t i = 0, j = 0;
  while (i < kw.n || j < kc.n) {
    /* The smaller (db, corr) of the two heads starts the next group. */
    uint16_t db;
    int64_t corr;
    if (j >= kc.n || (i < kw.n && (tl_events_db_idx(ev, kw.idx[i]) < ca->db_idx[kc.idx[j]] ||
                                   (tl_events_db_idx(ev, kw.idx[i]) == ca->db_idx[kc.idx[j]] &&
                                    tl_i64col_get(&ev->correlation_id, kw.idx[i]) <=
                                        tl_i64col_get(&ca->correlation_id, kc.idx[j]))))) {
      db = tl_events_db_idx(ev, kw.idx[i]), corr = tl_i64col_get(&ev->correlation_id, kw.idx[i]);
    } else {
      db = ca->db_idx[kc.idx[j]], corr = tl_i64col_get(&ca->correlation_id, kc.idx[j]);
    }
    size_t i2 = i, j2 = j;
    while (i2 < kw.n && tl_events_db_idx(ev, kw.idx[i2]) == db &&
           tl_i64col_get(&ev->correlation_id, kw.idx[i2]) == corr)
      i2++;
    while (j2 < kc.n && ca->db_idx[kc.idx[j2]] == db &&
           tl_i64col_get(&ca->correlation_id, kc.idx[j2]) == corr)
      j2++;
    if (relate_group(t, kc.idx + j, j2 - j, kw.idx + i, i2 - i, out)) goto nomem;
    i = i2, j = j2;
  }
  for (size_t k = 0; k < miss_w.n; k++)
    if (emit(out, -1, miss_w.v[k], tl_events_db_idx(ev, miss_w.v[k]),
             TL_MISSING_DEVICE_IDENTIFIER, 0, 1, 0))
      goto nomem;
  for (size_t k = 0; k < miss_c.n; k++)
    if (emit(out, miss_c.v[k], -1, ca->db_idx[miss_c.v[k]],
             TL_MISSING_RUNTIME_IDENTIFIER, 1, 0, 0))
      goto nomem;
  keyed_free(&kw), keyed_free(&kc);
  TL_VEC_FREE(&miss_w), TL_VEC_FREE(&miss_c);
  return TL_OK;
nomem:
  keyed_free(&kw), keyed_free(&kc);
  TL_VEC_FREE(&miss_w), TL_VEC_FREE(&miss_c);
  TL_VEC_FREE(out);
  return tl_nomem(e);
}

int tl_relations_event_call(const tl_relations *r, size_t nevents, int32_t **out, tl_err *e) {
  int32_t *call = malloc((nevents ? nevents : 1) * sizeof *call);
  if (!call) return tl_nomem(e);
  for (size_t i = 0; i < nevents; i++) call[i] = -1;
  for (size_t k = 0; k < r->n; k++) {
    const tl_relation *x = &r->v[k];
    if (x->work >= 0 && (size_t)x->work < nevents && x->call >= 0 &&
        (x->state == TL_SUPPORTED_EXACT || x->state == TL_SUPPORTED_DETERMINISTIC))
      call[x->work] = x->call;
  }
  *out = call;
  return TL_OK;
}

size_t tl_relations_supported(const tl_relations *r) {
  size_t n = 0;
  for (size_t i = 0; i < r->n; i++)
    n += r->v[i].state == TL_SUPPORTED_EXACT || r->v[i].state == TL_SUPPORTED_DETERMINISTIC;
  return n;
}
