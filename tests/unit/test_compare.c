/*
** test_compare.c: traceloom_compare in process (so `make test-asan` runs reading, alignment,
** effects, publication and the report under AddressSanitizer and UBSan), on the generated
** pairs of tests/fixtures/make_compare.py, plus the error paths of options and the families
** manifest. tests/sql/compare.sql and tests/python/test_compare.py assert the outcomes in
** full; the numbers here come from the generator's parameters (see make_compare.py).
*/
#include "tl_check.h"
#include "util/sqlite_api.h"
#include "compare/compare_int.h"

#include <unistd.h>

int sqlite3_traceloom_init(sqlite3 *db, char **err, const sqlite3_api_routines *api);

static sqlite3 *open_db(const char *path) {
  sqlite3 *db = NULL;
  ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
  char *err = NULL;
  ck_assert_msg(sqlite3_traceloom_init(db, &err, NULL) == SQLITE_OK, "init: %s", err ? err : "?");
  return db;
}

/* SELECT fn(a [, b]); returns the text result (malloc'd) or NULL with *msg set. */
static char *call(sqlite3 *db, const char *sql, const char *a, const char *b, char **msg) {
  sqlite3_stmt *st;
  ck_assert_msg(sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK, "%s: %s", sql,
                sqlite3_errmsg(db));
  if (a) sqlite3_bind_text(st, 1, a, -1, SQLITE_TRANSIENT);
  if (b) sqlite3_bind_text(st, 2, b, -1, SQLITE_TRANSIENT);
  char *out = NULL;
  if (sqlite3_step(st) == SQLITE_ROW)
    out = strdup((const char *)sqlite3_column_text(st, 0));
  else if (msg)
    *msg = strdup(sqlite3_errmsg(db));
  sqlite3_finalize(st);
  return out;
}

/* Analyses fixtures/compare/<name> into a new file; returns its path (malloc'd). */
static char *analysed(const char *name) {
  char *tmpl = strdup("/tmp/tl_compare_XXXXXX");
  int fd = mkstemp(tmpl);
  ck_assert_int_ge(fd, 0);
  close(fd);
  unlink(tmpl);
  sqlite3 *db = open_db(tmpl);
  char rel[128];
  snprintf(rel, sizeof rel, "compare/%s", name);
  char *path = tl_fixture(rel), *msg = NULL;
  char *summary = call(db, "SELECT traceloom_analyze(?1, '{\"threads\": 1}')", path, NULL, &msg);
  ck_assert_msg(summary != NULL, "analyze %s: %s", path, msg ? msg : "?");
  free(summary), free(path), free(msg);
  sqlite3_close(db);
  return tmpl;
}

/* traceloom_compare(base, options) that must succeed. */
static void compare_ok(sqlite3 *db, const char *base, const char *options) {
  char *msg = NULL;
  char *s = call(db, options ? "SELECT traceloom_compare(?1, ?2)" : "SELECT traceloom_compare(?1)",
                 base, options, &msg);
  ck_assert_msg(s != NULL, "%s", msg ? msg : "?");
  free(s), free(msg);
}

static void remove_db(char *path) {
  unlink(path);
  free(path);
}

START_TEST(slower_operator_and_added_kernel) {
  char *base = analysed("base"), *slow = analysed("slow"), *extra = analysed("extra");
  sqlite3 *db = open_db(":memory:");
  char opt[4200], *msg = NULL;
  snprintf(opt, sizeof opt, "{\"new\": \"%s\"}", slow);
  compare_ok(db, base, opt);
  /* 10% of the 25,000 ns decode attention in one layer, 6 decode steps. */
  ck_assert_int_eq(tl_scalar(db, "SELECT new_total_ns - base_total_ns FROM traceloom_compare_tree"), 15000);
  ck_assert_int_eq(tl_scalar(db, "SELECT count(*) FROM traceloom_compare_rank r JOIN traceloom_compare_node n "
                              "ON n.node_key = r.node_key WHERE r.rank = 1 AND r.effect = 'slower' "
                              "AND n.new_symbol = 'IncreFlashAttention' AND r.contribution_ns = 15000"), 1);
  char *md = call(db, "SELECT traceloom_compare_report()", NULL, NULL, &msg);
  ck_assert_msg(md && strstr(md, "| 1 | slower | Rep x6 > Rep x4 > IncreFlashAttention |"), "%s", md ? md : msg);
  free(md);
  /* Published into a database that is itself the new analysis: the extra kernel. */
  sqlite3_close(db);
  db = open_db(extra);
  compare_ok(db, base, NULL);
  ck_assert_int_eq(tl_scalar(db, "SELECT count(*) FROM traceloom_compare_node WHERE alignment = 'added' "
                              "AND new_symbol = 'Add' AND new_occurrences = 6"), 1);
  ck_assert_int_eq(tl_scalar(db, "SELECT count(*) FROM traceloom_analysis_surface "
                              "WHERE surface_name LIKE 'traceloom_compare_%'"), 8);
  sqlite3_close(db);
  free(msg);
  remove_db(base), remove_db(slow), remove_db(extra);
}
END_TEST

START_TEST(long_child_lists_align_windowed) {
  char *a = analysed("noisy_a"), *b = analysed("noisy_b");
  sqlite3 *db = open_db(":memory:");
  char opt[4200];
  snprintf(opt, sizeof opt, "{\"new\": \"%s\", \"top\": 50}", b);
  compare_ok(db, a, opt);
  ck_assert_int_eq(tl_scalar(db, "SELECT alignment = 'windowed' FROM traceloom_compare_tree"), 1);
  /* The decomposition holds however the alignment went: every effect sums to the delta,
  ** within half a ns of rounding per node. */
  ck_assert_int_le(tl_scalar(db, "SELECT abs((new_total_ns - base_total_ns) - "
                              "(SELECT sum(contribution_ns) FROM traceloom_compare_effect)) - "
                              "(SELECT count(*) FROM traceloom_compare_node) FROM traceloom_compare_tree"), 0);
  ck_assert_int_eq(tl_scalar(db, "SELECT count(*) FROM traceloom_compare_rank"), 50);
  /* Base against itself: everything matches exactly and nothing changed. */
  snprintf(opt, sizeof opt, "{\"new\": \"%s\"}", a);
  compare_ok(db, a, opt);
  ck_assert_int_eq(tl_scalar(db, "SELECT nodes_added + nodes_removed + abs(rate_ns) + abs(count_ns) "
                              "FROM traceloom_compare_tree"), 0);
  ck_assert_int_eq(tl_scalar(db, "SELECT count(*) FROM traceloom_compare_rank"), 0);
  sqlite3_close(db);
  remove_db(a), remove_db(b);
}
END_TEST

START_TEST(errors_name_the_problem) {
  char *base = analysed("base");
  sqlite3 *db = open_db(":memory:");
  struct {
    const char *options, *want;
  } cases[] = {
      {"[1]", "options must be a JSON object"},
      {"{\"noise_z\": -1}", "\"noise_z\" must be a number"},
      {"{\"new\": 3}", "\"new\" must be a non-empty path string"},
      {"{\"new\": \"/nonexistent/x.db\"}", "cannot open the new analysis"},
      {"{\"families\": \"/nonexistent/f.yaml\"}", "cannot open families manifest /nonexistent/f.yaml"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *msg = NULL;
    char *s = call(db, "SELECT traceloom_compare(?1, ?2)", base, cases[i].options, &msg);
    ck_assert_msg(s == NULL && msg && strstr(msg, cases[i].want), "%s: %s", cases[i].options,
                  msg ? msg : s);
    free(msg);
  }
  /* An empty main database is no analysis to compare. */
  char *msg = NULL;
  ck_assert_ptr_null(call(db, "SELECT traceloom_compare(?1)", base, NULL, &msg));
  ck_assert_msg(strstr(msg, "the new analysis") && strstr(msg, "has no relation traceloom_semantic_tree"),
                "%s", msg);
  free(msg);
  sqlite3_close(db);
  remove_db(base);
}
END_TEST

/* Reads the hand-written analysis of reader_positions_by_tree_and_id and checks its trees. */
static void check_hand_written(sqlite3 *db, tl_strpool *pool, const tl_cmp_families *f) {
  tl_err e = {0};
  cmp_side s;
  memset(&s, 0, sizeof s);
  s.what = "base", s.path = "hand-written";
  ck_assert_msg(tl_cmp_read(db, &s, pool, f, &e) == TL_OK, "%s", e.msg ? e.msg : "?");
  ck_assert_int_eq(s.trees.n, 2);
  ck_assert_int_eq(s.positions.n, 6);
  for (size_t t = 0; t < 2; t++) {
    const cmp_node *root = &s.nodes.v[s.trees.v[t].root_node];
    ck_assert_int_eq(s.positions.v[root->position].tree, (int)t);
    ck_assert_int_eq(s.positions.v[root->position].nslots, 2);
    const char *want[] = {"MatMul", "Add"};
    for (int k = 0; k < 2; k++) {
      const cmp_node *c = &s.nodes.v[s.node_child.v[root->child0 + k]];
      const cmp_position *p = &s.positions.v[c->position];
      ck_assert_int_eq(p->tree, (int)t);
      ck_assert_str_eq(tl_strpool_str(pool, p->symbol), want[k]);
      ck_assert_int_eq(c->compute_ns, (t ? 4000 : 1000) + 1000 * k);
    }
  }
  tl_cmp_side_free(&s);
}

/* The reader's position lookups on a hand-written analysis: two trees whose positions share
** ids, a repeated traceloom_viz_node row (the first wins), and refinement rows in and out of
** traceloom_viz_node's order (the next position's text is tried first, then the id). */
START_TEST(reader_positions_by_tree_and_id) {
  sqlite3 *db = open_db(":memory:");
  const char *sql =
      "CREATE TABLE traceloom_semantic_tree(db_idx, device_id, root_node_id);"
      "INSERT INTO traceloom_semantic_tree VALUES (0, 0, 'R'), (0, 1, 'R');"
      "CREATE TABLE traceloom_viz_node(node_id, db_idx, device_id, node_type, symbol, label, repeat_count);"
      "INSERT INTO traceloom_viz_node VALUES ('R', 0, 0, 'Seq', NULL, 'Seq', NULL),"
      " ('A', 0, 0, 'Atom', 'MatMul', 'MatMul', NULL), ('B', 0, 0, 'Atom', 'Add', 'Add', NULL),"
      " ('R', 0, 1, 'Seq', NULL, 'Seq', NULL), ('B', 0, 1, 'Atom', 'Add', 'Add', NULL),"
      " ('A', 0, 1, 'Atom', 'MatMul', 'MatMul', NULL), ('A', 0, 0, 'Atom', 'Dup', 'Dup', NULL);"
      "CREATE TABLE traceloom_position_refinement(parent_position_id, slot_ordinal, child_position_id, db_idx, device_id);"
      "INSERT INTO traceloom_position_refinement VALUES ('R', 1, 'A', 0, 0), ('R', 2, 'B', 0, 0),"
      " ('R', 2, 'B', 0, 1), ('R', 1, 'A', 0, 1);"
      "CREATE TABLE traceloom_position_occurrence(occurrence_n, parent_n, db_idx, device_id, slot_ordinal,"
      " repeat_iteration, compute_us, comm_us, idle_us);"
      "INSERT INTO traceloom_position_occurrence VALUES (1, NULL, 0, 0, NULL, NULL, 3, 0, 0),"
      " (2, 1, 0, 0, 1, NULL, 1, 0, 0), (3, 1, 0, 0, 2, NULL, 2, 0, 0),"
      " (4, NULL, 0, 1, NULL, NULL, 9, 0, 0), (5, 4, 0, 1, 2, NULL, 5, 0, 0),"
      " (6, 4, 0, 1, 1, NULL, 4, 0, 0);";
  ck_assert_int_eq(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
  tl_err e = {0};
  tl_cmp_families *f = NULL;
  ck_assert_int_eq(tl_cmp_families_load(NULL, &f, &e), TL_OK);
  tl_strpool *pool = tl_strpool_new();
  /* Twice: as published (occurrence_n 1..n, the arrays sized from the largest), then
  ** renumbered past any size hint (grown as they fill, parents found through a map). */
  check_hand_written(db, pool, f);
  ck_assert_int_eq(sqlite3_exec(db, "UPDATE traceloom_position_occurrence SET "
                                    "occurrence_n = occurrence_n + (1 << 40), "
                                    "parent_n = parent_n + (1 << 40)", NULL, NULL, NULL),
                   SQLITE_OK);
  check_hand_written(db, pool, f);
  tl_strpool_free(pool);
  tl_cmp_families_free(f);
  sqlite3_close(db);
}
END_TEST

/* The families manifest: first match wins, errors carry file:line. */
START_TEST(families_manifest) {
  tl_err e = {0};
  tl_cmp_families *f = NULL;
  ck_assert_int_eq(tl_cmp_families_load(NULL, &f, &e), TL_OK);
  const char *cases[][2] = {
      {"AddRmsNorm", "norm"},        {"aten::addmm", "matmul"},
      {"IncreFlashAttention", "attention"}, {"ncclDevKernel_AllReduce_Sum_bf16_RING_LL", "all_reduce"},
      {"sm90_xmma_gemm_bf16bf16", "matmul"}, {"aten::add", "elementwise"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    ck_assert_str_eq(tl_cmp_family_name(f, tl_cmp_family_of(f, cases[i][0])), cases[i][1]);
  ck_assert_int_eq(tl_cmp_family_of(f, "MysteryKernel"), -1);
  tl_cmp_families_free(f);

  const char *bad[][2] = {
      {"schema: traceloom-compare-families-v1\nfamilies:\n  - family: x\n    contain: [a]\n",
       ":4: unknown key \"contain\""},
      {"schema: other\nfamilies: []\n", ":1: schema must be traceloom-compare-families-v1"},
      {"schema: traceloom-compare-families-v1\nfamilies:\n  - family: x\n  - family: x\n",
       ":4: family \"x\" is listed twice"},
      {"schema: traceloom-compare-families-v1\nfamilies:\n  - family: x\n    equals: y\n",
       ":4: \"equals\" must be a sequence of strings"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char path[] = "/tmp/tl_families_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, bad[i][0], strlen(bad[i][0])), (ssize_t)strlen(bad[i][0]));
    close(fd);
    f = NULL;
    ck_assert_int_eq(tl_cmp_families_load(path, &f, &e), TL_ERROR);
    ck_assert_ptr_null(f);
    ck_assert_msg(e.msg && strstr(e.msg, path) && strstr(e.msg, bad[i][1]), "%s", e.msg);
    tl_err_clear(&e);
    unlink(path);
  }
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("compare");
  TCase *tc = tcase_create("compare");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, slower_operator_and_added_kernel);
  tcase_add_test(tc, long_child_lists_align_windowed);
  tcase_add_test(tc, errors_name_the_problem);
  tcase_add_test(tc, reader_positions_by_tree_and_id);
  tcase_add_test(tc, families_manifest);
  suite_add_tcase(s, tc);
  return s;
}

TL_CHECK_MAIN(suite)
