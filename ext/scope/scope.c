/*
** scope.c: step partitions and repeat names from the trace's host scopes (see scope.h).
**
** Host points. An event of a CPU operator plane (trace.h plane_tid) is a host operator: its
** host point is its own start on the plane's thread. A device event's host point is the start
** of the runtime call that launched it, on that call's thread, through its supported provider
** relation; without one it has none (and belongs to no scope).
**
** Steps. The annotation scopes whose name matches the pattern, minus those inside another
** matching one of the same thread, numbered in (db_idx, start, thread) order. An event's step
** is the step of its host thread whose [start, end) holds its host point.
**
** Names. For one tree the anchors with a host point are sorted by (thread, time). A scope
** holds the points of its thread in [start, end): when those are the consecutive anchors
** [first, first + count), the scope encloses exactly that anchor range, and its normalized
** name is kept for the range, per kind (annotation, module, Python function; the outermost
** scope of a kind wins). A repeat node is named when every iteration of every occurrence is
** such a range with one name of one kind, annotations before modules before Python
** functions. Normalized names drop what numbers the instance: "ProfilerStep#3" and
** "decode_3" -> "ProfilerStep" and "decode", "nn.Module: LlamaDecoderLayer_0" ->
** "LlamaDecoderLayer", a Python function keeps its file name (no folders), line and name,
** a built-in its name ("<built-in method cat of type object at 0x..>" -> "cat").
*/
#include "scope/scope.h"
#include "util/i64map.h"
#include "util/buf.h"

#include <ctype.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

void tl_scopes_free(tl_scopes *sc) {
  free(sc->v), free(sc->thread_of);
  TL_VEC_FREE(&sc->threads);
  free(sc->host_ns), free(sc->host_thread);
  TL_VEC_FREE(&sc->steps);
  free(sc->event_step);
  free(sc->pattern);
  memset(sc, 0, sizeof *sc);
}

/* ------------------------------------------------------------------ threads */

static int thread_cmp(uint16_t da, int64_t ta, uint16_t db, int64_t tb) {
  if (da != db) return da < db ? -1 : 1;
  return ta < tb ? -1 : ta > tb;
}

/* The thread (db_idx, global_tid), TL_SCOPE_NONE when no scope runs on it. */
static uint32_t find_thread(const tl_scopes *sc, uint16_t db_idx, int64_t gtid) {
  size_t lo = 0, hi = sc->threads.n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int c = thread_cmp(sc->threads.v[mid].db_idx, sc->threads.v[mid].global_tid, db_idx, gtid);
    if (c == 0) return (uint32_t)mid;
    if (c < 0) lo = mid + 1;
    else hi = mid;
  }
  return TL_SCOPE_NONE;
}

static int scope_order(const void *x, const void *y) {
  const tl_host_scope *a = x, *b = y;
  int c = thread_cmp(a->db_idx, a->global_tid, b->db_idx, b->global_tid);
  if (c) return c;
  if (a->start_ns != b->start_ns) return a->start_ns < b->start_ns ? -1 : 1;
  if (a->end_ns != b->end_ns) return a->end_ns > b->end_ns ? -1 : 1; /* outer first */
  if (a->kind != b->kind) return a->kind < b->kind ? -1 : 1;
  return a->name < b->name ? -1 : a->name > b->name;
}

/* ------------------------------------------------------------------ names */

/* The number a name ends with after a separator ('#', '_', '-', '.', ' '): its offset in s
** (the separator's), or the length when there is none. */
static size_t numbered_suffix(const char *s, size_t n, int64_t *number) {
  size_t i = n;
  while (i > 0 && isdigit((unsigned char)s[i - 1])) i--;
  if (i == n || i == 0 || n - i > 18 || !strchr("#_-. ", s[i - 1])) return n;
  if (number) {
    int64_t v = 0;
    for (size_t k = i; k < n; k++) v = v * 10 + (s[k] - '0');
    *number = v;
  }
  return i - 1;
}

/* The normalized name of a scope, interned into the trace's pool (0 on out-of-memory). */
static uint32_t normalized(const tl_trace *t, const tl_host_scope *s) {
  const char *name = tl_str(t, s->name);
  size_t n = strlen(name);
  if (s->kind == TL_HOST_SCOPE_MODULE) {
    if (n > 11 && strncmp(name, "nn.Module: ", 11) == 0) name += 11, n -= 11;
    n = numbered_suffix(name, n, NULL);
  } else if (s->kind == TL_HOST_SCOPE_ANNOTATION) {
    n = numbered_suffix(name, n, NULL);
  } else if (strncmp(name, "<built-in method ", 17) == 0 || strncmp(name, "<built-in function ", 19) == 0) {
    /* "<built-in method cat of type object at 0x7f..>": the method or function name. */
    name += name[10] == 'm' ? 17 : 19;
    n = strcspn(name, " >");
  } else {
    /* "transformers/models/llama/modeling_llama.py(285): forward": no folders. */
    const char *paren = memchr(name, '(', n);
    const char *slash = NULL;
    for (const char *p = name; p < (paren ? paren : name + n); p++)
      if (*p == '/') slash = p;
    if (slash) n -= (size_t)(slash + 1 - name), name = slash + 1;
  }
  if (n == 0) return s->name; /* nothing left: the name as written */
  uint32_t id = tl_strpool_intern(t->pool, name, n);
  return id == TL_STR_NOMEM ? 0 : id;
}

/* ------------------------------------------------------------------ link */

static int step_by_time(const void *x, const void *y) {
  const tl_step *a = x, *b = y;
  if (a->db_idx != b->db_idx) return a->db_idx < b->db_idx ? -1 : 1;
  if (a->start_ns != b->start_ns) return a->start_ns < b->start_ns ? -1 : 1;
  return a->thread < b->thread ? -1 : a->thread > b->thread;
}

/* The steps: matching annotations, the outermost of each thread. A marker delimits its
** step: the step runs from the marker's start to the next marker of its thread, but never
** past the end of the range that encloses the marker (ProfilerStep#N around a decode_N
** record_function) and never short of the marker's own end. */
static int find_steps(tl_scopes *sc, const tl_trace *t, tl_err *e) {
  if (!*sc->pattern) return TL_OK;
  int rc = TL_OK;
  size_t *open = malloc((sc->n ? sc->n : 1) * sizeof *open), depth = 0;
  if (!open) return tl_nomem(e);
  uint32_t last_thread = TL_SCOPE_NONE;
  int64_t last_end = INT64_MIN;
  for (size_t k = 0; k < sc->n; k++) {
    const tl_host_scope *s = &sc->v[k];
    /* The ranges still open around s on its thread (scopes come outer first). */
    while (depth && (sc->thread_of[open[depth - 1]] != sc->thread_of[k] ||
                     sc->v[open[depth - 1]].end_ns <= s->start_ns))
      depth--;
    open[depth++] = k;
    if (s->kind != TL_HOST_SCOPE_ANNOTATION || fnmatch(sc->pattern, tl_str(t, s->name), 0) != 0)
      continue;
    if (sc->thread_of[k] == last_thread && s->start_ns < last_end) continue; /* nested */
    last_thread = sc->thread_of[k], last_end = s->end_ns;
    const char *name = tl_str(t, s->name);
    /* end_ns holds the enclosing range's end for now (INT64_MAX: none). */
    int64_t parent_end = depth > 1 && sc->v[open[depth - 2]].end_ns >= s->end_ns
                             ? sc->v[open[depth - 2]].end_ns : INT64_MAX;
    tl_step st = {s->start_ns, parent_end, s->end_ns, TL_ABSENT, s->name, sc->thread_of[k],
                  s->db_idx};
    numbered_suffix(name, strlen(name), &st.ordinal);
    if (TL_VEC_PUSH(&sc->steps, st)) {
      rc = tl_nomem(e);
      break;
    }
  }
  /* Markers are in (thread, start) order here: each step ends at the next one's start. */
  for (size_t k = 0; rc == TL_OK && k < sc->steps.n; k++) {
    tl_step *st = &sc->steps.v[k];
    int64_t end = st->end_ns;
    if (k + 1 < sc->steps.n && sc->steps.v[k + 1].thread == st->thread &&
        sc->steps.v[k + 1].start_ns < end)
      end = sc->steps.v[k + 1].start_ns;
    if (end == INT64_MAX || end < st->marker_end_ns) end = st->marker_end_ns;
    st->end_ns = end;
  }
  free(open);
  if (rc == TL_OK && sc->steps.n) /* publication order: (db_idx, start, thread) */
    qsort(sc->steps.v, sc->steps.n, sizeof *sc->steps.v, step_by_time);
  return rc;
}

/* Steps of one thread by start, for the lookup of an event's step. */
typedef struct step_key {
  uint32_t thread, step;
  int64_t start_ns, end_ns;
} step_key;

static int step_key_order(const void *x, const void *y) {
  const step_key *a = x, *b = y;
  if (a->thread != b->thread) return a->thread < b->thread ? -1 : 1;
  return a->start_ns < b->start_ns ? -1 : a->start_ns > b->start_ns;
}

static int event_steps(tl_scopes *sc, tl_err *e) {
  size_t ns = sc->steps.n;
  if (!ns) return TL_OK;
  step_key *k = malloc(ns * sizeof *k);
  sc->event_step = malloc((sc->nevents ? sc->nevents : 1) * sizeof *sc->event_step);
  if (!k || !sc->event_step) {
    free(k);
    return tl_nomem(e);
  }
  for (size_t i = 0; i < ns; i++)
    k[i] = (step_key){sc->steps.v[i].thread, (uint32_t)i, sc->steps.v[i].start_ns,
                      sc->steps.v[i].end_ns};
  qsort(k, ns, sizeof *k, step_key_order);
  for (size_t i = 0; i < sc->nevents; i++) {
    sc->event_step[i] = TL_SCOPE_NONE;
    uint32_t th = sc->host_thread[i];
    if (th == TL_SCOPE_NONE) continue;
    int64_t x = sc->host_ns[i];
    /* The last step of the thread starting at or before x. */
    size_t lo = 0, hi = ns;
    while (lo < hi) {
      size_t mid = lo + (hi - lo) / 2;
      if (k[mid].thread < th || (k[mid].thread == th && k[mid].start_ns <= x)) lo = mid + 1;
      else hi = mid;
    }
    if (lo > 0 && k[lo - 1].thread == th && x < k[lo - 1].end_ns) sc->event_step[i] = k[lo - 1].step;
  }
  free(k);
  return TL_OK;
}

int tl_scope_link(const tl_trace *t, const tl_relations *rel, const char *pattern, tl_scopes *sc,
                  tl_err *e) {
  memset(sc, 0, sizeof *sc);
  sc->pattern = tl_strdup(pattern ? pattern : TL_SCOPE_DEFAULT_STEPS);
  if (!sc->pattern) return tl_nomem(e);
  if (!t->scopes.n) return TL_OK; /* nothing to link: the structure is as without scopes */
  size_t n = t->scopes.n;
  sc->n = n;
  sc->nevents = t->ev.n;
  sc->v = malloc(n * sizeof *sc->v);
  sc->thread_of = malloc(n * sizeof *sc->thread_of);
  sc->host_ns = malloc((t->ev.n ? t->ev.n : 1) * sizeof *sc->host_ns);
  sc->host_thread = malloc((t->ev.n ? t->ev.n : 1) * sizeof *sc->host_thread);
  if (!sc->v || !sc->thread_of || !sc->host_ns || !sc->host_thread) goto nomem;
  memcpy(sc->v, t->scopes.v, n * sizeof *sc->v);
  qsort(sc->v, n, sizeof *sc->v, scope_order);
  for (size_t k = 0; k < n; k++) {
    const tl_host_scope *s = &sc->v[k];
    if (!sc->threads.n || thread_cmp(sc->threads.v[sc->threads.n - 1].db_idx,
                                     sc->threads.v[sc->threads.n - 1].global_tid, s->db_idx,
                                     s->global_tid) != 0) {
      tl_scope_thread th = {s->db_idx, s->global_tid};
      if (TL_VEC_PUSH(&sc->threads, th)) goto nomem;
    }
    sc->thread_of[k] = (uint32_t)(sc->threads.n - 1);
  }
  /* Host points: a CPU plane's own operators, then launched work through its relation. */
  for (size_t i = 0; i < t->ev.n; i++) {
    uint16_t db = tl_events_db_idx(&t->ev, i);
    int64_t plane = t->plane_tid ? t->plane_tid[db] : TL_ABSENT;
    sc->host_thread[i] = plane != TL_ABSENT ? find_thread(sc, db, plane) : TL_SCOPE_NONE;
    sc->host_ns[i] = t->ev.start_ns[i];
  }
  for (size_t r = 0; rel && r < rel->n; r++) {
    const tl_relation *x = &rel->v[r];
    if (x->call < 0 || x->work < 0 || (size_t)x->work >= t->ev.n ||
        (x->state != TL_SUPPORTED_EXACT && x->state != TL_SUPPORTED_DETERMINISTIC))
      continue;
    int64_t gtid = tl_call_shape_of(t, (size_t)x->call)->global_tid;
    if (gtid == TL_ABSENT) continue;
    sc->host_thread[x->work] = find_thread(sc, t->calls.db_idx[x->call], gtid);
    sc->host_ns[x->work] = t->calls.start_ns[x->call];
  }
  if (find_steps(sc, t, e) || event_steps(sc, e)) return TL_ERROR;
  return TL_OK;
nomem:
  return tl_nomem(e);
}

int tl_scope_partition(const tl_scopes *sc, const uint32_t *anchor_event, size_t n,
                       uint32_t **out, tl_err *e) {
  *out = NULL;
  if (!sc->event_step) return TL_OK;
  uint32_t *p = malloc((n ? n : 1) * sizeof *p);
  if (!p) return tl_nomem(e);
  /* Anchors outside every step: each stretch of them is a partition of its own (numbered
  ** after the steps), so what runs between steps keeps its repeats but joins no step. */
  uint32_t outside = (uint32_t)sc->steps.n;
  for (size_t k = 0; k < n; k++) {
    uint32_t ev = anchor_event[k];
    uint32_t s = ev < sc->nevents ? sc->event_step[ev] : TL_SCOPE_NONE;
    if (s != TL_SCOPE_NONE) p[k] = s;
    else if (k > 0 && p[k - 1] >= sc->steps.n) p[k] = p[k - 1];
    else p[k] = outside++;
  }
  *out = p;
  return TL_OK;
}

/* ------------------------------------------------------------------ names */

enum { NKINDS = 3, NAME_FAIL = UINT32_MAX };

typedef struct point {
  uint32_t thread;
  int64_t ns;
  uint32_t anchor; /* global anchor index */
} point;

static int point_order(const void *x, const void *y) {
  const point *a = x, *b = y;
  if (a->thread != b->thread) return a->thread < b->thread ? -1 : 1;
  if (a->ns != b->ns) return a->ns < b->ns ? -1 : 1;
  return a->anchor < b->anchor ? -1 : a->anchor > b->anchor;
}

/* The first point of thread th at or after x (or the first of a later thread). */
static size_t first_point(const point *pt, size_t np, uint32_t th, int64_t x) {
  size_t lo = 0, hi = np;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (pt[mid].thread < th || (pt[mid].thread == th && pt[mid].ns < x)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/* The anchors of [first, first + n) with a host point, by (thread, time). */
static int anchor_points(const tl_scopes *sc, const tl_anchors *a, size_t first, size_t n,
                         point **out, size_t *np, tl_err *e) {
  point *pt = malloc((n ? n : 1) * sizeof *pt);
  if (!pt) return tl_nomem(e);
  size_t k = 0;
  for (size_t x = first; x < first + n; x++) {
    uint32_t ev = a->event[x];
    if (ev >= sc->nevents || sc->host_thread[ev] == TL_SCOPE_NONE) continue;
    pt[k++] = (point){sc->host_thread[ev], sc->host_ns[ev], (uint32_t)x};
  }
  qsort(pt, k, sizeof *pt, point_order);
  *out = pt, *np = k;
  return TL_OK;
}

/* The exact ranges of one tree: (first anchor, count) -> one name per kind. */
typedef struct ranges {
  tl_i64map map;              /* key -> index into names */
  TL_VEC(uint32_t) names;     /* NKINDS per range */
} ranges;

static int64_t range_key(uint32_t first, uint32_t count) {
  return (int64_t)(((uint64_t)first << 32) | count);
}

static int tree_ranges(const tl_scopes *sc, const tl_trace *t, const tl_anchors *a,
                       const tl_tree *tr, const uint32_t *norm, ranges *rg, tl_err *e) {
  size_t np = 0;
  point *pt = NULL;
  uint32_t *run = malloc((tr->ntokens ? tr->ntokens : 1) * sizeof *run);
  int rc = TL_OK;
  if (!run) goto nomem;
  if (anchor_points(sc, a, tr->first_anchor, tr->ntokens, &pt, &np, e)) {
    free(run);
    return TL_ERROR;
  }
  /* run[j]: the first point of the stretch of consecutive anchors that ends at j. */
  for (size_t j = 0; j < np; j++)
    run[j] = j && pt[j].thread == pt[j - 1].thread && pt[j].anchor == pt[j - 1].anchor + 1
                 ? run[j - 1] : (uint32_t)j;
  for (size_t k = 0; k < sc->n; k++) {
    const tl_host_scope *s = &sc->v[k];
    uint32_t th = sc->thread_of[k];
    size_t lo = first_point(pt, np, th, s->start_ns), hi = first_point(pt, np, th, s->end_ns);
    if (hi <= lo || run[hi - 1] > lo) continue; /* no point, or not consecutive anchors */
    int64_t key = range_key(pt[lo].anchor, (uint32_t)(hi - lo));
    int64_t *hit = tl_i64map_get(&rg->map, key);
    size_t idx;
    if (hit) {
      idx = (size_t)*hit;
    } else {
      idx = rg->names.n / NKINDS;
      for (int q = 0; q < NKINDS; q++)
        if (TL_VEC_PUSH(&rg->names, 0)) goto nomem;
      if (tl_i64map_put(&rg->map, key, (int64_t)idx)) goto nomem;
    }
    uint32_t *slot = &rg->names.v[idx * NKINDS + s->kind];
    if (!*slot) *slot = norm[k]; /* scopes come outer first */
  }
  (void)t;
  goto done;
nomem:
  rc = tl_nomem(e);
done:
  free(pt), free(run);
  return rc;
}

void tl_scope_hints_free(tl_scope_hint_table *t) {
  free(t->off), free(t->span), free(t->weight);
  memset(t, 0, sizeof *t);
}

/* One scope that begins at an anchor, while the table is counted. */
typedef struct hint_entry {
  uint32_t anchor, span, weight;
} hint_entry;

static int hint_entry_order(const void *x, const void *y) {
  const hint_entry *p = x, *q = y;
  if (p->anchor != q->anchor) return p->anchor < q->anchor ? -1 : 1;
  if (p->span != q->span) return p->span < q->span ? -1 : 1;
  return p->weight < q->weight ? -1 : p->weight > q->weight;
}

int tl_scope_hints(const tl_scopes *sc, const tl_anchors *a, tl_scope_hint_table *out,
                   tl_err *e) {
  memset(out, 0, sizeof *out);
  if (!sc->n) return TL_OK;
  point *pt = NULL;
  size_t np = 0, ne = 0;
  if (anchor_points(sc, a, 0, a->n, &pt, &np, e)) return TL_ERROR;
  hint_entry *v = malloc((sc->n ? sc->n : 1) * sizeof *v);
  out->off = calloc(a->n + 1, sizeof *out->off);
  if (!v || !out->off) goto nomem;
  /* A module or an annotation beginning outweighs any number of Python functions: with
  ** with_stack every call is a range, so an anchor that a deep call chain begins would
  ** otherwise win over the one each decoder layer begins. A scope's span runs from its
  ** first anchor to its last on its thread. */
  enum { FUNCTION_WEIGHT = 1, NAMED_WEIGHT = 1u << 12 };
  for (size_t k = 0; k < sc->n; k++) {
    size_t lo = first_point(pt, np, sc->thread_of[k], sc->v[k].start_ns);
    size_t hi = first_point(pt, np, sc->thread_of[k], sc->v[k].end_ns);
    if (lo >= np || pt[lo].thread != sc->thread_of[k] || pt[lo].ns >= sc->v[k].end_ns) continue;
    uint32_t last = pt[hi - 1].anchor; /* hi > lo: pt[lo] is inside */
    v[ne++] = (hint_entry){pt[lo].anchor, last >= pt[lo].anchor ? last - pt[lo].anchor + 1 : 1,
                           sc->v[k].kind == TL_HOST_SCOPE_PYTHON ? FUNCTION_WEIGHT : NAMED_WEIGHT};
  }
  qsort(v, ne, sizeof *v, hint_entry_order);
  out->span = malloc((ne ? ne : 1) * sizeof *out->span);
  out->weight = malloc((ne ? ne : 1) * sizeof *out->weight);
  if (!out->span || !out->weight) goto nomem;
  for (size_t q = 0; q < ne; q++) {
    out->off[v[q].anchor + 1]++;
    out->span[q] = v[q].span, out->weight[q] = v[q].weight;
  }
  for (size_t k = 0; k < a->n; k++) out->off[k + 1] += out->off[k];
  out->h = (tl_recover_hints){out->off, out->span, out->weight};
  free(pt), free(v);
  return TL_OK;
nomem:
  free(pt), free(v);
  tl_scope_hints_free(out);
  return tl_nomem(e);
}

void tl_scope_names_free(uint32_t **names, size_t ntrees) {
  if (!names) return;
  for (size_t k = 0; k < ntrees; k++) free(names[k]);
  free(names);
}

static int tree_names(const tl_tree *tr, const ranges *rg, uint32_t *out, tl_err *e) {
  uint32_t *state = calloc(tr->nnodes * NKINDS + 1, sizeof *state);
  if (!state) return tl_nomem(e);
  const tl_structure *st = &tr->st;
  for (size_t o = 0; o < st->noccurrences; o++) {
    const tl_position *pos = tl_tree_occ_position(tr, (uint32_t)o);
    if (pos->kind != TL_POS_REPEAT || !pos->repeat_count) continue;
    uint32_t *sn = &state[(size_t)tr->occ_node[o] * NKINDS];
    uint32_t start = tr->occ[o].start, len = (uint32_t)pos->token_len / pos->repeat_count;
    for (uint32_t i = 0; i < pos->repeat_count; i++) {
      int64_t *hit =
          tl_i64map_get(&rg->map, range_key((uint32_t)(tr->first_anchor + start + i * len), len));
      for (int q = 0; q < NKINDS; q++) {
        uint32_t name = hit ? rg->names.v[(size_t)*hit * NKINDS + q] : 0;
        if (sn[q] == NAME_FAIL) continue;
        if (!name || (sn[q] && sn[q] != name)) sn[q] = NAME_FAIL;
        else sn[q] = name;
      }
    }
  }
  for (size_t k = 0; k < tr->nnodes; k++) {
    out[k] = 0;
    for (int q = 0; q < NKINDS && !out[k]; q++) {
      uint32_t name = state[k * NKINDS + q];
      if (name && name != NAME_FAIL) out[k] = name;
    }
  }
  free(state);
  return TL_OK;
}

int tl_scope_names(const tl_scopes *sc, const tl_trace *t, const tl_anchors *a,
                   const tl_forest *f, uint32_t ***names, tl_err *e) {
  *names = NULL;
  if (!sc->n || !f->trees.n) return TL_OK;
  uint32_t **out = calloc(f->trees.n, sizeof *out);
  uint32_t *norm = malloc(sc->n * sizeof *norm);
  int rc = !out || !norm ? tl_nomem(e) : TL_OK;
  for (size_t k = 0; rc == TL_OK && k < sc->n; k++)
    if (!(norm[k] = normalized(t, &sc->v[k]))) rc = tl_nomem(e);
  for (size_t k = 0; rc == TL_OK && k < f->trees.n; k++) {
    const tl_tree *tr = &f->trees.v[k];
    ranges rg;
    memset(&rg, 0, sizeof rg);
    out[k] = malloc((tr->nnodes ? tr->nnodes : 1) * sizeof *out[k]);
    if (!out[k]) rc = tl_nomem(e);
    if (rc == TL_OK) rc = tree_ranges(sc, t, a, tr, norm, &rg, e);
    if (rc == TL_OK) rc = tree_names(tr, &rg, out[k], e);
    tl_i64map_free(&rg.map);
    TL_VEC_FREE(&rg.names);
  }
  free(norm);
  if (rc != TL_OK) {
    tl_scope_names_free(out, out ? f->trees.n : 0);
    return rc;
  }
  *names = out;
  return TL_OK;
}

/* ------------------------------------------------------------------ publication */

int tl_scope_publish(sqlite3 *db, const tl_scopes *sc, const tl_trace *t, const tl_anchors *a,
                     tl_err *e) {
  size_t ns = sc->steps.n;
  if (!ns) return TL_OK;
  /* Per step and anchor group: the first and last anchor in the step, and how many. */
  typedef struct span {
    size_t first, last, count;
  } span;
  size_t ng = a->groups.n;
  span *sp = calloc(ns * (ng ? ng : 1), sizeof *sp);
  if (!sp) return tl_nomem(e);
  for (size_t g = 0; g < ng; g++) {
    const tl_anchor_group *gr = &a->groups.v[g];
    for (size_t k = gr->first; k < gr->first + gr->count; k++) {
      uint32_t ev = a->event[k];
      uint32_t s = ev < sc->nevents ? sc->event_step[ev] : TL_SCOPE_NONE;
      if (s == TL_SCOPE_NONE) continue;
      span *x = &sp[s * ng + g];
      if (!x->count) x->first = k;
      x->last = k;
      x->count++;
    }
  }
  sqlite3_stmt *ins = NULL;
  int rc = sqlite3_prepare_v2(
      db,
      "INSERT INTO traceloom_profiler_step(step_n, db_idx, device_id, name, ordinal, process_id, "
      "thread_id, host_start_ns, host_end_ns, first_anchor_n, end_anchor_n, anchor_count) "
      "VALUES (?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12)",
      -1, &ins, NULL);
  if (rc != SQLITE_OK) {
    free(sp);
    return tl_fail(e, "cannot prepare the profiler step rows: %s", sqlite3_errmsg(db));
  }
  for (size_t s = 0; rc == SQLITE_OK && s < ns; s++) {
    const tl_step *st = &sc->steps.v[s];
    const tl_scope_thread *th = &sc->threads.v[st->thread];
    int rows = 0;
    for (size_t g = 0; rc == SQLITE_OK && g <= ng; g++) {
      const span *x = g < ng ? &sp[s * ng + g] : NULL;
      if (x ? !x->count : rows) continue; /* a row per group with anchors, else one row */
      rows++;
      sqlite3_bind_int64(ins, 1, (int64_t)s + 1);
      sqlite3_bind_int64(ins, 2, st->db_idx);
      if (x) sqlite3_bind_int64(ins, 3, a->groups.v[g].device_id);
      else sqlite3_bind_null(ins, 3);
      sqlite3_bind_text(ins, 4, tl_str(t, st->name), -1, SQLITE_STATIC);
      if (st->ordinal != TL_ABSENT) sqlite3_bind_int64(ins, 5, st->ordinal);
      else sqlite3_bind_null(ins, 5);
      sqlite3_bind_int64(ins, 6, (int64_t)((uint64_t)th->global_tid >> 32));
      sqlite3_bind_int64(ins, 7, (int64_t)((uint64_t)th->global_tid & 0xffffffffu));
      sqlite3_bind_int64(ins, 8, st->start_ns);
      sqlite3_bind_int64(ins, 9, st->end_ns);
      if (x) {
        sqlite3_bind_int64(ins, 10, (int64_t)x->first);
        sqlite3_bind_int64(ins, 11, (int64_t)x->last + 1);
      } else {
        sqlite3_bind_null(ins, 10), sqlite3_bind_null(ins, 11);
      }
      sqlite3_bind_int64(ins, 12, x ? (int64_t)x->count : 0);
      rc = sqlite3_step(ins) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
      sqlite3_reset(ins);
    }
  }
  int out = rc == SQLITE_OK ? TL_OK
                            : tl_fail(e, "cannot write traceloom_profiler_step: %s",
                                      sqlite3_errmsg(db));
  sqlite3_finalize(ins);
  free(sp);
  return out;
}
