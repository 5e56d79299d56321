/*
** test_analyze_e2e.c: traceloom_analyze end to end, in process, on the graph-replay and
** scheduler-context fixtures, so that `make test-asan` runs the whole pipeline (readers,
** replay reconstruction, context linking, step partitions, publication, views) under
** AddressSanitizer and UndefinedBehaviorSanitizer. The SQL and Python suites assert the
** same outcomes through the shell and the CLI; here the counts only confirm each run did
** its work (the values come from the fixtures, see tests/sql/replay_acl.sql).
*/
#include "tl_check.h"
#include "sqlite-traceloom.h"
#include "util/sqlite_api.h"
#include "analyze/analyze.h"

#include <glob.h>


static sqlite3 *open_db(void) {
  sqlite3 *db = NULL;
  ck_assert_int_eq(sqlite3_open(":memory:", &db), SQLITE_OK);
  char *err = NULL;
  ck_assert_msg(sqlite3_traceloom_init(db, &err, NULL) == SQLITE_OK, "init: %s", err ? err : "?");
  return db;
}

/* Runs traceloom_analyze(fixture, options); returns 1 on success, 0 with *msg on error. */
static int analyze(sqlite3 *db, const char *fixture, const char *options, char **msg) {
  char *path = tl_fixture(fixture);
  sqlite3_stmt *st;
  ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT traceloom_analyze(?1, ?2)", -1, &st, NULL),
                   SQLITE_OK);
  sqlite3_bind_text(st, 1, path, -1, SQLITE_TRANSIENT);
  if (options) sqlite3_bind_text(st, 2, options, -1, SQLITE_TRANSIENT);
  int rc = sqlite3_step(st);
  if (rc != SQLITE_ROW && msg) *msg = strdup(sqlite3_errmsg(db));
  sqlite3_finalize(st);
  free(path);
  return rc == SQLITE_ROW;
}

START_TEST(acl_graph_fixtures) {
  sqlite3 *db = open_db();
  static const struct {
    const char *fixture;
    int launches, promoted, members;
  } cases[] = {
      {"exact_hlt/mono", 14, 12, 24},
      {"exact_hlt/split", 14, 12, 24},
      {"exact_hlt/mut_missing_communication_schema", 14, 0, 0},
      {"body_mismatch/mono", 7, 7, 7},
      /* the 4th launch runs Sub where instance 7 captured Add: that launch alone mismatches */
      {"body_mismatch/mut_body_sequence_mismatch", 7, 6, 6},
      {"aclgraph_smoke/mono", 4, 0, 0},
      {"torchnpu/none", 14, 0, 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *msg = NULL;
    ck_assert_msg(analyze(db, cases[i].fixture, NULL, &msg), "%s: %s", cases[i].fixture, msg);
    ck_assert_int_eq(tl_scalar(db, "SELECT count(*) FROM traceloom_graph_launch"), cases[i].launches);
    ck_assert_int_eq(tl_scalar(db, "SELECT count(*) FROM traceloom_graph_launch WHERE anchor_id IS NOT NULL"),
                     cases[i].promoted);
    ck_assert_int_eq(tl_scalar(db, "SELECT count(*) FROM traceloom_graph_body_member"), cases[i].members);
    ck_assert_int_eq(tl_scalar(db, "SELECT count(*) FROM traceloom_replay_cost_member"), cases[i].members);
    /* Every region's launches are accounted for once. */
    ck_assert_int_eq(tl_scalar(db, "SELECT coalesce(sum(observed_launch_count), 0) FROM "
                                "traceloom_aclgraph_reconstruction_region"),
                     cases[i].launches);
  }
  sqlite3_close(db);
}
END_TEST

START_TEST(cuda_graph_fixture) {
  sqlite3 *db = open_db();
  char *msg = NULL;
  ck_assert_msg(analyze(db, "nsys/nsys_graph.sqlite", NULL, &msg), "%s", msg);
  ck_assert_int_gt(tl_scalar(db, "SELECT count(*) FROM traceloom_graph_launch WHERE graph_provider = 'cuda' "
                              "AND anchor_id IS NOT NULL"), 0);
  ck_assert_int_eq(tl_scalar(db, "SELECT count(*) FROM traceloom_graph_body_member m JOIN traceloom_anchor a "
                              "ON a.event_id = m.event_id"), 0);
  /* Each promoted CUDA launch is a recognized single-graph region of its own. */
  ck_assert_int_eq(tl_scalar(db, "SELECT count(*) FROM traceloom_aclgraph_reconstruction_region r "
                              "JOIN traceloom_graph_launch l ON l.graph_launch_occurrence_id = "
                              "r.first_launch_occurrence_id WHERE r.graph_provider = 'cuda' AND "
                              "r.status = 'recognized_complete_pattern' AND r.shape_policy = "
                              "'single_graph' AND r.observed_launch_count = 1 AND l.anchor_id IS NOT NULL "
                              "AND r.start_ns = l.start_ns AND r.end_ns = l.end_ns"),
                   tl_scalar(db, "SELECT count(*) FROM traceloom_graph_launch WHERE graph_provider = "
                              "'cuda' AND anchor_id IS NOT NULL"));
  ck_assert_int_eq(tl_scalar(db, "SELECT count(*) FROM traceloom_aclgraph_reconstruction_region"),
                   tl_scalar(db, "SELECT count(*) FROM traceloom_graph_launch WHERE anchor_id IS NOT NULL"));
  ck_assert_msg(analyze(db, "nsys/nsys_graphtrace.sqlite", NULL, &msg), "%s", msg);
  ck_assert_int_gt(tl_scalar(db, "SELECT count(*) FROM traceloom_cuda_graph_replay WHERE graph_kind = "
                              "'cuda_graph_trace'"), 0);
  ck_assert_int_eq(tl_scalar(db, "SELECT count(*) FROM traceloom_graph_body_member"), 0);
  sqlite3_close(db);
}
END_TEST

START_TEST(scheduler_context_with_step_partitions) {
  sqlite3 *db = open_db();
  char *dir = tl_fixture("context_gen/graph/context/*.jsonl");
  glob_t g;
  ck_assert_int_eq(glob(dir, 0, NULL, &g), 0);
  ck_assert_uint_eq(g.gl_pathc, 2);
  char opts[4096];
  snprintf(opts, sizeof opts, "{\"context\": [\"%s\", \"%s\"], \"rules_config\": \"scheduler-step\"}",
           g.gl_pathv[0], g.gl_pathv[1]);
  char *msg = NULL;
  ck_assert_msg(analyze(db, "context_gen/graph", opts, &msg), "%s", msg);
  int64_t members = tl_scalar(db, "SELECT count(*) FROM traceloom_graph_body_member");
  ck_assert_int_gt(members, 0);
  ck_assert_int_eq(tl_scalar(db, "SELECT count(DISTINCT member_id) FROM traceloom_v_context_replay_member"),
                   members);
  ck_assert_int_eq(tl_scalar(db, "SELECT count(*) FROM traceloom_metadata WHERE key = "
                              "'candidate_partition_by' AND value = 'scheduler_step'"), 1);
  /* The step rule without context is refused and the previous analysis stays. */
  ck_assert(!analyze(db, "context_gen/graph", "{\"rules_config\": \"scheduler-step\"}", &msg));
  ck_assert_msg(strstr(msg, "protected replay has missing or conflicting step identity"), "%s", msg);
  free(msg);
  ck_assert_int_eq(tl_scalar(db, "SELECT count(*) FROM traceloom_graph_body_member"), members);
  globfree(&g);
  free(dir);
  sqlite3_close(db);
}
END_TEST

/* The analyze option evidence_role_structure (ext/reports/structure_rows.c): the structure
** view reads the stored rows and gives the rows it computes without the option, each as many
** times (exact_hlt places a replay member once per launch of its unit: copies). */
START_TEST(stored_evidence_role_structure_rows) {
  sqlite3 *db = open_db();
  char *msg = NULL;
  ck_assert_msg(analyze(db, "exact_hlt/mono", NULL, &msg), "%s", msg);
  ck_assert_int_eq(tl_scalar(db, "SELECT count(*) FROM sqlite_schema WHERE name = "
                              "'traceloom_evidence_role_structure_core'"), 0);
  ck_assert_int_eq(sqlite3_exec(db, "CREATE TEMP TABLE computed AS SELECT *, count(*) AS n FROM "
                                    "traceloom_v_evidence_role_structure GROUP BY 1, 2, 3, 4, 5, "
                                    "6, 7, 8, 9", NULL, NULL, NULL), SQLITE_OK);
  ck_assert_msg(analyze(db, "exact_hlt/mono", "{\"evidence_role_structure\": true}", &msg), "%s", msg);
  ck_assert_int_gt(tl_scalar(db, "SELECT count(*) FROM traceloom_evidence_role_structure_core "
                              "WHERE copy > 0"), 0);
  ck_assert_int_eq(tl_scalar(db, "SELECT count(*) FROM traceloom_evidence_role_structure_core"),
                   tl_scalar(db, "SELECT sum(n) FROM temp.computed"));
  ck_assert_int_eq(tl_scalar(db, "SELECT count(*) FROM (SELECT *, count(*) FROM "
                              "traceloom_v_evidence_role_structure GROUP BY 1, 2, 3, 4, 5, 6, 7, "
                              "8, 9 EXCEPT SELECT * FROM temp.computed)"), 0);
  ck_assert_int_gt(tl_scalar(db, "SELECT count(*) FROM temp.computed"), 0);
  sqlite3_close(db);
}
END_TEST

/* interrupted_analyze(path): interrupts its own connection, then runs the analysis (as
** Ctrl-C during traceloom_analyze does) and reports the error code and message. */
static void interrupted_analyze(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  (void)argc;
  sqlite3 *db = sqlite3_context_db_handle(ctx);
  sqlite3_interrupt(db);
  tl_err e = {0};
  char *summary = NULL;
  int rc = tl_analyze(db, (const char *)sqlite3_value_text(argv[0]), NULL, &summary, &e);
  char *out = sqlite3_mprintf("%d %d %s", rc, e.code, e.msg ? e.msg : "");
  sqlite3_result_text(ctx, out, -1, sqlite3_free);
  tl_err_clear(&e);
  free(summary);
}

static void interrupt_now(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  (void)argc, (void)argv;
  sqlite3_interrupt(sqlite3_context_db_handle(ctx));
  sqlite3_result_int(ctx, 1);
}

/* An interrupt is an error code callers branch on (traceloom_analyze reports
** SQLITE_INTERRUPT), not a word in the message; nothing is published. */
START_TEST(interrupt_is_an_error_code) {
  sqlite3 *db = open_db();
  ck_assert_int_eq(sqlite3_create_function(db, "interrupted_analyze", 1, SQLITE_UTF8, NULL,
                                           interrupted_analyze, NULL, NULL),
                   SQLITE_OK);
  char *path = tl_fixture("minimal_smoke/mono");
  sqlite3_stmt *st;
  ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT interrupted_analyze(?1)", -1, &st, NULL), SQLITE_OK);
  sqlite3_bind_text(st, 1, path, -1, SQLITE_TRANSIENT);
  ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
  char want[128];
  snprintf(want, sizeof want, "%d %d interrupted (before inventory); nothing was published", TL_ERROR,
           TL_ERR_INTERRUPTED);
  ck_assert_str_eq((const char *)sqlite3_column_text(st, 0), want);
  sqlite3_finalize(st);
  ck_assert_int_eq(tl_scalar(db, "SELECT count(*) FROM sqlite_schema WHERE name LIKE 'traceloom%'"), 0);
  /* Through the SQL function, interrupted while its statement runs: the statement fails
  ** with SQLITE_INTERRUPT and the analysis' own message. */
  ck_assert_int_eq(sqlite3_create_function(db, "interrupt_now", 0, SQLITE_UTF8, NULL,
                                           interrupt_now, NULL, NULL),
                   SQLITE_OK);
  ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT interrupt_now(), traceloom_analyze(?1)", -1, &st,
                                      NULL),
                   SQLITE_OK);
  sqlite3_bind_text(st, 1, path, -1, SQLITE_TRANSIENT);
  ck_assert_int_eq(sqlite3_step(st), SQLITE_INTERRUPT);
  ck_assert_str_eq(sqlite3_errmsg(db), "interrupted (before inventory); nothing was published");
  sqlite3_finalize(st);
  free(path);
  sqlite3_close(db);
}
END_TEST

/* The CLI's analysis renders the loop tree Markdown from its trees in memory (tl_analyze_ex,
** on a thread beside the publication, in line with threads 1): the bytes must be those of
** traceloom_loop_tree over what it published, for each view; the short version comes with
** it. Under ASan this runs the rows' build, the thread and the render. */
START_TEST(loop_tree_rendered_from_memory) {
  static const struct {
    const char *fixture, *options, *view;
  } cases[] = {
      {"exact_hlt/mono", NULL, NULL},
      {"exact_hlt/mono", "{\"threads\": 1}", "{\"view\": \"both\"}"},
      {"split_golden/split", NULL, "{\"view\": \"expanded\"}"},
      {"minimal_smoke/mono", NULL, NULL},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    sqlite3 *db = open_db();
    char *path = tl_fixture(cases[i].fixture), *summary = NULL;
    tl_analyze_extra x = {cases[i].view, NULL, NULL};
    tl_err e = {0};
    ck_assert_msg(tl_analyze_ex(db, path, cases[i].options, &x, &summary, &e) == TL_OK, "%s: %s",
                  cases[i].fixture, e.msg ? e.msg : "?");
    ck_assert_ptr_nonnull(x.loop_tree_md);
    ck_assert_ptr_nonnull(x.loop_tree_summary);
    sqlite3_stmt *st;
    ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT traceloom_loop_tree(?1)", -1, &st, NULL), SQLITE_OK);
    if (cases[i].view) sqlite3_bind_text(st, 1, cases[i].view, -1, SQLITE_STATIC);
    ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
    ck_assert_str_eq(x.loop_tree_md, (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    free(x.loop_tree_md), free(x.loop_tree_summary), free(summary), free(path);
    sqlite3_close(db);
  }
}
END_TEST

/* The entry point refuses an SQLite older than the views and API calls need, and says
** which version it found and which it needs; 3.35.0 itself and this process's SQLite load. */
START_TEST(older_sqlite_is_refused_by_name) {
  char *why = traceloom_unsupported_sqlite(3034001, "3.34.1");
  ck_assert_ptr_nonnull(why);
  ck_assert_msg(strstr(why, "3.35.0") && strstr(why, "3.34.1"), "%s", why);
  sqlite3_free(why);
  why = traceloom_unsupported_sqlite(3031001, NULL);
  ck_assert_msg(why && strstr(why, "(unknown)"), "%s", why ? why : "(null)");
  sqlite3_free(why);
  ck_assert_ptr_null(traceloom_unsupported_sqlite(3035000, "3.35.0"));
  ck_assert_ptr_null(traceloom_unsupported_sqlite(sqlite3_libversion_number(),
                                                  sqlite3_libversion()));
  /* the views of an analysis do use a 3.35 construct: the threshold is not arbitrary */
  sqlite3 *db = open_db();
  char *msg = NULL;
  ck_assert_msg(analyze(db, "aclgraph_smoke/mono", NULL, &msg), "%s", msg ? msg : "");
  sqlite3_stmt *st;
  ck_assert_int_eq(sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_master WHERE type = "
                                          "'view' AND sql LIKE '%AS NOT MATERIALIZED%'",
                                      -1, &st, NULL),
                   SQLITE_OK);
  ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
  ck_assert_int_gt(sqlite3_column_int(st, 0), 0);
  sqlite3_finalize(st);
  sqlite3_close(db);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("analyze_e2e");
  TCase *tc = tcase_create("e2e");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, acl_graph_fixtures);
  tcase_add_test(tc, cuda_graph_fixture);
  tcase_add_test(tc, scheduler_context_with_step_partitions);
  tcase_add_test(tc, stored_evidence_role_structure_rows);
  tcase_add_test(tc, interrupt_is_an_error_code);
  tcase_add_test(tc, loop_tree_rendered_from_memory);
  tcase_add_test(tc, older_sqlite_is_refused_by_name);
  suite_add_tcase(s, tc);
  return s;
}

TL_CHECK_MAIN(suite)
