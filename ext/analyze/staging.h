/*
** staging.h: a second SQLite writer for the publication (issue 18; see staging.c).
**
** One connection writes at a time, and the publication already writes each table at
** SQLite's insert floor. With threads >= 2, tables whose rows are ready while the analysis
** connection writes others (the structure trees, beside the anchors) are written by a worker
** thread on its own connection into a private staging database, attached to the analysis
** connection as `traceloom_staging` (or `traceloom_staging_runtime`), and moved into the output inside the publication's
** savepoint by SQLite's transfer path: `INSERT INTO main.t SELECT * FROM
** traceloom_staging.t` into an empty table of identical declaration copies the records
** without decoding them (its program has no MakeRecord).
**
**   tl_staging *s = tl_staging_attach(db, schema);    before SAVEPOINT traceloom_analysis;
**                                                     NULL: db writes everything itself
**   ... the savepoint, the schema (the staged tables exist in main) ...
**   rc = tl_staging_start(s, tables, write, arg, e);  the worker: the tables, write(its db)
**   ... the analysis connection writes other tables (nothing that `write` reads changes) ...
**   rc = tl_staging_finish(s, rc, interrupted, ctx, e);  waits, or stops it; copies
**     (or tl_staging_join, then tl_staging_copy: the worker's input may be freed between)
**   ... commit or roll back ...
**   tl_staging_close(s);                              detaches, closes, deletes the file
**
** A failure of the worker is the analysis' failure (its message, with the worker's code); an
** interrupt of the analysis connection, or a failure on it, stops the worker at its next
** SQLite step. The staging file is deleted by tl_staging_close whatever happened.
*/
#ifndef TL_STAGING_H
#define TL_STAGING_H

#include "util/sqlite_api.h"
#include "util/err.h"

typedef struct tl_staging tl_staging;

/* The schema names of the staging databases on the analysis connection: one per staged
** step (each file is written by one worker, then read by the analysis connection, which
** keeps it locked until the commit: a second worker could not commit into it). */
#define TL_STAGING_SCHEMA "traceloom_staging"                 /* the structure's trees */
#define TL_STAGING_RUNTIME_SCHEMA "traceloom_staging_runtime" /* the runtime relations */
#define TL_STAGING_EVENTS_SCHEMA "traceloom_staging_events"   /* the upper half of the events */

/* A new staging file (beside db's main file, else in $TMPDIR or /tmp) attached to db as
** `schema` (a string literal, one of the names above); NULL
** when that cannot be done or undone cleanly: SQLite built without threads, db inside a
** transaction or read by a statement in progress (ATTACH and DETACH would be refused), db on
** another VFS than the default (the worker's connection would open another file), no file
** could be created or attached. The caller then writes every table on db. */
tl_staging *tl_staging_attach(sqlite3 *db, const char *schema);

/* Starts the worker: it opens the staging file on its own connection, creates `tables`
** (NULL-terminated) with the declarations they have in db's main schema, runs `write` on
** its connection (one transaction) and commits. `arg` must stay valid, and what `write`
** reads unchanged, until tl_staging_finish. */
int tl_staging_start(tl_staging *s, const char *const *tables,
                     int (*write)(sqlite3 *db, void *arg, tl_err *e), void *arg, tl_err *e);

/* rc: how the analysis connection's work went meanwhile. Waits for the worker (stopping it
** when rc failed or interrupted(ctx) says so), then copies each staged table into the main
** one: empty, or (a table whose INTEGER PRIMARY KEY is its only key) holding only smaller
** rowids than the staged rows, which the transfer path then appends (a NotExists probe a
** row, still no MakeRecord). Returns the outcome; nothing happens when s was not started. */
int tl_staging_finish(tl_staging *s, int rc, int (*interrupted)(void *ctx), void *ctx,
                      tl_err *e);

/* tl_staging_finish in two calls, for a caller that frees what the worker read, or starts
** work of its own on other threads, between the wait and the copy: tl_staging_join waits for
** the worker (stopping it as tl_staging_finish does) and returns the outcome; tl_staging_copy
** copies when the join's outcome (rc) is TL_OK. Each does nothing when s was not started. */
int tl_staging_join(tl_staging *s, int rc, int (*interrupted)(void *ctx), void *ctx, tl_err *e);
int tl_staging_copy(tl_staging *s, int rc, tl_err *e);

/* The copy statement of one staged table of schema (sqlite3_free it); NULL when out of
** memory. */
char *tl_staging_copy_sql(const char *schema, const char *table);

/* After the analysis' transaction ended: stops and joins a worker still running, detaches
** (not possible after an interrupt, whose connection prepares nothing until its statement
** ends: the next tl_staging_attach detaches that one), closes and deletes the file. NULL is
** a no-op. */
void tl_staging_close(tl_staging *s);

/* The staging file's path while s is open (tests). */
const char *tl_staging_path(const tl_staging *s);

#endif
