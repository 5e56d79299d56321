/*
** bare_scan: the bare-SQLite floor that TraceLoom's readers are measured against.
**
**   bare_scan [--repeat N] [--copy-to OUT.db] [--table NAME] DB...
**
** For each profile database it times
**   scan  one prepared SELECT of the columns the reader uses from the device task table
**         (Ascend TASK, else Nsight CUPTI_ACTIVITY_KIND_KERNEL), stepped to the end with
**         every column read through sqlite3_column_int64;
**   reader  the same, for every table the reader reads (Ascend: TASK, STRING_IDS,
**         COMPUTE_TASK_INFO, COMMUNICATION_TASK_INFO grouped by globalTaskId,
**         COMMUNICATION_OP; Nsight: the kernel, memcpy, memset, synchronization, CUDA event
**         and graph trace tables that exist): the floor for normalizing events, since the
**         identity joins must read those rows too;
**   copy  CREATE TABLE copy AS SELECT <the same columns> into a fresh database file
**         (journal off, synchronous off: the cheapest write SQLite offers), with the
**         profile attached read-only;
**   contract copy (with --copy-to) the same kind of copy of every source row that the
**         output contract stores one row per observation: every device event (TASK and
**         COMMUNICATION_OP, or the kernel, memcpy, memset and synchronization tables) and
**         every runtime call (CANN_API, or CUPTI_ACTIVITY_KIND_RUNTIME), with no index. Reading
**         the sources (reader) plus this copy is a floor under any analysis that publishes
**         outputs.md: it neither normalizes, relates nor recovers anything.
** and prints one JSON object with seconds and rows/s (best of N repeats, totals over all
** DBs) and the peak RSS of this process. bench/run.sh builds and runs it.
*/
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

/* Columns of inputs.md section 3.2 (Ascend TASK) and section 6 (Nsight kernels). */
static const char *const ascend_columns =
    "rowid, startNs, endNs, deviceId, streamId, taskId, globalTaskId, connectionId, "
    "contextId, taskType, modelId";
static const char *const nsys_columns =
    "rowid, start, \"end\", deviceId, streamId, correlationId, shortName, demangledName, "
    "graphNodeId, contextId";

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(sqlite3 *db, const char *what) {
  fprintf(stderr, "bare_scan: %s: %s\n", what, db ? sqlite3_errmsg(db) : "out of memory");
  exit(1);
}

static int table_exists(sqlite3 *db, const char *schema, const char *table) {
  char *sql = sqlite3_mprintf("SELECT 1 FROM \"%w\".sqlite_master WHERE type='table' AND name=%Q",
                              schema, table);
  sqlite3_stmt *stmt = NULL;
  int found = 0;
  if (!sql) die(NULL, "mprintf");
  if (sqlite3_prepare_v2(db, sql, -1, &stmt, NULL) != SQLITE_OK) die(db, sql);
  found = sqlite3_step(stmt) == SQLITE_ROW;
  sqlite3_finalize(stmt);
  sqlite3_free(sql);
  return found;
}

/* Picks the device task table of a profile and the columns to read from it. */
static const char *pick_table(sqlite3 *db, const char *schema, const char *forced,
                              const char **columns) {
  if (forced) {
    *columns = strcmp(forced, "TASK") == 0 ? ascend_columns : nsys_columns;
    return forced;
  }
  if (table_exists(db, schema, "TASK")) {
    *columns = ascend_columns;
    return "TASK";
  }
  if (table_exists(db, schema, "CUPTI_ACTIVITY_KIND_KERNEL")) {
    *columns = nsys_columns;
    return "CUPTI_ACTIVITY_KIND_KERNEL";
  }
  return NULL;
}

/* One full scan; returns rows, folds every value into *checksum so nothing is skipped. */
static int64_t scan_once(sqlite3 *db, const char *table, const char *columns, uint64_t *checksum) {
  char *sql = sqlite3_mprintf("SELECT %s FROM \"%w\"", columns, table);
  sqlite3_stmt *stmt = NULL;
  int64_t rows = 0;
  int rc;
  if (!sql) die(NULL, "mprintf");
  if (sqlite3_prepare_v2(db, sql, -1, &stmt, NULL) != SQLITE_OK) die(db, sql);
  int ncol = sqlite3_column_count(stmt);
  while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
    uint64_t h = 0;
    for (int i = 0; i < ncol; i++) h = h * 31u + (uint64_t)sqlite3_column_int64(stmt, i);
    *checksum += h;
    rows++;
  }
  if (rc != SQLITE_DONE) die(db, "scan");
  sqlite3_finalize(stmt);
  sqlite3_free(sql);
  return rows;
}

/* Every table the events reader reads, with its columns (absent tables are skipped). */
static const char *const reader_queries[][2] = {
    {"TASK", "SELECT rowid, startNs, endNs, deviceId, streamId, taskId, globalTaskId, "
             "connectionId, contextId, taskType, modelId FROM TASK"},
    {"STRING_IDS", "SELECT id, value FROM STRING_IDS"},
    {"COMPUTE_TASK_INFO", "SELECT globalTaskId, name, opType, taskType FROM COMPUTE_TASK_INFO"},
    {"COMMUNICATION_TASK_INFO", "SELECT globalTaskId, MIN(name), MIN(taskType) FROM "
                                "COMMUNICATION_TASK_INFO GROUP BY globalTaskId"},
    {"COMMUNICATION_OP", "SELECT rowid, opName, opType, startNs, endNs, deviceId, connectionId, "
                         "opId FROM COMMUNICATION_OP"},
    {"CUPTI_ACTIVITY_KIND_KERNEL", "SELECT rowid, start, \"end\", deviceId, streamId, "
                                   "correlationId, shortName, demangledName, graphNodeId, "
                                   "contextId FROM CUPTI_ACTIVITY_KIND_KERNEL"},
    {"CUPTI_ACTIVITY_KIND_MEMCPY", "SELECT rowid, start, \"end\", deviceId, streamId, "
                                   "correlationId, copyKind, bytes FROM CUPTI_ACTIVITY_KIND_MEMCPY"},
    {"CUPTI_ACTIVITY_KIND_MEMSET", "SELECT rowid, start, \"end\", deviceId, streamId, "
                                   "correlationId, bytes FROM CUPTI_ACTIVITY_KIND_MEMSET"},
    {"CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "SELECT rowid, start, \"end\", deviceId, streamId, "
                                            "correlationId, syncType FROM "
                                            "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"},
    {"StringIds", "SELECT id, value FROM StringIds"},
};

static double reader_scan_once(sqlite3 *db, uint64_t *checksum) {
  double t0 = now_seconds();
  for (size_t q = 0; q < sizeof reader_queries / sizeof reader_queries[0]; q++) {
    if (!table_exists(db, "main", reader_queries[q][0])) continue;
    sqlite3_stmt *stmt = NULL;
    if (sqlite3_prepare_v2(db, reader_queries[q][1], -1, &stmt, NULL) != SQLITE_OK) continue;
    int ncol = sqlite3_column_count(stmt);
    while (sqlite3_step(stmt) == SQLITE_ROW) {
      uint64_t h = 0;
      for (int i = 0; i < ncol; i++) h = h * 31u + (uint64_t)sqlite3_column_int64(stmt, i);
      *checksum += h;
    }
    sqlite3_finalize(stmt);
  }
  return now_seconds() - t0;
}

static sqlite3 *open_ro(const char *path) {
  sqlite3 *db = NULL;
  char *uri = sqlite3_mprintf("file:%s?mode=ro", path);
  if (!uri) die(NULL, "mprintf");
  if (sqlite3_open_v2(uri, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL) != SQLITE_OK)
    die(db, path);
  sqlite3_free(uri);
  return db;
}

static void exec_or_die(sqlite3 *db, const char *sql) {
  char *err = NULL;
  if (sqlite3_exec(db, sql, NULL, NULL, &err) != SQLITE_OK) {
    fprintf(stderr, "bare_scan: %s: %s\n", sql, err ? err : "?");
    exit(1);
  }
}

/* A fresh output file (journal off, synchronous off) with the profile attached read-only
** as `src`. */
static sqlite3 *open_copy_target(const char *profile, const char *out) {
  sqlite3 *db = NULL;
  unlink(out);
  if (sqlite3_open_v2(out, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_URI,
                      NULL) != SQLITE_OK)
    die(db, out);
  exec_or_die(db, "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;");
  char *attach = sqlite3_mprintf("ATTACH 'file:%q?mode=ro' AS src", profile);
  if (!attach) die(NULL, "mprintf");
  exec_or_die(db, attach);
  sqlite3_free(attach);
  return db;
}

/* CREATE TABLE copy AS SELECT ... from the profile, attached read-only, into a fresh file. */
static double copy_once(const char *profile, const char *out, const char *forced) {
  sqlite3 *db = open_copy_target(profile, out);
  const char *columns = NULL;
  const char *table = pick_table(db, "src", forced, &columns);
  if (!table) die(db, "no TASK or CUPTI_ACTIVITY_KIND_KERNEL table");
  char *sql = sqlite3_mprintf("CREATE TABLE copy AS SELECT %s FROM src.\"%w\"", columns, table);
  if (!sql) die(NULL, "mprintf");
  double t0 = now_seconds();
  exec_or_die(db, sql);
  double elapsed = now_seconds() - t0;
  sqlite3_free(sql);
  sqlite3_close(db);
  unlink(out);
  return elapsed;
}

/* The tables whose rows become traceloom_event and traceloom_runtime_call rows. */
static const char *const contract_queries[][2] = {
    {"TASK", "rowid, startNs, endNs, deviceId, streamId, taskId, globalTaskId, connectionId, "
             "contextId, taskType, modelId"},
    {"COMMUNICATION_OP", "rowid, opName, opType, startNs, endNs, deviceId, connectionId, opId"},
    {"CANN_API", "rowid, startNs, endNs, type, globalTid, connectionId, name"},
    {"CUPTI_ACTIVITY_KIND_KERNEL", "rowid, start, \"end\", deviceId, streamId, correlationId, "
                                   "shortName, demangledName, graphNodeId, contextId"},
    {"CUPTI_ACTIVITY_KIND_MEMCPY", "rowid, start, \"end\", deviceId, streamId, correlationId, "
                                   "copyKind, bytes"},
    {"CUPTI_ACTIVITY_KIND_MEMSET", "rowid, start, \"end\", deviceId, streamId, correlationId, "
                                   "bytes"},
    {"CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "rowid, start, \"end\", deviceId, streamId, "
                                            "correlationId, syncType"},
    {"CUPTI_ACTIVITY_KIND_RUNTIME", "rowid, start, \"end\", eventClass, globalTid, "
                                    "correlationId, nameId"},
};

/* Copies every contract table of one profile into a fresh file; *rows gets the row count. */
static double contract_copy_once(const char *profile, const char *out, int64_t *rows) {
  sqlite3 *db = open_copy_target(profile, out);
  double elapsed = 0;
  *rows = 0;
  for (size_t q = 0; q < sizeof contract_queries / sizeof contract_queries[0]; q++) {
    if (!table_exists(db, "src", contract_queries[q][0])) continue;
    char *sql = sqlite3_mprintf("CREATE TABLE c%d AS SELECT %s FROM src.\"%w\"", (int)q,
                                contract_queries[q][1], contract_queries[q][0]);
    if (!sql) die(NULL, "mprintf");
    double t0 = now_seconds();
    exec_or_die(db, sql);
    elapsed += now_seconds() - t0;
    sqlite3_free(sql);
    sql = sqlite3_mprintf("SELECT count(*) FROM c%d", (int)q);
    sqlite3_stmt *st = NULL;
    if (!sql || sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) die(db, "count");
    if (sqlite3_step(st) == SQLITE_ROW) *rows += sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_free(sql);
  }
  sqlite3_close(db);
  unlink(out);
  return elapsed;
}

int main(int argc, char **argv) {
  int repeat = 1;
  const char *copy_to = NULL, *forced = NULL;
  int first = 1;
  while (first < argc && strncmp(argv[first], "--", 2) == 0) {
    if (strcmp(argv[first], "--repeat") == 0 && first + 1 < argc) {
      repeat = atoi(argv[first + 1]);
    } else if (strcmp(argv[first], "--copy-to") == 0 && first + 1 < argc) {
      copy_to = argv[first + 1];
    } else if (strcmp(argv[first], "--table") == 0 && first + 1 < argc) {
      forced = argv[first + 1];
    } else {
      break;
    }
    first += 2;
  }
  if (first >= argc || repeat < 1) {
    fprintf(stderr, "usage: bare_scan [--repeat N] [--copy-to OUT.db] [--table NAME] DB...\n");
    return 2;
  }
  int64_t rows = 0;
  double scan_s = 0, copy_s = 0, reader_s = 0, contract_s = 0;
  int64_t contract_rows = 0;
  uint64_t checksum = 0;
  const char *table = NULL;
  for (int f = first; f < argc; f++) {
    sqlite3 *db = open_ro(argv[f]);
    const char *columns = NULL;
    table = pick_table(db, "main", forced, &columns);
    if (!table) die(db, "no TASK or CUPTI_ACTIVITY_KIND_KERNEL table");
    double best = -1;
    int64_t n = 0;
    for (int r = 0; r < repeat; r++) {
      double t0 = now_seconds();
      n = scan_once(db, table, columns, &checksum);
      double t = now_seconds() - t0;
      if (best < 0 || t < best) best = t;
    }
    double rbest = -1;
    for (int r = 0; r < repeat; r++) {
      double t = reader_scan_once(db, &checksum);
      if (rbest < 0 || t < rbest) rbest = t;
    }
    sqlite3_close(db);
    rows += n;
    scan_s += best;
    reader_s += rbest;
    if (copy_to) {
      double cbest = -1;
      for (int r = 0; r < repeat; r++) {
        double t = copy_once(argv[f], copy_to, forced);
        if (cbest < 0 || t < cbest) cbest = t;
      }
      copy_s += cbest;
      double kbest = -1;
      int64_t krows = 0;
      for (int r = 0; r < repeat; r++) {
        double t = contract_copy_once(argv[f], copy_to, &krows);
        if (kbest < 0 || t < kbest) kbest = t;
      }
      contract_s += kbest;
      contract_rows += krows;
    }
  }
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  printf("{\"table\": \"%s\", \"files\": %d, \"rows\": %lld, \"repeat\": %d, "
         "\"scan_s\": %.6f, \"scan_rows_per_s\": %.0f, \"reader_scan_s\": %.6f, ",
         table, argc - first, (long long)rows, repeat, scan_s, scan_s > 0 ? (double)rows / scan_s : 0.0,
         reader_s);
  if (copy_to)
    printf("\"copy_s\": %.6f, \"copy_rows_per_s\": %.0f, \"contract_copy_s\": %.6f, "
           "\"contract_rows\": %lld, ", copy_s, copy_s > 0 ? (double)rows / copy_s : 0.0,
           contract_s, (long long)contract_rows);
  printf("\"peak_rss_kb\": %ld, \"checksum\": \"%016llx\", \"sqlite\": \"%s\"}\n", ru.ru_maxrss,
         (unsigned long long)checksum, sqlite3_libversion());
  return 0;
}
