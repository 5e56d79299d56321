/*
** fuzz_profile.h: helpers of the profile harnesses that mutate whole fixture profiles
** (fuzz_split.c, fuzz_replay.c): a fixture directory tree held in memory and written
** back to a scratch folder per input, mutation SQL run on one of its databases under the
** same guards as fuzz_reader.c, and the invariants checked after loading.
**
**   tl_fuzz_tree t;                 loaded once in LLVMFuzzerInitialize
**   tl_fuzz_tree_load(&t, root);    every regular file under root, sorted by path
**   tl_fuzz_tree_write(&t, dir);    the pristine copy under dir (folders created)
**   tl_fuzz_mutate_db(path, sql);   SQL on one copied database (errors are expected)
**   tl_fuzz_check_trace(&trace);    no event and no runtime call ends before it starts
**   tl_fuzz_relate_replay(&p, &t);  relate + replay build + promote, with the structural
**                                   invariants of replay.h checked
**
** Mutation SQL is the fuzz input, so it runs under an authorizer that refuses ATTACH,
** DETACH and PRAGMA (no other file, no journal mode change) and a VM step budget; inputs
** mentioning VACUUM (VACUUM INTO writes anywhere) or holding a NUL are skipped.
*/
#ifndef TL_FUZZ_PROFILE_H
#define TL_FUZZ_PROFILE_H

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <strings.h>
#include <sys/stat.h>

#include <sqlite3.h>

#include "fuzz_common.h"
#include "relate/relate.h"
#include "replay/replay.h"
#include "source/source.h"
#include "trace/trace.h"

#ifndef TL_FUZZ_FIXTURES_DEFAULT
#define TL_FUZZ_FIXTURES_DEFAULT "build/fixtures"
#endif

typedef struct tl_fuzz_file {
  char *rel;            /* path below the tree root */
  unsigned char *bytes;
  size_t n;
} tl_fuzz_file;

typedef struct tl_fuzz_tree {
  tl_fuzz_file *files;
  size_t n, cap;
} tl_fuzz_tree;

static inline const char *tl_fuzz_fixtures(void) {
  const char *dir = getenv("TL_FUZZ_FIXTURES");
  return dir && *dir ? dir : TL_FUZZ_FIXTURES_DEFAULT;
}

static inline unsigned char *tl_fuzz_read_all(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  unsigned char *buf = NULL;
  size_t cap = 0, len = 0, got;
  do {
    if (len == cap && !(buf = realloc(buf, cap = cap ? 2 * cap : 65536))) abort();
    got = fread(buf + len, 1, cap - len, f);
    len += got;
  } while (got > 0);
  fclose(f);
  *n = len;
  return buf;
}

static inline int tl_fuzz_rel_cmp(const void *a, const void *b) {
  return strcmp(((const tl_fuzz_file *)a)->rel, ((const tl_fuzz_file *)b)->rel);
}

static inline void tl_fuzz_tree_walk(tl_fuzz_tree *t, const char *root, const char *rel) {
  char dir[1024];
  snprintf(dir, sizeof dir, "%s%s%s", root, *rel ? "/" : "", rel);
  DIR *d = opendir(dir);
  if (!d) return;
  struct dirent *de;
  while ((de = readdir(d))) {
    if (de->d_name[0] == '.') continue;
    char sub[1024], full[2048];
    snprintf(sub, sizeof sub, "%s%s%s", rel, *rel ? "/" : "", de->d_name);
    snprintf(full, sizeof full, "%s/%s", root, sub);
    struct stat st;
    if (stat(full, &st) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      tl_fuzz_tree_walk(t, root, sub);
    } else if (S_ISREG(st.st_mode)) {
      if (t->n == t->cap &&
          !(t->files = realloc(t->files, (t->cap = t->cap ? 2 * t->cap : 16) * sizeof *t->files)))
        abort();
      tl_fuzz_file *f = &t->files[t->n++];
      f->rel = strdup(sub);
      f->bytes = tl_fuzz_read_all(full, &f->n);
      if (!f->rel || !f->bytes) abort();
    }
  }
  closedir(d);
}

/* Loads every regular file under fixtures/<root>; exits when there is none. */
static inline void tl_fuzz_tree_load(tl_fuzz_tree *t, const char *root, const char *harness) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", tl_fuzz_fixtures(), root);
  memset(t, 0, sizeof *t);
  tl_fuzz_tree_walk(t, path, "");
  if (t->n == 0) {
    fprintf(stderr, "%s: no fixture files under %s (run make fixtures, or set TL_FUZZ_FIXTURES)\n",
            harness, path);
    exit(1);
  }
  qsort(t->files, t->n, sizeof *t->files, tl_fuzz_rel_cmp);
}

static inline void tl_fuzz_mkdirs(const char *path) {
  char p[2048];
  snprintf(p, sizeof p, "%s", path);
  for (char *s = p + 1; *s; s++)
    if (*s == '/') {
      *s = 0;
      if (mkdir(p, 0700) != 0 && errno != EEXIST) {
        perror(p);
        abort();
      }
      *s = '/';
    }
}

/* Writes the pristine tree under dir (replacing the files of an earlier input; mutations
** never create files, the authorizer sees to that). */
static inline void tl_fuzz_tree_write(const tl_fuzz_tree *t, const char *dir) {
  for (size_t i = 0; i < t->n; i++) {
    char path[2048];
    snprintf(path, sizeof path, "%s/%s", dir, t->files[i].rel);
    tl_fuzz_mkdirs(path);
    unlink(path);
    tl_fuzz_write(path, t->files[i].bytes, t->files[i].n);
  }
}

static inline int tl_fuzz_deny_escapes(void *ctx, int action, const char *a, const char *b,
                                       const char *c, const char *d) {
  (void)ctx, (void)a, (void)b, (void)c, (void)d;
  return action == SQLITE_ATTACH || action == SQLITE_DETACH || action == SQLITE_PRAGMA
             ? SQLITE_DENY
             : SQLITE_OK;
}

static inline int tl_fuzz_over_budget(void *ctx) { return ++*(int *)ctx > 200; } /* x1000 */

/* A NUL-terminated copy of the mutation SQL, or NULL when the input is to be skipped. */
static inline char *tl_fuzz_sql(const uint8_t *data, size_t n) {
  char *sql = tl_fuzz_cstr(data, n);
  int skip = strlen(sql) != n;
  for (const char *s = sql; !skip && *s; s++)
    if (strncasecmp(s, "vacuum", 6) == 0) skip = 1;
  if (skip) {
    free(sql);
    return NULL;
  }
  return sql;
}

static inline void tl_fuzz_mutate_db(const char *path, const char *sql) {
  sqlite3 *db = NULL;
  if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) abort();
  int steps = 0;
  sqlite3_set_authorizer(db, tl_fuzz_deny_escapes, NULL);
  sqlite3_progress_handler(db, 1000, tl_fuzz_over_budget, &steps);
  sqlite3_limit(db, SQLITE_LIMIT_LENGTH, 1 << 20);
  /* Most fuzzed SQL does not parse; the statements before the first error stay applied. */
  sqlite3_exec(db, sql, NULL, NULL, NULL);
  sqlite3_close(db);
}

/* No event and no runtime call ends before it starts. TL_FUZZ_IGNORE_TIME_ORDER=1 lets a
** long exploratory run go past a reported finding of this kind while its fix is pending;
** the smoke run (tests/fuzz/smoke.sh) never sets it. */
static inline void tl_fuzz_check_trace(const tl_trace *t) {
  const char *skip = getenv("TL_FUZZ_IGNORE_TIME_ORDER");
  if (skip && *skip == '1') return;
  for (size_t i = 0; i < t->ev.n; i++)
    if (tl_events_end(&t->ev, i) < t->ev.start_ns[i]) {
      fprintf(stderr, "event %zu (%s row %lld) ends before it starts (%lld < %lld)\n", i,
              tl_trace_source_table(t, tl_events_source_ref(&t->ev, i)),
              (long long)tl_i64col_get(&t->ev.source_rowid, i), (long long)tl_events_end(&t->ev, i),
              (long long)t->ev.start_ns[i]);
      abort();
    }
  for (size_t i = 0; i < t->calls.n; i++)
    if (t->calls.end_ns[i] < t->calls.start_ns[i]) {
      fprintf(stderr, "runtime call %zu (%s row %lld) ends before it starts (%lld < %lld)\n", i,
              tl_trace_source_table(t, tl_call_shape_of(t, i)->source_ref),
              (long long)tl_i64col_get(&t->calls.source_rowid, i), (long long)t->calls.end_ns[i],
              (long long)t->calls.start_ns[i]);
      abort();
    }
}

#define TL_FUZZ_REQUIRE(cond, ...)       \
  do {                                   \
    if (!(cond)) {                       \
      fprintf(stderr, __VA_ARGS__);      \
      fprintf(stderr, "\n");             \
      abort();                           \
    }                                    \
  } while (0)

/* Structural invariants of a built (and promoted) replay over a trace of n_real events. */
static inline void tl_fuzz_check_replay(const tl_trace *t, const tl_replay *r) {
  size_t n = r->n_real_events;
  for (size_t m = 0; m < r->members.n; m++) {
    const tl_graph_member *gm = &r->members.v[m];
    TL_FUZZ_REQUIRE(gm->event < n, "member %zu: event %u >= %zu real events", m, gm->event, n);
    TL_FUZZ_REQUIRE(gm->launch < r->launches.n, "member %zu: launch %u out of range", m,
                    gm->launch);
    const tl_graph_launch *l = &r->launches.v[gm->launch];
    TL_FUZZ_REQUIRE(m >= l->first_member && m < (size_t)l->first_member + l->nmembers,
                    "member %zu of launch %u lies outside its launch's member range", m,
                    gm->launch);
  }
  size_t covered = 0;
  for (size_t i = 0; i < r->launches.n; i++) {
    const tl_graph_launch *l = &r->launches.v[i];
    if (l->nmembers) {
      TL_FUZZ_REQUIRE((size_t)l->first_member + l->nmembers <= r->members.n,
                      "launch %zu: members [%u, +%u) past %zu", i, l->first_member, l->nmembers,
                      r->members.n);
      for (uint32_t k = 0; k < l->nmembers; k++)
        TL_FUZZ_REQUIRE(r->members.v[l->first_member + k].launch == i,
                        "launch %zu: member %u belongs to launch %u (not contiguous)", i,
                        l->first_member + k, r->members.v[l->first_member + k].launch);
      covered += l->nmembers;
    }
    for (int k = 0; k < 3; k++)
      TL_FUZZ_REQUIRE(l->control[k] == TL_REPLAY_NONE || l->control[k] < n,
                      "launch %zu: control %d = %u >= %zu", i, k, l->control[k], n);
    TL_FUZZ_REQUIRE(l->host_call == TL_REPLAY_NONE || l->host_call < t->calls.n,
                    "launch %zu: host call %u out of range", i, l->host_call);
    TL_FUZZ_REQUIRE(l->unit == TL_REPLAY_NONE || l->unit < r->units.n,
                    "launch %zu: unit %u out of range", i, l->unit);
    TL_FUZZ_REQUIRE(l->unit == TL_REPLAY_NONE ||
                        l->anchor_event < tl_event_count(t, &r->launch_events),
                    "launch %zu: promoted but anchor %u out of range", i, l->anchor_event);
    TL_FUZZ_REQUIRE(l->start_ns <= l->end_ns || l->unit == TL_REPLAY_NONE,
                    "launch %zu: promoted launch ends before it starts", i);
    TL_FUZZ_REQUIRE(l->body_template <= r->body_templates.n, "launch %zu: body template %u", i,
                    l->body_template);
    TL_FUZZ_REQUIRE(l->region == TL_REPLAY_NONE || l->region < r->regions.n,
                    "launch %zu: region %u out of range", i, l->region);
  }
  TL_FUZZ_REQUIRE(covered == r->members.n, "%zu members, %zu inside launch ranges", r->members.n,
                  covered);
  for (size_t u = 0; u < r->units.n; u++) {
    const tl_replay_unit *un = &r->units.v[u];
    TL_FUZZ_REQUIRE(un->nlaunches > 0 &&
                        (size_t)un->first_launch + un->nlaunches <= r->launches.n,
                    "unit %zu: launches [%u, +%u) out of range", u, un->first_launch,
                    un->nlaunches);
    for (uint32_t k = 0; k < un->nlaunches; k++) {
      const tl_graph_launch *l = &r->launches.v[un->first_launch + k];
      TL_FUZZ_REQUIRE(l->unit == u, "unit %zu: launch %u belongs to unit %u (not contiguous)",
                      u, un->first_launch + k, l->unit);
      TL_FUZZ_REQUIRE(l->member_order == k, "unit %zu: launch %u has member_order %u, not %u", u,
                      un->first_launch + k, l->member_order, k);
    }
    TL_FUZZ_REQUIRE(un->graph_template >= 1 && un->graph_template <= r->graph_templates.n,
                    "unit %zu: graph template %u", u, un->graph_template);
  }
  for (size_t g = 0; g < r->regions.n; g++) {
    const tl_graph_region *rg = &r->regions.v[g];
    TL_FUZZ_REQUIRE((size_t)rg->first_launch + rg->nlaunches <= r->launches.n,
                    "region %zu: launches out of range", g);
  }
  /* Promotion: one launch event per promoted launch, numbered after the trace's events,
  ** which it leaves alone. */
  size_t promoted = 0;
  for (size_t i = 0; i < r->launches.n; i++) promoted += r->launches.v[i].unit != TL_REPLAY_NONE;
  TL_FUZZ_REQUIRE(t->ev.n == n && r->launch_events.ev.n == promoted,
                  "%zu trace events and %zu launch events after promotion, expected %zu + %zu",
                  t->ev.n, r->launch_events.ev.n, n, promoted);
  for (size_t k = 0; k < promoted; k++) {
    uint32_t l = r->launch_of_synthetic[k];
    TL_FUZZ_REQUIRE(l < r->launches.n && r->launches.v[l].anchor_event == n + k,
                    "synthetic event %zu does not map back to its launch", n + k);
  }
}

/* Relation invariants: indices in range, every event and call in at most the groups its
** identifiers allow (checked here: in range only; the relation states are unit-tested). */
static inline void tl_fuzz_check_relations(const tl_trace *t, const tl_relations *rel) {
  for (size_t i = 0; i < rel->n; i++) {
    const tl_relation *x = &rel->v[i];
    TL_FUZZ_REQUIRE(x->call >= -1 && x->call < (int64_t)t->calls.n, "relation %zu: call %lld",
                    i, (long long)x->call);
    TL_FUZZ_REQUIRE(x->work >= -1 && x->work < (int64_t)t->ev.n, "relation %zu: work %lld", i,
                    (long long)x->work);
    TL_FUZZ_REQUIRE(x->call >= 0 || x->work >= 0, "relation %zu: neither call nor work", i);
  }
}

/* The stages traceloom_analyze runs after loading, up to promotion, with their invariants. */
static inline void tl_fuzz_relate_replay(tl_profile *p, tl_trace *t) {
  tl_err e = {0};
  tl_relations rel;
  int rc = tl_relate(t, &rel, &e);
  tl_fuzz_check(rc, &e, "tl_relate");
  if (rc != TL_OK) return;
  tl_fuzz_check_relations(t, &rel);
  tl_replay r;
  rc = tl_replay_build(t, p, &r, &e);
  tl_fuzz_check(rc, &e, "tl_replay_build");
  if (rc == TL_OK) {
    rc = tl_replay_promote(t, &r, &e);
    tl_fuzz_check(rc, &e, "tl_replay_promote");
    if (rc == TL_OK) {
      tl_fuzz_check_replay(t, &r);
      tl_fuzz_check_trace(t); /* unchanged by promotion */
    }
  }
  tl_replay_free(&r);
  TL_VEC_FREE(&rel);
}

/* What traceloom_analyze does with a profile path before its analysis stages: discover,
** inventory, load (with the trace invariants), then, when relate_replay is set, relations
** and replay reconstruction. Every entry point must return TL_OK or TL_ERROR with a
** message (tl_fuzz_check). */
static inline void tl_fuzz_load_profile(const char *path, int relate_replay) {
  tl_err e = {0};
  tl_profile profile;
  int rc = tl_profile_discover(path, "auto", &profile, &e);
  tl_fuzz_check(rc, &e, "tl_profile_discover");
  if (rc != TL_OK) return;
  tl_inventory inv = {0};
  rc = tl_profile_inventory(&profile, &inv, &e);
  tl_fuzz_check(rc, &e, "tl_profile_inventory");
  tl_inventory_free(&inv);
  tl_trace trace;
  rc = tl_trace_load(&profile, &trace, NULL, NULL, &e);
  tl_fuzz_check(rc, &e, "tl_trace_load");
  if (rc == TL_OK) {
    tl_fuzz_check_trace(&trace);
    if (relate_replay) tl_fuzz_relate_replay(&profile, &trace);
    tl_trace_free(&trace);
  }
  tl_profile_free(&profile);
}

#endif
