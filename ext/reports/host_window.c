/*
** host_window.c: host windows between adjacent anchors (view traceloom_anchor_host_window
** over traceloom_anchor_core.host_call_n; table traceloom_anchor_host_window_call; views
** traceloom_anchor_host_interval, traceloom_v_anchor_host_activity, ...).
**
** Each anchor has at most one runtime endpoint (tl_reports_anchor_endpoints): the call of its
** device event's supported relation, or, for the launch anchor of an exact graph replay, the
** launch's host call. It is stored on the anchor; for each adjacent pair (left, right) of a
** device the view sql/views/60_host_activity.sql derives
**   window     [end of the left endpoint call, start of the right endpoint call);
**   state      missing_endpoint (a side has none) > incompatible_host_domain (provider or
**              clock domain or input differ) > nonmonotonic_host_order (left end after right
**              start) > supported_ordered (ambiguous_endpoint stays in the vocabulary: an
**              anchor never has two endpoints);
**   scope      same_thread (both calls on one process and thread), else same_process, else
**              provider_clock_domain.
** What a view cannot do cheaply is computed here: inside each supported window, the runtime
** calls of its scope that overlap it (start before the window's end, end after its start) in
** (start, end, call) order. decide() below applies the view's rule to choose those windows;
** tests/sql/reports_host_window.sql checks the two against each other. These are observations
** next to the structure, never a cause and never CPU cost of the anchors.
**
** The windows are found from arrays, before the report stage: when the driver releases the
** runtime calls, tl_host_calls_take moves their times, shapes and inputs out of the trace
** (the published rows hold the same values: reading 747k calls back from
** traceloom_runtime_call's storage cost 0.15 s on the 1M-task bench), and once the anchors
** are selected tl_host_windows_find decides the windows and finds their observed calls
** (with threads >= 2 on the helper thread beside the runtime calls' staging copy, which
** leaves the second core idle otherwise); the report stage writes the result, a few
** thousand rows. Over the driver's budget of memory (about 1.5M calls, ext/analyze/analyze.c)
** the calls are not kept: the report stage reads them back from traceloom_runtime_call's
** storage (core and shape) and searches them itself, with the same code.
*/
#include "reports/reports.h"
#include "publish/publish.h"
#include "publish/rows.h"
#include "util/i64map.h"
#include "util/sort.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NONE UINT32_MAX

enum { STATE_SUPPORTED = 0, STATE_MISSING, STATE_AMBIGUOUS, STATE_INCOMPATIBLE, STATE_NONMONOTONIC };
enum { SCOPE_THREAD = 0, SCOPE_PROCESS, SCOPE_DOMAIN };

/* The names of the codes, published as traceloom_anchor_host_window_code for the views. */
static const struct {
  const char *kind;
  int code;
  const char *name;
} CODES[] = {
    {"state", STATE_SUPPORTED, "supported_ordered"},
    {"state", STATE_MISSING, "missing_endpoint"},
    {"state", STATE_AMBIGUOUS, "ambiguous_endpoint"},
    {"state", STATE_INCOMPATIBLE, "incompatible_host_domain"},
    {"state", STATE_NONMONOTONIC, "nonmonotonic_host_order"},
    {"scope", SCOPE_THREAD, "same_thread"},
    {"scope", SCOPE_PROCESS, "same_process"},
    {"scope", SCOPE_DOMAIN, "provider_clock_domain"},
};

static int publish_codes(sqlite3 *db, tl_err *e) {
  sqlite3_stmt *st;
  if (tl_pub_prepare(db, "INSERT INTO traceloom_anchor_host_window_code(kind, code, name) "
                         "VALUES (?1, ?2, ?3)", &st, e))
    return TL_ERROR;
  int rc = TL_OK;
  for (size_t i = 0; rc == TL_OK && i < sizeof CODES / sizeof CODES[0]; i++) {
    sqlite3_bind_text(st, 1, CODES[i].kind, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 2, CODES[i].code);
    sqlite3_bind_text(st, 3, CODES[i].name, -1, SQLITE_STATIC);
    rc = tl_pub_step(db, st, "traceloom_anchor_host_window_code", e);
  }
  sqlite3_finalize(st);
  return rc;
}

/* What a call shape gives each of its calls. */
typedef struct call_shape {
  int64_t process, thread, source_id; /* TL_ABSENT when the source has none */
  int known;  /* a shape of the trace, or a row of traceloom_runtime_call_shape */
} call_shape;

/* The runtime calls, as the host windows read them: 24 bytes a call. A call's process and
** thread are those of its shape (a handful of shapes), so a call keeps the shape's index
** rather than the two ids; domain is a small code for (provider, clock domain). */
struct tl_host_calls {
  size_t n;
  int64_t *start, *end;
  uint32_t *shape;
  uint16_t *db, *domain;
  TL_VEC(call_shape) shapes;
};
typedef struct tl_host_calls calls;

typedef struct window {
  uint32_t left_call, right_call;
  uint8_t left_count, right_count, state, scope;
} window;

typedef TL_VEC(uint32_t) u32vec;

/* What tl_reports_host_windows writes besides the codes. */
struct tl_host_windows {
  u32vec rejected; /* (left anchor, state) pairs, by left anchor */
  u32vec observed; /* (left anchor, order, call) triples: scope by scope, each by left anchor */
};

void tl_host_calls_free(tl_host_calls *c) {
  if (!c) return;
  free(c->start), free(c->end), free(c->shape), free(c->db), free(c->domain);
  TL_VEC_FREE(&c->shapes);
  free(c);
}

void tl_host_windows_free(tl_host_windows *w) {
  if (!w) return;
  TL_VEC_FREE(&w->rejected);
  TL_VEC_FREE(&w->observed);
  free(w);
}

static int64_t call_process(const calls *c, uint32_t k) { return c->shapes.v[c->shape[k]].process; }
static int64_t call_thread(const calls *c, uint32_t k) { return c->shapes.v[c->shape[k]].thread; }

/* (provider, clock domain) pairs get codes in order of first appearance; a handful exist. */
typedef struct domains {
  char *names[64];
  int n;
} domains;

static int domain_code(domains *d, const char *provider, const char *clock) {
  char key[256];
  snprintf(key, sizeof key, "%s\x1f%s", provider, clock);
  for (int i = 0; i < d->n; i++)
    if (strcmp(d->names[i], key) == 0) return i;
  if (d->n == 64) return 63; /* more than 63 pairs cannot come from the readers */
  d->names[d->n] = tl_strdup(key);
  return d->names[d->n] ? d->n++ : -1;
}

/* The (provider, clock domain) of the first call of each source database, as the call's
** shape row publishes them (ext/publish/facts.c): every reader gives all the calls of one
** source one provider (ext/source), so the pair is decided once per source. */
typedef struct source_domain {
  int64_t db_idx, source_id;
  int code;
} source_domain;

typedef TL_VEC(source_domain) source_domains;

/* The entry of (db, source) in seen, SIZE_MAX when it has none; *last, the entry of the
** previous call, is tried first (consecutive calls share it). */
static size_t seen_source(const source_domains *seen, size_t *last, int64_t dbi, int64_t src) {
  size_t j = *last;
  if (j != SIZE_MAX && seen->v[j].db_idx == dbi && seen->v[j].source_id == src) return j;
  for (j = 0; j < seen->n; j++)
    if (seen->v[j].db_idx == dbi && seen->v[j].source_id == src) return *last = j;
  return SIZE_MAX;
}

static void domains_free(domains *d, source_domains *seen) {
  for (int i = 0; i < d->n; i++) free(d->names[i]);
  TL_VEC_FREE(seen);
}

static const char *clock_domain(tl_provider prov) {
  return prov == TL_PROVIDER_UNKNOWN ? "unknown" : "profiler_host";
}

/* Every call's domain code, and the shapes' process, thread and source. */
static int describe_calls(const tl_trace *t, calls *c, tl_err *e) {
  const tl_calls *ca = &t->calls;
  int rc = TL_OK;
  for (size_t i = 0; rc == TL_OK && i < ca->shapes.n; i++) {
    const tl_call_shape *s = &ca->shapes.v[i];
    call_shape cs = {s->process_id, s->thread_id, t->source_refs.v[s->source_ref].source_id, 1};
    if (TL_VEC_PUSH(&c->shapes, cs)) rc = tl_nomem(e);
  }
  domains d = {{0}, 0};
  source_domains seen = {0};
  size_t last = SIZE_MAX;
  for (size_t k = 0; rc == TL_OK && k < c->n; k++) {
    int64_t dbi = ca->db_idx[k], src = c->shapes.v[ca->shape[k]].source_id;
    size_t j = seen_source(&seen, &last, dbi, src);
    if (j == SIZE_MAX) {
      tl_provider prov = (tl_provider)ca->provider[k];
      source_domain sd = {dbi, src, domain_code(&d, tl_provider_name(prov), clock_domain(prov))};
      if (sd.code < 0 || TL_VEC_PUSH(&seen, sd)) rc = tl_nomem(e);
      else j = last = seen.n - 1;
    }
    if (rc == TL_OK) c->domain[k] = (uint16_t)seen.v[j].code;
  }
  domains_free(&d, &seen);
  return rc;
}

static int64_t col_i64(sqlite3_stmt *st, int col) {
  return sqlite3_column_type(st, col) == SQLITE_NULL ? TL_ABSENT : sqlite3_column_int64(st, col);
}

/* The (provider, clock domain) of published call call_n. */
static int lookup_domain(sqlite3 *db, sqlite3_stmt **one, int64_t call_n, domains *d, int *code,
                         tl_err *e) {
  if (!*one && tl_pub_prepare(db,
                              "SELECT provider, clock_domain FROM main.traceloom_runtime_call "
                              "WHERE call_n = ?1",
                              one, e))
    return TL_ERROR;
  sqlite3_reset(*one);
  sqlite3_bind_int64(*one, 1, call_n);
  if (sqlite3_step(*one) != SQLITE_ROW)
    return tl_fail(e, "reading runtime call %lld back: %s", (long long)call_n, sqlite3_errmsg(db));
  const unsigned char *provider = sqlite3_column_text(*one, 0), *clock = sqlite3_column_text(*one, 1);
  *code = domain_code(d, provider ? (const char *)provider : "", clock ? (const char *)clock : "");
  return *code < 0 ? tl_nomem(e) : TL_OK;
}

static int read_shapes(sqlite3 *db, calls *c, tl_err *e) {
  sqlite3_stmt *st;
  if (tl_pub_prepare(db,
                     "SELECT shape_id, process_id, thread_id, source_id "
                     "FROM main.traceloom_runtime_call_shape",
                     &st, e))
    return TL_ERROR;
  int rc = TL_OK, s;
  while (rc == TL_OK && (s = sqlite3_step(st)) == SQLITE_ROW) {
    int64_t id = sqlite3_column_int64(st, 0);
    if (id < 0 || id > (int64_t)UINT32_MAX) {
      rc = tl_fail(e, "traceloom_runtime_call_shape.shape_id %lld is out of range", (long long)id);
      break;
    }
    while (rc == TL_OK && c->shapes.n <= (size_t)id) {
      call_shape none = {TL_ABSENT, TL_ABSENT, -1, 0};
      if (TL_VEC_PUSH(&c->shapes, none)) rc = tl_nomem(e);
    }
    if (rc == TL_OK)
      c->shapes.v[id] = (call_shape){col_i64(st, 1), col_i64(st, 2), sqlite3_column_int64(st, 3), 1};
  }
  if (rc == TL_OK && s != SQLITE_DONE)
    rc = tl_fail(e, "reading the published runtime call shapes: %s", sqlite3_errmsg(db));
  sqlite3_finalize(st);
  return rc;
}

/* The n published calls read back (the driver's budget left them out of memory: analyze.c):
** their times and shapes from traceloom_runtime_call's storage (core and shape), the domain
** of each source from its first call. */
static int read_calls(sqlite3 *db, size_t n, calls **out, tl_err *e) {
  size_t m = n ? n : 1;
  calls *c = calloc(1, sizeof *c);
  if (!c) return tl_nomem(e);
  *out = c;
  c->n = n;
  c->start = malloc(m * sizeof *c->start), c->end = malloc(m * sizeof *c->end);
  c->shape = calloc(m, sizeof *c->shape);
  c->db = calloc(m, sizeof *c->db), c->domain = calloc(m, sizeof *c->domain);
  if (!c->start || !c->end || !c->shape || !c->db || !c->domain) return tl_nomem(e);
  /* The shapes first (a few rows), then the core alone: a join would probe the shape table
  ** once per call. */
  sqlite3_stmt *st, *one = NULL;
  if (read_shapes(db, c, e) ||
      tl_pub_prepare(db, "SELECT call_n, db_idx, start_ns, dur_ns, shape_id "
                         "FROM main.traceloom_runtime_call_core", &st, e))
    return TL_ERROR;
  domains d = {{0}, 0};
  source_domains seen = {0};
  size_t last = SIZE_MAX;
  int rc = TL_OK, s;
  while (rc == TL_OK && (s = sqlite3_step(st)) == SQLITE_ROW) {
    int64_t k = sqlite3_column_int64(st, 0), sh = sqlite3_column_int64(st, 4);
    if (k < 0 || (size_t)k >= n) {
      rc = tl_fail(e, "traceloom_runtime_call.call_n %lld is outside the %zu published calls",
                   (long long)k, n);
      break;
    }
    if (sh < 0 || (size_t)sh >= c->shapes.n || !c->shapes.v[sh].known) {
      rc = tl_fail(e, "traceloom_runtime_call_core.shape_id %lld names no call shape", (long long)sh);
      break;
    }
    int64_t dbi = sqlite3_column_int64(st, 1), src = c->shapes.v[sh].source_id;
    c->db[k] = (uint16_t)dbi;
    c->start[k] = sqlite3_column_int64(st, 2);
    c->end[k] = c->start[k] + sqlite3_column_int64(st, 3);
    c->shape[k] = (uint32_t)sh;
    size_t j = seen_source(&seen, &last, dbi, src);
    if (j == SIZE_MAX) {
      source_domain sd = {dbi, src, 0};
      rc = lookup_domain(db, &one, k, &d, &sd.code, e);
      if (rc == TL_OK && TL_VEC_PUSH(&seen, sd)) rc = tl_nomem(e);
      if (rc == TL_OK) j = last = seen.n - 1;
    }
    if (rc == TL_OK) c->domain[k] = (uint16_t)seen.v[j].code;
  }
  if (rc == TL_OK && s != SQLITE_DONE)
    rc = tl_fail(e, "reading the published runtime calls: %s", sqlite3_errmsg(db));
  sqlite3_finalize(st);
  sqlite3_finalize(one);
  domains_free(&d, &seen);
  return rc;
}

int tl_host_calls_take(tl_trace *t, tl_host_calls **out, tl_err *e) {
  *out = NULL;
  tl_calls *ca = &t->calls;
  calls *c = calloc(1, sizeof *c);
  if (!c || !(c->domain = malloc((ca->n ? ca->n : 1) * sizeof *c->domain))) {
    free(c);
    return tl_nomem(e);
  }
  c->n = ca->n;
  int rc = describe_calls(t, c, e);
  if (rc != TL_OK) {
    tl_host_calls_free(c);
    return rc;
  }
  /* the columns the windows read move out of the trace: tl_trace_release_calls frees the rest */
  c->start = ca->start_ns, c->end = ca->end_ns, c->shape = ca->shape, c->db = ca->db_idx;
  ca->start_ns = ca->end_ns = NULL, ca->shape = NULL, ca->db_idx = NULL;
  *out = c;
  return TL_OK;
}

int tl_reports_anchor_endpoints(const tl_anchors *an, const tl_replay *r, const int32_t *event_call,
                                size_t ntrace_events, uint32_t **out, tl_err *e) {
  uint32_t *call = malloc((an->n ? an->n : 1) * sizeof *call);
  if (!call) return tl_nomem(e);
  for (size_t k = 0; k < an->n; k++) {
    uint32_t ev = an->event[k];
    call[k] = NONE;
    if (ev < ntrace_events) {
      if (event_call && event_call[ev] >= 0) call[k] = (uint32_t)event_call[ev];
    } else if (r && r->launch_of_synthetic && ev >= r->n_real_events) {
      const tl_graph_launch *l = &r->launches.v[r->launch_of_synthetic[ev - r->n_real_events]];
      if (l->host_call != TL_REPLAY_NONE) call[k] = (uint32_t)l->host_call;
    }
  }
  *out = call;
  return TL_OK;
}

static window decide(const calls *c, uint32_t lc, uint8_t ln, uint32_t rcall, uint8_t rn) {
  window w = {ln == 1 ? lc : NONE, rn == 1 ? rcall : NONE, ln, rn, STATE_SUPPORTED, SCOPE_DOMAIN};
  int both = w.left_call != NONE && w.right_call != NONE;
  if (both) {
    int64_t lp = call_process(c, w.left_call), rp = call_process(c, w.right_call);
    int64_t lt = call_thread(c, w.left_call), rt = call_thread(c, w.right_call);
    int same_process = lp != TL_ABSENT && lp == rp;
    int process_for_thread = same_process || (lp == TL_ABSENT && rp == TL_ABSENT);
    if (lt != TL_ABSENT && lt == rt && process_for_thread) w.scope = SCOPE_THREAD;
    else if (same_process) w.scope = SCOPE_PROCESS;
  }
  if (ln == 0 || rn == 0) w.state = STATE_MISSING;
  else if (c->domain[w.left_call] != c->domain[w.right_call] || c->db[w.left_call] != c->db[w.right_call])
    w.state = STATE_INCOMPATIBLE;
  else if (c->end[w.left_call] > c->start[w.right_call]) w.state = STATE_NONMONOTONIC;
  return w;
}

/* ------------------------------------------------------------------ observed calls */

/* Calls sorted by (db, domain, process, thread, start, end, call) with a running maximum of
** end within each (db, domain, process, thread) group: the calls of one scope key that
** overlap [lo, hi) are found by two binary searches inside their group. A scope that ignores
** the thread (or the process) groups with those fields zeroed. A call's group follows from
** its (db, shape) (the shape gives the process, thread and source, the source the domain),
** and a profile has few of those: the groups are ranked once over the distinct pairs, then
** every call carries its group's rank, so sorting and finding a group compare one integer. */
typedef struct scope_index {
  uint32_t *order;     /* the scope's calls in (group, start, end, call) order */
  int64_t *max_end;    /* running maximum of end within each group, by position in order */
  uint32_t *group;     /* call -> its group's rank, NONE when the scope leaves it out */
  size_t *first;       /* rank -> its first position in order; [ngroups] = n */
  size_t n, ngroups;
} scope_index;

static int64_t key_process(const calls *c, int scope, uint32_t k) {
  return scope == SCOPE_DOMAIN ? 0 : call_process(c, k);
}
static int64_t key_thread(const calls *c, int scope, uint32_t k) {
  return scope == SCOPE_THREAD ? call_thread(c, k) : 0;
}

/* A distinct (db, shape) pair of the scope's calls, with its group key. */
typedef struct group_key {
  uint16_t db, domain;
  int64_t process, thread;
  uint32_t rank;
} group_key;

static int cmp_group_key(const void *a_, const void *b_) {
  const group_key *a = *(const group_key *const *)a_, *b = *(const group_key *const *)b_;
  if (a->db != b->db) return a->db < b->db ? -1 : 1;
  if (a->domain != b->domain) return a->domain < b->domain ? -1 : 1;
  if (a->process != b->process) return a->process < b->process ? -1 : 1;
  if (a->thread != b->thread) return a->thread < b->thread ? -1 : 1;
  return 0;
}

/* s->group of every call: the rank of its (db, domain, process, thread) among the scope's
** groups, NONE for a call without the scope's ids (seen only from wider scopes). */
static int rank_groups(const calls *c, int scope, scope_index *s, tl_err *e) {
  tl_i64map pairs = {0};           /* (db << 32 | shape) -> index in keys */
  TL_VEC(group_key) keys = {0};
  group_key **sorted = NULL;
  int rc = TL_OK;
  int64_t last_pair = -1, last_ix = 0; /* consecutive calls often share a pair */
  for (size_t k = 0; rc == TL_OK && k < c->n; k++) {
    if ((scope == SCOPE_PROCESS && call_process(c, (uint32_t)k) == TL_ABSENT) ||
        (scope == SCOPE_THREAD && call_thread(c, (uint32_t)k) == TL_ABSENT)) {
      s->group[k] = NONE;
      continue;
    }
    int64_t pair = (int64_t)c->db[k] << 32 | c->shape[k];
    if (pair != last_pair) {
      int64_t *ix = tl_i64map_get(&pairs, pair);
      if (ix) {
        last_ix = *ix;
      } else {
        group_key g = {c->db[k], c->domain[k], key_process(c, scope, (uint32_t)k),
                       key_thread(c, scope, (uint32_t)k), 0};
        last_ix = (int64_t)keys.n;
        if (TL_VEC_PUSH(&keys, g) || tl_i64map_put(&pairs, pair, last_ix)) rc = tl_nomem(e);
      }
      last_pair = pair;
    }
    s->group[k] = (uint32_t)last_ix; /* the pair's index for now, its rank below */
  }
  if (rc == TL_OK && !(sorted = malloc((keys.n ? keys.n : 1) * sizeof *sorted))) rc = tl_nomem(e);
  if (rc == TL_OK) {
    for (size_t i = 0; i < keys.n; i++) sorted[i] = &keys.v[i];
    qsort(sorted, keys.n, sizeof *sorted, cmp_group_key);
    s->ngroups = 0;
    for (size_t i = 0; i < keys.n; i++) {
      if (i && cmp_group_key(&sorted[i - 1], &sorted[i]) != 0) s->ngroups++;
      sorted[i]->rank = (uint32_t)s->ngroups;
    }
    if (keys.n) s->ngroups++;
    for (size_t k = 0; k < c->n; k++)
      if (s->group[k] != NONE) s->group[k] = keys.v[s->group[k]].rank;
  }
  free(sorted);
  TL_VEC_FREE(&keys);
  tl_i64map_free(&pairs);
  return rc;
}

static void scope_free(scope_index *s) {
  free(s->order), free(s->max_end), free(s->group), free(s->first);
  memset(s, 0, sizeof *s);
}

static int time_before(const calls *c, uint32_t a, uint32_t b) {
  return c->start[a] < c->start[b] || (c->start[a] == c->start[b] && c->end[a] < c->end[b]);
}

/* Sorts order[0, n) by (start, end) stably by insertion, which costs a move per inversion:
** reader order is nearly always time order already. 0 when it gives up after about n moves
** (the prefix it sorted stays sorted, the rest as it was: a stable sort may go on). */
static int sort_nearly_sorted(const calls *c, uint32_t *order, size_t n) {
  size_t budget = n + 1024;
  for (size_t i = 1; i < n; i++) {
    uint32_t x = order[i];
    size_t j = i;
    while (j > 0 && time_before(c, x, order[j - 1])) {
      if (budget-- == 0) return order[j] = x, 0;
      order[j] = order[j - 1], j--;
    }
    order[j] = x;
  }
  return 1;
}

/* Merges the sorted ranges src[lo, mid) and src[mid, hi) into dst[lo, hi), stably. */
static void merge_runs(const calls *c, const uint32_t *src, uint32_t *dst, size_t lo, size_t mid,
                       size_t hi) {
  size_t i = lo, j = mid, k = lo;
  while (i < mid && j < hi) dst[k++] = time_before(c, src[j], src[i]) ? src[j++] : src[i++];
  while (i < mid) dst[k++] = src[i++];
  while (j < hi) dst[k++] = src[j++];
}

enum { MERGE_RUNS_MAX = 64 };

/* Sorts order[0, n) by (start, end), stably, when it is a few ascending runs: reader order is
** time order within a stretch of rows, so a thread's calls come as one run or a handful (the
** 1M-task bench's 747k calls: two, the second starting 13.7 s before the first ends, which
** the insertion sort gave up on after n moves, and two radix passes sorted). The runs are
** merged pairwise through a scratch array (4 bytes a call). 0, nothing moved, when there are
** more than MERGE_RUNS_MAX runs or no memory: the other sorts do it then. */
static int sort_runs(const calls *c, uint32_t *order, size_t n) {
  size_t b[MERGE_RUNS_MAX + 1], r = 0; /* run k is order[b[k], b[k + 1]) */
  b[0] = 0;
  for (size_t i = 1; i < n; i++)
    if (time_before(c, order[i], order[i - 1])) {
      if (r + 1 == MERGE_RUNS_MAX) return 0;
      b[++r] = i;
    }
  b[++r] = n;
  if (r == 1) return 1;
  uint32_t *tmp = malloc(n * sizeof *tmp);
  if (!tmp) return 0;
  uint32_t *src = order, *dst = tmp;
  while (r > 1) {
    size_t w = 0; /* the runs after this pass; b[w] is never one still to be read */
    for (size_t k = 0; k < r; k += 2) {
      if (k + 1 < r) merge_runs(c, src, dst, b[k], b[k + 1], b[k + 2]);
      else memcpy(dst + b[k], src + b[k], (b[k + 1] - b[k]) * sizeof *dst);
      b[w++] = b[k];
    }
    b[w] = n, r = w;
    uint32_t *t = src;
    src = dst, dst = t;
  }
  if (src != order) memcpy(order, src, n * sizeof *order);
  free(tmp);
  return 1;
}

/* order[0, n) by (start, end), stably: two radix passes, least significant field first. */
static int sort_by_time(const calls *c, uint32_t *order, size_t n, tl_err *e) {
  uint64_t *keys = malloc((n ? n : 1) * sizeof *keys);
  if (!keys) return tl_nomem(e);
  int rc = TL_OK;
  for (int pass = 0; rc == TL_OK && pass < 2; pass++) {
    const int64_t *t = pass == 0 ? c->end : c->start;
    for (size_t i = 0; i < n; i++) keys[i] = tl_order_i64(t[order[i]]);
    if (tl_radix_sort_u64(keys, order, n)) rc = tl_nomem(e);
  }
  free(keys);
  return rc;
}

static int build_scope(const calls *c, int scope, scope_index *s, tl_err *e) {
  memset(s, 0, sizeof *s);
  size_t m = c->n ? c->n : 1;
  s->order = malloc(m * sizeof *s->order);
  s->group = malloc(m * sizeof *s->group);
  if (!s->order || !s->group) return tl_nomem(e);
  if (rank_groups(c, scope, s, e)) return TL_ERROR;
  size_t *next = malloc((s->ngroups + 1) * sizeof *next);
  if (!next || !(s->first = calloc(s->ngroups + 1, sizeof *s->first)))
    return free(next), tl_nomem(e);
  /* One stable counting pass by group (first[g + 1] counts group g's calls, then holds its
  ** end), in call number order; then each group by (start, end). Reader order is nearly
  ** always time order already: a group only sorts when it is not, by merging its runs when
  ** they are few, else by insertion when the inversions are few, else by radix. */
  for (size_t k = 0; k < c->n; k++)
    if (s->group[k] != NONE) s->first[s->group[k] + 1]++;
  for (size_t g = 0; g < s->ngroups; g++) s->first[g + 1] += s->first[g];
  s->n = s->first[s->ngroups];
  memcpy(next, s->first, (s->ngroups + 1) * sizeof *next);
  for (size_t k = 0; k < c->n; k++)
    if (s->group[k] != NONE) s->order[next[s->group[k]]++] = (uint32_t)k;
  free(next);
  for (size_t g = 0; g < s->ngroups; g++) {
    uint32_t *o = s->order + s->first[g];
    size_t n = s->first[g + 1] - s->first[g];
    if (!sort_runs(c, o, n) && !sort_nearly_sorted(c, o, n) && sort_by_time(c, o, n, e))
      return TL_ERROR;
  }
  /* after the sort's keys and scratch are gone: the peak is the larger of the two */
  if (!(s->max_end = malloc(m * sizeof *s->max_end))) return tl_nomem(e);
  for (size_t i = 0; i < s->n; i++) {
    uint32_t k = s->order[i];
    int64_t end = c->end[k];
    int same = i && s->group[s->order[i - 1]] == s->group[k];
    s->max_end[i] = same && s->max_end[i - 1] > end ? s->max_end[i - 1] : end;
  }
  return TL_OK;
}

/* Observed calls of window w (left anchor k) appended to out as (k, order, call) triples. */
static int observe(const calls *c, const scope_index *s, const window *w, size_t k, u32vec *out) {
  int64_t lo_t = c->end[w->left_call], hi_t = c->start[w->right_call];
  /* the window's scope has the left call's ids: it has a group */
  uint32_t g = s->group[w->left_call];
  if (g == NONE) return 0;
  size_t glo = s->first[g], ghi = s->first[g + 1];
  /* hi: first call of the group starting at or after the window's end */
  size_t a = glo, b = ghi;
  while (a < b) {
    size_t mid = a + (b - a) / 2;
    if (c->start[s->order[mid]] < hi_t) a = mid + 1;
    else b = mid;
  }
  size_t hi = a;
  /* lo: first call whose running maximum end passes the window's start */
  a = glo, b = hi;
  while (a < b) {
    size_t mid = a + (b - a) / 2;
    if (s->max_end[mid] <= lo_t) a = mid + 1;
    else b = mid;
  }
  uint32_t order = 0;
  for (size_t i = a; i < hi; i++) {
    uint32_t call = s->order[i];
    if (c->end[call] <= lo_t) continue;
    if (TL_VEC_PUSH(out, (uint32_t)k) || TL_VEC_PUSH(out, order) || TL_VEC_PUSH(out, call)) return -1;
    order++;
  }
  return 0;
}

/* ------------------------------------------------------------------ the windows */

/* The window to the right of anchor k of a device (k + 1 is its right anchor). */
static window window_at(const calls *c, const uint32_t *anchor_call, size_t k) {
  uint32_t lc = anchor_call[k], rcall = anchor_call[k + 1];
  return decide(c, lc, lc != NONE, rcall, rcall != NONE);
}

/* The observed calls of the supported windows of one scope, appended to out. The windows are
** decided again here rather than held (12 bytes an anchor), and the scopes' indexes are
** built one at a time (each is 12 bytes a call, 24 more while it sorts): the rows land in
** the table's primary key order (left_anchor_n, observed_order) whichever scope comes first. */
static int observe_scope(const calls *c, const tl_anchors *an, const uint32_t *anchor_call,
                         int scope, u32vec *out, tl_err *e) {
  scope_index index = {0};
  int rc = build_scope(c, scope, &index, e);
  for (size_t g = 0; rc == TL_OK && g < an->groups.n; g++) {
    const tl_anchor_group *gr = &an->groups.v[g];
    for (size_t k = gr->first; rc == TL_OK && k + 1 < gr->first + gr->count; k++) {
      window w = window_at(c, anchor_call, k);
      if (w.state == STATE_SUPPORTED && w.scope == scope && observe(c, &index, &w, k, out))
        rc = tl_nomem(e);
    }
  }
  scope_free(&index);
  return rc;
}

int tl_host_windows_find(const tl_host_calls *c, const tl_anchors *an, const uint32_t *anchor_call,
                         tl_host_windows **out, tl_err *e) {
  *out = NULL;
  tl_host_windows *hw = calloc(1, sizeof *hw);
  if (!hw) return tl_nomem(e);
  /* Which scopes have a supported window: only those get an index. The windows with both
  ** endpoints that are not supported (incompatible or nonmonotonic: few) are stored, so that
  ** the view traceloom_anchor_host_window tells a window's state from its endpoints and this
  ** short list without reading both endpoint calls of every window. */
  int need[3] = {0, 0, 0}, rc = TL_OK;
  for (size_t g = 0; rc == TL_OK && anchor_call && g < an->groups.n; g++) {
    const tl_anchor_group *gr = &an->groups.v[g];
    for (size_t k = gr->first; rc == TL_OK && k + 1 < gr->first + gr->count; k++) {
      window w = window_at(c, anchor_call, k);
      if (w.state == STATE_SUPPORTED) need[w.scope] = 1;
      else if (w.state != STATE_MISSING && (TL_VEC_PUSH(&hw->rejected, (uint32_t)k) ||
                                            TL_VEC_PUSH(&hw->rejected, (uint32_t)w.state)))
        rc = tl_nomem(e);
    }
  }
  for (int sc = 0; rc == TL_OK && sc < 3; sc++)
    if (need[sc]) rc = observe_scope(c, an, anchor_call, sc, &hw->observed, e);
  if (rc != TL_OK) {
    tl_host_windows_free(hw);
    return rc;
  }
  *out = hw;
  return TL_OK;
}

/* ------------------------------------------------------------------ publication */

static int fill_observed(void *ctx, size_t i, int64_t *v, unsigned char *null) {
  const uint32_t *t = ((const u32vec *)ctx)->v + 3 * i;
  (void)null;
  v[0] = t[0], v[1] = t[1], v[2] = t[2];
  return 0;
}

static int fill_rejected(void *ctx, size_t i, int64_t *v, unsigned char *null) {
  const uint32_t *t = ((const u32vec *)ctx)->v + 2 * i;
  (void)null;
  v[0] = t[0], v[1] = t[1];
  return 0;
}

int tl_reports_host_windows(sqlite3 *db, const tl_reports_input *in, tl_err *e) {
  const tl_host_windows *hw = in->host_windows;
  tl_host_windows *found = NULL;
  int rc = publish_codes(db, e);
  if (rc == TL_OK && !hw && in->anchor_call) {
    calls *c = NULL;
    rc = read_calls(db, in->trace->calls.n, &c, e);
    if (rc == TL_OK) rc = tl_host_windows_find(c, in->anchors, in->anchor_call, &found, e);
    tl_host_calls_free(c);
    hw = found;
  }
  if (rc == TL_OK && hw && hw->rejected.n) {
    tl_rows src = {hw->rejected.n / 2, 2, fill_rejected, (void *)&hw->rejected, 0, NULL};
    rc = tl_rows_insert(db, "traceloom_anchor_host_window_rejected", "left_anchor_n, state", &src, e);
  }
  if (rc == TL_OK && hw && hw->observed.n) {
    tl_rows src = {hw->observed.n / 3, 3, fill_observed, (void *)&hw->observed, 0, NULL};
    rc = tl_rows_insert(db, "traceloom_anchor_host_window_call", "left_anchor_n, observed_order, call_n",
                        &src, e);
  }
  tl_host_windows_free(found);
  return rc;
}
