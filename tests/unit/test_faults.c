/*
** test_faults.c: fault injection into a whole traceloom_analyze (issue 9).
**
** Each test publishes a first analysis (minimal_smoke) into a database file, keeps its
** bytes, and then runs `SELECT traceloom_analyze('<exact_hlt>')` on a fresh copy of that
** file, in process (the extension registered with sqlite3_traceloom_init), once per
** injected fault:
**
**   malloc_failure       the N-th allocation of TraceLoom's own code fails (malloc, calloc,
**                        realloc, strdup wrapped with -Wl,--wrap: tests/unit/faults.mk
**                        builds this program with -DTL_FAULTS_WRAP and those flags; built
**                        without them this test only says so)
**   sqlite_malloc_failure  the N-th allocation SQLite makes during the call fails
**                        (SQLITE_CONFIG_MALLOC with a failing wrapper of the default
**                        allocator): publication, schema and view creation, statements
**   disk_full, io_error, sync_error  a VFS shim around the default VFS whose xWrite fails
**                        with SQLITE_FULL / SQLITE_IOERR_WRITE once N bytes were written,
**                        or whose N-th xSync fails
**
** For every N, the call must either succeed with exactly the analysis a fault-free run
** publishes (sha256 of every traceloom_event and traceloom_metadata row), or fail with a
** message naming the cause ("out of memory", "database or disk is full", "disk I/O
** error"); after a failure the database file, once closed (and reopened to roll back a hot
** journal where the fault hit the commit), is byte-identical to the first analysis, and no
** journal or temporary file is left in its folder (the header's file change counter may
** move when a failed publication commits an empty transaction; each test reports how often,
** and TL_FAULTS_STRICT=1 counts that as a failure too). Leaks are caught by the ASan build
** (make test-asan). N runs over every allocation / byte range up to TL_FAULTS_POINTS
** points (default 300), sampled evenly beyond that; each test prints its figures.
**
** Exploring: TL_FAULTS_KEEP_GOING=1 runs every point in a child process and lists every
** point that breaks a promise (crashes included) instead of stopping at the first;
** TL_FAULTS_AT=N runs the single allocation N of the allocation sweeps; CK_RUN_CASE=malloc_failure (sqlite_malloc_failure,
** disk_full, io_error, sync_error) runs one sweep.
*/
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/sqlite_api.h"
#include "util/sha256.h"
#include "tl_check.h"
#include "sqlite-traceloom.h"


/* ------------------------------------------------------------------ injected faults */

/* One fault plan for the whole program (this is a test program: the wrappers below are
** called from every allocation site, so the plan cannot be passed to them). */
enum { ALLOC_OURS = 1, ALLOC_SQLITE = 2 };

static struct {
  int armed;          /* count (and maybe fail) only inside the analyze call */
  int which;          /* ALLOC_OURS or ALLOC_SQLITE: whose allocations are counted */
  long count;         /* allocations seen while armed */
  long fail_at;       /* 1-based allocation that fails; 0 = none */
  long failed;        /* failures injected */
} plan;

static int fail_now(int which) {
  if (!plan.armed || plan.which != which) return 0;
  if (++plan.count != plan.fail_at) return 0;
  plan.failed++;
  return 1;
}

#ifdef TL_FAULTS_WRAP
void *__real_malloc(size_t n);
void *__real_calloc(size_t a, size_t b);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
void *__wrap_malloc(size_t n) { return fail_now(ALLOC_OURS) ? NULL : __real_malloc(n); }
void *__wrap_calloc(size_t a, size_t b) {
  return fail_now(ALLOC_OURS) ? NULL : __real_calloc(a, b);
}
void *__wrap_realloc(void *p, size_t n) {
  return fail_now(ALLOC_OURS) ? NULL : __real_realloc(p, n);
}
char *__wrap_strdup(const char *s) { return fail_now(ALLOC_OURS) ? NULL : __real_strdup(s); }
#endif

/* SQLite's allocator, wrapped (installed with SQLITE_CONFIG_MALLOC). */
static sqlite3_mem_methods default_mem;

static void *sq_malloc(int n) { return fail_now(ALLOC_SQLITE) ? NULL : default_mem.xMalloc(n); }
static void *sq_realloc(void *p, int n) {
  return fail_now(ALLOC_SQLITE) ? NULL : default_mem.xRealloc(p, n);
}
static void sq_free(void *p) { default_mem.xFree(p); }
static int sq_size(void *p) { return default_mem.xSize(p); }
static int sq_roundup(int n) { return default_mem.xRoundup(n); }
static int sq_init(void *x) { return default_mem.xInit(x); }
static void sq_shutdown(void *x) { default_mem.xShutdown(x); }

static void install_sqlite_allocator(int failing) {
  ck_assert_int_eq(sqlite3_shutdown(), SQLITE_OK);
  if (!default_mem.xMalloc) ck_assert_int_eq(sqlite3_config(SQLITE_CONFIG_GETMALLOC, &default_mem), SQLITE_OK);
  static const sqlite3_mem_methods failing_mem = {sq_malloc, sq_free,     sq_realloc, sq_size,
                                                  sq_roundup, sq_init, sq_shutdown, NULL};
  ck_assert_int_eq(sqlite3_config(SQLITE_CONFIG_MALLOC, failing ? &failing_mem : &default_mem),
                   SQLITE_OK);
  ck_assert_int_eq(sqlite3_initialize(), SQLITE_OK);
}

/* A VFS shim: every file the default VFS opens, with xWrite / xSync that fail on plan. */
enum { IO_NONE = 0, IO_FULL, IO_WRITE_ERROR, IO_SYNC_ERROR };

static struct {
  int mode;
  int64_t written;    /* bytes written while armed */
  int64_t budget;     /* writes fail once written + amount > budget */
  long syncs, fail_sync;
  long failed;
} io;

typedef struct shim_file {
  sqlite3_file base;
  sqlite3_file *real; /* follows the struct */
} shim_file;

static sqlite3_vfs shim_vfs;

#define REAL(f) (((shim_file *)(f))->real)
static int x_close(sqlite3_file *f) {
  int rc = REAL(f)->pMethods ? REAL(f)->pMethods->xClose(REAL(f)) : SQLITE_OK;
  return rc;
}
static int x_read(sqlite3_file *f, void *b, int n, sqlite3_int64 o) {
  return REAL(f)->pMethods->xRead(REAL(f), b, n, o);
}
static int x_write(sqlite3_file *f, const void *b, int n, sqlite3_int64 o) {
  if (plan.armed && (io.mode == IO_FULL || io.mode == IO_WRITE_ERROR)) {
    if (io.written + n > io.budget) {
      io.failed++;
      return io.mode == IO_FULL ? SQLITE_FULL : SQLITE_IOERR_WRITE;
    }
    io.written += n;
  }
  return REAL(f)->pMethods->xWrite(REAL(f), b, n, o);
}
static int x_truncate(sqlite3_file *f, sqlite3_int64 n) {
  return REAL(f)->pMethods->xTruncate(REAL(f), n);
}
static int x_sync(sqlite3_file *f, int flags) {
  if (plan.armed && io.mode == IO_SYNC_ERROR && ++io.syncs == io.fail_sync) {
    io.failed++;
    return SQLITE_IOERR_FSYNC;
  }
  return REAL(f)->pMethods->xSync(REAL(f), flags);
}
static int x_size(sqlite3_file *f, sqlite3_int64 *n) { return REAL(f)->pMethods->xFileSize(REAL(f), n); }
static int x_lock(sqlite3_file *f, int l) { return REAL(f)->pMethods->xLock(REAL(f), l); }
static int x_unlock(sqlite3_file *f, int l) { return REAL(f)->pMethods->xUnlock(REAL(f), l); }
static int x_reserved(sqlite3_file *f, int *r) {
  return REAL(f)->pMethods->xCheckReservedLock(REAL(f), r);
}
static int x_fcntl(sqlite3_file *f, int op, void *a) {
  return REAL(f)->pMethods->xFileControl(REAL(f), op, a);
}
static int x_sector(sqlite3_file *f) { return REAL(f)->pMethods->xSectorSize(REAL(f)); }
static int x_devchar(sqlite3_file *f) { return REAL(f)->pMethods->xDeviceCharacteristics(REAL(f)); }

/* Version 1: no shared memory (WAL) and no memory mapping, so every page goes through xWrite. */
static const sqlite3_io_methods shim_io = {1,       x_close, x_read,   x_write,    x_truncate,
                                           x_sync,  x_size,  x_lock,   x_unlock,   x_reserved,
                                           x_fcntl, x_sector, x_devchar, NULL, NULL, NULL, NULL,
                                           NULL,    NULL};

static int x_open(sqlite3_vfs *v, const char *name, sqlite3_file *f, int flags, int *out) {
  sqlite3_vfs *real = v->pAppData;
  shim_file *s = (shim_file *)f;
  s->real = (sqlite3_file *)(s + 1);
  s->base.pMethods = NULL;
  int rc = real->xOpen(real, name, s->real, flags, out);
  if (s->real->pMethods) s->base.pMethods = &shim_io;
  return rc;
}
static int x_delete(sqlite3_vfs *v, const char *n, int d) {
  return ((sqlite3_vfs *)v->pAppData)->xDelete(v->pAppData, n, d);
}
static int x_access(sqlite3_vfs *v, const char *n, int fl, int *r) {
  return ((sqlite3_vfs *)v->pAppData)->xAccess(v->pAppData, n, fl, r);
}
static int x_fullpath(sqlite3_vfs *v, const char *n, int k, char *out) {
  return ((sqlite3_vfs *)v->pAppData)->xFullPathname(v->pAppData, n, k, out);
}
static int x_random(sqlite3_vfs *v, int n, char *out) {
  return ((sqlite3_vfs *)v->pAppData)->xRandomness(v->pAppData, n, out);
}
static int x_sleep(sqlite3_vfs *v, int us) { return ((sqlite3_vfs *)v->pAppData)->xSleep(v->pAppData, us); }
static int x_time(sqlite3_vfs *v, double *t) {
  return ((sqlite3_vfs *)v->pAppData)->xCurrentTime(v->pAppData, t);
}
static int x_lasterr(sqlite3_vfs *v, int n, char *b) {
  return ((sqlite3_vfs *)v->pAppData)->xGetLastError(v->pAppData, n, b);
}

static void register_shim(void) {
  if (sqlite3_vfs_find("tl_faulty")) return;
  sqlite3_vfs *real = sqlite3_vfs_find(NULL);
  ck_assert_ptr_nonnull(real);
  memset(&shim_vfs, 0, sizeof shim_vfs);
  shim_vfs.iVersion = 1;
  shim_vfs.szOsFile = (int)sizeof(shim_file) + real->szOsFile;
  shim_vfs.mxPathname = real->mxPathname;
  shim_vfs.zName = "tl_faulty";
  shim_vfs.pAppData = real;
  shim_vfs.xOpen = x_open;
  shim_vfs.xDelete = x_delete;
  shim_vfs.xAccess = x_access;
  shim_vfs.xFullPathname = x_fullpath;
  shim_vfs.xRandomness = x_random;
  shim_vfs.xSleep = x_sleep;
  shim_vfs.xCurrentTime = x_time;
  shim_vfs.xGetLastError = x_lasterr;
  ck_assert_int_eq(sqlite3_vfs_register(&shim_vfs, 0), SQLITE_OK);
}

/* ------------------------------------------------------------------ files and digests */

typedef struct bytes {
  unsigned char *p;
  size_t n;
} bytes;

static bytes read_file(const char *path) {
  bytes b = {0};
  FILE *f = fopen(path, "rb");
  ck_assert_msg(f != NULL, "cannot read %s", path);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  b.p = malloc(n > 0 ? (size_t)n : 1);
  b.n = (size_t)n;
  ck_assert(b.p && fread(b.p, 1, b.n, f) == b.n);
  fclose(f);
  return b;
}

static void write_file(const char *path, const bytes *b) {
  unlink(path);
  FILE *f = fopen(path, "wb");
  ck_assert_msg(f && fwrite(b->p, 1, b->n, f) == b->n && fclose(f) == 0, "cannot write %s", path);
}

static int same_bytes(const bytes *a, const bytes *b) {
  return a->n == b->n && memcmp(a->p, b->p, a->n) == 0;
}

/* Same bytes except the header's file change counter (offset 24) and version-valid-for
** number (offset 92), which any committed write transaction bumps, even an empty one. */
static int same_content(const bytes *a, const bytes *b) {
  if (a->n != b->n || a->n < 100) return 0;
  return memcmp(a->p, b->p, 24) == 0 && memcmp(a->p + 28, b->p + 28, 92 - 28) == 0 &&
         memcmp(a->p + 96, b->p + 96, a->n - 96) == 0;
}

/* sha256 over every row of traceloom_event and traceloom_metadata (all columns, rowid order). */
static void analysis_digest(sqlite3 *db, char hex[65]) {
  static const char *const queries[] = {"SELECT * FROM traceloom_event ORDER BY rowid",
                                        "SELECT * FROM traceloom_metadata ORDER BY rowid"};
  tl_sha256 s;
  tl_sha256_init(&s);
  for (size_t q = 0; q < 2; q++) {
    sqlite3_stmt *st = NULL;
    ck_assert_msg(sqlite3_prepare_v2(db, queries[q], -1, &st, NULL) == SQLITE_OK, "%s: %s",
                  queries[q], sqlite3_errmsg(db));
    while (sqlite3_step(st) == SQLITE_ROW) {
      for (int c = 0; c < sqlite3_column_count(st); c++) {
        int t = sqlite3_column_type(st, c);
        const void *p = t == SQLITE_NULL ? "\x01NULL" : sqlite3_column_blob(st, c);
        int n = t == SQLITE_NULL ? 5 : sqlite3_column_bytes(st, c);
        tl_sha256_update(&s, &t, sizeof t);
        tl_sha256_update(&s, &n, sizeof n);
        if (n) tl_sha256_update(&s, p, (size_t)n);
      }
    }
    sqlite3_finalize(st);
  }
  uint8_t d[32];
  tl_sha256_final(&s, d);
  tl_sha256_hex(d, hex);
}

/* Files in dir other than the ones named (comma-separated basenames). */
static int stray_files(const char *dir, const char *keep, char *first, size_t cap) {
  DIR *d = opendir(dir);
  ck_assert_ptr_nonnull(d);
  int n = 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
    char pat[300];
    snprintf(pat, sizeof pat, ",%s,", de->d_name);
    char k[600];
    snprintf(k, sizeof k, ",%s,", keep);
    if (strstr(k, pat)) continue;
    if (!n++) snprintf(first, cap, "%s", de->d_name);
  }
  closedir(d);
  return n;
}

/* ------------------------------------------------------------------ the scenario */

typedef struct scenario {
  char dir[256];
  char base_db[300], work_db[300], ref_db[300];
  char *first_profile, *profile; /* minimal_smoke (already published), exact_hlt (faulted) */
  bytes baseline;                /* the database after the first analysis */
  char ref_digest[65];           /* exact_hlt analysed without faults */
} scenario;

/* SELECT traceloom_analyze(profile) on db_path; faults are armed only while it steps when
** arm is set. *msg: the error (malloc'd) or NULL. */
static int analyze(const char *db_path, const char *vfs, const char *profile, int arm,
                   char **msg) {
  sqlite3 *db = NULL;
  int rc = sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, vfs);
  if (rc == SQLITE_OK) rc = sqlite3_traceloom_init(db, NULL, NULL);
  sqlite3_stmt *st = NULL;
  if (rc == SQLITE_OK)
    /* One thread: the N-th allocation must be the same allocation in every run, which a
    ** second (hashing) thread allocating at the same time would make a race. */
    rc = sqlite3_prepare_v2(db, "SELECT traceloom_analyze(?1, '{\"threads\": 1}')", -1, &st,
                            NULL);
  if (rc == SQLITE_OK) {
    sqlite3_bind_text(st, 1, profile, -1, SQLITE_STATIC);
    plan.armed = arm;
    rc = sqlite3_step(st);
    plan.armed = 0;
    if (rc == SQLITE_ROW) rc = SQLITE_OK;
  }
  if (msg) *msg = rc == SQLITE_OK ? NULL : strdup(sqlite3_errmsg(db));
  sqlite3_finalize(st);
  sqlite3_close(db);
  return rc;
}

static void digest_of(const char *path, char hex[65]) {
  sqlite3 *db = NULL;
  ck_assert_int_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
  analysis_digest(db, hex);
  sqlite3_close(db);
}

/* The scenario of the running test. Static so that what it holds stays reachable when a
** failed check leaves the test early (LeakSanitizer then reports only real leaks). */
static scenario current;

static void scenario_free(scenario *s);

static void scenario_init(scenario *s) {
  if (s->profile) scenario_free(s); /* left by a test that failed a check */
  memset(s, 0, sizeof *s);
  const char *tmp = getenv("TMPDIR");
  snprintf(s->dir, sizeof s->dir, "%s/tl-faults-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  ck_assert_ptr_nonnull(mkdtemp(s->dir));
  snprintf(s->base_db, sizeof s->base_db, "%s/base.db", s->dir);
  snprintf(s->work_db, sizeof s->work_db, "%s/analysis.db", s->dir);
  snprintf(s->ref_db, sizeof s->ref_db, "%s/reference.db", s->dir);
  s->first_profile = tl_fixture("minimal_smoke/mono");
  s->profile = tl_fixture("exact_hlt/mono");
  char *msg = NULL;
  ck_assert_msg(analyze(s->base_db, NULL, s->first_profile, 0, &msg) == SQLITE_OK, "%s", msg);
  ck_assert_msg(analyze(s->ref_db, NULL, s->profile, 0, &msg) == SQLITE_OK, "%s", msg);
  s->baseline = read_file(s->base_db);
  digest_of(s->ref_db, s->ref_digest);
}

static void scenario_free(scenario *s) {
  char j[400];
  snprintf(j, sizeof j, "%s-journal", s->work_db);
  unlink(s->base_db), unlink(s->ref_db), unlink(s->work_db), unlink(j);
  rmdir(s->dir);
  free(s->first_profile), free(s->profile), free(s->baseline.p);
  memset(s, 0, sizeof *s);
}

typedef struct tally {
  long points, ok, failed, injected, header_only, problems;
} tally;

/* A broken promise at one point: fails the test at once, or (TL_FAULTS_KEEP_GOING=1, to
** list every failing point) prints it and fails the test at the end of the sweep. */
static int keep_going(void) {
  const char *keep = getenv("TL_FAULTS_KEEP_GOING");
  return keep && *keep == '1';
}

static void problem(tally *t, const char *what, long point, const char *fmt, const char *arg) {
  char text[1024];
  snprintf(text, sizeof text, fmt, arg ? arg : "");
  if (!keep_going()) ck_abort_msg("%s %ld: %s", what, point, text);
  fprintf(stderr, "test_faults: PROBLEM %s %ld: %s\n", what, point, text);
  t->problems++;
}

/* After a failed call: reopen with the default VFS (rolls back a hot journal), then the
** file must be the first analysis byte for byte and nothing else may be left beside it.
** Only the header's change counter may move (an empty transaction was committed; counted,
** and a failure with TL_FAULTS_STRICT=1). */
static void check_untouched(scenario *s, long point, const char *what, tally *t) {
  sqlite3 *db = NULL;
  ck_assert_int_eq(sqlite3_open_v2(s->work_db, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
  sqlite3_stmt *st = NULL;
  ck_assert_int_eq(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL), SQLITE_OK);
  ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
  if (strcmp((const char *)sqlite3_column_text(st, 0), "ok") != 0)
    problem(t, what, point, "integrity check: %s", (const char *)sqlite3_column_text(st, 0));
  sqlite3_finalize(st);
  sqlite3_close(db);
  bytes now = read_file(s->work_db);
  int same = same_bytes(&now, &s->baseline), content = same_content(&now, &s->baseline);
  free(now.p);
  const char *strict = getenv("TL_FAULTS_STRICT");
  if (!content) problem(t, what, point, "the previous analysis database changed%s", NULL);
  else if (!same) {
    t->header_only++;
    if (strict && *strict == '1')
      problem(t, what, point, "the database header's change counter moved (an empty "
                              "transaction was committed)%s", NULL);
  }
  char stray[256] = "";
  if (stray_files(s->dir, "base.db,analysis.db,reference.db", stray, sizeof stray) != 0)
    problem(t, what, point, "left behind: %s", stray);
  /* Whatever was left, the next point starts clean. */
  char j[400];
  snprintf(j, sizeof j, "%s-journal", s->work_db);
  unlink(j);
}

/* One faulted call on a fresh copy of the first analysis. Counts it as ok (succeeded with
** the same analysis), failed (failed cleanly) or, through problem(), as a broken promise. */
static void one_point(scenario *s, const char *vfs, long point, const char *what,
                      const char *needle, const char *needle2, tally *t) {
  write_file(s->work_db, &s->baseline);
  char *msg = NULL;
  plan.count = 0, plan.failed = 0;
  io.written = 0, io.syncs = 0, io.failed = 0;
  int rc = analyze(s->work_db, vfs, s->profile, 1, &msg);
  long before = t->problems;
  t->points++;
  t->injected += plan.failed + io.failed > 0;
  if (rc == SQLITE_OK) {
    char hex[65];
    digest_of(s->work_db, hex);
    if (strcmp(hex, s->ref_digest) != 0)
      problem(t, what, point, "the call succeeded but published a different analysis%s", NULL);
    if (t->problems == before) t->ok++;
  } else {
    if (!msg || !(strcasestr(msg, needle) || (needle2 && strcasestr(msg, needle2))))
      problem(t, what, point, "the error does not name the cause: %s", msg ? msg : "(none)");
    check_untouched(s, point, what, t);
    if (t->problems == before) t->failed++;
  }
  free(msg);
}

/* one_point, in a child process when keeping going, so that a crash at one point is
** reported with its number and the sweep goes on. */
static void run_point(scenario *s, const char *vfs, long point, const char *what,
                      const char *needle, const char *needle2, tally *t) {
  if (!keep_going()) {
    one_point(s, vfs, point, what, needle, needle2, t);
    return;
  }
  fflush(stderr);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    tally c = {0};
    one_point(s, vfs, point, what, needle, needle2, &c);
    _exit((c.ok ? 1 : 0) | (c.header_only ? 2 : 0) | (c.problems ? 4 : 0));
  }
  int status = 0;
  waitpid(pid, &status, 0);
  t->points++, t->injected++;
  if (!WIFEXITED(status) || WEXITSTATUS(status) > 7) {
    char how[64];
    snprintf(how, sizeof how, WIFSIGNALED(status) ? "signal %d" : "exit %d",
             WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
    problem(t, what, point, "crashed (%s)", how);
    return;
  }
  int x = WEXITSTATUS(status);
  if (x & 4) t->problems++;
  else if (x & 1) t->ok++;
  else t->failed++;
  if (x & 2) t->header_only++;
}

static long max_points(void) {
  const char *v = getenv("TL_FAULTS_POINTS");
  long n = v && *v ? atol(v) : 300;
  return n > 0 ? n : 300;
}

/* Runs fail_at = 1 .. total (evenly sampled down to max_points()) of the allocations of
** `which`. */
static void sweep_allocations(scenario *s, int which, const char *what) {
  plan.which = which;
  /* Count the allocations of a fault-free call first. */
  write_file(s->work_db, &s->baseline);
  plan.count = 0, plan.fail_at = 0;
  char *msg = NULL;
  int rc = analyze(s->work_db, NULL, s->profile, 1, &msg);
  long total = plan.count;
  ck_assert_msg(rc == SQLITE_OK, "fault-free run: %s", msg);
  ck_assert_msg(total > 0, "%s: no allocation was seen", what);
  long np = max_points(), stride = total > np ? total / np : 1;
  const char *only = getenv("TL_FAULTS_AT");
  long first = only && *only ? atol(only) : 1, last = only && *only ? first : total;
  tally t = {0};
  for (long n = first; n <= last; n += stride) {
    plan.fail_at = n;
    run_point(s, NULL, n, what, "memory", NULL, &t);
  }
  plan.fail_at = 0, plan.which = 0;
  fprintf(stderr,
          "test_faults: %s: %ld allocations per analysis, %ld points (every %ld), %ld faults "
          "injected, %ld failed cleanly (%ld moved only the header's change counter), %ld "
          "succeeded with the same analysis, %ld broke a promise\n",
          what, total, t.points, stride, t.injected, t.failed, t.header_only, t.ok, t.problems);
  ck_assert_int_eq(t.injected, t.points);
  ck_assert_msg(t.problems == 0, "%s: %ld point(s) broke a promise (listed above)", what,
                t.problems);
}

/* ------------------------------------------------------------------ tests */

START_TEST(malloc_failure) {
#ifndef TL_FAULTS_WRAP
  fprintf(stderr, "test_faults: malloc_failure skipped (build with tests/unit/faults.mk)\n");
  return;
#else
  scenario_init(&current);
  sweep_allocations(&current, ALLOC_OURS, "malloc_failure");
  scenario_free(&current);
#endif
}
END_TEST

START_TEST(sqlite_malloc_failure) {
  scenario_init(&current);
  install_sqlite_allocator(1);
  sweep_allocations(&current, ALLOC_SQLITE, "sqlite_malloc_failure");
  install_sqlite_allocator(0);
  scenario_free(&current);
}
END_TEST

static void sweep_io(int mode, const char *what, const char *needle, const char *needle2) {
  scenario *sc = &current;
  scenario_init(sc);
  register_shim();
  /* A fault-free call through the shim measures what a run writes and syncs. */
  io.mode = mode, io.budget = INT64_MAX, io.fail_sync = 0;
  write_file(sc->work_db, &sc->baseline);
  plan.fail_at = 0, io.written = 0, io.syncs = 0;
  char *msg = NULL;
  int rc = analyze(sc->work_db, "tl_faulty", sc->profile, 1, &msg);
  ck_assert_msg(rc == SQLITE_OK, "fault-free run through the shim: %s", msg);
  int64_t total_bytes = io.written;
  long total_syncs = io.syncs;
  tally t = {0};
  if (mode == IO_SYNC_ERROR) {
    for (long k = 1; k <= total_syncs; k++) {
      io.fail_sync = k;
      run_point(sc, "tl_faulty", k, what, needle, needle2, &t);
    }
  } else {
    long np = max_points() / 4 > 8 ? max_points() / 4 : 8;
    int64_t step = total_bytes / np > 1 ? total_bytes / np : 1;
    for (int64_t b = 0; b < total_bytes; b += step) {
      io.budget = b;
      run_point(sc, "tl_faulty", (long)b, what, needle, needle2, &t);
    }
  }
  io.mode = IO_NONE;
  char per_run[96];
  if (mode == IO_SYNC_ERROR)
    snprintf(per_run, sizeof per_run, "%ld syncs", total_syncs);
  else
    snprintf(per_run, sizeof per_run, "%lld bytes written", (long long)total_bytes);
  fprintf(stderr,
          "test_faults: %s: %s per analysis, %ld points, %ld faults injected, %ld failed "
          "cleanly (%ld moved only the header's change counter), %ld succeeded with the same "
          "analysis, %ld broke a promise\n",
          what, per_run, t.points, t.injected, t.failed, t.header_only, t.ok, t.problems);
  ck_assert_int_eq(t.injected, t.points);
  ck_assert_msg(t.problems == 0, "%s: %ld point(s) broke a promise (listed above)", what,
                t.problems);
  scenario_free(sc);
}

START_TEST(disk_full) { sweep_io(IO_FULL, "disk_full", "disk is full", NULL); }
END_TEST

START_TEST(io_error) { sweep_io(IO_WRITE_ERROR, "io_error", "I/O error", NULL); }
END_TEST

START_TEST(sync_error) { sweep_io(IO_SYNC_ERROR, "sync_error", "I/O error", NULL); }
END_TEST

/* One test case per fault kind, so that CK_RUN_CASE=<name> runs one sweep. */
static Suite *suite(void) {
  Suite *s = suite_create("faults");
  const struct {
    const char *name;
    const TTest *test;
  } cases[] = {{"malloc_failure", malloc_failure}, {"sqlite_malloc_failure", sqlite_malloc_failure},
               {"disk_full", disk_full},           {"io_error", io_error},
               {"sync_error", sync_error}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    TCase *tc = tcase_create(cases[i].name);
    tcase_set_timeout(tc, 900);
    tcase_add_test(tc, cases[i].test);
    suite_add_tcase(s, tc);
  }
  return s;
}

TL_CHECK_MAIN(suite)
