/*
** strtab.h: the string tables of profile databases, integer id -> text, read once per
** database by every reader whose name columns hold ids:
**
**   Ascend  STRING_IDS(id, value)          msprof.c, msprof_split.c, msprof_marks.c
**   Nsight  StringIds(id, value)           nsys.c (column names in any case)
**   Hygon   STR_TABLE(STR_ID, STR_NAME)    hygon.c
**
**   static const tl_strtab_spec spec = {"STRING_IDS", "id", "value", ...};
**   tl_strtab s;
**   if (tl_strtab_load(db, path, &spec, pool, &s, e)) ...
**   uint32_t name = tl_strtab_lookup(&s, pool, id);   pool id, TL_STR_NOMEM when id is unknown
**   tl_strtab_free(&s);
**
** How a name column is decoded (text as is, an id through the table, the text of an unknown
** id) is each format's rule and stays in its reader; the table itself is read here. Ids are
** integers (a REAL or TEXT id holding an integral value counts as that integer); rows with
** another id are skipped.
*/
#ifndef TL_STRTAB_H
#define TL_STRTAB_H

#include "source/sqlsrc.h"
#include "util/strpool.h"
#include "util/i64map.h"
#include "util/buf.h"

typedef struct tl_strtab_spec {
  const char *table, *id_col, *value_col;
  int nocase;         /* column names matched case-insensitively (Nsight) */
  int required;       /* a table that exists without both columns is an error (else: no names) */
  int first_wins;     /* a repeated id keeps its first text (else the last one read) */
  int eager;          /* every text is interned at load, in row order (else on first lookup) */
  const char *where;  /* NULL, or SQL restricting the rows (constant text, never profile data) */
  const char *what;   /* names the table in the error of a required one ("CUDA/Nsight") */
} tl_strtab_spec;

typedef struct tl_strtab_entry {
  size_t off, len;    /* the text in tl_strtab.text */
  uint32_t pooled;    /* pool id + 1 once interned, 0 before */
} tl_strtab_entry;

typedef struct tl_strtab {
  int present;        /* the table exists with both columns */
  tl_i64map index;    /* id -> entry */
  TL_VEC(tl_strtab_entry) entries;
  tl_buf text;
} tl_strtab;

/* Reads the table (absent: an empty table). Eager tables intern into pool (may be NULL
** otherwise). */
int tl_strtab_load(sqlite3 *db, const char *path, const tl_strtab_spec *spec, tl_strpool *pool,
                   tl_strtab *out, tl_err *e);
/* The pool id of id's text (interned now when needed): TL_STR_NOMEM when id is not in the
** table, or when memory ran out (then *nomem is set, if given). */
uint32_t tl_strtab_lookup(tl_strtab *s, tl_strpool *pool, int64_t id, int *nomem);
/* The text of id (NUL-terminated, valid until tl_strtab_free), NULL when unknown. */
const char *tl_strtab_text(const tl_strtab *s, int64_t id);
void tl_strtab_free(tl_strtab *s);

#endif
