/*
** kineto_json.h: a streaming JSON tokenizer for PyTorch profiler (Kineto) Chrome traces.
**
** The reader pulls one token at a time from a file through zlib's gzread, which reads
** plain and gzip-compressed files alike, so a trace of any size is walked with a fixed
** 64 KiB window and never held whole. Strings are unescaped into a reusable buffer;
** numbers are kept as their literal text, so that callers convert them exactly (ts/dur
** microseconds to int64 nanoseconds with tl_kineto_us_to_ns, never through a double).
**
** Every token carries the byte offset of its first byte in the (decompressed) JSON text,
** so a malformed document is reported as "<file>: malformed JSON at byte N: expected X,
** found Y", and a truncated or corrupt gzip stream names the offset it reached.
**
** Usage:
**   tl_jreader r;
**   if (tl_jr_open(&r, path, &e)) ...;
**   tl_jtok t;
**   while (tl_jr_next(&r, &t, &e) == TL_OK && t != TL_JT_EOF) ... r.text.p ...;
**   tl_jr_close(&r);
*/
#ifndef TL_KINETO_JSON_H
#define TL_KINETO_JSON_H

#include "util/buf.h"
#include "util/err.h"

#include <stdint.h>
#include <zlib.h>

typedef enum tl_jtok {
  TL_JT_EOF = 0,
  TL_JT_LBRACE,
  TL_JT_RBRACE,
  TL_JT_LBRACK,
  TL_JT_RBRACK,
  TL_JT_COLON,
  TL_JT_COMMA,
  TL_JT_STRING, /* unescaped text in r->text */
  TL_JT_NUMBER, /* literal text in r->text */
  TL_JT_TRUE,
  TL_JT_FALSE,
  TL_JT_NULL
} tl_jtok;

#define TL_JR_WINDOW 65536
#define TL_JR_MAX_DEPTH 256

typedef struct tl_jreader {
  gzFile gz;
  char *path;
  int compressed;        /* 1 when the file is a gzip stream */
  unsigned char *buf;    /* TL_JR_WINDOW bytes */
  size_t pos, len;
  int64_t base;          /* offset of buf[0] in the JSON text */
  int eof;
  int64_t tok_offset;    /* offset of the current token's first byte */
  tl_buf text;           /* string or number text of the current token (NUL-terminated) */
} tl_jreader;

int tl_jr_open(tl_jreader *r, const char *path, tl_err *e);
void tl_jr_close(tl_jreader *r);
/* Reads the next token into *t (TL_JT_EOF at the end of the input). */
int tl_jr_next(tl_jreader *r, tl_jtok *t, tl_err *e);
/* Skips the rest of a value whose first token `first` was just read. */
int tl_jr_skip(tl_jreader *r, tl_jtok first, tl_err *e);
/* Skips the rest of an array or object whose opening bracket was just read, byte by byte:
** only string and nesting state are tracked, no token is built, so it runs at memory
** speed. Sets *device_seen when a string value equals "kernel", "gpu_memcpy" or
** "gpu_memset" (the device-event categories). Structure errors inside are not diagnosed
** here; the full pass that follows reports them. */
int tl_jr_skim(tl_jreader *r, int *device_seen, tl_err *e);
/* Fails with "<file>: malformed JSON at byte N: expected <what>, found <token>". */
int tl_jr_unexpected(tl_jreader *r, const char *what, tl_jtok got, tl_err *e);
/* A short description of a token for messages ("'}'", "string \"abc\"", "end of input"). */
const char *tl_jtok_name(tl_jtok t);

/* 1 when s[0..n) is a JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
int tl_jr_number_ok(const char *s, size_t n);

/* Converts a JSON number of microseconds to int64 nanoseconds by decimal shifting (no
** floating point). Digits below 1 ns are rounded half to even and *rounded is set to 1 when
** a non-zero digit was dropped. Returns TL_OK, or TL_ERROR for text that is not a JSON number
** or a value outside int64 nanoseconds. */
int tl_kineto_us_to_ns(const char *s, size_t n, int64_t *ns, int *rounded);
/* Parses an integral JSON number ("7", "-1", "7.0", "7e0"); TL_ERROR when not integral or
** out of int64 range. */
int tl_kineto_int(const char *s, size_t n, int64_t *out);

#endif
