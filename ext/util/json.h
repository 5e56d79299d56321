/*
** json.h: a strict RFC 8259 JSON parser producing a read-only DOM, for small documents
** (analysis options, config lines, JSONL records).
**
**   tl_json *doc;
**   if (tl_json_parse(text, len, &doc, e)) return TL_ERROR;   (message has line and column)
**   const tl_json *v = tl_json_get(doc, "window_ns");
**   int64_t ns;
**   if (!v || tl_json_i64(v, &ns)) ...                          (integers never pass through double)
**   tl_json_free(doc);
**
** Strictness is deliberate: options that parse must mean exactly one thing, so duplicate keys,
** NaN/Infinity, leading zeros, lone surrogates, raw control characters and invalid UTF-8 are
** errors rather than silently accepted. Every node belongs to the document returned by
** tl_json_parse and lives until tl_json_free of that root.
*/
#ifndef TL_JSON_H
#define TL_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"
#include "util/err.h"

typedef enum tl_json_type {
  TL_JSON_NULL,
  TL_JSON_BOOL,
  TL_JSON_NUMBER,
  TL_JSON_STRING,
  TL_JSON_ARRAY,
  TL_JSON_OBJECT
} tl_json_type;

typedef struct tl_json tl_json; /* opaque node */

/* Parses exactly one JSON value (surrounded by optional whitespace) from text[0..len).
** On error *out is NULL and the message reads
** "invalid JSON at line L, column C: <what was expected>"; lines and columns count from 1 and
** columns count characters (UTF-8 code points). A leading UTF-8 byte order mark is skipped. */
int tl_json_parse(const char *text, size_t len, tl_json **out, tl_err *e);
/* Frees a document returned by tl_json_parse (NULL is fine). */
void tl_json_free(tl_json *j);

tl_json_type tl_json_type_of(const tl_json *j);
size_t tl_json_len(const tl_json *j);                        /* array/object member count, else 0 */
const tl_json *tl_json_at(const tl_json *j, size_t i);       /* array element i, NULL if out of range */
const char *tl_json_key_at(const tl_json *j, size_t i);      /* object key i (document order), NUL-terminated */
const tl_json *tl_json_value_at(const tl_json *j, size_t i); /* object value i */
const tl_json *tl_json_get(const tl_json *obj, const char *key); /* NULL when absent or not an object */
/* Decoded UTF-8 string (may contain NUL via \u0000; len tells; always NUL-terminated too),
** NULL if not a string. len may be NULL. */
const char *tl_json_str(const tl_json *j, size_t *len);
int tl_json_bool(const tl_json *j);                 /* 1/0; -1 if not a bool */
const char *tl_json_number_text(const tl_json *j);  /* the number token exactly as written, NULL if not a number */
/* 0 when the number is an integer token (no fraction/exponent) within int64 range, else -1.
** Exact: decimal digits are converted directly, never via double. */
int tl_json_i64(const tl_json *j, int64_t *out);
/* 0 for any number (correctly rounded; magnitudes beyond double's range give +-HUGE_VAL),
** -1 if not a number. */
int tl_json_double(const tl_json *j, double *out);

/* Canonical compact JSON (no whitespace, keys in document order, numbers as written, strings
** re-escaped minimally) appended to b. */
void tl_json_write(const tl_json *j, tl_buf *b);

#endif
