/*
** structure_rows.c: the stored rows of traceloom_v_evidence_role_structure
** (traceloom_evidence_role_structure_core), written only with the analyze option
** {"evidence_role_structure": true}; sql/options/evidence_role_structure_1_table.sql says
** what they buy and cost.
**
** The rows are the computed view's (traceloom_evidence_role_structure_rows, which reads the
** represented runs this stage writes before, so it runs after them), read once in key order
** and written with the copy number that keeps a row the view holds twice (the table's key
** would refuse it otherwise). Then the rows view is replaced by the one over the table and
** the catalog lists the table.
**
**   SELECT count(*) FROM traceloom_evidence_role_structure_core;   -- with the option
*/
#include "reports/reports.h"
#include "publish/publish.h"

#include <stdlib.h>
#include <string.h>

/* The computed rows in the table's key order; self: the anchor's own atom occurrence (the
** row with no ancestor node id). */
static const char *const READ_ROWS =
    "SELECT decision_n, kind, ref, node_local, occurrence_idx, node_device,"
    "       ancestor_node_id IS NULL"
    " FROM traceloom_evidence_role_structure_rows ORDER BY 1, 2, 3, 4, 5";

static const char *const WRITE_ROW =
    "INSERT INTO traceloom_evidence_role_structure_core(decision_n, kind, ref, node_local,"
    " occurrence_idx, copy, node_device, self) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)";

/* The key of the row before (the first five columns): the integers, and the placement's text
** id when it has one (the anchor's number otherwise, in ints[2]). */
typedef struct row_key {
  int64_t ints[5];
  char *ref_text; /* malloc'd; NULL: ref is an integer */
  size_t ref_len, ref_cap;
  int valid;
} row_key;

/* Whether row `rd` has key k's; then k becomes rd's (0 on out of memory, with *oom set). */
static int same_key_then_take(sqlite3_stmt *rd, row_key *k, int *oom) {
  int same = k->valid;
  for (int c = 0; c < 5; c++) {
    if (c == 2 && sqlite3_column_type(rd, c) == SQLITE_TEXT) continue;
    int64_t v = sqlite3_column_int64(rd, c);
    if (c == 2) same = same && !k->ref_text;
    same = same && k->ints[c] == v;
    k->ints[c] = v;
  }
  if (sqlite3_column_type(rd, 2) == SQLITE_TEXT) {
    const unsigned char *t = sqlite3_column_text(rd, 2);
    size_t n = (size_t)sqlite3_column_bytes(rd, 2);
    same = same && k->ref_text && k->ref_len == n && memcmp(k->ref_text, t, n) == 0;
    if (n + 1 > k->ref_cap) {
      char *p = realloc(k->ref_text, n + 1);
      if (!p) return *oom = 1, 0;
      k->ref_text = p, k->ref_cap = n + 1;
    }
    memcpy(k->ref_text, t, n);
    k->ref_text[n] = 0;
    k->ref_len = n;
  } else if (k->ref_text) {
    free(k->ref_text);
    k->ref_text = NULL, k->ref_len = k->ref_cap = 0;
  }
  k->valid = 1;
  return same;
}

static int copy_rows(sqlite3 *db, tl_err *e) {
  sqlite3_stmt *rd = NULL, *wr = NULL;
  row_key key = {0};
  int rc = tl_pub_prepare(db, READ_ROWS, &rd, e);
  if (rc == TL_OK) rc = tl_pub_prepare(db, WRITE_ROW, &wr, e);
  int64_t copy = 0;
  while (rc == TL_OK) {
    int step = sqlite3_step(rd);
    if (step == SQLITE_DONE) break;
    if (step != SQLITE_ROW) {
      rc = tl_fail(e, "reading traceloom_evidence_role_structure_rows: %s", sqlite3_errmsg(db));
      break;
    }
    int oom = 0;
    copy = same_key_then_take(rd, &key, &oom) ? copy + 1 : 0;
    if (oom) {
      rc = tl_nomem(e);
      break;
    }
    for (int c = 0; c < 5; c++) sqlite3_bind_value(wr, c + 1, sqlite3_column_value(rd, c));
    sqlite3_bind_int64(wr, 6, copy);
    sqlite3_bind_value(wr, 7, sqlite3_column_value(rd, 5));
    sqlite3_bind_int(wr, 8, sqlite3_column_int(rd, 6));
    rc = tl_pub_step(db, wr, "traceloom_evidence_role_structure_core", e);
  }
  free(key.ref_text);
  sqlite3_finalize(rd);
  sqlite3_finalize(wr);
  return rc;
}

int tl_reports_structure_rows(sqlite3 *db, const tl_reports_input *in, tl_err *e) {
  if (!in->evidence_role_structure) return TL_OK;
  int rc = tl_publish_sql_files(db, "sql/options/evidence_role_structure_1", e);
  /* the read sorts 2.8M rows at a million tasks: its merge may use threads - 1 helpers (as
  ** the index builds of tl_publish_views), and the connection's own limit comes back after */
  int helpers = in->threads > 1 ? in->threads - 1 : 0;
  int old_helpers = sqlite3_limit(db, SQLITE_LIMIT_WORKER_THREADS, -1);
  if (helpers > old_helpers) sqlite3_limit(db, SQLITE_LIMIT_WORKER_THREADS, helpers);
  if (rc == TL_OK) rc = copy_rows(db, e);
  sqlite3_limit(db, SQLITE_LIMIT_WORKER_THREADS, old_helpers);
  if (rc == TL_OK) rc = tl_publish_sql_files(db, "sql/options/evidence_role_structure_2", e);
  if (rc == TL_OK) rc = tl_publish_catalog(db, e);
  return rc;
}
