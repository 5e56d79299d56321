/*
** sqlsrc.h: read-only access to profile SQLite databases, shared by every SQLite reader.
**
** - Databases are opened through a `file:...?mode=ro` URI on a private connection, so
**   the profile is never written and the caller's locks are not involved.
** - Schema probing is capability style: PRAGMA table_info lists the columns, and a
**   reader looks columns up by name (exactly for Ascend, case-insensitively for Nsight).
** - Identifiers are always quoted; no SQL is built from profile content otherwise.
** - Error messages name the file, the table, the missing columns and what was expected.
*/
#ifndef TL_SQLSRC_H
#define TL_SQLSRC_H

#include "util/sqlite_api.h"
#include "util/err.h"
#include "util/vec.h"

/* Opens path read-only. Fails with "failed to open read-only SQLite profile '<path>': ..."
** and also when the file is not a SQLite database or is corrupt (the schema is read once). */
int tl_sql_open_ro(const char *path, sqlite3 **out, tl_err *e);
void tl_sql_close(sqlite3 *db);

/* Prepares sql; fails with "failed to prepare SQLite profile query: <msg>; sql=<sql>"
** and the file path. */
int tl_sql_prepare(sqlite3 *db, const char *path, const char *sql, sqlite3_stmt **out,
                   tl_err *e);

/* The columns of a table (or view), in declaration order. */
typedef struct tl_columns {
  int exists;          /* 0 when the table is absent */
  int n;
  char **names;        /* malloc'd */
} tl_columns;

int tl_sql_columns(sqlite3 *db, const char *path, const char *table, tl_columns *out,
                   tl_err *e);
void tl_columns_free(tl_columns *c);
/* Index of a column: exact match when nocase == 0, ASCII case-insensitive otherwise; -1. */
int tl_columns_find(const tl_columns *c, const char *name, int nocase);
/* Checks that every name in the NULL-terminated list exists. When some are missing,
** returns 0 and (if missing != NULL) sets *missing to a malloc'd "a, b" list. */
int tl_columns_have(const tl_columns *c, const char *const *names, int nocase, char **missing);

/* Tables and views of a database, sorted by name. */
typedef TL_VEC(char *) tl_names;
int tl_sql_tables(sqlite3 *db, const char *path, tl_names *out, tl_err *e);
void tl_names_free(tl_names *n);

/* An open SQLite file that discovery asks every family about (tl_family_def.detect_sqlite). */
typedef struct tl_sql_probe {
  sqlite3 *db;
  const char *path;
  const tl_names *tables;  /* sorted */
} tl_sql_probe;

/* 1 when the probed file has a table (or view) named exactly name. */
int tl_sql_probe_has(const tl_sql_probe *f, const char *name);
/* 1 when some table named with the prefix has a row, 0 when none, -1 on a read error. */
int tl_sql_probe_nonempty_prefix(const tl_sql_probe *f, const char *prefix);

/* SELECT count(*) of a table; -1 with an error on failure. */
int64_t tl_sql_count(sqlite3 *db, const char *path, const char *table, tl_err *e);
/* 1 when the table has at least one row, 0 when empty or absent. */
int tl_sql_nonempty(sqlite3 *db, const char *table); /* 1 rows, 0 empty or absent, -1 error */

/* Quoted identifier: "name" with embedded quotes doubled. malloc'd. */
char *tl_sql_quote_ident(const char *name);

/* Reads an integer column with NULL -> fallback. Integers stay integers; a REAL or
** NUMERIC text value is converted exactly when it holds an integral value. */
int64_t tl_col_i64(sqlite3_stmt *st, int col, int64_t fallback);
/* The same of a value (sqlite3_column_value: a reader that looks at a column twice fetches it
** once). */
int64_t tl_value_i64(sqlite3_value *v, int64_t fallback);
/* Text of a column, "" for NULL. Valid until the next step. */
const char *tl_col_text(sqlite3_stmt *st, int col, int *len);



/* Capability check of one table: returns 1 when the table exists with every required
** column, 0 when not (then *reason, if given, is a malloc'd "table X is absent" or
** "table X is missing column(s): a, b"), -1 on error. */
int tl_sql_capability(sqlite3 *db, const char *path, const char *table,
                      const char *const *required, int nocase, char **reason, tl_err *e);
#endif
