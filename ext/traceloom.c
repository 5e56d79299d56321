/*
** traceloom.c: the extension's entry point.
**
**   .load build/traceloom
**   SELECT traceloom_version();
**   SELECT * FROM traceloom_profile('run_dir');           -- what is in a profile
**   SELECT * FROM traceloom_events('run_dir') LIMIT 10;   -- normalized device events
**   SELECT * FROM traceloom_host_calls('run_dir');        -- normalized host runtime calls
**   SELECT traceloom_analyze('run_dir');                  -- publish traceloom_* tables here
**   SELECT traceloom_compare('base.db');                  -- compare with an earlier analysis
**
** Functions and modules are registered from the static tables below. Everything that
** reads or writes files is SQLITE_DIRECTONLY (functions) or SQLITE_VTAB_DIRECTONLY
** (table-valued functions): a view or trigger in a hostile database cannot call them.
*/
#include "util/sqlite_api.h"
SQLITE_EXTENSION_INIT1

#include "traceloom.h"
#include "source/source.h"
#include "analyze/analyze.h"
#include "bodypattern/bodypattern.h"
#include "compare/compare.h"
#include "export/looptree.h"
#include "export/perfetto.h"
#include "publish/rows.h"
#include "util/buf.h"

#include <stdlib.h>
#include <string.h>

extern const sqlite3_module tl_events_module;
extern const sqlite3_module tl_host_calls_module;
extern const sqlite3_module tl_profile_module;

/* traceloom_version(): the version string. */
static void fn_version(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  (void)argc, (void)argv;
  sqlite3_result_text(ctx, TRACELOOM_VERSION, -1, SQLITE_STATIC);
}

/* traceloom_debug(): version, SQLite version, build options. */
static void fn_debug(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  (void)argc, (void)argv;
  tl_buf b = {0};
  tl_buf_printf(&b, "version=%s\nschema_version=%s\nsqlite_version=%s\nsqlite_source_id=%s\n",
                TRACELOOM_VERSION, TRACELOOM_SCHEMA_VERSION, sqlite3_libversion(),
                sqlite3_sourceid());
#ifdef SQLITE_CORE
  tl_buf_puts(&b, "build=core (statically registered)\n");
#else
  tl_buf_puts(&b, "build=loadable extension\n");
#endif
  tl_buf_printf(&b, "compiler=%s\n", __VERSION__);
#ifdef __OPTIMIZE__
  tl_buf_puts(&b, "optimized=1\n");
#else
  tl_buf_puts(&b, "optimized=0\n");
#endif
#if defined(__SANITIZE_ADDRESS__)
  tl_buf_puts(&b, "sanitizers=address,undefined\n");
#endif
  tl_buf_puts(&b, "readers=");
  tl_family_kinds_list(&b, ",");
  tl_buf_puts(&b, "\n");
  if (b.oom) {
    tl_buf_free(&b);
    sqlite3_result_error_nomem(ctx);
    return;
  }
  sqlite3_result_text(ctx, b.p, (int)b.n, SQLITE_TRANSIENT);
  tl_buf_free(&b);
}

/* The file-touching functions run only from a read-only statement (a plain SELECT).
** SQLITE_DIRECTONLY already keeps them out of views and triggers; SQLite 3.40 still lets a
** CHECK constraint or DEFAULT clause stored in someone else's database call them during an
** INSERT or UPDATE. Any busy writing statement on the connection means such a context. */
static int refuse_from_writing_statement(sqlite3_context *ctx, const char *fn) {
  sqlite3 *db = sqlite3_context_db_handle(ctx);
  for (sqlite3_stmt *st = sqlite3_next_stmt(db, NULL); st; st = sqlite3_next_stmt(db, st)) {
    if (sqlite3_stmt_busy(st) && !sqlite3_stmt_readonly(st)) {
      char *msg = sqlite3_mprintf(
          "%s() must be called from a top-level SELECT, not while a statement that writes "
          "(INSERT, UPDATE, a CHECK constraint, a DEFAULT clause) runs on this connection",
          fn);
      sqlite3_result_error(ctx, msg ? msg : "refused", -1);
      sqlite3_free(msg);
      return 1;
    }
  }
  return 0;
}

/* traceloom_analyze(path [, options_json]): analyses and publishes into the main database. */
static void fn_analyze(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  if (refuse_from_writing_statement(ctx, "traceloom_analyze")) return;
  const char *path = (const char *)sqlite3_value_text(argv[0]);
  const char *options = argc > 1 ? (const char *)sqlite3_value_text(argv[1]) : NULL;
  tl_err e = {0};
  char *summary = NULL;
  if (tl_analyze(sqlite3_context_db_handle(ctx), path, options, &summary, &e) != TL_OK) {
    sqlite3_result_error(ctx, e.msg ? e.msg : "traceloom_analyze failed", -1);
    /* An interrupted analysis reports SQLITE_INTERRUPT, as SQLite's own statements do. */
    if (e.code == TL_ERR_INTERRUPTED) sqlite3_result_error_code(ctx, SQLITE_INTERRUPT);
    else if (e.code == TL_ERR_NOMEM) sqlite3_result_error_nomem(ctx);
    tl_err_clear(&e);
    return;
  }
  /* Handed over, not copied: the analysis is committed by now, and a copy that failed to
  ** allocate would report an error for an analysis that was published. */
  sqlite3_result_text(ctx, summary, -1, free);
}

/* traceloom_export_perfetto(path [, options_json]): writes the analysis as a Perfetto JSON
** timeline (".gz": gzip) and returns the number of trace events written. */
static void fn_export_perfetto(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  if (refuse_from_writing_statement(ctx, "traceloom_export_perfetto")) return;
  const char *path = (const char *)sqlite3_value_text(argv[0]);
  const char *options = argc > 1 ? (const char *)sqlite3_value_text(argv[1]) : NULL;
  tl_err e = {0};
  int64_t events = 0;
  if (tl_export_perfetto(sqlite3_context_db_handle(ctx), path, options, &events, &e) != TL_OK) {
    sqlite3_result_error(ctx, e.msg ? e.msg : "traceloom_export_perfetto failed", -1);
    tl_err_clear(&e);
    return;
  }
  sqlite3_result_int64(ctx, events);
}

/* traceloom_loop_tree([options_json]): the loop tree of the published analysis, Markdown. */
static void fn_loop_tree(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  const char *options = argc > 0 ? (const char *)sqlite3_value_text(argv[0]) : NULL;
  tl_err e = {0};
  char *md = NULL;
  if (tl_loop_tree(sqlite3_context_db_handle(ctx), options, &md, &e) != TL_OK) {
    sqlite3_result_error(ctx, e.msg ? e.msg : "traceloom_loop_tree failed", -1);
    tl_err_clear(&e);
    return;
  }
  sqlite3_result_text(ctx, md, -1, SQLITE_TRANSIENT);
  free(md);
}

/* traceloom_replay_body_patterns(): recovers the repeats inside the exact replay bodies of the
** analysis in the main database and (re)writes traceloom_replay_body_* (ext/bodypattern);
** returns the number of supported domains. The analysis calls it while it publishes. */
static void fn_replay_body_patterns(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  (void)argc, (void)argv;
  if (refuse_from_writing_statement(ctx, "traceloom_replay_body_patterns")) return;
  tl_err e = {0};
  int64_t n = 0;
  if (tl_replay_body_patterns(sqlite3_context_db_handle(ctx), &n, &e) != TL_OK) {
    sqlite3_result_error(ctx, e.msg ? e.msg : "traceloom_replay_body_patterns failed", -1);
    tl_err_clear(&e);
    return;
  }
  sqlite3_result_int64(ctx, n);
}

/* traceloom_compare(base_path [, options_json]): compares the analysis in the main database
** (the new run) with the one at base_path and publishes traceloom_compare_* (ext/compare). */
static void fn_compare(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  if (refuse_from_writing_statement(ctx, "traceloom_compare")) return;
  const char *base = (const char *)sqlite3_value_text(argv[0]);
  const char *options = argc > 1 ? (const char *)sqlite3_value_text(argv[1]) : NULL;
  tl_err e = {0};
  char *summary = NULL;
  if (tl_compare(sqlite3_context_db_handle(ctx), base, options, &summary, &e) != TL_OK) {
    sqlite3_result_error(ctx, e.msg ? e.msg : "traceloom_compare failed", -1);
    tl_err_clear(&e);
    return;
  }
  if (summary)
    sqlite3_result_text(ctx, summary, -1, free);
  else
    sqlite3_result_text(ctx, "traceloom_compare: published", -1, SQLITE_STATIC);
}

/* traceloom_compare_report([options_json]): the published comparison as Markdown. */
static void fn_compare_report(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  const char *options = argc > 0 ? (const char *)sqlite3_value_text(argv[0]) : NULL;
  tl_err e = {0};
  char *md = NULL;
  if (tl_compare_report(sqlite3_context_db_handle(ctx), options, &md, &e) != TL_OK) {
    sqlite3_result_error(ctx, e.msg ? e.msg : "traceloom_compare_report failed", -1);
    tl_err_clear(&e);
    return;
  }
  sqlite3_result_text(ctx, md, -1, free);
}

typedef struct function_def {
  const char *name;
  int nargs;
  int flags;
  void (*fn)(sqlite3_context *, int, sqlite3_value **);
} function_def;

static const function_def functions[] = {
    {"traceloom_version", 0, SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS, fn_version},
    {"traceloom_debug", 0, SQLITE_UTF8 | SQLITE_INNOCUOUS, fn_debug},
    {"traceloom_analyze", 1, SQLITE_UTF8 | SQLITE_DIRECTONLY, fn_analyze},
    {"traceloom_analyze", 2, SQLITE_UTF8 | SQLITE_DIRECTONLY, fn_analyze},
    {"traceloom_loop_tree", 0, SQLITE_UTF8, fn_loop_tree},
    {"traceloom_loop_tree", 1, SQLITE_UTF8, fn_loop_tree},
    {"traceloom_export_perfetto", 1, SQLITE_UTF8 | SQLITE_DIRECTONLY, fn_export_perfetto},
    {"traceloom_export_perfetto", 2, SQLITE_UTF8 | SQLITE_DIRECTONLY, fn_export_perfetto},
    {"traceloom_compare", 1, SQLITE_UTF8 | SQLITE_DIRECTONLY, fn_compare},
    {"traceloom_compare", 2, SQLITE_UTF8 | SQLITE_DIRECTONLY, fn_compare},
    {"traceloom_compare_report", 0, SQLITE_UTF8, fn_compare_report},
    {"traceloom_compare_report", 1, SQLITE_UTF8, fn_compare_report},
    {"traceloom_replay_body_patterns", 0, SQLITE_UTF8 | SQLITE_DIRECTONLY, fn_replay_body_patterns},
};

typedef struct module_def {
  const char *name;
  const sqlite3_module *module;
} module_def;

static const module_def modules[] = {
    {"traceloom_events", &tl_events_module},
    {"traceloom_host_calls", &tl_host_calls_module},
    {"traceloom_profile", &tl_profile_module},
    /* Internal: the row source of the publisher's bulk inserts (ext/publish/rows.c). */
    {"traceloom_rows", &tl_rows_module},
};

char *traceloom_unsupported_sqlite(int version_number, const char *version) {
  if (version_number >= TRACELOOM_MIN_SQLITE_VERSION_NUMBER) return NULL;
  return sqlite3_mprintf("traceloom needs SQLite %s or later (its API calls and the analysis "
                         "views); this process runs SQLite %s",
                         TRACELOOM_MIN_SQLITE_VERSION, version ? version : "(unknown)");
}

#ifdef _WIN32
__declspec(dllexport)
#endif
__attribute__((visibility("default"))) int sqlite3_traceloom_init(
    sqlite3 *db, char **err, const sqlite3_api_routines *api) {
  SQLITE_EXTENSION_INIT2(api);
  /* Checked before any other API call: the table api points to is as long as the host's
  ** SQLite made it, and sqlite3_libversion_number() is in every version of it. */
  char *unsupported =
      traceloom_unsupported_sqlite(sqlite3_libversion_number(), sqlite3_libversion());
  if (unsupported) {
    if (err) *err = unsupported;
    else sqlite3_free(unsupported);
    return SQLITE_ERROR;
  }
  for (size_t i = 0; i < sizeof functions / sizeof functions[0]; i++) {
    int rc = sqlite3_create_function_v2(db, functions[i].name, functions[i].nargs,
                                        functions[i].flags, NULL, functions[i].fn, NULL, NULL,
                                        NULL);
    if (rc != SQLITE_OK) return rc;
  }
  for (size_t i = 0; i < sizeof modules / sizeof modules[0]; i++) {
    int rc = sqlite3_create_module_v2(db, modules[i].name, modules[i].module, NULL, NULL);
    if (rc != SQLITE_OK) return rc;
  }
  return SQLITE_OK;
}
