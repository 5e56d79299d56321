/*
** publish.c: the frame of the publication (see publish.h): the drop of an earlier analysis,
** the embedded schema and views, the catalog, the planner
** statistics, and the helpers every table writer uses. The writers of the trace's own facts
** are facts.c; every stage writes its own relations.
*/
#include "publish/publish.h"
#include "embedded.h"
#include "util/buf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ------------------------------------------------------------------ helpers */

int tl_pub_exec(sqlite3 *db, const char *sql, tl_err *e) {
  char *msg = NULL;
  if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
    tl_fail(e, "failed to publish the analysis: %s (while running: %.200s)",
            msg ? msg : sqlite3_errmsg(db), sql);
    sqlite3_free(msg);
    return TL_ERROR;
  }
  return TL_OK;
}

int tl_pub_prepare(sqlite3 *db, const char *sql, sqlite3_stmt **st, tl_err *e) {
  if (sqlite3_prepare_v2(db, sql, -1, st, NULL) != SQLITE_OK)
    return tl_fail(e, "failed to prepare the analysis statement: %s; sql=%s", sqlite3_errmsg(db),
                   sql);
  return TL_OK;
}

int tl_pub_step(sqlite3 *db, sqlite3_stmt *st, const char *table, tl_err *e) {
  int rc = sqlite3_step(st);
  sqlite3_reset(st);
  if (rc != SQLITE_DONE)
    return tl_fail(e, "failed to write %s: %s", table, sqlite3_errmsg(db));
  return TL_OK;
}

int tl_pub_probe(sqlite3 *db, sqlite3_stmt *st, const char *what, tl_err *e) {
  int rc = sqlite3_step(st);
  if (rc == SQLITE_ROW) return 1;
  if (rc == SQLITE_DONE) return 0;
  tl_fail(e, "failed to read %s: %s", what, sqlite3_errmsg(db));
  return -1;
}

void tl_bind_i64_or_null(sqlite3_stmt *st, int col, int64_t v, int64_t absent) {
  if (v == absent)
    sqlite3_bind_null(st, col);
  else
    sqlite3_bind_int64(st, col, v);
}

void tl_bind_str(sqlite3_stmt *st, int col, const tl_strpool *pool, uint32_t id) {
  if (id == TL_STR_NONE)
    sqlite3_bind_null(st, col);
  else
    sqlite3_bind_text(st, col, tl_strpool_str(pool, id), (int)tl_strpool_len(pool, id),
                      SQLITE_STATIC);
}

void tl_bind_text(sqlite3_stmt *st, int col, const char *s) {
  if (s)
    sqlite3_bind_text(st, col, s, -1, SQLITE_TRANSIENT);
  else
    sqlite3_bind_null(st, col);
}

double tl_ns_to_us(int64_t ns) {
  /* ns/1000.0 is the correctly rounded quotient, i.e. the double nearest to the
  ** 3-decimal value: the same double SQL's ROUND(ns/1000.0, 3) gives. */
  return (double)ns / 1000.0;
}

double tl_round3(double x) { return round(x * 1e3) / 1e3; }
double tl_round6(double x) { return round(x * 1e6) / 1e6; }

/* ------------------------------------------------------------------ schema */

/* Drops every earlier traceloom_* relation (views first: they depend on tables). */
static int drop_previous(sqlite3 *db, tl_err *e) {
  static const char *const sql =
      "SELECT type, name FROM main.sqlite_schema WHERE name LIKE 'traceloom\\_%' ESCAPE '\\' "
      "AND type IN ('view','table') ORDER BY type = 'table', name";
  sqlite3_stmt *st;
  if (tl_pub_prepare(db, sql, &st, e)) return TL_ERROR;
  TL_VEC(char *) stmts = {0};
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    const char *type = (const char *)sqlite3_column_text(st, 0);
    const char *name = (const char *)sqlite3_column_text(st, 1);
    tl_buf b = {0};
    tl_buf_printf(&b, "DROP %s IF EXISTS main.\"", strcmp(type, "view") == 0 ? "VIEW" : "TABLE");
    for (const char *p = name; *p; p++) {
      if (*p == '"') tl_buf_append(&b, "\"", 1);
      tl_buf_append(&b, p, 1);
    }
    tl_buf_puts(&b, "\"");
    if (b.oom || TL_VEC_PUSH(&stmts, b.p)) {
      tl_buf_free(&b);
      rc = SQLITE_NOMEM;
      break;
    }
  }
  sqlite3_finalize(st);
  int result = TL_OK;
  if (rc == SQLITE_NOMEM)
    result = tl_nomem(e);
  else if (rc != SQLITE_DONE)
    result = tl_fail(e, "failed to list earlier TraceLoom relations: %s", sqlite3_errmsg(db));
  for (size_t i = 0; result == TL_OK && i < stmts.n; i++) result = tl_pub_exec(db, stmts.v[i], e);
  for (size_t i = 0; i < stmts.n; i++) free(stmts.v[i]);
  TL_VEC_FREE(&stmts);
  return result;
}

/* Runs every embedded SQL file whose name starts with prefix, in name order. */
int tl_publish_sql_files(sqlite3 *db, const char *prefix, tl_err *e) {
  for (const tl_embedded_file *f = tl_embedded_files; f->name; f++) {
    if (strncmp(f->name, prefix, strlen(prefix)) != 0) continue;
    char *msg = NULL;
    if (sqlite3_exec(db, f->text, NULL, NULL, &msg) != SQLITE_OK) {
      tl_fail(e, "failed to create the analysis schema from %s: %s", f->name,
              msg ? msg : sqlite3_errmsg(db));
      sqlite3_free(msg);
      return TL_ERROR;
    }
  }
  return TL_OK;
}

/* The size of every published table in sqlite_stat1, for the query planner.
**
** Without statistics SQLite assumes every table is equally large, and a view joining a few
** hundred tree nodes to a million occurrences may then scan the million to find the few
** (a filter on node_id, say). The publisher knows better: one row per table, its row count
** (max(rowid) of a rowid table, dense from 0 or 1 here, is O(log n); count(*) otherwise).
** Index rows are left out (SQLite's defaults apply to them); rows of other tables are not
** touched. A table with an index on a generated column or an expression gets no row at all
** (SQLite then takes it for a million rows): without statistics SQLite builds no Bloom filter
** for it, which SQLite 3.38.0-3.41.1 build wrong on such an index (TEXT_ID_COLUMNS below).
** sqlite_stat1 exists (tl_publish_planner_table, before the savepoint); "ANALYZE
** sqlite_schema" makes this connection's planner read the new rows. It expires every
** prepared statement, the rollback's canary included: the guard's held write covers it
** (guard.h). */
int tl_publish_planner_stats(sqlite3 *db, tl_err *e) {
  int rc = tl_pub_exec(db, "DELETE FROM main.sqlite_stat1 WHERE tbl LIKE 'traceloom\\_%' ESCAPE '\\'", e);
  sqlite3_stmt *tables = NULL, *insert = NULL;
  if (rc == TL_OK)
    rc = tl_pub_prepare(db,
                        "SELECT t.name FROM main.sqlite_schema t WHERE t.type = 'table' AND "
                        "t.name LIKE 'traceloom\\_%' ESCAPE '\\' AND NOT EXISTS ("
                        "SELECT 1 FROM pragma_index_list(t.name) l "
                        "JOIN pragma_index_xinfo(l.name) x ON x.key "
                        "LEFT JOIN pragma_table_xinfo(t.name) c ON c.cid = x.cid "
                        "WHERE x.cid = -2 OR c.hidden IN (2, 3)) ORDER BY t.name",
                        &tables, e);
  if (rc == TL_OK)
    rc = tl_pub_prepare(db, "INSERT INTO main.sqlite_stat1(tbl, idx, stat) VALUES (?1, NULL, ?2)",
                        &insert, e);
  int more = 0;
  while (rc == TL_OK && (more = tl_pub_probe(db, tables, "the table list", e)) == 1) {
    const char *name = (const char *)sqlite3_column_text(tables, 0);
    sqlite3_stmt *count = NULL;
    char *sql = sqlite3_mprintf("SELECT max(rowid) FROM main.\"%w\"", name);
    if (!sql) { rc = tl_nomem(e); break; }
    /* a WITHOUT ROWID table has no rowid: count its rows */
    if (sqlite3_prepare_v2(db, sql, -1, &count, NULL) != SQLITE_OK) {
      sqlite3_free(sql);
      sql = sqlite3_mprintf("SELECT count(*) FROM main.\"%w\"", name);
      if (!sql) { rc = tl_nomem(e); break; }
      rc = tl_pub_prepare(db, sql, &count, e);
    }
    sqlite3_free(sql);
    int got = rc == TL_OK ? tl_pub_probe(db, count, name, e) : 0;
    if (got < 0) rc = TL_ERROR;
    if (got == 1) {
      char stat[24];
      /* at least 1: SQLite reads a 0 as "no estimate" */
      sqlite3_int64 n = sqlite3_column_int64(count, 0) + 1;
      snprintf(stat, sizeof stat, "%lld", (long long)n);
      sqlite3_bind_text(insert, 1, name, -1, SQLITE_TRANSIENT);
      sqlite3_bind_text(insert, 2, stat, -1, SQLITE_TRANSIENT);
      rc = tl_pub_step(db, insert, "sqlite_stat1", e);
    }
    sqlite3_finalize(count);
  }
  if (more < 0) rc = TL_ERROR;
  sqlite3_finalize(tables);
  sqlite3_finalize(insert);
  if (rc == TL_OK) rc = tl_pub_exec(db, "ANALYZE main.sqlite_schema", e);
  return rc;
}

int tl_publish_planner_table(sqlite3 *db, tl_err *e) {
  sqlite3_stmt *st = NULL;
  if (tl_pub_prepare(db, "SELECT 1 FROM main.sqlite_schema WHERE name = 'sqlite_stat1'", &st, e))
    return TL_ERROR;
  int exists = tl_pub_probe(db, st, "the schema", e);
  sqlite3_finalize(st);
  if (exists < 0) return TL_ERROR;
  /* "ANALYZE sqlite_schema" creates sqlite_stat1 empty (CREATE TABLE may not name it) and
  ** analyses no table */
  return exists ? TL_OK : tl_pub_exec(db, "ANALYZE main.sqlite_schema", e);
}


/* traceloom_analysis_surface from the `-- @surface name | grain | purpose | example` lines,
** for every relation that exists now. */
int tl_publish_catalog(sqlite3 *db, tl_err *e) {
  sqlite3_stmt *ins, *exists;
  if (tl_pub_prepare(db,
                     "INSERT OR REPLACE INTO traceloom_analysis_surface(surface_name, "
                     "relation_name, row_grain, purpose, example_sql) VALUES (?1, ?1, ?2, ?3, ?4)",
                     &ins, e))
    return TL_ERROR;
  if (tl_pub_prepare(db, "SELECT 1 FROM main.sqlite_schema WHERE name = ?1", &exists, e)) {
    sqlite3_finalize(ins);
    return TL_ERROR;
  }
  int rc = TL_OK;
  for (const tl_embedded_file *f = tl_embedded_files; f->name && rc == TL_OK; f++) {
    if (strncmp(f->name, "sql/", 4) != 0) continue;
    const char *p = f->text;
    while (rc == TL_OK && (p = strstr(p, "-- @surface ")) != NULL) {
      p += 12;
      const char *eol = strchr(p, '\n');
      if (!eol) eol = p + strlen(p);
      const char *field[4];
      size_t flen[4];
      int nf = 0;
      const char *s = p;
      while (nf < 4 && s < eol) {
        const char *bar = nf < 3 ? memchr(s, '|', (size_t)(eol - s)) : NULL;
        const char *end = bar ? bar : eol;
        while (s < end && *s == ' ') s++;
        const char *t = end;
        while (t > s && t[-1] == ' ') t--;
        field[nf] = s, flen[nf] = (size_t)(t - s), nf++;
        s = bar ? bar + 1 : eol;
      }
      p = eol;
      if (nf != 4) {
        rc = tl_fail(e, "malformed @surface line in %s", f->name);
        break;
      }
      sqlite3_bind_text(exists, 1, field[0], (int)flen[0], SQLITE_STATIC);
      int present = tl_pub_probe(db, exists, "the schema", e);
      sqlite3_reset(exists);
      if (present < 0) rc = TL_ERROR;
      if (present != 1) continue;
      for (int k = 0; k < 4; k++) sqlite3_bind_text(ins, k + 1, field[k], (int)flen[k], SQLITE_STATIC);
      rc = tl_pub_step(db, ins, "traceloom_analysis_surface", e);
    }
  }
  sqlite3_finalize(ins);
  sqlite3_finalize(exists);
  return rc;
}

/* ------------------------------------------------------------------ entry */

/* An interrupt that came while the caller computed between two writers stops the
** publication here (the connection prepares nothing once interrupted). */
int tl_publish_resume(tl_publication *pub, tl_err *e) {
  if (sqlite3_exec(pub->db, "SELECT 1", NULL, NULL, NULL) != SQLITE_OK)
    return tl_fail(e, "failed to publish the analysis: %s", sqlite3_errmsg(pub->db));
  return TL_OK;
}

void tl_publish_abort(tl_publication *pub) {
  free(pub->event_relation);
  pub->event_relation = NULL;
}

int tl_publish_open(tl_publication *pub, sqlite3 *db, tl_txn_guard *guard, tl_err *e) {
  pub->db = db, pub->event_relation = NULL;
  int rc = tl_drop_previous_embedded(db, e);
  if (rc == TL_OK) rc = drop_previous(db, e);
  if (rc == TL_OK && guard) rc = tl_guard_hold(guard, e); /* after the drops (guard.h) */
  if (rc == TL_OK) rc = tl_publish_sql_files(db, "sql/schema/", e);
  return rc;
}

int tl_publish_embedded(tl_publication *pub, const tl_profile *p, tl_err *e) {
  return tl_publish_embed_raw(pub->db, p, e);
}

/* The text ids of the events and anchors, the two a user's query most often joins on (the
** reference's node-events report, the idle audit's citations).
**
** By default both are VIRTUAL generated columns, and the anchor's has a UNIQUE index (16 MB
** at a million tasks): node-events' first join, a node's anchors to traceloom_anchor by
** anchor_id, is then a search instead of an automatic index over every anchor built per query
** (2.6 -> 1.5 s CPU on the 1M bench profile). The event's id gets none (24 MB more, over the
** file budget of issue 18): its join is the automatic index that query still builds.
**
** An index on a generated column is wrong under one condition: SQLite 3.38.0 to 3.41.1 read
** an indexed virtual column (and an indexed expression) from the index cursor wherever the
** index serves the loop, also while they build a Bloom filter for that loop by walking the
** table with the index cursor unpositioned, so the filter held wrong keys and a join on the id
** with any other condition on the table returned no row (fixed in 3.41.2, "Fix Bloom filters
** on an expression index"; bench/RESULTS.md, "Bloom"). SQLite builds such a filter only for a
** table with a sqlite_stat1 row (where.c whereCheckIfBloomFilterIsUseful, TF_HasStat1), so
** the planner statistics leave out every table that has an index on a generated column or an
** expression (tl_publish_planner_stats; tests/python/test_report_plans.py
** test_generated_anchor_id_index_gets_no_bloom_filter). A user's ANALYZE writes the row back:
** README.md says what to do then.
**
** An analysis with idle evidence indexes the generated event id too: its audit looks every
** cited event up by that id (2.5M links at a million tasks; test_idle_evidence.py), and the
** index (23.7 MB there) is its only cost.
**
** With the analyze option text_id_indexes both ids are stored columns, each with an index
** (75 MB at a million tasks, 1.7 s CPU): an index on a stored column is read like any other,
** and the tables keep their statistics. */
typedef enum text_id_index {
  TEXT_ID_INDEX_ALWAYS,   /* generated, and indexed in every analysis */
  TEXT_ID_INDEX_ON_IDLE,  /* generated, indexed where idle evidence cites it */
} text_id_index;

typedef struct text_id_column {
  const char *table, *column, *expr, *index;
  text_id_index index_generated; /* when the generated column gets its index (see above) */
} text_id_column;

static const text_id_column TEXT_ID_COLUMNS[] = {
    {"traceloom_event_core", "event_id", "'event-' || event_n", "traceloom_event_core_event_id",
     TEXT_ID_INDEX_ON_IDLE},
    {"traceloom_anchor_core", "anchor_id", "'anchor-' || anchor_n",
     "traceloom_anchor_core_anchor_id", TEXT_ID_INDEX_ALWAYS},
};

static int add_text_id_columns(sqlite3 *db, int stored, int idle_evidence, tl_err *e) {
  int rc = TL_OK;
  for (size_t i = 0; rc == TL_OK && i < sizeof TEXT_ID_COLUMNS / sizeof TEXT_ID_COLUMNS[0]; i++) {
    const text_id_column *c = &TEXT_ID_COLUMNS[i];
    /* stored and filled, with its index; or generated, with its index where it has one */
    char *sql = stored ? sqlite3_mprintf("ALTER TABLE %s ADD COLUMN %s TEXT;"
                                         "UPDATE %s SET %s = %s;"
                                         "CREATE INDEX %s ON %s(%s);",
                                         c->table, c->column, c->table, c->column, c->expr,
                                         c->index, c->table, c->column)
                       : sqlite3_mprintf("ALTER TABLE %s ADD COLUMN %s TEXT "
                                         "GENERATED ALWAYS AS (%s) VIRTUAL",
                                         c->table, c->column, c->expr);
    if (!sql) return tl_nomem(e);
    rc = tl_pub_exec(db, sql, e);
    sqlite3_free(sql);
    if (rc != TL_OK || stored) continue;
    if (c->index_generated == TEXT_ID_INDEX_ON_IDLE && !idle_evidence) continue;
    sql = sqlite3_mprintf("CREATE UNIQUE INDEX %s ON %s(%s)", c->index, c->table, c->column);
    if (!sql) return tl_nomem(e);
    rc = tl_pub_exec(db, sql, e);
    sqlite3_free(sql);
  }
  return rc;
}

int tl_publish_views(tl_publication *pub, int threads, int stored_text_ids, int idle_evidence,
                     tl_err *e) {
  sqlite3 *db = pub->db;
  /* The index builds of sql/views/00_indexes.sql sort millions of keys: SQLite's sorter
  ** merges its runs on helper threads when allowed (PRAGMA threads). Same index, any count;
  ** the connection's own setting comes back afterwards. */
  int helpers = threads > 1 ? threads - 1 : 0;
  int old_helpers = sqlite3_limit(db, SQLITE_LIMIT_WORKER_THREADS, -1);
  if (helpers > old_helpers) sqlite3_limit(db, SQLITE_LIMIT_WORKER_THREADS, helpers);
  int rc = add_text_id_columns(db, stored_text_ids, idle_evidence, e);
  if (rc == TL_OK) rc = tl_publish_sql_files(db, "sql/views/", e);
  sqlite3_limit(db, SQLITE_LIMIT_WORKER_THREADS, old_helpers);
  return rc;
}
