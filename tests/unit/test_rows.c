/*
** test_rows.c: traceloom_rows, the bulk insert from C arrays (ext/publish/rows.c).
**
** The rows a producer gives arrive as given, whatever the target: in particular a key that
** is the rowid SQLite would assign (the table's largest + 1) is handed over as NULL, so that
** SQLite appends without probing the B-tree, and every other key (the first of a range, a
** gap, keys out of order, negative, under rows already there) as it is. A BEFORE INSERT
** trigger sees -1 for a key SQLite assigns, which is how the tests tell the two apart.
** Tables whose primary key is not the rowid (WITHOUT ROWID, DESC, INT, composite) and a temp
** table shadowing main's get every key as given; the connection gains no temp database.
*/
#include "tl_check.h"
#include "publish/rows.h"

static void exec_ok(sqlite3 *db, const char *sql) {
  char *msg = NULL;
  ck_assert_msg(sqlite3_exec(db, sql, NULL, NULL, &msg) == SQLITE_OK, "%s: %s", sql,
                msg ? msg : "?");
}

static sqlite3 *open_db(void) {
  sqlite3 *db = NULL;
  ck_assert_int_eq(sqlite3_open(":memory:", &db), SQLITE_OK);
  ck_assert_int_eq(sqlite3_create_module_v2(db, "traceloom_rows", &tl_rows_module, NULL, NULL),
                   SQLITE_OK);
  return db;
}

/* Rows (key, value): key from a list (INT64_MIN: NULL), value = 7 * position + 3. */
typedef struct keyed_rows {
  const int64_t *keys;
} keyed_rows;

static int fill_keyed(void *ctx, size_t row, int64_t *v, unsigned char *null) {
  const keyed_rows *k = ctx;
  v[0] = k->keys[row], null[0] = k->keys[row] == INT64_MIN;
  v[1] = 7 * (int64_t)row + 3, null[1] = 0;
  return 0;
}

static void insert_keys(sqlite3 *db, const char *table, const int64_t *keys, size_t n) {
  keyed_rows k = {keys};
  tl_rows rows = {.nrows = n, .ncols = 2, .fill = fill_keyed, .ctx = &k};
  tl_err e = {0};
  int rc = tl_rows_insert(db, table, "n, a", &rows, &e);
  ck_assert_msg(rc == TL_OK, "insert into %s: %s", table, e.msg ? e.msg : "?");
  tl_err_clear(&e);
}

/* The keys the BEFORE INSERT trigger of `table` logged as SQLite's own (-1). */
static int64_t assigned(sqlite3 *db) { return tl_scalar(db, "SELECT count(*) FROM log WHERE k = -1"); }

static void add_log(sqlite3 *db, const char *table) {
  char *sql = sqlite3_mprintf("CREATE TABLE IF NOT EXISTS log(k); DELETE FROM log; "
                              "CREATE TRIGGER \"%w_log\" BEFORE INSERT ON \"%w\" "
                              "BEGIN INSERT INTO log VALUES (NEW.n); END",
                              table, table);
  exec_ok(db, sql);
  sqlite3_free(sql);
}

/* Each row's a is 7 * position + 3 and its n the key at that position (the assigned key of a
** NULL one given). */
static void check_rows(sqlite3 *db, const char *table, const int64_t *expect, size_t n) {
  char *sql = sqlite3_mprintf("SELECT n, a FROM \"%w\" WHERE a %% 7 = 3 ORDER BY a", table);
  sqlite3_stmt *st;
  ck_assert_int_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
  sqlite3_free(sql);
  size_t i = 0;
  for (; sqlite3_step(st) == SQLITE_ROW; i++) {
    ck_assert_uint_lt(i, n);
    ck_assert_int_eq(sqlite3_column_int64(st, 1), 7 * (int64_t)i + 3);
    ck_assert_msg(sqlite3_column_type(st, 0) == SQLITE_INTEGER, "row %zu of %s: key NULL", i,
                  table);
    ck_assert_int_eq(sqlite3_column_int64(st, 0), expect[i]);
  }
  ck_assert_uint_eq(i, n);
  sqlite3_finalize(st);
}

START_TEST(dense_keys_are_appended_as_sqlite_assigns_them) {
  sqlite3 *db = open_db();
  exec_ok(db, "CREATE TABLE t(n INTEGER PRIMARY KEY, a INTEGER)");
  add_log(db, "t");
  enum { N = 1000 };
  int64_t keys[N];
  for (int i = 0; i < N; i++) keys[i] = i; /* 0-based, as the core tables */
  insert_keys(db, "t", keys, N);
  check_rows(db, "t", keys, N);
  /* 0 is given (an empty table's first rowid is 1), 1 .. 999 are SQLite's */
  ck_assert_int_eq(assigned(db), N - 1);
  ck_assert_int_eq(tl_scalar(db, "SELECT k FROM log WHERE k <> -1"), 0);
  /* finding the rowid opened no temp database (pragma_database_list would show it) */
  ck_assert_int_eq(tl_scalar(db, "SELECT count(*) FROM pragma_database_list"), 1);
  /* an upper range appended later: its first key follows the largest one, all assigned */
  exec_ok(db, "DELETE FROM log");
  int64_t more[N];
  for (int i = 0; i < N; i++) more[i] = N + i;
  insert_keys(db, "t", more, N);
  ck_assert_int_eq(assigned(db), N);
  ck_assert_int_eq(tl_scalar(db, "SELECT count(*) FROM t"), 2 * N);
  ck_assert_int_eq(tl_scalar(db, "SELECT min(n) = 0 AND max(n) = 1999 FROM t"), 1);
  sqlite3_close(db);
}
END_TEST

START_TEST(gaps_order_and_earlier_rows_keep_their_keys) {
  sqlite3 *db = open_db();
  exec_ok(db, "CREATE TABLE t(n INTEGER PRIMARY KEY, a INTEGER); "
              "INSERT INTO t VALUES (5, 1), (100, 8)"); /* a % 7 = 1: not checked rows */
  add_log(db, "t");
  const int64_t keys[] = {101, 102, 50, 51, 103, 200, 201, -3, 202, INT64_MIN, 205};
  /* NULL from the producer: SQLite assigns 203, the largest so far (202) + 1 */
  const int64_t expect[] = {101, 102, 50, 51, 103, 200, 201, -3, 202, 203, 205};
  insert_keys(db, "t", keys, sizeof keys / sizeof keys[0]);
  check_rows(db, "t", expect, sizeof expect / sizeof expect[0]);
  /* 101, 102, 103, 201, 202 and the NULL are SQLite's; 50, 51, 200, -3, 205 given */
  ck_assert_int_eq(assigned(db), 6);
  ck_assert_int_eq(tl_scalar(db, "SELECT count(*) FROM t"), 13);
  sqlite3_close(db);
}
END_TEST

/* Each declaration of t in turn: the 50 keys 1..50 inserted through tl_rows_insert come out
** as given, and SQLite assigned none of them (assign 0) or all of them (assign 1). */
static void check_declarations(const char *const *decls, size_t ndecls, int assign) {
  sqlite3 *db = open_db();
  enum { N = 50 };
  int64_t keys[N];
  for (int i = 0; i < N; i++) keys[i] = i + 1;
  for (size_t d = 0; d < ndecls; d++) {
    exec_ok(db, "DROP TABLE IF EXISTS t; DROP TABLE IF EXISTS log");
    exec_ok(db, decls[d]);
    add_log(db, "t");
    insert_keys(db, "t", keys, N);
    check_rows(db, "t", keys, N);
    ck_assert_msg(assigned(db) == (assign ? N : 0), "%s: %lld keys assigned", decls[d],
                  (long long)assigned(db));
  }
  sqlite3_close(db);
}

START_TEST(keys_that_are_not_the_rowid_are_given) {
  static const char *const decls[] = {
      "CREATE TABLE t(n INTEGER PRIMARY KEY, a INTEGER) WITHOUT ROWID",
      "CREATE TABLE t(n INTEGER PRIMARY KEY DESC, a INTEGER)",
      "CREATE TABLE t(n INT PRIMARY KEY, a INTEGER)",
      "CREATE TABLE t(n INTEGER, a INTEGER, PRIMARY KEY (n, a))",
      "CREATE TABLE t(n INTEGER, a INTEGER)",
      "CREATE TABLE t(n INTEGER PRIMARY KEY, a INTEGER) -- no rowid\n WITHOUT ROWID",
  };
  check_declarations(decls, sizeof decls / sizeof decls[0], 0);
}
END_TEST

/* The rowid's declared forms SQLite treats as the rowid, whatever else the text says. */
START_TEST(rowid_forms_get_keys_assigned) {
  static const char *const decls[] = {
      "CREATE TABLE t(n INTEGER PRIMARY KEY, a INTEGER) -- keys in DESC order elsewhere",
      "CREATE TABLE t(n integer primary key, a INTEGER)",
      "CREATE TABLE t(n INTEGER, a INTEGER, PRIMARY KEY (n DESC))",
  };
  check_declarations(decls, sizeof decls / sizeof decls[0], 1);
}
END_TEST

/* INSERT INTO t names temp.t when there is one: main's t says nothing about it. */
START_TEST(a_temp_table_of_the_same_name_gets_its_keys) {
  sqlite3 *db = open_db();
  /* main's t is empty (its next rowid 1), temp's holds 500 (its next 501) */
  exec_ok(db, "CREATE TABLE main.t(n INTEGER PRIMARY KEY, a INTEGER); "
              "CREATE TEMP TABLE t(n INTEGER PRIMARY KEY, a INTEGER); "
              "INSERT INTO temp.t VALUES (500, 1); "
              "CREATE TEMP TABLE log(k); "
              "CREATE TEMP TRIGGER t_log BEFORE INSERT ON temp.t BEGIN INSERT INTO log VALUES (NEW.n); END");
  enum { N = 20 };
  int64_t keys[N];
  for (int i = 0; i < N; i++) keys[i] = i + 1;
  insert_keys(db, "t", keys, N);
  check_rows(db, "t", keys, N);
  ck_assert_int_eq(assigned(db), 0);
  ck_assert_int_eq(tl_scalar(db, "SELECT count(*) FROM temp.t"), N + 1);
  ck_assert_int_eq(tl_scalar(db, "SELECT count(*) FROM main.t"), 0);
  sqlite3_close(db);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("rows");
  TCase *tc = tcase_create("rows");
  tcase_add_test(tc, dense_keys_are_appended_as_sqlite_assigns_them);
  tcase_add_test(tc, gaps_order_and_earlier_rows_keep_their_keys);
  tcase_add_test(tc, keys_that_are_not_the_rowid_are_given);
  tcase_add_test(tc, rowid_forms_get_keys_assigned);
  tcase_add_test(tc, a_temp_table_of_the_same_name_gets_its_keys);
  suite_add_tcase(s, tc);
  return s;
}

TL_CHECK_MAIN(suite)
