/*
** sqlsrc.c: read-only SQLite access for the readers (see sqlsrc.h).
*/
#include "source/sqlsrc.h"
#include "util/dbopen.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <strings.h>
#include <stdlib.h>
#include <string.h>

/* The profile opener: every profile database is opened here (tools/check_layering.py). */
int tl_sql_open_ro(const char *path, sqlite3 **out, tl_err *e) {
  return tl_db_open_ro(path, "SQLite profile", out, e);
}

void tl_sql_close(sqlite3 *db) {
  if (db) sqlite3_close(db);
}

int tl_sql_prepare(sqlite3 *db, const char *path, const char *sql, sqlite3_stmt **out,
                   tl_err *e) {
  *out = NULL;
  if (sqlite3_prepare_v2(db, sql, -1, out, NULL) != SQLITE_OK)
    return tl_fail(e, "failed to prepare SQLite profile query: %s; sql=%s; file=%s",
                   sqlite3_errmsg(db), sql, path);
  return TL_OK;
}

char *tl_sql_quote_ident(const char *name) {
  size_t n = strlen(name), q = 0;
  for (size_t i = 0; i < n; i++) q += name[i] == '"';
  char *s = malloc(n + q + 3);
  if (!s) return NULL;
  char *w = s;
  *w++ = '"';
  for (size_t i = 0; i < n; i++) {
    if (name[i] == '"') *w++ = '"';
    *w++ = name[i];
  }
  *w++ = '"';
  *w = 0;
  return s;
}

int tl_sql_columns(sqlite3 *db, const char *path, const char *table, tl_columns *out,
                   tl_err *e) {
  memset(out, 0, sizeof *out);
  char *q = tl_sql_quote_ident(table);
  if (!q) return tl_nomem(e);
  char *sql = tl_mprintf("PRAGMA table_info(%s)", q);
  free(q);
  if (!sql) return tl_nomem(e);
  sqlite3_stmt *st;
  int rc = tl_sql_prepare(db, path, sql, &st, e);
  free(sql);
  if (rc) return rc;
  int cap = 0;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    const char *name = (const char *)sqlite3_column_text(st, 1);
    if (out->n == cap) {
      cap = cap ? cap * 2 : 16;
      char **nn = realloc(out->names, (size_t)cap * sizeof *nn);
      if (!nn) {
        sqlite3_finalize(st);
        tl_columns_free(out);
        return tl_nomem(e);
      }
      out->names = nn;
    }
    out->names[out->n] = tl_strdup(name ? name : "");
    if (!out->names[out->n]) {
      sqlite3_finalize(st);
      tl_columns_free(out);
      return tl_nomem(e);
    }
    out->n++;
  }
  if (rc != SQLITE_DONE) {
    tl_fail(e, "failed to read the schema of table %s in '%s': %s", table, path,
            sqlite3_errmsg(db));
    sqlite3_finalize(st);
    tl_columns_free(out);
    return TL_ERROR;
  }
  sqlite3_finalize(st);
  out->exists = out->n > 0;
  return TL_OK;
}

void tl_columns_free(tl_columns *c) {
  for (int i = 0; i < c->n; i++) free(c->names[i]);
  free(c->names);
  memset(c, 0, sizeof *c);
}

int tl_columns_find(const tl_columns *c, const char *name, int nocase) {
  for (int i = 0; i < c->n; i++)
    if (nocase ? strcasecmp(c->names[i], name) == 0 : strcmp(c->names[i], name) == 0) return i;
  return -1;
}

int tl_columns_have(const tl_columns *c, const char *const *names, int nocase, char **missing) {
  size_t len = 0;
  int ok = 1;
  for (int i = 0; names[i]; i++)
    if (tl_columns_find(c, names[i], nocase) < 0) ok = 0, len += strlen(names[i]) + 2;
  if (ok || !missing) return ok;
  char *m = malloc(len + 1);
  if (m) {
    m[0] = 0;
    for (int i = 0; names[i]; i++) {
      if (tl_columns_find(c, names[i], nocase) >= 0) continue;
      if (m[0]) strcat(m, ", ");
      strcat(m, names[i]);
    }
  }
  *missing = m;
  return 0;
}

int tl_sql_tables(sqlite3 *db, const char *path, tl_names *out, tl_err *e) {
  memset(out, 0, sizeof *out);
  sqlite3_stmt *st;
  if (tl_sql_prepare(db, path,
                     "SELECT name FROM sqlite_schema WHERE type IN ('table','view') ORDER BY name",
                     &st, e))
    return TL_ERROR;
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    char *name = tl_strdup((const char *)sqlite3_column_text(st, 0));
    if (!name || TL_VEC_PUSH(out, name)) {
      free(name);
      sqlite3_finalize(st);
      tl_names_free(out);
      return tl_nomem(e);
    }
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) {
    tl_names_free(out);
    return tl_fail(e, "failed to list the tables of '%s': %s", path, sqlite3_errmsg(db));
  }
  return TL_OK;
}

void tl_names_free(tl_names *n) {
  for (size_t i = 0; i < n->n; i++) free(n->v[i]);
  TL_VEC_FREE(n);
}

int64_t tl_sql_count(sqlite3 *db, const char *path, const char *table, tl_err *e) {
  char *q = tl_sql_quote_ident(table);
  char *sql = q ? tl_mprintf("SELECT count(*) FROM %s", q) : NULL;
  free(q);
  if (!sql) return tl_nomem(e), -1;
  sqlite3_stmt *st;
  int rc = tl_sql_prepare(db, path, sql, &st, e);
  free(sql);
  if (rc) return -1;
  int64_t n = -1;
  if (sqlite3_step(st) == SQLITE_ROW)
    n = sqlite3_column_int64(st, 0);
  else
    tl_fail(e, "failed to count the rows of table %s in '%s': %s", table, path,
            sqlite3_errmsg(db));
  sqlite3_finalize(st);
  return n;
}

int tl_sql_nonempty(sqlite3 *db, const char *table) {
  char *q = tl_sql_quote_ident(table);
  char *sql = q ? tl_mprintf("SELECT 1 FROM %s LIMIT 1", q) : NULL;
  free(q);
  if (!sql) return -1;
  sqlite3_stmt *st = NULL;
  int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL), found;
  free(sql);
  if (rc == SQLITE_OK) {
    rc = sqlite3_step(st);
    found = rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : -1;
  } else {
    /* A missing table is simply not there; running out of memory or an I/O error is not
    ** an answer about the table. */
    found = (rc & 0xff) == SQLITE_ERROR ? 0 : -1;
  }
  sqlite3_finalize(st);
  return found;
}

/* Exact decimal integer text (optionally with a ".000" fraction) -> int64, without
** passing through a double. Returns 0 on success. */
static int text_to_i64(const char *s, int64_t *out) {
  while (*s == ' ') s++;
  int neg = 0;
  if (*s == '-' || *s == '+') neg = *s++ == '-';
  if (!isdigit((unsigned char)*s)) return -1;
  uint64_t v = 0;
  for (; isdigit((unsigned char)*s); s++) {
    if (v > (UINT64_MAX - 9) / 10) return -1;
    v = v * 10 + (uint64_t)(*s - '0');
  }
  if (*s == '.') {
    for (s++; *s == '0'; s++) {}
  }
  while (*s == ' ') s++;
  if (*s) return -1;
  if (!neg && v > INT64_MAX) return -1;
  if (neg && v > (uint64_t)INT64_MAX + 1) return -1;
  *out = neg ? (int64_t)(0 - v) : (int64_t)v;
  return 0;
}

int64_t tl_col_i64(sqlite3_stmt *st, int col, int64_t fallback) {
  if (col < 0) return fallback;
  /* One column fetch, then value accessors: cheaper than column_type + column_int64. */
  return tl_value_i64(sqlite3_column_value(st, col), fallback);
}

int64_t tl_value_i64(sqlite3_value *v, int64_t fallback) {
  switch (sqlite3_value_type(v)) {
    case SQLITE_INTEGER: return sqlite3_value_int64(v);
    case SQLITE_NULL: return fallback;
    case SQLITE_FLOAT: {
      double d = sqlite3_value_double(v);
      /* Only exactly integral values inside the int64 range are accepted. */
      if (d >= -9223372036854775808.0 && d < 9223372036854775808.0 && d == (double)(int64_t)d)
        return (int64_t)d;
      return fallback;
    }
    default: {
      int64_t out;
      const char *t = (const char *)sqlite3_value_text(v);
      return t && text_to_i64(t, &out) == 0 ? out : fallback;
    }
  }
}

const char *tl_col_text(sqlite3_stmt *st, int col, int *len) {
  const char *t = col >= 0 ? (const char *)sqlite3_column_text(st, col) : NULL;
  if (len) *len = t ? sqlite3_column_bytes(st, col) : 0;
  return t ? t : "";
}

int tl_sql_capability(sqlite3 *db, const char *path, const char *table,
                      const char *const *required, int nocase, char **reason, tl_err *e) {
  if (reason) *reason = NULL;
  tl_columns c;
  if (tl_sql_columns(db, path, table, &c, e)) return -1;
  int ok;
  if (!c.exists) {
    ok = 0;
    if (reason) *reason = tl_mprintf("table %s is absent", table);
  } else {
    char *missing = NULL;
    ok = tl_columns_have(&c, required, nocase, reason ? &missing : NULL);
    if (!ok && reason) *reason = tl_mprintf("table %s is missing column(s): %s", table,
                                            missing ? missing : "?");
    free(missing);
  }
  tl_columns_free(&c);
  return ok;
}

int tl_sql_probe_has(const tl_sql_probe *f, const char *name) {
  for (size_t i = 0; i < f->tables->n; i++)
    if (strcmp(f->tables->v[i], name) == 0) return 1;
  return 0;
}

int tl_sql_probe_nonempty_prefix(const tl_sql_probe *f, const char *prefix) {
  size_t n = strlen(prefix);
  for (size_t i = 0; i < f->tables->n; i++) {
    if (strncmp(f->tables->v[i], prefix, n) != 0) continue;
    int ne = tl_sql_nonempty(f->db, f->tables->v[i]);
    if (ne != 0) return ne;
  }
  return 0;
}
