/*
** staging.c: a second SQLite writer for the publication (see staging.h).
**
** Why this shape (measured on the 1M-task Ascend bench profile, bench/RESULTS.md):
** - The transfer path: `INSERT INTO main.t SELECT * FROM other.t`, t empty and declared the
**   same in both, copies each record as it is (OP_RowData, OP_Insert); traceloom_node_core
**   costs 0.10 s CPU that way against 0.41 s written row by row. The staged tables are created
**   from the very CREATE TABLE text of main's schema, so the declarations are identical.
** - ATTACH is refused inside a transaction, and the analysis runs inside SAVEPOINT
**   traceloom_analysis: the staging file is attached before it (tl_staging_attach, called
**   first thing by the publication), empty; the analysis connection reads it only for the
**   copy, after the worker has committed and closed (so no lock is ever contended: its schema
**   of the staging database, read empty at ATTACH, is found stale at the copy's prepare and
**   read again by SQLite itself).
** - DETACH is refused while the connection holds a transaction on it: after the commit only
**   when no statement of the connection is reading (tl_staging_attach refuses then). After
**   an interrupt the connection prepares nothing until the caller's statement ends: the
**   staging schema stays attached to a deleted file, and the next analysis detaches it first.
** - The worker stops at its next SQLite step once `stop` is set (a progress handler on its
**   own connection); the analysis connection is never touched from the worker.
*/
#include "analyze/staging.h"
#include "publish/publish.h"
#include "publish/rows.h"
#include "util/dbopen.h"
#include "util/timing.h"

#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct tl_staging {
  sqlite3 *db;        /* the analysis connection */
  const char *schema; /* its name there (a string literal) */
  char *path;         /* the staging file (deleted by tl_staging_close) */
  int started;        /* a worker runs (or ran) and was not joined */
  pthread_t thread;
  atomic_int stop;    /* set by the analysis thread: the worker stops at its next step */
  atomic_int done;    /* set by the worker when it returns */
  const char *const *tables;
  char **decl;        /* per table: its CREATE TABLE in main's schema */
  size_t ntables;
  int (*write)(sqlite3 *db, void *arg, tl_err *e);
  void *arg;
  int rc;             /* the worker's outcome, and its error */
  tl_err err;
  double cpu;         /* the worker thread's CPU seconds */
  double main_cpu0;   /* the analysis thread's CPU seconds when the worker started */
  int joined;         /* tl_staging_join returned: the copy is next */
  tl_timer tm;        /* TRACELOOM_TIMING: from the join to the copy's end */
};

const char *tl_staging_path(const tl_staging *s) { return s ? s->path : NULL; }

char *tl_staging_copy_sql(const char *schema, const char *table) {
  return sqlite3_mprintf("INSERT INTO main.\"%w\" SELECT * FROM \"%w\".\"%w\"", table, schema,
                         table);
}

/* "<main file>.stage-XXXXXX" beside the output (same file system, and the CLI's output
** folder is private), else "<$TMPDIR or /tmp>/traceloom-stage-XXXXXX": created empty, 0600. */
static char *create_file(sqlite3 *db) {
  const char *out = sqlite3_db_filename(db, "main");
  const char *tmp = getenv("TMPDIR");
  char *path = out && *out ? sqlite3_mprintf("%s.stage-XXXXXX", out)
                           : sqlite3_mprintf("%s/traceloom-stage-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  char *p = path ? strdup(path) : NULL;
  sqlite3_free(path);
  if (!p) return NULL;
  int fd = mkstemp(p);
  if (fd < 0) {
    free(p);
    return NULL;
  }
  close(fd);
  return p;
}

static int exec_quiet(sqlite3 *db, const char *sql) {
  return sqlite3_exec(db, sql, NULL, NULL, NULL);
}

static int detach(sqlite3 *db, const char *schema) {
  char *sql = sqlite3_mprintf("DETACH \"%w\"", schema);
  int rc = sql ? exec_quiet(db, sql) : SQLITE_NOMEM;
  sqlite3_free(sql);
  return rc;
}

tl_staging *tl_staging_attach(sqlite3 *db, const char *schema) {
  if (!sqlite3_threadsafe() || !sqlite3_get_autocommit(db) ||
      sqlite3_txn_state(db, NULL) != SQLITE_TXN_NONE)
    return NULL;
  /* ATTACH opens the file through db's VFS, the worker through the default one: another VFS
  ** (memdb, an application's own) would not be the same file */
  sqlite3_vfs *vfs = NULL;
  if (sqlite3_file_control(db, "main", SQLITE_FCNTL_VFS_POINTER, &vfs) != SQLITE_OK ||
      vfs != sqlite3_vfs_find(NULL))
    return NULL;
  /* left attached by an interrupted analysis (staging.h): its file is already deleted */
  if (sqlite3_db_filename(db, schema) && detach(db, schema) != SQLITE_OK) return NULL;
  tl_staging *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->db = db, s->schema = schema;
  atomic_init(&s->stop, 0);
  atomic_init(&s->done, 0);
  sqlite3_stmt *st = NULL;
  char *attach = sqlite3_mprintf("ATTACH ?1 AS \"%w\"", schema);
  int ok = attach && (s->path = create_file(db)) != NULL &&
           sqlite3_prepare_v2(db, attach, -1, &st, NULL) == SQLITE_OK &&
           sqlite3_bind_text(st, 1, s->path, -1, SQLITE_STATIC) == SQLITE_OK &&
           sqlite3_step(st) == SQLITE_DONE;
  sqlite3_finalize(st);
  sqlite3_free(attach);
  /* The copy reads each staged page once: the analysis connection needs no cache of the
  ** file (SQLite's default, 2 MB per attached file, would stay filled until the commit). */
  char *cache = ok ? sqlite3_mprintf("PRAGMA \"%w\".cache_size=-64", schema) : NULL;
  if (cache) exec_quiet(db, cache);
  sqlite3_free(cache);
  if (!ok) {
    if (s->path) unlink(s->path);
    free(s->path);
    free(s);
    return NULL;
  }
  return s;
}

/* The worker's connection stops at its next step once the analysis thread says so. */
static int worker_stopped(void *ctx) { return atomic_load(&((tl_staging *)ctx)->stop); }

static void *worker(void *arg) {
  tl_staging *s = arg;
  double cpu0 = tl_thread_cpu_s();
  sqlite3 *db = NULL;
  int rc = tl_db_open_scratch(s->path, &db, &s->err);
  if (rc == TL_OK) {
    sqlite3_progress_handler(db, 1000, worker_stopped, s);
    if (sqlite3_create_module_v2(db, "traceloom_rows", &tl_rows_module, NULL, NULL) != SQLITE_OK)
      rc = tl_fail(&s->err, "failed to prepare the staging database: %s", sqlite3_errmsg(db));
  }
  if (rc == TL_OK) rc = tl_pub_exec(db, "BEGIN", &s->err);
  for (size_t i = 0; rc == TL_OK && i < s->ntables; i++) rc = tl_pub_exec(db, s->decl[i], &s->err);
  if (rc == TL_OK) rc = s->write(db, s->arg, &s->err);
  if (rc == TL_OK) rc = tl_pub_exec(db, "COMMIT", &s->err);
  sqlite3_close(db); /* an open transaction is rolled back; the file is deleted anyway */
  s->rc = rc;
  s->cpu = tl_thread_cpu_s() - cpu0;
  atomic_store(&s->done, 1);
  return NULL;
}

/* Each staged table's CREATE TABLE, as main's schema has it. */
static int read_declarations(tl_staging *s, const char *const *tables, tl_err *e) {
  size_t n = 0;
  while (tables[n]) n++;
  if (!(s->decl = calloc(n ? n : 1, sizeof *s->decl))) return tl_nomem(e);
  s->ntables = n;
  sqlite3_stmt *st;
  if (tl_pub_prepare(s->db, "SELECT sql FROM main.sqlite_schema WHERE type = 'table' AND name = ?1",
                     &st, e))
    return TL_ERROR;
  int rc = TL_OK;
  for (size_t i = 0; rc == TL_OK && i < n; i++) {
    sqlite3_bind_text(st, 1, tables[i], -1, SQLITE_STATIC);
    if (sqlite3_step(st) != SQLITE_ROW || !sqlite3_column_text(st, 0))
      rc = tl_fail(e, "failed to stage %s: no such table in the analysis database", tables[i]);
    else if (!(s->decl[i] = strdup((const char *)sqlite3_column_text(st, 0))))
      rc = tl_nomem(e);
    sqlite3_reset(st);
  }
  sqlite3_finalize(st);
  return rc;
}

int tl_staging_start(tl_staging *s, const char *const *tables,
                     int (*write)(sqlite3 *db, void *arg, tl_err *e), void *arg, tl_err *e) {
  int rc = read_declarations(s, tables, e);
  if (rc != TL_OK) return rc;
  s->tables = tables, s->write = write, s->arg = arg;
  s->main_cpu0 = tl_thread_cpu_s();
  if (pthread_create(&s->thread, NULL, worker, s) != 0)
    return tl_fail(e, "failed to start the staging writer thread");
  s->started = 1;
  return TL_OK;
}

/* Waits for the worker, probing the analysis connection for an interrupt meanwhile. */
static void join_worker(tl_staging *s, int (*interrupted)(void *), void *ctx) {
  const struct timespec tick = {0, 1000000}; /* 1 ms */
  while (!atomic_load(&s->done)) {
    if (!atomic_load(&s->stop) && interrupted && interrupted(ctx)) atomic_store(&s->stop, 1);
    nanosleep(&tick, NULL);
  }
  pthread_join(s->thread, NULL);
  s->started = 0;
#ifdef __GLIBC__
  /* The worker's connection (its page cache, the rows it bound) lived in the worker's malloc
  ** arena, which this thread does not reuse: its free pages go back now, not at the end of
  ** the analysis (the 10M peak, in recovery, comes after two of the three workers). */
  malloc_trim(0);
#endif
}

int tl_staging_join(tl_staging *s, int rc, int (*interrupted)(void *ctx), void *ctx, tl_err *e) {
  if (!s || !s->started) return rc;
  tl_timer_start(&s->tm, strcmp(s->schema, TL_STAGING_RUNTIME_SCHEMA) == 0  ? "staging (runtime)"
                         : strcmp(s->schema, TL_STAGING_EVENTS_SCHEMA) == 0 ? "staging (events)"
                                                                            : "staging");
  if (rc != TL_OK) atomic_store(&s->stop, 1);
  join_worker(s, interrupted, ctx);
  s->joined = 1;
  if (rc == TL_OK && s->rc != TL_OK)
    rc = tl_fail_code(e, s->err.code ? (tl_err_code)s->err.code : TL_ERR_FAILED, "%s",
                      s->err.msg ? s->err.msg : "the staging writer failed");
  tl_timer_mark(&s->tm, "wait for the writer");
  return rc;
}

int tl_staging_copy(tl_staging *s, int rc, tl_err *e) {
  if (!s || !s->joined) return rc;
  s->joined = 0;
  for (size_t i = 0; rc == TL_OK && i < s->ntables; i++) {
    char *sql = tl_staging_copy_sql(s->schema, s->tables[i]);
    rc = sql ? tl_pub_exec(s->db, sql, e) : tl_nomem(e);
    sqlite3_free(sql);
  }
  tl_timer_mark(&s->tm, "copy (transfer)");
  /* from the worker's start: the analysis thread (its own writes, the wait, the copy) and
  ** the worker; on idle cores the span takes about the larger of the two */
  double cpu[2] = {tl_thread_cpu_s() - s->main_cpu0, s->cpu};
  tl_timer_threads(&s->tm, "analysis | writer", cpu, 2);
  return rc;
}

int tl_staging_finish(tl_staging *s, int rc, int (*interrupted)(void *ctx), void *ctx,
                      tl_err *e) {
  return tl_staging_copy(s, tl_staging_join(s, rc, interrupted, ctx, e), e);
}

void tl_staging_close(tl_staging *s) {
  if (!s) return;
  if (s->started) {
    atomic_store(&s->stop, 1);
    join_worker(s, NULL, NULL);
  }
  /* refused after an interrupt (staging.h): the next tl_staging_attach detaches it */
  if (sqlite3_db_filename(s->db, s->schema)) detach(s->db, s->schema);
  unlink(s->path);
  for (size_t i = 0; i < s->ntables; i++) free(s->decl[i]);
  free(s->decl);
  tl_err_clear(&s->err);
  free(s->path);
  free(s);
}
