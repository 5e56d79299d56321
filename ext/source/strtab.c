/*
** strtab.c: string tables of profile databases (see strtab.h).
*/
#include "source/strtab.h"

#include <stdlib.h>
#include <string.h>

void tl_strtab_free(tl_strtab *s) {
  tl_i64map_free(&s->index);
  TL_VEC_FREE(&s->entries);
  tl_buf_free(&s->text);
  memset(s, 0, sizeof *s);
}

/* The actual column names (their case may differ under nocase); 0 when one is missing. */
static int find_columns(const tl_columns *cols, const tl_strtab_spec *spec, const char **id,
                        const char **value) {
  int i = tl_columns_find(cols, spec->id_col, spec->nocase);
  int v = tl_columns_find(cols, spec->value_col, spec->nocase);
  if (i < 0 || v < 0) return 0;
  *id = cols->names[i], *value = cols->names[v];
  return 1;
}

static int add_row(tl_strtab *s, const tl_strtab_spec *spec, tl_strpool *pool, int64_t id,
                   const char *text, int len) {
  if (spec->first_wins && tl_i64map_get(&s->index, id)) return TL_OK;
  tl_strtab_entry en = {s->text.n, (size_t)len, 0};
  if (spec->eager) {
    uint32_t p = tl_strpool_intern(pool, text, (size_t)len);
    if (p == TL_STR_NOMEM) return TL_ERROR;
    en.pooled = p + 1;
  }
  tl_buf_append(&s->text, text, (size_t)len);
  tl_buf_append(&s->text, "", 1);
  if (s->text.oom || TL_VEC_PUSH(&s->entries, en) ||
      tl_i64map_put(&s->index, id, (int64_t)s->entries.n - 1))
    return TL_ERROR;
  return TL_OK;
}

int tl_strtab_load(sqlite3 *db, const char *path, const tl_strtab_spec *spec, tl_strpool *pool,
                   tl_strtab *out, tl_err *e) {
  memset(out, 0, sizeof *out);
  tl_columns cols;
  if (tl_sql_columns(db, path, spec->table, &cols, e)) return TL_ERROR;
  const char *idc = NULL, *valc = NULL;
  int found = cols.exists && find_columns(&cols, spec, &idc, &valc);
  if (cols.exists && !found && spec->required) {
    const char *need[] = {spec->id_col, spec->value_col, NULL};
    char *missing = NULL;
    tl_columns_have(&cols, need, spec->nocase, &missing);
    tl_fail(e,
            "unsupported %s %s schema: missing required column(s): %s (table %s in '%s'; "
            "expected %s, %s)",
            spec->what ? spec->what : "profile", spec->table, missing ? missing : "?",
            spec->table, path, spec->id_col, spec->value_col);
    free(missing);
    tl_columns_free(&cols);
    return TL_ERROR;
  }
  char *qi = found ? tl_sql_quote_ident(idc) : NULL, *qv = found ? tl_sql_quote_ident(valc) : NULL;
  char *qt = found ? tl_sql_quote_ident(spec->table) : NULL;
  tl_columns_free(&cols);
  if (!found) return TL_OK; /* no table: every id decodes by the reader's fallback */
  char *sql = qi && qv && qt ? tl_mprintf("SELECT %s, %s FROM %s%s%s", qi, qv, qt,
                                          spec->where ? " WHERE " : "",
                                          spec->where ? spec->where : "")
                             : NULL;
  free(qi), free(qv), free(qt);
  if (!sql) return tl_nomem(e);
  sqlite3_stmt *st;
  int rc = tl_sql_prepare(db, path, sql, &st, e);
  free(sql);
  if (rc) return rc;
  out->present = 1;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
    if (sqlite3_column_type(st, 0) == SQLITE_NULL) continue;
    int64_t id = tl_col_i64(st, 0, INT64_MIN);
    if (id == INT64_MIN) continue;
    int len;
    const char *text = tl_col_text(st, 1, &len);
    if (add_row(out, spec, pool, id, text, len)) {
      sqlite3_finalize(st);
      tl_strtab_free(out);
      return tl_nomem(e);
    }
  }
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) {
    tl_fail(e, "failed to read %s in '%s': %s", spec->table, path, sqlite3_errmsg(db));
    tl_strtab_free(out);
    return TL_ERROR;
  }
  return TL_OK;
}

uint32_t tl_strtab_lookup(tl_strtab *s, tl_strpool *pool, int64_t id, int *nomem) {
  int64_t *k = tl_i64map_get(&s->index, id);
  if (!k) return TL_STR_NOMEM;
  tl_strtab_entry *en = &s->entries.v[*k];
  if (!en->pooled) {
    uint32_t p = tl_strpool_intern(pool, s->text.p + en->off, en->len);
    if (p == TL_STR_NOMEM) {
      if (nomem) *nomem = 1;
      return TL_STR_NOMEM;
    }
    en->pooled = p + 1;
  }
  return en->pooled - 1;
}

const char *tl_strtab_text(const tl_strtab *s, int64_t id) {
  int64_t *k = tl_i64map_get(&s->index, id);
  return k ? s->text.p + s->entries.v[*k].off : NULL;
}
