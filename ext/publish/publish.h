/*
** publish.h: writing the analysis into the calling connection's main database.
**
** Everything happens inside one SAVEPOINT: earlier traceloom_* relations are dropped,
** the embedded schema (sql/schema) is created, rows are inserted with prepared
** statements, the views (sql/views) are created and the catalog
** (traceloom_analysis_surface) is filled from the `-- @surface` lines of the SQL files.
** Any error rolls the savepoint back, so the previous analysis stays exactly as it was.
*/
#ifndef TL_PUBLISH_H
#define TL_PUBLISH_H

#include "util/sqlite_api.h"
#include "trace/trace.h"
#include "relate/relate.h"
#include "source/source.h"
#include "structure/publish_structure.h"
#include "classify/classify.h"
#include "replay/replay.h"

typedef struct tl_source_digest {
  int64_t size;
  char sha256[65];
} tl_source_digest;

typedef struct tl_publish_input {
  const tl_profile *profile;
  const tl_trace *trace;
  const tl_relations *relations;
  const tl_inventory *inventory;
  const tl_source_digest *digests;  /* one per profile file (source_id) */
  const char *options_json;         /* canonical options */
  /* Classification per event (NULL before that stage exists in a run). */
  const uint32_t *event_symbol;     /* structural symbol, pool id */
  const char *const *event_semantic_role;  /* anchor, aux, transparent: static strings */
  const char *const *event_semantic_role_reason; /* static strings */
  const tl_structure_input *structure; /* anchors, packets, trees; NULL to skip */
  const tl_anchors *anchors;        /* for tl_publish_events: the anchor of each event */
  int embed_raw;                    /* copy every raw source table (embed.c) */
  /* Rule policies and role classes (ext/classify); NULL before that stage ran. */
  const tl_rules *rules;
  const tl_classification *classification;
  const uint32_t *event_role_class;   /* traceloom_evidence_role_class.class_id per event */
  const tl_replay *replay;            /* exact graph replays; NULL to skip */
  int threads;                        /* analyze option: threads >= 2 let SQLite's sorter
                                      ** build the large indexes with threads - 1 helpers */
} tl_publish_input;


/* The publication in three steps, so that each large array can be freed as soon as it is
** written rather than held until the structure is published:
**   tl_publish_begin   opens the SAVEPOINT, drops the earlier analysis, creates the schema
**                      and writes the calls, relations and inventory (needs profile, trace,
**                      relations, inventory, digests);
**   tl_publish_events  writes the events (needs trace and the per-event classification);
**   tl_publish_finish  writes everything else, creates the views and indexes and releases
**                      the SAVEPOINT (calls.n and relations->n must still be the counts).
** Each rolls back on its own failure; a failure in between is the caller's to undo with
** tl_publish_abort. The handle keeps what an abort needs even when the connection has been
** interrupted (tl_publish_abort in publish.c). */
typedef struct tl_publication {
  sqlite3 *db;
  sqlite3_stmt *canary; /* a no-op write, prepared while the connection still can */
  int32_t *event_relation; /* per trace event: the relation_n its row records, or -1; made
                              by tl_publish_begin (relations are numbered there), written
                              with the events, then freed */
} tl_publication;

int tl_publish_begin(tl_publication *pub, sqlite3 *db, const tl_publish_input *in, tl_err *e);
int tl_publish_events(tl_publication *pub, const tl_publish_input *in, tl_err *e);
int tl_publish_finish(tl_publication *pub, const tl_publish_input *in, tl_err *e);
void tl_publish_abort(tl_publication *pub);

/* The row count of every traceloom_* table in sqlite_stat1 (creating it where missing), read
** again by this connection's planner: once every table is written. New schema (the stat
** table) and expired statements (the reload) follow: prepare anything needed after it anew. */
int tl_publish_planner_stats(sqlite3 *db, tl_err *e);

/* embed.c: raw tables of the sources, copied with their rowids (option embed_raw), and the
** drop of an earlier analysis' embedded tables. */
int tl_publish_embed_raw(sqlite3 *db, const tl_profile *p, tl_err *e);
int tl_drop_previous_embedded(sqlite3 *db, tl_err *e);

/* Helpers shared by every table writer. */
int tl_pub_exec(sqlite3 *db, const char *sql, tl_err *e);
int tl_pub_prepare(sqlite3 *db, const char *sql, sqlite3_stmt **st, tl_err *e);
/* Steps and resets an INSERT; reports the table on error. */
int tl_pub_step(sqlite3 *db, sqlite3_stmt *st, const char *table, tl_err *e);
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
