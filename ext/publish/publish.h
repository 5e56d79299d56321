/*
** publish.h: writing the analysis into the calling connection's main database.
**
** This layer is a leaf below every stage that publishes: it knows the publication (the
** transaction's rollback guard, the embedded schema and views, the catalog, the planner
** statistics), the
** helpers every table writer uses (tl_pub_*, rows.h, shapes.h), and the writers of the
** trace's own facts (runtime calls, relations, events, inventory, metadata), whose inputs
** are trace, relate and source types only. The stages publish their own relations (ext/
** classify, ext/structure, ext/replay, ext/context, ...) with these helpers; the driver
** (ext/analyze/analyze.c, its table `publishers`) calls every writer in publication order.
**
** The publication writes into the caller's transaction (ext/analyze/publication.c: one
** savepoint and its rollback guard, guard.h):
**
**   tl_publication pub;
**   tl_publish_open(&pub, db, guard, e);   earlier analysis dropped; the guard's held
**                                          write; sql/schema
**   tl_publish_runtime(&pub, &rt, e);      calls and relations (then free them)
**   tl_publish_resume(&pub, e);            an interrupt noticed in between stops here
**   tl_publish_events(&pub, &ev, e);       events (then free the per-event arrays)
**   ... the stages' writers ...
**   tl_publish_views(&pub, threads, 0, 0, e); sql/views (indexes, views)
**   tl_publish_metadata(db, &md, e), tl_publish_catalog(db, e);
**   tl_publish_abort(&pub);                what it still holds (after a failure too)
*/
#ifndef TL_PUBLISH_H
#define TL_PUBLISH_H

#include "util/sqlite_api.h"
#include "trace/trace.h"
#include "relate/relate.h"
#include "source/source.h"
#include "publish/guard.h"

typedef struct tl_source_digest {
  int64_t size;
  char sha256[65];
} tl_source_digest;

/* The open publication. */
typedef struct tl_publication {
  sqlite3 *db;
  int32_t *event_relation; /* per trace event: the relation_n its row records, or -1; made
                              by tl_publish_runtime (relations are numbered there), written
                              with the events, then freed */
} tl_publication;

/* The drop of every earlier traceloom_* relation, then the guard's held write (guard.h;
** NULL: none) and sql/schema. */
int tl_publish_open(tl_publication *pub, sqlite3 *db, tl_txn_guard *guard, tl_err *e);
/* An interrupt that came while the caller computed between two writers stops the
** publication here. */
int tl_publish_resume(tl_publication *pub, tl_err *e);
/* sql/views (the index builds may use threads - 1 sorter helpers), after the event and
** anchor text ids: generated (the anchor's indexed, the event's too where idle_evidence is
** set: it cites events by text id), or stored and indexed where stored_text_ids is set (the
** analyze option text_id_indexes). */
int tl_publish_views(tl_publication *pub, int threads, int stored_text_ids, int idle_evidence,
                     tl_err *e);
/* The embedded SQL files whose names start with prefix, in name order (an analyze option's
** schema, sql/options/). */
int tl_publish_sql_files(sqlite3 *db, const char *prefix, tl_err *e);
/* traceloom_analysis_surface from the `-- @surface` lines, for the relations that exist. */
int tl_publish_catalog(sqlite3 *db, tl_err *e);
/* Frees what the publication still holds; the rows written stay the caller's transaction's
** (its rollback undoes them). */
void tl_publish_abort(tl_publication *pub);

/* The runtime calls and relations (calls.n and relations->n must still be the counts). */
typedef struct tl_runtime_input {
  const tl_trace *trace;
  const tl_relations *relations;
} tl_runtime_input;
int tl_publish_runtime(tl_publication *pub, const tl_runtime_input *in, tl_err *e);

/* The same in parts, for two connections at once (with threads >= 2 the driver writes the
** relations on a staging connection, ext/analyze/staging.c, while its own writes the calls):
**
**   tl_runtime_rows *r;
**   rc = tl_runtime_rows_prepare(in, &r, e);        the relations' call-major order
**   rc = tl_runtime_rows_relations(other, r, e);    traceloom_runtime_device_relation_shape
**                                                   and _core (tl_runtime_relation_tables)
**   rc = tl_runtime_rows_calls(pub->db, r, e);      traceloom_runtime_call_shape and _core
**   ... the relation tables moved into pub->db ...
**   rc = tl_runtime_rows_finish(pub, r, e);         each event's relation_n (for the events)
**   tl_runtime_rows_free(r);                        also after a failed prepare
**
** The calls and the relations share no table and only read the input and the order, so the
** relations may be written on another thread while the calls are. */
typedef struct tl_runtime_rows tl_runtime_rows;
int tl_runtime_rows_prepare(const tl_runtime_input *in, tl_runtime_rows **out, tl_err *e);
int tl_runtime_rows_calls(sqlite3 *db, const tl_runtime_rows *r, tl_err *e);
int tl_runtime_rows_relations(sqlite3 *db, const tl_runtime_rows *r, tl_err *e);
int tl_runtime_rows_finish(tl_publication *pub, const tl_runtime_rows *r, tl_err *e);
void tl_runtime_rows_free(tl_runtime_rows *r);
extern const char *const tl_runtime_relation_tables[]; /* NULL-terminated */

/* traceloom_input, traceloom_raw_source_database, traceloom_profile_inventory. */
typedef struct tl_inventory_input {
  const tl_profile *profile;
  const tl_trace *trace;
  const tl_derived *derived;        /* events derived after the trace's (replay); NULL: none */
  const tl_inventory *inventory;
  const tl_source_digest *digests;  /* one per profile file (source_id) */
} tl_inventory_input;
int tl_publish_inventory(sqlite3 *db, const tl_inventory_input *in, tl_err *e);

/* The events, with what classification and anchor selection decided per event (NULL:
** none). Frees pub->event_relation. */
typedef struct tl_event_input {
  const tl_trace *trace;
  const tl_derived *derived;
  const uint32_t *symbol;                  /* structural symbol, pool id */
  const uint8_t *semantic;                 /* per event: a code of the two tables below */
  const char *const *semantic_role_name;   /* per code: anchor, aux, transparent (static) */
  const char *const *semantic_reason_name; /* per code: static strings */
  const uint32_t *role_class;              /* traceloom_evidence_role_class.class_id */
  const uint32_t *anchor_event;            /* event of anchor k, for k < nanchors */
  size_t nanchors;
} tl_event_input;
int tl_publish_events(tl_publication *pub, const tl_event_input *in, tl_err *e);

/* The same in parts, for two connections at once (with threads >= 2 the driver writes the
** upper half of the events on a staging connection, ext/analyze/staging.c, while its own
** writes the lower half; the copy appends them, their event_n being larger):
**
**   tl_event_rows *r;
**   rc = tl_event_rows_prepare(pub, in, &r, e);      traceloom_event_shape (written), each
**                                                    event's shape and anchor
**   rc = tl_event_rows_write(other, r, k, n, e);     traceloom_event_core rows [k, n)
**   rc = tl_event_rows_write(pub->db, r, 0, k, e);   rows [0, k)  (tl_event_tables)
**   ... the upper rows appended to pub->db's ...
**   tl_event_rows_free(r);                           also after a failed prepare
**   tl_publish_events_done(pub);                     frees pub->event_relation
**
** Two ranges share only what they read (the trace, the input, r). */
typedef struct tl_event_rows tl_event_rows;
int tl_event_rows_prepare(tl_publication *pub, const tl_event_input *in, tl_event_rows **out,
                          tl_err *e);
size_t tl_event_rows_count(const tl_event_rows *r);
int tl_event_rows_write(sqlite3 *db, const tl_event_rows *r, size_t lo, size_t hi, tl_err *e);
void tl_event_rows_free(tl_event_rows *r);
void tl_publish_events_done(tl_publication *pub);
extern const char *const tl_event_tables[]; /* NULL-terminated */

/* traceloom_metadata. */
typedef struct tl_metadata_input {
  const tl_profile *profile;
  const tl_trace *trace;
  const tl_derived *derived;
  size_t nrelations;
  const tl_source_digest *digests;
  const char *options_json;       /* canonical options */
  int embed_raw;
  const char *partition_by;       /* candidate_partition_by: "scheduler_step" or "none" */
} tl_metadata_input;
int tl_publish_metadata(sqlite3 *db, const tl_metadata_input *in, tl_err *e);

/* The planner's table sizes: tl_publish_planner_table, before the savepoint, creates
** sqlite_stat1 where the database has none (empty: the one change a failed analysis can
** leave, a planner table); tl_publish_planner_stats, once every table is written, puts the
** row count of every traceloom_* table there, read again by this connection's planner. */
int tl_publish_planner_table(sqlite3 *db, tl_err *e);
int tl_publish_planner_stats(sqlite3 *db, tl_err *e);

/* embed.c: raw tables of the sources, copied with their rowids (option embed_raw), and the
** drop of an earlier analysis' embedded tables. */
int tl_publish_embedded(tl_publication *pub, const tl_profile *p, tl_err *e);
int tl_publish_embed_raw(sqlite3 *db, const tl_profile *p, tl_err *e);
int tl_drop_previous_embedded(sqlite3 *db, tl_err *e);

/* Helpers shared by every table writer. */
int tl_pub_exec(sqlite3 *db, const char *sql, tl_err *e);
int tl_pub_prepare(sqlite3 *db, const char *sql, sqlite3_stmt **st, tl_err *e);
/* Steps and resets an INSERT; reports the table on error. */
int tl_pub_step(sqlite3 *db, sqlite3_stmt *st, const char *table, tl_err *e);
/* Steps a query that reads at most one row inside the publication: 1 when it gave a row, 0
** when it gave none, -1 (e filled, naming `what`) when SQLite failed. Never take a failure for
** "no row": after an out-of-memory or I/O error in any statement, even a read, SQLite may
** have rolled the whole transaction back, and the next write would land outside it. */
int tl_pub_probe(sqlite3 *db, sqlite3_stmt *st, const char *what, tl_err *e);
/* Binds an int64 or NULL when v == absent. */
void tl_bind_i64_or_null(sqlite3_stmt *st, int col, int64_t v, int64_t absent);
/* Binds a pool string or NULL for the empty string. */
void tl_bind_str(sqlite3_stmt *st, int col, const tl_strpool *pool, uint32_t id);
void tl_bind_text(sqlite3_stmt *st, int col, const char *s); /* NULL -> SQL NULL */
/* ROUND(ns / 1000.0, 3) */
double tl_ns_to_us(int64_t ns);
/* Rounding of derived ratios, half away from zero like SQL's ROUND(x, 3) / ROUND(x, 6). */
double tl_round3(double x);
double tl_round6(double x);

#endif
