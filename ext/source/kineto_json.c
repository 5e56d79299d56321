/*
** kineto_json.c: the streaming JSON tokenizer of the Kineto reader (see kineto_json.h).
**
** Input goes through gzread in TL_JR_WINDOW-byte windows: zlib passes a plain file through
** unchanged and inflates a gzip one, and reports a truncated or corrupt stream, which we
** turn into an error naming the decompressed byte offset reached. Values the caller does not
** want are skipped by bracket matching only (their tokens are still checked), so a reader
** can walk a multi-gigabyte traceEvents array one small event object at a time.
*/
#include "source/kineto_json.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int tl_jr_open(tl_jreader *r, const char *path, tl_err *e) {
  memset(r, 0, sizeof *r);
  r->path = tl_strdup(path ? path : "");
  r->buf = malloc(TL_JR_WINDOW);
  if (!r->path || !r->buf) {
    tl_jr_close(r);
    return tl_nomem(e);
  }
  r->gz = gzopen(path, "rb");
  if (!r->gz) {
    tl_fail(e, "cannot open Kineto trace '%s' for reading", path);
    tl_jr_close(r);
    return TL_ERROR;
  }
  gzbuffer(r->gz, TL_JR_WINDOW);
  return TL_OK;
}

void tl_jr_close(tl_jreader *r) {
  if (r->gz) gzclose(r->gz);
  free(r->path);
  free(r->buf);
  tl_buf_free(&r->text);
  memset(r, 0, sizeof *r);
}

/* 1 = a byte is available at r->buf[r->pos], 0 = end of input, -1 = read error. */
static int fill(tl_jreader *r, tl_err *e) {
  if (r->pos < r->len) return 1;
  if (r->eof) return 0;
  r->base += (int64_t)r->len;
  r->pos = r->len = 0;
  int got = gzread(r->gz, r->buf, TL_JR_WINDOW);
  if (r->base == 0 && got >= 0) r->compressed = !gzdirect(r->gz);
  int errnum = Z_OK;
  const char *msg = gzerror(r->gz, &errnum);
  if (got < 0 || (errnum != Z_OK && errnum != Z_STREAM_END)) {
    if (errnum == Z_BUF_ERROR)
      return tl_fail(e,
                     "truncated gzip stream in Kineto trace '%s': the compressed data ends "
                     "after %" PRId64 " decompressed bytes (expected the rest of the stream "
                     "and its trailer)",
                     r->path, r->base + (got > 0 ? got : 0)),
             -1;
    return tl_fail(e, "cannot read Kineto trace '%s' after %" PRId64 " bytes: %s", r->path,
                   r->base + (got > 0 ? got : 0), msg ? msg : "read error"),
           -1;
  }
  if (got == 0) {
    r->eof = 1;
    return 0;
  }
  r->len = (size_t)got;
  return 1;
}

static const char *found_text(tl_jreader *r, tl_jtok t, char *tmp, size_t cap) {
  if (t == TL_JT_STRING || t == TL_JT_NUMBER) {
    const char *s = r->text.p ? r->text.p : "";
    snprintf(tmp, cap, "%s \"%.40s%s\"", t == TL_JT_STRING ? "string" : "number", s,
             strlen(s) > 40 ? "..." : "");
    return tmp;
  }
  return tl_jtok_name(t);
}

const char *tl_jtok_name(tl_jtok t) {
  switch (t) {
    case TL_JT_EOF: return "end of input";
    case TL_JT_LBRACE: return "'{'";
    case TL_JT_RBRACE: return "'}'";
    case TL_JT_LBRACK: return "'['";
    case TL_JT_RBRACK: return "']'";
    case TL_JT_COLON: return "':'";
    case TL_JT_COMMA: return "','";
    case TL_JT_STRING: return "a string";
    case TL_JT_NUMBER: return "a number";
    case TL_JT_TRUE: return "true";
    case TL_JT_FALSE: return "false";
    default: return "null";
  }
}

int tl_jr_unexpected(tl_jreader *r, const char *what, tl_jtok got, tl_err *e) {
  char tmp[96];
  return tl_fail(e, "malformed JSON in Kineto trace '%s' at byte %" PRId64 "%s: expected %s, found %s",
                 r->path, r->tok_offset, r->compressed ? " of the decompressed stream" : "",
                 what, found_text(r, got, tmp, sizeof tmp));
}

static int bad_at(tl_jreader *r, int64_t off, const char *what, tl_err *e) {
  return tl_fail(e, "malformed JSON in Kineto trace '%s' at byte %" PRId64 "%s: %s", r->path,
                 off, r->compressed ? " of the decompressed stream" : "", what);
}

static void put_utf8(tl_buf *b, uint32_t cp) {
  char u[4];
  size_t n;
  if (cp < 0x80) u[0] = (char)cp, n = 1;
  else if (cp < 0x800) u[0] = (char)(0xC0 | (cp >> 6)), u[1] = (char)(0x80 | (cp & 0x3F)), n = 2;
  else if (cp < 0x10000)
    u[0] = (char)(0xE0 | (cp >> 12)), u[1] = (char)(0x80 | ((cp >> 6) & 0x3F)),
    u[2] = (char)(0x80 | (cp & 0x3F)), n = 3;
  else
    u[0] = (char)(0xF0 | (cp >> 18)), u[1] = (char)(0x80 | ((cp >> 12) & 0x3F)),
    u[2] = (char)(0x80 | ((cp >> 6) & 0x3F)), u[3] = (char)(0x80 | (cp & 0x3F)), n = 4;
  tl_buf_append(b, u, n);
}

/* Next raw byte, or -1 at end of input, -2 on a read error. */
static int getc_(tl_jreader *r, tl_err *e) {
  int f = fill(r, e);
  if (f <= 0) return f < 0 ? -2 : -1;
  return r->buf[r->pos++];
}

static int hex4(tl_jreader *r, uint32_t *cp, tl_err *e) {
  *cp = 0;
  for (int i = 0; i < 4; i++) {
    int64_t off = r->base + (int64_t)r->pos;
    int c = getc_(r, e);
    if (c == -2) return TL_ERROR;
    int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
            : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (v < 0) return bad_at(r, off, "expected 4 hex digits after \\u", e);
    *cp = *cp << 4 | (uint32_t)v;
  }
  return TL_OK;
}

static int read_string(tl_jreader *r, tl_err *e) {
  tl_buf_reset(&r->text);
  for (;;) {
    int f = fill(r, e);
    if (f < 0) return TL_ERROR;
    if (f == 0) return bad_at(r, r->tok_offset, "unterminated string (expected a closing '\"')", e);
    /* Copy the run of plain bytes in the window at once. */
    size_t start = r->pos;
    while (r->pos < r->len && r->buf[r->pos] != '"' && r->buf[r->pos] != '\\' &&
           r->buf[r->pos] >= 0x20)
      r->pos++;
    tl_buf_append(&r->text, (const char *)r->buf + start, r->pos - start);
    if (r->pos == r->len) continue;
    int64_t off = r->base + (int64_t)r->pos;
    unsigned char c = r->buf[r->pos++];
    if (c == '"') break;
    if (c < 0x20) return bad_at(r, off, "control character inside a string (expected \\u escape)", e);
    int x = getc_(r, e);
    if (x == -2) return TL_ERROR;
    char ch;
    switch (x) {
      case '"': ch = '"'; break;
      case '\\': ch = '\\'; break;
      case '/': ch = '/'; break;
      case 'b': ch = '\b'; break;
      case 'f': ch = '\f'; break;
      case 'n': ch = '\n'; break;
      case 'r': ch = '\r'; break;
      case 't': ch = '\t'; break;
      case 'u': {
        uint32_t cp;
        if (hex4(r, &cp, e)) return TL_ERROR;
        if (cp >= 0xD800 && cp < 0xDC00) {
          /* A high surrogate pairs with a following \uDC00..\uDFFF; alone it is U+FFFD. */
          if (fill(r, e) > 0 && r->buf[r->pos] == '\\') {
            r->pos++;
            int u = getc_(r, e);
            uint32_t lo;
            if (u != 'u') return bad_at(r, off, "expected \\u low surrogate", e);
            if (hex4(r, &lo, e)) return TL_ERROR;
            cp = lo >= 0xDC00 && lo < 0xE000 ? 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00)
                                             : 0xFFFD;
          } else {
            cp = 0xFFFD;
          }
        } else if (cp >= 0xDC00 && cp < 0xE000) {
          cp = 0xFFFD;
        }
        put_utf8(&r->text, cp);
        continue;
      }
      default: return bad_at(r, off, "invalid escape in a string", e);
    }
    tl_buf_append(&r->text, &ch, 1);
  }
  if (r->text.oom) return tl_nomem(e);
  if (!r->text.p) tl_buf_puts(&r->text, "");
  return r->text.oom ? tl_nomem(e) : TL_OK;
}

/* JSON number grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? */
int tl_jr_number_ok(const char *s, size_t n) {
  size_t i = 0;
  if (i < n && s[i] == '-') i++;
  if (i >= n || s[i] < '0' || s[i] > '9') return 0;
  if (s[i] == '0') i++;
  else
    while (i < n && s[i] >= '0' && s[i] <= '9') i++;
  if (i < n && s[i] == '.') {
    size_t d = ++i;
    while (i < n && s[i] >= '0' && s[i] <= '9') i++;
    if (i == d) return 0;
  }
  if (i < n && (s[i] == 'e' || s[i] == 'E')) {
    i++;
    if (i < n && (s[i] == '+' || s[i] == '-')) i++;
    size_t d = i;
    while (i < n && s[i] >= '0' && s[i] <= '9') i++;
    if (i == d) return 0;
  }
  return i == n;
}

static int is_num_char(int c) {
  return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}

static int is_alpha(int c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

/* Bytes the skim stops at outside strings: '"' (1), '[' '{' (2), ']' '}' (3). */
static unsigned char skim_class(unsigned char c) {
  return c == '"' ? 1 : c == '[' || c == '{' ? 2 : c == ']' || c == '}' ? 3 : 0;
}

int tl_jr_skim(tl_jreader *r, int *device_seen, tl_err *e) {
  /* The first bytes of the current string, to spot categories; slen is TOO_LONG once the
  ** string is longer than str or holds an escape (escaped strings are never category
  ** names). */
  enum { TOO_LONG = 16 };
  unsigned char cls[256];
  for (int c = 0; c < 256; c++) cls[c] = skim_class((unsigned char)c);
  int depth = 1, in_string = 0, escape = 0;
  char str[12];
  size_t slen = 0;
  for (;;) {
    int f = fill(r, e);
    if (f < 0) return TL_ERROR;
    if (f == 0) return tl_fail(e, "Kineto trace '%s' ends inside traceEvents", r->path);
    const unsigned char *b = r->buf;
    size_t i = r->pos, n = r->len;
    while (i < n) {
      if (in_string) {
        if (escape) {
          escape = 0, slen = TOO_LONG, i++;
          continue;
        }
        size_t s0 = i;
        while (i < n && b[i] != '"' && b[i] != '\\') i++;
        if (slen != TOO_LONG) {
          if (slen + (i - s0) <= sizeof str) memcpy(str + slen, b + s0, i - s0), slen += i - s0;
          else slen = TOO_LONG;
        }
        if (i == n) break;
        if (b[i++] == '\\') {
          escape = 1, slen = TOO_LONG;
          continue;
        }
        in_string = 0;
        if ((slen == 6 && memcmp(str, "kernel", 6) == 0) ||
            (slen == 10 && (memcmp(str, "gpu_memcpy", 10) == 0 || memcmp(str, "gpu_memset", 10) == 0)))
          *device_seen = 1;
        continue;
      }
      while (i < n && !cls[b[i]]) i++;
      if (i == n) break;
      unsigned char k = cls[b[i++]];
      if (k == 1) {
        in_string = 1, slen = 0;
      } else if (k == 2) {
        depth++;
      } else if (--depth == 0) {
        r->pos = i;
        return TL_OK;
      }
    }
    r->pos = i;
  }
}

int tl_jr_next(tl_jreader *r, tl_jtok *t, tl_err *e) {
  for (;;) {
    int f = fill(r, e);
    if (f < 0) return TL_ERROR;
    if (f == 0) {
      r->tok_offset = r->base + (int64_t)r->pos;
      *t = TL_JT_EOF;
      return TL_OK;
    }
    unsigned char c = r->buf[r->pos];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      r->pos++;
      continue;
    }
    r->tok_offset = r->base + (int64_t)r->pos;
    switch (c) {
      case '{': r->pos++, *t = TL_JT_LBRACE; return TL_OK;
      case '}': r->pos++, *t = TL_JT_RBRACE; return TL_OK;
      case '[': r->pos++, *t = TL_JT_LBRACK; return TL_OK;
      case ']': r->pos++, *t = TL_JT_RBRACK; return TL_OK;
      case ':': r->pos++, *t = TL_JT_COLON; return TL_OK;
      case ',': r->pos++, *t = TL_JT_COMMA; return TL_OK;
      case '"':
        r->pos++;
        *t = TL_JT_STRING;
        return read_string(r, e);
      default: break;
    }
    int num = is_num_char(c);
    if (!num && !is_alpha(c)) {
      char what[64];
      snprintf(what, sizeof what, "unexpected byte 0x%02x (expected a JSON token)", c);
      return bad_at(r, r->tok_offset, what, e);
    }
    tl_buf_reset(&r->text);
    for (;;) {
      int g = fill(r, e);
      if (g < 0) return TL_ERROR;
      if (g == 0) break;
      size_t start = r->pos;
      while (r->pos < r->len && (num ? is_num_char(r->buf[r->pos]) : is_alpha(r->buf[r->pos])))
        r->pos++;
      tl_buf_append(&r->text, (const char *)r->buf + start, r->pos - start);
      if (r->pos < r->len) break;
      if (r->text.n > 4096) break;
    }
    if (r->text.oom) return tl_nomem(e);
    const char *s = r->text.p;
    if (num) {
      if (!tl_jr_number_ok(s, r->text.n)) {
        char what[96];
        snprintf(what, sizeof what, "invalid number \"%.40s\"", s);
        return bad_at(r, r->tok_offset, what, e);
      }
      *t = TL_JT_NUMBER;
      return TL_OK;
    }
    if (strcmp(s, "true") == 0) *t = TL_JT_TRUE;
    else if (strcmp(s, "false") == 0) *t = TL_JT_FALSE;
    else if (strcmp(s, "null") == 0) *t = TL_JT_NULL;
    else {
      char what[96];
      snprintf(what, sizeof what, "unknown literal \"%.40s\" (expected true, false or null)", s);
      return bad_at(r, r->tok_offset, what, e);
    }
    return TL_OK;
  }
}

int tl_jr_skip(tl_jreader *r, tl_jtok first, tl_err *e) {
  if (first >= TL_JT_STRING) return TL_OK;
  if (first != TL_JT_LBRACE && first != TL_JT_LBRACK)
    return tl_jr_unexpected(r, "a value", first, e);
  char closer[TL_JR_MAX_DEPTH];
  int depth = 0;
  closer[depth++] = first == TL_JT_LBRACE ? '}' : ']';
  while (depth > 0) {
    tl_jtok t;
    if (tl_jr_next(r, &t, e)) return TL_ERROR;
    switch (t) {
      case TL_JT_EOF:
        return tl_jr_unexpected(r, closer[depth - 1] == '}' ? "'}'" : "']'", t, e);
      case TL_JT_LBRACE:
      case TL_JT_LBRACK:
        if (depth == TL_JR_MAX_DEPTH)
          return bad_at(r, r->tok_offset, "nesting deeper than 256 levels", e);
        closer[depth++] = t == TL_JT_LBRACE ? '}' : ']';
        break;
      case TL_JT_RBRACE:
      case TL_JT_RBRACK:
        if ((t == TL_JT_RBRACE) != (closer[depth - 1] == '}'))
          return tl_jr_unexpected(r, closer[depth - 1] == '}' ? "'}'" : "']'", t, e);
        depth--;
        break;
      default: break;
    }
  }
  return TL_OK;
}

/* ------------------------------------------------------------------ exact numbers */

/* value * 10^shift as int64, by moving the decimal point in the digit string; dropped
** digits round half to even. */
static int decimal_scale(const char *s, size_t n, int shift, int64_t *out, int *rounded) {
  if (!tl_jr_number_ok(s, n)) return TL_ERROR;
  size_t i = 0;
  int neg = 0;
  if (s[i] == '-') neg = 1, i++;
  size_t int_start = i;
  while (i < n && s[i] >= '0' && s[i] <= '9') i++;
  size_t int_len = i - int_start, frac_start = i, frac_len = 0;
  if (i < n && s[i] == '.') {
    frac_start = ++i;
    while (i < n && s[i] >= '0' && s[i] <= '9') i++;
    frac_len = i - frac_start;
  }
  long exp = 0;
  if (i < n && (s[i] == 'e' || s[i] == 'E')) {
    i++;
    int eneg = 0;
    if (s[i] == '+' || s[i] == '-') eneg = s[i] == '-', i++;
    while (i < n) {
      if (exp < 100000) exp = exp * 10 + (s[i] - '0');
      i++;
    }
    if (eneg) exp = -exp;
  }
  long total = (long)(int_len + frac_len);
  long point = (long)int_len + exp + shift; /* digits [0, point) are the integer part */
#define DIGIT(k) ((k) < (long)int_len ? s[int_start + (k)] - '0' : s[frac_start + (k) - int_len] - '0')
  uint64_t v = 0;
  for (long k = 0; k < point; k++) {
    int d = k < total ? DIGIT(k) : 0;
    if (v > (UINT64_MAX - (uint64_t)d) / 10) return TL_ERROR;
    v = v * 10 + (uint64_t)d;
  }
  int first = point >= 0 && point < total ? DIGIT(point) : 0;
  int rest = 0;
  for (long k = point >= 0 ? point + 1 : 0; k < total && !rest; k++) rest = DIGIT(k) != 0;
#undef DIGIT
  if (rounded) *rounded = first != 0 || rest;
  if (first > 5 || (first == 5 && (rest || (v & 1)))) {
    if (v == UINT64_MAX) return TL_ERROR;
    v++;
  }
  if (neg ? v > (uint64_t)INT64_MAX + 1 : v > (uint64_t)INT64_MAX) return TL_ERROR;
  *out = neg ? (v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v) : (int64_t)v;
  return TL_OK;
}

int tl_kineto_us_to_ns(const char *s, size_t n, int64_t *ns, int *rounded) {
  return decimal_scale(s, n, 3, ns, rounded);
}

int tl_kineto_int(const char *s, size_t n, int64_t *out) {
  int rounded = 0;
  if (decimal_scale(s, n, 0, out, &rounded) || rounded) return TL_ERROR;
  return TL_OK;
}
