/*
** bodypattern.c: nested repeats inside exact replay bodies (bodypattern.h).
**
** Reads the replay cost aggregates (one per body position and stream lane) and the exact
** members behind them, groups the aggregates into domains (one stream lane of one body),
** runs tl_recover over each domain's positions in task order and publishes the runs,
** domains, positions, patterns (one per structural place, like the tree's nodes) and their
** occurrences. Everything is small: a domain has one row per body position, however many
** times the body was replayed.
*/
#include "bodypattern/bodypattern.h"
#include "publish/publish.h"
#include "recover/recover.h"
#include "util/strpool.h"
#include "util/vec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NONE UINT32_MAX

typedef struct agg {
  int64_t rowid;             /* traceloom_replay_cost_aggregate.rowid */
  int64_t n;                 /* n of replay-cost-aggregate-<n> (graph members' aggregate_n) */
  int64_t first;             /* the domain key: rowid of the domain's first aggregate */
  int db_idx;
  int64_t device_id;
  uint32_t tmpl, role, scope, body, identity, kind; /* pool ids */
  int64_t stream;
  int has_stream;
  int64_t dur[3];            /* p25, median, p75 duration (ns); has_dur = 0 when NULL */
  int has_dur;
  int64_t member_ns;         /* summed member durations */
  int64_t task_sum_ns;       /* summed task-sums of the members' launches */
} agg;

typedef TL_VEC(agg) agg_vec;
typedef TL_VEC(uint32_t) u32_vec;

typedef struct pnode {       /* one pattern: a structural place of a domain's tree */
  uint32_t def;              /* tl_position index */
  uint32_t parent;           /* pattern index, NONE for the root */
  uint32_t slot;             /* 1-based slot in the parent, 0 for the root */
  uint32_t depth, loop;      /* display depth; Repeat patterns from the root, self included */
  uint32_t kids;             /* its children: kid[kids + slot - 1] */
  uint32_t occ;              /* occurrences so far */
  uint32_t first_occ;        /* its first occurrence (walk order) */
} pnode;

typedef TL_VEC(pnode) pnode_vec;

typedef struct writer {
  sqlite3 *db;
  sqlite3_stmt *run, *domain, *position, *pattern, *occurrence, *issue;
  tl_strpool *pool;
  int64_t domain_n, position_n, pattern_n, occurrence_n, issue_n;
} writer;

static const char *str(const writer *w, uint32_t id) { return tl_strpool_str(w->pool, id); }

static void bind_str(sqlite3_stmt *st, int col, const writer *w, uint32_t id) {
  const char *s = str(w, id);
  if (s && *s) sqlite3_bind_text(st, col, s, -1, SQLITE_TRANSIENT);
  else sqlite3_bind_null(st, col);
}

static void bind_fmt(sqlite3_stmt *st, int col, const char *fmt, int64_t a, int64_t b) {
  char buf[96];
  snprintf(buf, sizeof buf, fmt, (long long)a, (long long)b);
  sqlite3_bind_text(st, col, buf, -1, SQLITE_TRANSIENT);
}

static uint32_t intern_col(tl_strpool *p, sqlite3_stmt *st, int col) {
  const unsigned char *t = sqlite3_column_text(st, col);
  return t ? tl_strpool_intern(p, (const char *)t, (size_t)sqlite3_column_bytes(st, col))
           : tl_strpool_intern(p, "", 0);
}

/* The aggregates, grouped by domain (ordered by the domain's first aggregate), each domain
** in task order. */
static int read_aggregates(sqlite3 *db, tl_strpool *pool, agg_vec *out, int64_t *max_n,
                           tl_err *e) {
  sqlite3_stmt *st;
  if (tl_pub_prepare(db,
                     "SELECT a.rowid, a.aggregate_id, a.db_idx, a.device_id, a.graph_template_id, "
                     "a.slot_role, a.aggregation_scope, a.replay_body_template_id, a.stream_id, "
                     "a.identity, a.kind, a.duration_p25_ns, a.duration_median_ns, "
                     "a.duration_p75_ns, min(a.rowid) OVER (PARTITION BY a.db_idx, a.device_id, "
                     "a.graph_template_id, a.slot_role, a.aggregation_scope, "
                     "a.replay_body_template_id, a.stream_id) AS first "
                     "FROM traceloom_replay_cost_aggregate a "
                     "ORDER BY first, a.task_ordinal, a.lane_ordinal, a.rowid",
                     &st, e))
    return TL_ERROR;
  int rc = TL_OK, s;
  *max_n = -1;
  while (rc == TL_OK && (s = sqlite3_step(st)) == SQLITE_ROW) {
    agg a = {0};
    a.rowid = sqlite3_column_int64(st, 0);
    const char *id = (const char *)sqlite3_column_text(st, 1);
    long long n;
    if (!id || sscanf(id, "replay-cost-aggregate-%lld", &n) != 1 || n < 0 || n > INT32_MAX) {
      rc = tl_fail(e, "traceloom_replay_cost_aggregate: aggregate_id '%s' is not "
                      "replay-cost-aggregate-<n>", id ? id : "(null)");
      break;
    }
    a.n = n;
    a.db_idx = sqlite3_column_int(st, 2);
    a.device_id = sqlite3_column_int64(st, 3);
    a.tmpl = intern_col(pool, st, 4);
    a.role = intern_col(pool, st, 5);
    a.scope = intern_col(pool, st, 6);
    a.body = intern_col(pool, st, 7);
    a.has_stream = sqlite3_column_type(st, 8) != SQLITE_NULL;
    a.stream = sqlite3_column_int64(st, 8);
    a.identity = intern_col(pool, st, 9);
    a.kind = intern_col(pool, st, 10);
    a.has_dur = sqlite3_column_type(st, 12) != SQLITE_NULL;
    for (int q = 0; q < 3; q++) a.dur[q] = sqlite3_column_int64(st, 11 + q);
    a.first = sqlite3_column_int64(st, 14);
    if (a.tmpl == TL_STR_NOMEM || a.role == TL_STR_NOMEM || a.scope == TL_STR_NOMEM ||
        a.body == TL_STR_NOMEM || a.identity == TL_STR_NOMEM || a.kind == TL_STR_NOMEM ||
        TL_VEC_PUSH(out, a))
      rc = tl_nomem(e);
    if (a.n > *max_n) *max_n = a.n;
  }
  if (rc == TL_OK && s != SQLITE_DONE)
    rc = tl_fail(e, "reading traceloom_replay_cost_aggregate: %s", sqlite3_errmsg(db));
  sqlite3_finalize(st);
  return rc;
}

/* Per aggregate: its members' summed duration and their launches' summed task-sums, the
** two sides of its scheduled-work share. One pass over the exact members. */
static int read_shares(sqlite3 *db, agg_vec *aggs, int64_t max_n, tl_err *e) {
  if (aggs->n == 0) return TL_OK;
  uint32_t *at = malloc((size_t)(max_n + 1) * sizeof *at);
  if (!at) return tl_nomem(e);
  for (int64_t i = 0; i <= max_n; i++) at[i] = NONE;
  for (size_t i = 0; i < aggs->n; i++) at[aggs->v[i].n] = (uint32_t)i;
  sqlite3_stmt *st = NULL;
  int rc = tl_pub_prepare(db,
                          "SELECT m.aggregate_n, e.dur_ns, c.task_sum_ns "
                          "FROM traceloom_graph_member_core m "
                          "JOIN traceloom_event_core e ON e.event_n = m.event_n "
                          "LEFT JOIN traceloom_replay_cost_launch c ON c.launch_n = m.launch_n",
                          &st, e);
  int s = SQLITE_DONE;
  while (rc == TL_OK && (s = sqlite3_step(st)) == SQLITE_ROW) {
    int64_t n = sqlite3_column_int64(st, 0);
    if (n < 0 || n > max_n || at[n] == NONE) continue; /* an aggregate without a row */
    agg *a = &aggs->v[at[n]];
    a->member_ns += sqlite3_column_int64(st, 1);
    a->task_sum_ns += sqlite3_column_int64(st, 2);
  }
  if (rc == TL_OK && s != SQLITE_DONE)
    rc = tl_fail(e, "reading the exact replay members: %s", sqlite3_errmsg(db));
  sqlite3_finalize(st);
  free(at);
  return rc;
}

static int share_ppm(const agg *a, int64_t *ppm) {
  if (a->task_sum_ns <= 0 || a->member_ns < 0) {
    *ppm = 0;
    return 0;
  }
  *ppm = (int64_t)(((__int128)a->member_ns * 1000000) / a->task_sum_ns);
  return 1;
}

static int issue(writer *w, int64_t run_n, int64_t domain_n, int db_idx, const int64_t *device,
                 const char *code, const char *detail, tl_err *e) {
  sqlite3_stmt *st = w->issue;
  bind_fmt(st, 1, "replay-body-pattern-issue-%lld", w->issue_n++, 0);
  bind_fmt(st, 2, "replay-body-pattern-run-%lld", run_n, 0);
  if (domain_n >= 0) bind_fmt(st, 3, "replay-body-domain-%lld", domain_n, 0);
  else sqlite3_bind_null(st, 3);
  sqlite3_bind_int(st, 4, db_idx);
  if (device) sqlite3_bind_int64(st, 5, *device);
  else sqlite3_bind_null(st, 5);
  sqlite3_bind_text(st, 6, code, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 7, detail, -1, SQLITE_TRANSIENT);
  return tl_pub_step(w->db, st, "traceloom_replay_body_pattern_issue", e);
}

/* The domain's tree, one pattern per structural place, preorder. */
static int build_patterns(const tl_structure *s, pnode_vec *nodes, u32_vec *kid, tl_err *e) {
  u32_vec stack = {0}; /* pending (parent pattern, slot) pairs, two entries each */
  pnode root = {.def = 0, .parent = NONE, .slot = 0, .first_occ = NONE};
  int rc = TL_OK;
  if (TL_VEC_PUSH(nodes, root)) return tl_nomem(e);
  uint32_t cur = 0;
  for (;;) {
    pnode *p = &nodes->v[cur];
    const tl_position *d = &s->positions[p->def];
    p->loop += d->kind == TL_POS_REPEAT;
    p->kids = (uint32_t)kid->n;
    for (uint32_t j = 0; j < d->nslots && rc == TL_OK; j++)
      if (TL_VEC_PUSH(kid, NONE)) rc = tl_nomem(e);
    for (uint32_t j = d->nslots; j > 0 && rc == TL_OK; j--)
      if (TL_VEC_PUSH(&stack, cur) || TL_VEC_PUSH(&stack, j)) rc = tl_nomem(e);
    if (rc != TL_OK || stack.n == 0) break;
    uint32_t slot = stack.v[--stack.n], parent = stack.v[--stack.n];
    const pnode *pp = &nodes->v[parent];
    const tl_position *pd = &s->positions[pp->def];
    pnode c = {.def = s->slots[pd->first_slot + slot - 1], .parent = parent, .slot = slot,
               .depth = pp->depth + 1, .loop = pp->loop, .first_occ = NONE};
    kid->v[pp->kids + slot - 1] = (uint32_t)nodes->n;
    cur = (uint32_t)nodes->n;
    if (TL_VEC_PUSH(nodes, c)) rc = tl_nomem(e);
    if (rc != TL_OK) break;
  }
  TL_VEC_FREE(&stack);
  return rc;
}

/* One domain: positions [lo, hi) of aggs. */
static int publish_domain(writer *w, const agg_vec *aggs, size_t lo, size_t hi, int64_t run_n,
                          int64_t *nsupported, int64_t *npositions, tl_err *e) {
  const agg *a0 = &aggs->v[lo];
  size_t n = hi - lo;
  int64_t domain_n = w->domain_n++;
  int rc = TL_OK;
  /* Positions, whatever the domain's support. */
  for (size_t k = 0; k < n && rc == TL_OK; k++) {
    const agg *a = &aggs->v[lo + k];
    sqlite3_stmt *st = w->position;
    int64_t ppm;
    int ok = share_ppm(a, &ppm);
    sqlite3_bind_int64(st, 1, w->position_n++);
    sqlite3_bind_int64(st, 2, domain_n);
    sqlite3_bind_int64(st, 3, (int64_t)k);
    sqlite3_bind_int64(st, 4, a->rowid);
    sqlite3_bind_int64(st, 5, a->n);
    sqlite3_bind_int64(st, 6, a->member_ns);
    sqlite3_bind_int64(st, 7, a->task_sum_ns);
    sqlite3_bind_int64(st, 8, ppm);
    sqlite3_bind_int(st, 9, ok);
    rc = tl_pub_step(w->db, st, "traceloom_replay_body_position_core", e);
  }
  const char *reason = NULL;
  tl_structure s = {0};
  uint32_t *sym = NULL;
  pnode_vec nodes = {0};
  u32_vec kid = {0};
  uint32_t *occ_node = NULL;
  if (rc == TL_OK && !a0->has_stream) {
    reason = "missing_stream_id";
    rc = issue(w, run_n, domain_n, a0->db_idx, &a0->device_id, reason,
               "the body positions have no stream: no order is claimed across streams", e);
  }
  if (rc == TL_OK && !reason) {
    /* Tokens: one symbol per distinct (identity, kind), dense in first-seen order. */
    sym = malloc(n * sizeof *sym);
    if (!sym) rc = tl_nomem(e);
    for (size_t k = 0; k < n && rc == TL_OK; k++) {
      sym[k] = (uint32_t)k;
      for (size_t j = 0; j < k; j++)
        if (aggs->v[lo + j].identity == aggs->v[lo + k].identity &&
            aggs->v[lo + j].kind == aggs->v[lo + k].kind) {
          sym[k] = sym[j];
          break;
        }
    }
    tl_recover_input in = {.symbols = sym, .n = n};
    tl_err re = {0};
    if (rc == TL_OK && tl_recover(&in, &s, &re) != TL_OK) {
      reason = "grammar_recovery_failed";
      rc = issue(w, run_n, domain_n, a0->db_idx, &a0->device_id, reason,
                 re.msg ? re.msg : "recovery failed", e);
    }
    tl_err_clear(&re);
  }
  if (rc == TL_OK && !reason) rc = build_patterns(&s, &nodes, &kid, e);
  if (rc == TL_OK && !reason) {
    occ_node = malloc((s.noccurrences ? s.noccurrences : 1) * sizeof *occ_node);
    if (!occ_node) rc = tl_nomem(e);
  }
  /* Prefix sums of the positions' quantiles and shares, for the occurrences' sums. */
  int64_t (*pre)[5] = NULL;
  if (rc == TL_OK && !reason) {
    pre = calloc(n + 1, sizeof *pre);
    if (!pre) rc = tl_nomem(e);
    for (size_t k = 0; k < n && rc == TL_OK; k++) {
      const agg *a = &aggs->v[lo + k];
      int64_t ppm;
      int ok = share_ppm(a, &ppm);
      for (int q = 0; q < 3; q++) pre[k + 1][q] = pre[k][q] + (a->has_dur ? a->dur[q] : 0);
      pre[k + 1][3] = pre[k][3] + ppm;
      pre[k + 1][4] = pre[k][4] + (ok && a->has_dur);
    }
  }
  int64_t first_pattern = w->pattern_n, first_occurrence = w->occurrence_n;
  uint32_t nrepeat = 0;
  for (size_t i = 0; rc == TL_OK && !reason && i < nodes.n; i++)
    nrepeat += s.positions[nodes.v[i].def].kind == TL_POS_REPEAT;
  /* Occurrences: each names its pattern through its parent's and its slot. */
  for (size_t i = 0; rc == TL_OK && !reason && i < s.noccurrences; i++) {
    const tl_occurrence *o = &s.occurrences[i];
    uint32_t p = o->parent == TL_RECOVER_NONE ? 0
                                              : kid.v[nodes.v[occ_node[o->parent]].kids + o->slot - 1];
    occ_node[i] = p;
    pnode *pn = &nodes.v[p];
    if (pn->first_occ == NONE) pn->first_occ = (uint32_t)i;
    uint32_t index = pn->occ++;
    int under_repeat = o->parent != TL_RECOVER_NONE &&
                       s.positions[nodes.v[occ_node[o->parent]].def].kind == TL_POS_REPEAT;
    int64_t edge = 0;
    if (o->parent != TL_RECOVER_NONE)
      edge = under_repeat ? (int64_t)(o->member_order - 1) *
                                    s.positions[nodes.v[occ_node[o->parent]].def].nslots + o->slot
                          : o->slot;
    sqlite3_stmt *st = w->occurrence;
    bind_fmt(st, 1, "replay-body-domain-%lld-occurrence-%lld", domain_n, (int64_t)i);
    bind_fmt(st, 2, "replay-body-domain-%lld-pattern-%lld", domain_n, (int64_t)p);
    bind_fmt(st, 3, "replay-body-domain-%lld", domain_n, 0);
    if (o->parent == TL_RECOVER_NONE) sqlite3_bind_null(st, 4);
    else bind_fmt(st, 4, "replay-body-domain-%lld-occurrence-%lld", domain_n, (int64_t)o->parent);
    sqlite3_bind_int(st, 5, a0->db_idx);
    sqlite3_bind_int64(st, 6, a0->device_id);
    sqlite3_bind_int64(st, 7, index);
    sqlite3_bind_int64(st, 8, edge);
    sqlite3_bind_int64(st, 9, under_repeat ? o->member_order : 0);
    sqlite3_bind_int64(st, 10, o->start);
    sqlite3_bind_int64(st, 11, o->end);
    sqlite3_bind_int64(st, 12, (int64_t)o->end - o->start);
    for (int q = 0; q < 4; q++) sqlite3_bind_int64(st, 13 + q, pre[o->end][q] - pre[o->start][q]);
    sqlite3_bind_int(st, 17, pre[o->end][4] - pre[o->start][4] == (int64_t)o->end - o->start);
    sqlite3_bind_int64(st, 18, w->occurrence_n++);
    sqlite3_bind_int64(st, 19, domain_n);
    sqlite3_bind_int64(st, 20, first_pattern + p);
    if (o->parent == TL_RECOVER_NONE) sqlite3_bind_null(st, 21);
    else sqlite3_bind_int64(st, 21, first_occurrence + o->parent);
    sqlite3_bind_int64(st, 22, o->slot);
    sqlite3_bind_int64(st, 23, o->parent == TL_RECOVER_NONE ? 0 : o->member_order);
    rc = tl_pub_step(w->db, st, "traceloom_replay_body_pattern_occurrence", e);
  }
  /* Patterns. */
  for (size_t i = 0; rc == TL_OK && !reason && i < nodes.n; i++) {
    const pnode *pn = &nodes.v[i];
    const tl_position *d = &s.positions[pn->def];
    sqlite3_stmt *st = w->pattern;
    bind_fmt(st, 1, "replay-body-domain-%lld-pattern-%lld", domain_n, (int64_t)i);
    bind_fmt(st, 2, "replay-body-domain-%lld", domain_n, 0);
    sqlite3_bind_int(st, 3, a0->db_idx);
    sqlite3_bind_int64(st, 4, a0->device_id);
    bind_fmt(st, 5, "N%03lld", (int64_t)i + 1, 0);
    const char *kind = d->kind == TL_POS_ATOM ? "atom" : d->kind == TL_POS_REPEAT ? "repeat" : "seq";
    sqlite3_bind_text(st, 6, kind, -1, SQLITE_STATIC);
    const agg *at = pn->first_occ == NONE ? NULL
                                          : &aggs->v[lo + s.occurrences[pn->first_occ].start];
    if (d->kind == TL_POS_ATOM && at) {
      bind_str(st, 7, w, at->identity);
      bind_str(st, 8, w, at->kind);
    } else if (d->kind == TL_POS_REPEAT) {
      bind_fmt(st, 7, "Rep x%lld", d->repeat_count, 0);
      sqlite3_bind_null(st, 8);
    } else {
      sqlite3_bind_text(st, 7, "Seq", -1, SQLITE_STATIC);
      sqlite3_bind_null(st, 8);
    }
    if (d->kind == TL_POS_REPEAT) sqlite3_bind_int64(st, 9, d->repeat_count);
    else sqlite3_bind_null(st, 9);
    sqlite3_bind_int64(st, 10, pn->depth);
    sqlite3_bind_int64(st, 11, pn->loop);
    sqlite3_bind_int64(st, 12, pn->occ);
    sqlite3_bind_int64(st, 13, (int64_t)d->token_len);
    const char *why = pn->parent == NONE ? (nrepeat ? "grammar_state_root" : "root")
                      : d->kind == TL_POS_REPEAT ? "grammar_state_repeat_body_macro_run"
                      : d->kind == TL_POS_ATOM ? (nrepeat ? "grammar_state_repeat_body_atom" : "atom")
                                               : "grammar_state_sequence";
    sqlite3_bind_text(st, 14, why, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 15, w->pattern_n++);
    sqlite3_bind_int64(st, 16, domain_n);
    if (pn->parent == NONE) sqlite3_bind_null(st, 17);
    else sqlite3_bind_int64(st, 17, first_pattern + pn->parent);
    sqlite3_bind_int64(st, 18, pn->slot);
    sqlite3_bind_int64(st, 19, first_occurrence + (pn->first_occ == NONE ? 0 : pn->first_occ));
    rc = tl_pub_step(w->db, st, "traceloom_replay_body_pattern_definition", e);
  }
  if (rc == TL_OK) {
    sqlite3_stmt *st = w->domain;
    int ok = reason == NULL;
    bind_fmt(st, 1, "replay-body-domain-%lld", domain_n, 0);
    bind_fmt(st, 2, "replay-body-pattern-run-%lld", run_n, 0);
    sqlite3_bind_int(st, 3, a0->db_idx);
    sqlite3_bind_int64(st, 4, a0->device_id);
    bind_str(st, 5, w, a0->tmpl);
    bind_str(st, 6, w, a0->role);
    bind_str(st, 7, w, a0->scope);
    bind_str(st, 8, w, a0->body);
    if (a0->has_stream) sqlite3_bind_int64(st, 9, a0->stream);
    else sqlite3_bind_null(st, 9);
    sqlite3_bind_text(st, 10, ok ? "supported" : "unsupported", -1, SQLITE_STATIC);
    if (reason) sqlite3_bind_text(st, 11, reason, -1, SQLITE_STATIC);
    else sqlite3_bind_null(st, 11);
    sqlite3_bind_int64(st, 12, (int64_t)n);
    sqlite3_bind_text(st, 13, "analysis_quality_v1", -1, SQLITE_STATIC);
    /* Our recovery's own counts (docs/PARITY.md): elements under the root, repeat
    ** patterns, patterns below the root, positions per pattern below the root. */
    size_t below = nodes.n ? nodes.n - 1 : 0;
    uint32_t top = ok ? s.positions[0].nslots : 0;
    sqlite3_bind_text(st, 14, ok ? "done" : "rejected", -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 15, top);
    sqlite3_bind_int64(st, 16, nrepeat);
    sqlite3_bind_int64(st, 17, (int64_t)below);
    sqlite3_bind_double(st, 18, below ? (double)n / (double)below : 0.0);
    sqlite3_bind_int64(st, 19, ok ? 2 + (int64_t)nrepeat : 0);
    sqlite3_bind_int64(st, 20, ok ? (int64_t)nodes.n : 0);
    sqlite3_bind_int64(st, 21, ok ? (int64_t)s.noccurrences : 0);
    sqlite3_bind_int64(st, 22, domain_n);
    sqlite3_bind_int64(st, 23, run_n);
    sqlite3_bind_int64(st, 24, w->position_n - (int64_t)n);
    sqlite3_bind_int64(st, 25, first_pattern);
    sqlite3_bind_int64(st, 26, first_occurrence);
    rc = tl_pub_step(w->db, st, "traceloom_replay_body_pattern_domain", e);
    if (ok) (*nsupported)++, *npositions += (int64_t)n;
  }
  free(pre);
  free(occ_node);
  free(sym);
  TL_VEC_FREE(&nodes);
  TL_VEC_FREE(&kid);
  tl_structure_free(&s);
  return rc;
}

static int prepare_all(writer *w, tl_err *e) {
  static const char *const sql[6] = {
      "INSERT INTO traceloom_replay_body_pattern_run(run_id, db_idx, support_status, "
      "reason_codes, grammar_mode, source_relation, position_count, supported_domain_count, "
      "rejected_domain_count, run_n) VALUES (?1,?2,?3,?4,'analysis_quality_v1',"
      "'traceloom_replay_cost_aggregate',?5,?6,?7,?8)",
      "INSERT INTO traceloom_replay_body_pattern_domain(domain_id, run_id, db_idx, device_id, "
      "graph_template_id, slot_role, aggregation_scope, replay_body_template_id, stream_id, "
      "support_status, reason_code, position_count, grammar_mode, grammar_stop_reason, "
      "grammar_live_node_count, grammar_macro_def_count, grammar_description_element_count, "
      "grammar_description_ratio, grammar_step_count, pattern_definition_count, "
      "pattern_occurrence_count, domain_n, run_n, first_position_n, first_pattern_n, "
      "first_occurrence_n) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,"
      "?18,?19,?20,?21,?22,?23,?24,?25,?26)",
      "INSERT INTO traceloom_replay_body_position_core(position_n, domain_n, position_ordinal, "
      "aggregate_rowid, aggregate_n, member_ns, launch_task_sum_ns, scheduled_work_share_ppm, "
      "scheduled_work_share_supported) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9)",
      "INSERT INTO traceloom_replay_body_pattern_definition(pattern_id, domain_id, db_idx, "
      "device_id, local_pattern_id, node_kind, label, category, repeat_count, display_depth, "
      "loop_depth, occurrence_count, positions_per_occurrence, visibility_reason, pattern_n, "
      "domain_n, parent_pattern_n, slot_ordinal, first_occurrence_n) VALUES (?1,?2,?3,?4,?5,"
      "?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19)",
      "INSERT INTO traceloom_replay_body_pattern_occurrence(occurrence_id, pattern_id, "
      "domain_id, parent_occurrence_id, db_idx, device_id, occurrence_index, edge_order, "
      "repeat_iteration, position_start, position_end_exclusive, position_count, "
      "duration_p25_sum_ns, duration_median_sum_ns, duration_p75_sum_ns, "
      "scheduled_work_share_ppm_sum, scheduled_work_share_supported, occurrence_n, domain_n, "
      "pattern_n, parent_n, slot_ordinal, member_order) VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,"
      "?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20,?21,?22,?23)",
      "INSERT INTO traceloom_replay_body_pattern_issue(issue_id, run_id, domain_id, db_idx, "
      "device_id, code, detail) VALUES (?1,?2,?3,?4,?5,?6,?7)"};
  sqlite3_stmt **st[6] = {&w->run, &w->domain, &w->position, &w->pattern, &w->occurrence,
                          &w->issue};
  for (int i = 0; i < 6; i++)
    if (tl_pub_prepare(w->db, sql[i], st[i], e)) return TL_ERROR;
  return TL_OK;
}

int tl_replay_body_patterns(sqlite3 *db, int64_t *supported_domains, tl_err *e) {
  *supported_domains = 0;
  writer w = {.db = db};
  tl_strpool *pool = tl_strpool_new();
  if (!pool) return tl_nomem(e);
  w.pool = pool;
  agg_vec aggs = {0};
  TL_VEC(int) inputs = {0};
  int64_t max_n = -1;
  int rc = tl_pub_exec(db,
                       "DELETE FROM traceloom_replay_body_pattern_run;"
                       "DELETE FROM traceloom_replay_body_pattern_domain;"
                       "DELETE FROM traceloom_replay_body_position_core;"
                       "DELETE FROM traceloom_replay_body_pattern_definition;"
                       "DELETE FROM traceloom_replay_body_pattern_occurrence;"
                       "DELETE FROM traceloom_replay_body_pattern_issue;",
                       e);
  if (rc == TL_OK) rc = read_aggregates(db, pool, &aggs, &max_n, e);
  if (rc == TL_OK) rc = read_shares(db, &aggs, max_n, e);
  if (rc == TL_OK) rc = prepare_all(&w, e);
  /* One run per input. */
  sqlite3_stmt *in = NULL, *units = NULL;
  if (rc == TL_OK) rc = tl_pub_prepare(db, "SELECT db_idx FROM traceloom_input ORDER BY db_idx", &in, e);
  if (rc == TL_OK)
    rc = tl_pub_prepare(db, "SELECT count(*) FROM traceloom_replay_cost_unit WHERE db_idx = ?1",
                        &units, e);
  int s = SQLITE_DONE;
  while (rc == TL_OK && (s = sqlite3_step(in)) == SQLITE_ROW)
    if (TL_VEC_PUSH(&inputs, sqlite3_column_int(in, 0))) rc = tl_nomem(e);
  if (rc == TL_OK && s != SQLITE_DONE) rc = tl_fail(e, "reading traceloom_input: %s", sqlite3_errmsg(db));
  for (size_t r = 0; rc == TL_OK && r < inputs.n; r++) {
    int db_idx = inputs.v[r];
    int64_t run_n = (int64_t)r, nsup = 0, npos = 0, ndom = 0;
    size_t i = 0;
    while (rc == TL_OK && i < aggs.n) {
      size_t j = i;
      while (j < aggs.n && aggs.v[j].first == aggs.v[i].first) j++;
      if (aggs.v[i].db_idx == db_idx) {
        ndom++;
        rc = publish_domain(&w, &aggs, i, j, run_n, &nsup, &npos, e);
      }
      i = j;
    }
    const char *reason = NULL;
    if (rc == TL_OK && nsup == 0) {
      sqlite3_bind_int(units, 1, db_idx);
      int got = tl_pub_probe(db, units, "traceloom_replay_cost_unit", e);
      int64_t nunits = got == 1 ? sqlite3_column_int64(units, 0) : 0;
      sqlite3_reset(units);
      if (got < 0) {
        rc = TL_ERROR;
        break;
      }
      reason = ndom ? "no_supported_domain"
                    : nunits ? "no_replay_cost_aggregates" : "no_replay_units";
      rc = issue(&w, run_n, -1, db_idx, NULL, reason,
                 "replay-body pattern recovery has no supported domain", e);
    }
    if (rc == TL_OK) {
      sqlite3_stmt *st = w.run;
      bind_fmt(st, 1, "replay-body-pattern-run-%lld", run_n, 0);
      sqlite3_bind_int(st, 2, db_idx);
      sqlite3_bind_text(st, 3, nsup ? "supported" : "unsupported", -1, SQLITE_STATIC);
      if (reason) sqlite3_bind_text(st, 4, reason, -1, SQLITE_STATIC);
      else sqlite3_bind_null(st, 4);
      sqlite3_bind_int64(st, 5, npos);
      sqlite3_bind_int64(st, 6, nsup);
      sqlite3_bind_int64(st, 7, ndom - nsup);
      sqlite3_bind_int64(st, 8, run_n);
      rc = tl_pub_step(db, st, "traceloom_replay_body_pattern_run", e);
    }
    *supported_domains += nsup;
  }
  sqlite3_finalize(in);
  sqlite3_finalize(units);
  sqlite3_stmt *sts[6] = {w.run, w.domain, w.position, w.pattern, w.occurrence, w.issue};
  for (int k = 0; k < 6; k++) sqlite3_finalize(sts[k]);
  TL_VEC_FREE(&aggs);
  TL_VEC_FREE(&inputs);
  tl_strpool_free(pool);
  return rc;
}
