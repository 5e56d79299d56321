/*
** units.c: structural units and composition (traceloom_structural_unit; view
** traceloom_structural_unit_anchor).
**
** Each device's anchors, in order, are partitioned into units:
**   graph_unit       the launch anchors of one exact replay unit (evidence exact, policy
**                    direct_exact_graph_unit);
**   structural_unit  the anchors between two graph units (complete,
**                    bounded_by_adjacent_exact_graph_units);
**   unrecognized     the anchors before the first graph unit (unrecognized_open_prefix,
**                    open_trace_prefix) or after the last (unrecognized_open_suffix,
**                    open_trace_suffix); a device without graph units is one open prefix.
** Adjacent units of the same kind, status, policy and body fingerprint fold into one row with
** run_count (a decode loop of identical replays is one G row). A unit's fingerprint is the
** SHA-256 of its tokens (structural symbol and anchor role, plus the graph template of a
** graph unit); units with equal kind and fingerprint share a family. Costs are the anchors'
** packets summed; expansion_nodes lists the outermost occurrences of the recovered tree that
** lie inside the unit (read back from traceloom_position_occurrence).
**
** Nothing is published when the analysis has no exact replay unit: the composition is
** defined by graph units.
*/
#include "reports/reports.h"
#include "publish/publish.h"
#include "util/buf.h"
#include "util/sha256.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NONE UINT32_MAX

enum { KIND_GRAPH = 0, KIND_STRUCTURAL, KIND_UNRECOGNIZED };
static const char *const KIND_NAME[] = {"graph_unit", "structural_unit", "unrecognized"};
static const char KIND_PREFIX[] = {'G', 'U', 'X'};

typedef struct unit {
  uint8_t kind, status; /* status: 0 exact, 1 complete, 2 open prefix, 3 open suffix */
  uint16_t db_idx;
  uint32_t device_id, order, run_count;
  size_t first, end;    /* global anchors [first, end) */
  size_t group_first;   /* first anchor of the device group (token ordinals are relative) */
  uint32_t graph_template; /* graph units: the replay's template (1-based); 0 otherwise */
  char fingerprint[18];
  tl_buf expansion;
} unit;

static const char *const STATUS_NAME[] = {"exact", "complete", "unrecognized_open_prefix",
                                          "unrecognized_open_suffix"};
static const char *const POLICY_NAME[] = {"direct_exact_graph_unit",
                                          "bounded_by_adjacent_exact_graph_units",
                                          "open_trace_prefix", "open_trace_suffix"};

typedef TL_VEC(unit) unit_vec;

/* fresh: an initialised state, copied (initialising asks the processor, sha256.h) */
static void fingerprint(const tl_reports_input *in, const tl_sha256 *fresh, unit *u) {
  tl_sha256 s = *fresh;
  char line[96];
  tl_sha256_update(&s, "traceloom-structural-body-v1\n", 29);
  if (u->kind == KIND_GRAPH) {
    int n = snprintf(line, sizeof line, "structural-identity:graph-template-%u\n", u->graph_template);
    tl_sha256_update(&s, line, (size_t)n);
  }
  for (size_t k = u->first; k < u->end; k++) {
    const char *sym = tl_strpool_str(in->trace->pool, in->anchors->symbol[k]);
    const char *role = tl_anchor_role_name(in->anchors->role[k]);
    size_t ls = sym ? strlen(sym) : 0;
    int n = snprintf(line, sizeof line, "%zu:", ls);
    tl_sha256_update(&s, line, (size_t)n);
    if (ls) tl_sha256_update(&s, sym, ls);
    n = snprintf(line, sizeof line, "|%zu:%s\n", strlen(role), role);
    tl_sha256_update(&s, line, (size_t)n);
  }
  uint8_t d[32];
  char hex[65];
  tl_sha256_final(&s, d);
  tl_sha256_hex(d, hex);
  u->fingerprint[0] = 'H';
  memcpy(u->fingerprint + 1, hex, 16);
  u->fingerprint[17] = 0;
}

/* The launch anchors of each exact replay unit, as global anchor spans per device group. */
typedef struct span {
  size_t first, end;
  uint32_t graph_template;
} span;

typedef TL_VEC(span) span_vec;

static int cmp_span(const void *a, const void *b) {
  const span *x = a, *y = b;
  return x->first < y->first ? -1 : x->first > y->first;
}

static int replay_spans(const tl_reports_input *in, span_vec *out, tl_err *e) {
  const tl_replay *r = in->replay;
  if (!r || !r->units.n) return TL_OK;
  size_t n = tl_event_count(in->trace, in->anchors->derived); /* trace + derived events */
  uint32_t *anchor_of = malloc((n ? n : 1) * sizeof *anchor_of);
  if (!anchor_of) return tl_nomem(e);
  memset(anchor_of, 0xff, (n ? n : 1) * sizeof *anchor_of);
  for (size_t k = 0; k < in->anchors->n; k++) anchor_of[in->anchors->event[k]] = (uint32_t)k;
  int rc = TL_OK;
  for (size_t u = 0; rc == TL_OK && u < r->units.n; u++) {
    const tl_replay_unit *un = &r->units.v[u];
    span s = {SIZE_MAX, 0, un->graph_template};
    for (uint32_t i = 0; i < un->nlaunches; i++) {
      uint32_t ev = r->launches.v[un->first_launch + i].anchor_event;
      if (ev == TL_REPLAY_NONE || ev >= n || anchor_of[ev] == NONE) continue;
      if (anchor_of[ev] < s.first) s.first = anchor_of[ev];
      if (anchor_of[ev] + 1 > s.end) s.end = anchor_of[ev] + 1;
    }
    if (s.end > 0 && TL_VEC_PUSH(out, s)) rc = tl_nomem(e);
  }
  free(anchor_of);
  if (rc == TL_OK) qsort(out->v, out->n, sizeof *out->v, cmp_span);
  for (size_t i = 1; rc == TL_OK && i < out->n; i++)
    if (out->v[i].first < out->v[i - 1].end)
      rc = tl_fail(e, "structural units: exact replay units overlap in the anchor sequence "
                      "(anchors %zu and %zu)", out->v[i - 1].end - 1, out->v[i].first);
  return rc;
}

static int push_unit(unit_vec *units, const tl_anchor_group *g, size_t group_first, uint8_t kind,
                     uint8_t status, size_t first, size_t end, uint32_t tmpl) {
  unit u;
  memset(&u, 0, sizeof u);
  u.kind = kind, u.status = status, u.db_idx = g->db_idx, u.device_id = g->device_id;
  u.run_count = 1, u.first = first, u.end = end, u.group_first = group_first;
  u.graph_template = tmpl;
  return TL_VEC_PUSH(units, u);
}

/* The frontier of the recovered tree inside each unit: occurrences (not a root) that lie in
** the unit while their parent does not or is the root, in anchor order. */
static int expansions(sqlite3 *db, unit_vec *units, tl_err *e) {
  sqlite3_stmt *st;
  if (tl_pub_prepare(db,
                     "SELECT o.anchor_first_n, o.anchor_end_n, p.anchor_first_n, p.anchor_end_n, "
                     "o.position_id || '#' || o.occurrence_idx, p.parent_n IS NULL "
                     "FROM main.traceloom_position_occurrence o "
                     "JOIN main.traceloom_position_occurrence p ON p.occurrence_n = o.parent_n "
                     "WHERE o.anchor_end_n > o.anchor_first_n "
                     "ORDER BY o.anchor_first_n, o.occurrence_n",
                     &st, e))
    return TL_ERROR;
  int rc = TL_OK, s;
  size_t u = 0;
  while (rc == TL_OK && (s = sqlite3_step(st)) == SQLITE_ROW) {
    size_t a = (size_t)sqlite3_column_int64(st, 0), b = (size_t)sqlite3_column_int64(st, 1);
    size_t pa = (size_t)sqlite3_column_int64(st, 2), pb = (size_t)sqlite3_column_int64(st, 3);
    while (u < units->n && units->v[u].end <= a) u++;
    if (u == units->n) break;
    unit *x = &units->v[u];
    if (a < x->first || b > x->end) continue;          /* crosses the unit's boundary */
    int parent_root = sqlite3_column_int(st, 5);       /* the root's children start the walk */
    if (!parent_root && pa >= x->first && pb <= x->end) continue; /* its parent is inside too */
    if (x->expansion.n) tl_buf_puts(&x->expansion, ",");
    tl_buf_puts(&x->expansion, (const char *)sqlite3_column_text(st, 4));
    if (x->expansion.oom) rc = tl_nomem(e);
  }
  if (rc == TL_OK && s != SQLITE_DONE && s != SQLITE_ROW)
    rc = tl_fail(e, "reading the published occurrences: %s", sqlite3_errmsg(db));
  sqlite3_finalize(st);
  return rc;
}

static int can_fold(const unit *a, const unit *b) {
  return a->kind == b->kind && a->status == b->status && a->db_idx == b->db_idx &&
         a->device_id == b->device_id && a->end == b->first &&
         strcmp(a->fingerprint, b->fingerprint) == 0;
}

static int insert_units(sqlite3 *db, const tl_reports_input *in, unit_vec *units, tl_err *e) {
  sqlite3_stmt *st;
  if (tl_pub_prepare(db,
                     "INSERT INTO traceloom_structural_unit(unit_id, db_idx, device_id, unit_order, "
                     "kind, run_count, family_id, body_fingerprint, token_start_ordinal, "
                     "token_end_ordinal, first_anchor_n, last_anchor_n, first_anchor_idx, "
                     "last_anchor_idx, anchor_count, start_ns, end_ns, span_us, compute_us, comm_us, "
                     "idle_us, total_us, aux_events, aux_us, evidence_status, boundary_policy, "
                     "shape_signature, expansion_nodes) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,"
                     "?12,?13,?14,?15,?16,?17,?18,?19,?20,?21,?22,?23,?24,?25,?26,?27,?28)",
                     &st, e))
    return TL_ERROR;
  /* families: the first unit of each (kind, fingerprint) numbers it */
  uint32_t next_unit[3] = {0, 0, 0}, next_family[3] = {0, 0, 0};
  uint32_t *family = calloc(units->n ? units->n : 1, sizeof *family);
  int rc = family ? TL_OK : tl_nomem(e);
  for (size_t i = 0; rc == TL_OK && i < units->n; i++) {
    unit *u = &units->v[i];
    for (size_t j = 0; j < i && !family[i]; j++)
      if (units->v[j].kind == u->kind && strcmp(units->v[j].fingerprint, u->fingerprint) == 0)
        family[i] = family[j];
    if (!family[i]) family[i] = ++next_family[u->kind];
    int64_t c = 0, m = 0, idle = 0, aux = 0, naux = 0, start = INT64_MAX, end = INT64_MIN;
    for (size_t k = u->first; k < u->end; k++) {
      tl_packet p = tl_packet_at(in->packets, k);
      c += p.compute_ns, m += p.comm_ns, idle += p.idle_ns, aux += p.aux_ns, naux += p.aux_events;
      int64_t s = tl_anchor_start(in->anchors, k), f = tl_anchor_end(in->anchors, k);
      if (s < start) start = s;
      if (f > end) end = f;
    }
    char id[32], fam[32], shape[48];
    snprintf(id, sizeof id, "%c%u", KIND_PREFIX[u->kind], ++next_unit[u->kind]);
    snprintf(fam, sizeof fam, "%cF%u", KIND_PREFIX[u->kind], family[i]);
    /* the template as traceloom_graph_launch.graph_template_id numbers it (from 0; 1-based
    ** here, as in tl_replay) */
    if (u->kind == KIND_GRAPH) snprintf(shape, sizeof shape, "graph-template-%u", u->graph_template - 1);
    else snprintf(shape, sizeof shape, "unavailable");
    sqlite3_bind_text(st, 1, id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 2, u->db_idx);
    sqlite3_bind_int64(st, 3, u->device_id);
    sqlite3_bind_int64(st, 4, u->order);
    sqlite3_bind_text(st, 5, KIND_NAME[u->kind], -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 6, u->run_count);
    sqlite3_bind_text(st, 7, fam, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 8, u->fingerprint, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 9, (int64_t)(u->first - u->group_first));
    sqlite3_bind_int64(st, 10, (int64_t)(u->end - u->group_first));
    sqlite3_bind_int64(st, 11, (int64_t)u->first);
    sqlite3_bind_int64(st, 12, (int64_t)(u->end - 1));
    sqlite3_bind_int64(st, 13, (int64_t)(u->first - u->group_first + 1));
    sqlite3_bind_int64(st, 14, (int64_t)(u->end - u->group_first));
    sqlite3_bind_int64(st, 15, (int64_t)(u->end - u->first));
    sqlite3_bind_int64(st, 16, start);
    sqlite3_bind_int64(st, 17, end);
    sqlite3_bind_double(st, 18, tl_ns_to_us(end - start));
    sqlite3_bind_double(st, 19, tl_ns_to_us(c));
    sqlite3_bind_double(st, 20, tl_ns_to_us(m));
    sqlite3_bind_double(st, 21, tl_ns_to_us(idle));
    sqlite3_bind_double(st, 22, tl_ns_to_us(c + m + idle));
    sqlite3_bind_int64(st, 23, naux);
    sqlite3_bind_double(st, 24, tl_ns_to_us(aux));
    sqlite3_bind_text(st, 25, STATUS_NAME[u->status], -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 26, POLICY_NAME[u->status], -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 27, shape, -1, SQLITE_TRANSIENT);
    sqlite3_bind_text(st, 28, u->expansion.p ? u->expansion.p : "", (int)u->expansion.n, SQLITE_STATIC);
    rc = tl_pub_step(db, st, "traceloom_structural_unit", e);
  }
  free(family);
  sqlite3_finalize(st);
  return rc;
}

int tl_reports_units(sqlite3 *db, const tl_reports_input *in, tl_err *e) {
  span_vec spans = {0};
  unit_vec raw = {0}, units = {0};
  int rc = replay_spans(in, &spans, e);
  if (rc || !spans.n) goto done;
  const tl_anchors *an = in->anchors;
  size_t s = 0;
  for (size_t gi = 0; rc == TL_OK && gi < an->groups.n; gi++) {
    const tl_anchor_group *g = &an->groups.v[gi];
    size_t cur = g->first, end = g->first + g->count;
    int seen_graph = 0;
    while (s < spans.n && spans.v[s].first < g->first) s++;
    for (; rc == TL_OK && s < spans.n && spans.v[s].end <= end; s++) {
      if (spans.v[s].first > cur &&
          push_unit(&raw, g, g->first, seen_graph ? KIND_STRUCTURAL : KIND_UNRECOGNIZED,
                    seen_graph ? 1 : 2, cur, spans.v[s].first, 0))
        rc = tl_nomem(e);
      if (rc == TL_OK && push_unit(&raw, g, g->first, KIND_GRAPH, 0, spans.v[s].first,
                                   spans.v[s].end, spans.v[s].graph_template))
        rc = tl_nomem(e);
      cur = spans.v[s].end, seen_graph = 1;
    }
    if (rc == TL_OK && cur < end &&
        push_unit(&raw, g, g->first, KIND_UNRECOGNIZED, seen_graph ? 3 : 2, cur, end, 0))
      rc = tl_nomem(e);
  }
  tl_sha256 fresh;
  tl_sha256_init(&fresh);
  for (size_t i = 0; rc == TL_OK && i < raw.n; i++) {
    fingerprint(in, &fresh, &raw.v[i]);
    unit *last = units.n ? &units.v[units.n - 1] : NULL;
    if (last && can_fold(last, &raw.v[i])) {
      last->end = raw.v[i].end;
      last->run_count++;
    } else {
      raw.v[i].order = last && last->db_idx == raw.v[i].db_idx && last->device_id == raw.v[i].device_id
                           ? last->order + 1 : 0;
      if (TL_VEC_PUSH(&units, raw.v[i])) rc = tl_nomem(e);
    }
  }
  if (rc == TL_OK) rc = expansions(db, &units, e);
  if (rc == TL_OK) rc = insert_units(db, in, &units, e);
  for (size_t i = 0; i < units.n; i++) tl_buf_free(&units.v[i].expansion);
done:
  TL_VEC_FREE(&spans);
  TL_VEC_FREE(&raw);
  TL_VEC_FREE(&units);
  return rc;
}
