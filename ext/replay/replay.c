/*
** replay.c: the replay stage driver, signature interning and promotion (see replay.h).
**
** Promotion turns every launch of an exact replay unit into one launch anchor event, a
** derived event (trace.h: numbered after the reader's events, so event-<n> of real events
** never moves; the trace itself is not changed). Its
** interval is the launch interval, its label kind graph_launch with the anchor symbol as
** name (ACLH, ACLL, ...), its provenance the source of the launch's first control or
** member event with source_table "graph_replay" and source_rowid = launch index + 1.
** The events the unit owns (members and controls) are then marked, so anchor selection
** replaces them by the launch anchor and no time containment is ever involved.
*/
#include "replay/replay.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint32_t intern(tl_sig_vec *v, const char *sig) {
  /* Templates are few (bodies of distinct graphs): a linear scan is cheaper than a map. */
  for (size_t i = 0; i < v->n; i++)
    if (strcmp(v->v[i], sig) == 0) return (uint32_t)(i + 1);
  char *copy = tl_strdup(sig);
  if (!copy || TL_VEC_PUSH(v, copy)) {
    free(copy);
    return 0;
  }
  return (uint32_t)v->n;
}

uint32_t tl_replay_intern_body(tl_replay *r, const char *sig) {
  return intern(&r->body_templates, sig);
}
uint32_t tl_replay_intern_graph(tl_replay *r, const char *sig) {
  return intern(&r->graph_templates, sig);
}

void tl_replay_init(tl_replay *r) {
  memset(r, 0, sizeof *r);
  tl_derived_init(&r->launch_events);
}

int tl_replay_build(const tl_trace *t, const tl_profile *p, tl_replay *r, tl_err *e) {
  tl_replay_init(r);
  r->n_real_events = t->ev.n;
  if (tl_replay_acl(t, p, r, e)) return TL_ERROR;
  if (tl_replay_cuda(t, p, r, e)) return TL_ERROR;
  return TL_OK;
}

const char *tl_replay_launch_symbol(const tl_replay *r, const tl_graph_launch *l, char *buf) {
  if (l->provider == TL_GRAPH_CUDA) return "CUDAGraph";
  switch (l->slot_role) {
    case TL_SLOT_HEAD: return "ACLH";
    case TL_SLOT_LAYER: return "ACLL";
    case TL_SLOT_TAIL: return "ACLT";
    case TL_SLOT_SINGLE: return "ACLGraph";
    default:
      /* A generic slot is numbered only when its unit has several (recovery.md 3: ACLG or
      ** ACLG<k>): a unit of one generic launch is ACLG. */
      if (l->unit != TL_REPLAY_NONE && r->units.v[l->unit].nlaunches == 1) return "ACLG";
      snprintf(buf, 24, "ACLG%u", (unsigned)(l->slot_order + 1));
      return buf;
  }
}

size_t tl_replay_exact_launches(const tl_replay *r) {
  size_t n = 0;
  for (size_t k = 0; k < r->launches.n; k++) n += r->launches.v[k].unit != TL_REPLAY_NONE;
  return n;
}

int tl_replay_anchor_tokens(const tl_replay *r, const uint32_t *anchor_event, size_t n,
                            uint32_t **unit, int64_t **key, tl_err *e) {
  *unit = NULL, *key = NULL;
  if (!r->units.n) return TL_OK;
  uint32_t *u = calloc(n ? n : 1, sizeof *u);
  int64_t *k = calloc(n ? n : 1, sizeof *k);
  if (!u || !k) {
    free(u), free(k);
    return tl_nomem(e);
  }
  for (size_t i = 0; i < n; i++) {
    uint32_t x = anchor_event[i];
    if (x < r->n_real_events) continue;
    const tl_graph_launch *gl = &r->launches.v[r->launch_of_synthetic[x - r->n_real_events]];
    u[i] = gl->unit + 1;
    /* token identity (graph template, body template, launch symbol; recovery.md 4.2):
    ** negative, never a symbol id. The symbol is the slot, but for the layers of a head +
    ** layer x N + tail unit, which share one (ACLL): equal layers are one token, so the
    ** layers of a unit fold into a repeat. */
    uint32_t slot = gl->slot_role == TL_SLOT_LAYER ? 0 : gl->slot_order + 1;
    k[i] = -(((int64_t)r->units.v[gl->unit].graph_template << 40) |
             ((int64_t)gl->body_template << 16) | (int64_t)slot);
  }
  *unit = u, *key = k;
  return TL_OK;
}

/* Source of the launch's provenance: its first control, else its first member. */
static uint32_t provenance_event(const tl_replay *r, const tl_graph_launch *l) {
  for (int k = 0; k < 3; k++)
    if (l->control[k] != TL_REPLAY_NONE) return l->control[k];
  return l->nmembers ? r->members.v[l->first_member].event : TL_REPLAY_NONE;
}

int tl_replay_promote(const tl_trace *t, tl_replay *r, tl_err *e) {
  size_t n_real = r->n_real_events = t->ev.n;
  size_t extra = 0;
  for (size_t i = 0; i < r->launches.n; i++) extra += r->launches.v[i].unit != TL_REPLAY_NONE;
  tl_derived_free(&r->launch_events);
  r->owned = calloc(n_real + extra + 1, 1);
  r->launch_of_synthetic = malloc((extra + 1) * sizeof *r->launch_of_synthetic);
  if (!r->owned || !r->launch_of_synthetic) return tl_nomem(e);
  uint32_t task_type = tl_strpool_intern_cstr(t->pool, "GRAPH_REPLAY_LAUNCH");
  if (task_type == TL_STR_NOMEM) return tl_nomem(e);
  for (size_t i = 0; i < r->launches.n; i++) {
    tl_graph_launch *l = &r->launches.v[i];
    if (l->unit == TL_REPLAY_NONE) continue;
    uint32_t src = provenance_event(r, l);
    if (src == TL_REPLAY_NONE)
      return tl_fail(e, "exact replay launch graph-launch-%zu has neither controls nor members", i);
    char buf[24];
    const char *sym = tl_replay_launch_symbol(r, l, buf);
    uint32_t name = tl_strpool_intern_cstr(t->pool, sym);
    if (name == TL_STR_NOMEM) return tl_nomem(e);
    const tl_source_ref *ref = &t->source_refs.v[tl_events_source_ref(&t->ev, src)];
    tl_event_row row;
    memset(&row, 0, sizeof row);
    row.db_idx = l->db_idx;
    row.source_id = ref->source_id;
    row.source_table = "graph_replay";
    row.source_rowid = (int64_t)i + 1;
    row.device_id = l->device_id;
    row.stream_id = l->stream_id;
    row.start_ns = l->start_ns;
    row.end_ns = l->end_ns;
    row.kind = TL_KIND_GRAPH_LAUNCH;
    row.name = name;
    row.task_type = task_type;
    row.task_id = row.global_task_id = TL_ABSENT;
    row.correlation_id = l->correlation_id;
    row.context_id = TL_ABSENT;
    row.model_id = l->provider == TL_GRAPH_ACL ? l->graph_id : TL_ABSENT;
    row.graph_node_id = row.op_id = TL_ABSENT;
    if (tl_derived_add(&r->launch_events, t, &row)) return tl_nomem(e);
    l->anchor_event = (uint32_t)(n_real + r->launch_events.ev.n - 1);
    r->launch_of_synthetic[l->anchor_event - n_real] = (uint32_t)i;
    for (int k = 0; k < 3; k++)
      if (l->control[k] != TL_REPLAY_NONE) r->owned[l->control[k]] = 1;
    for (uint32_t m = 0; m < l->nmembers; m++) r->owned[r->members.v[l->first_member + m].event] = 1;
  }
  return TL_OK;
}

const char *tl_match_policy_name(int m) {
  static const char *const names[] = {"unmatched", "notify_completion_adjacent",
                                      "notify_ordered_fallback", "cuda_runtime_correlation"};
  return m >= 0 && m < 4 ? names[m] : "unmatched";
}
const char *tl_assoc_policy_name(int a) {
  static const char *const names[] = {"none", "record_model_id", "record_model_stream",
                                      "cuda_graph_node_set"};
  return a >= 0 && a < 4 ? names[a] : "none";
}
const char *tl_slot_role_name(int r) {
  static const char *const names[] = {"none", "single",       "head",      "layer",
                                      "tail", "generic_slot", "cuda_graph"};
  return r >= 0 && r < 7 ? names[r] : "none";
}
const char *tl_member_kind_name(int k) {
  static const char *const names[] = {"compute", "communication", "data_move"};
  return k >= 0 && k < 3 ? names[k] : "compute";
}
const char *tl_launch_status_name(int s) {
  static const char *const names[] = {
      "exact_replay_member",          "not_promoted",
      "missing_body_capability",      "missing_graph_launch_body",
      "ambiguous_graph_launch_body",  "body_template_mismatch",
      "insufficient_repeat_evidence", "missing_completion_evidence"};
  return s >= 0 && s < 8 ? names[s] : "not_promoted";
}
const char *tl_region_status_name(int s) {
  static const char *const names[] = {
      "recognized_complete_pattern",         "unrecognized_leading_context",
      "unrecognized_missing_body_capability", "unrecognized_missing_body_evidence",
      "unrecognized_body_mismatch",          "unrecognized_incomplete_tail",
      "unrecognized_missing_completion_evidence"};
  return s >= 0 && s < 7 ? names[s] : "unrecognized_missing_body_evidence";
}

void tl_replay_free(tl_replay *r) {
  for (size_t i = 0; i < r->body_templates.n; i++) free(r->body_templates.v[i]);
  for (size_t i = 0; i < r->graph_templates.n; i++) free(r->graph_templates.v[i]);
  for (size_t i = 0; i < r->regions.n; i++) free(r->regions.v[i].detail);
  TL_VEC_FREE(&r->body_templates);
  TL_VEC_FREE(&r->graph_templates);
  TL_VEC_FREE(&r->regions);
  TL_VEC_FREE(&r->launches);
  TL_VEC_FREE(&r->members);
  TL_VEC_FREE(&r->units);
  TL_VEC_FREE(&r->envelopes);
  free(r->owned);
  free(r->launch_of_synthetic);
  tl_derived_free(&r->launch_events);
  memset(r, 0, sizeof *r);
  tl_derived_init(&r->launch_events);
}
