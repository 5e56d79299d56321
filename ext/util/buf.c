/*
** buf.c: growable text buffer (see buf.h).
*/
#include "util/buf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int reserve(tl_buf *b, size_t extra) {
  if (b->oom) return -1;
  if (b->n + extra + 1 <= b->cap) return 0;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < b->n + extra + 1) cap *= 2;
  char *p = realloc(b->p, cap);
  if (!p) {
    b->oom = 1;
    return -1;
  }
  b->p = p;
  b->cap = cap;
  return 0;
}

int tl_buf_reserve(tl_buf *b, size_t extra) { return reserve(b, extra); }

void tl_buf_append_slow(tl_buf *b, const char *s, size_t n) {
  if (reserve(b, n)) return;
  if (n) memcpy(b->p + b->n, s, n);
  b->n += n;
  b->p[b->n] = 0;
}

void tl_buf_puts(tl_buf *b, const char *s) { tl_buf_append(b, s, strlen(s)); }

void tl_buf_printf(tl_buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  if (n >= 0 && reserve(b, (size_t)n) == 0) {
    vsnprintf(b->p + b->n, (size_t)n + 1, fmt, ap);
    b->n += (size_t)n;
  }
  va_end(ap);
}

void tl_buf_i64(tl_buf *b, int64_t v) {
  char tmp[24];
  int n = snprintf(tmp, sizeof tmp, "%lld", (long long)v);
  tl_buf_append(b, tmp, (size_t)n);
}

void tl_buf_json_string(tl_buf *b, const char *s, size_t n) {
  static const char hex[] = "0123456789abcdef";
  tl_buf_append(b, "\"", 1);
  size_t run = 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c >= 0x20 && c != '"' && c != '\\') {
      run++;
      continue;
    }
    tl_buf_append(b, s + i - run, run);
    run = 0;
    char esc[7] = {'\\', 0};
    switch (c) {
      case '"': esc[1] = '"'; tl_buf_append(b, esc, 2); break;
      case '\\': esc[1] = '\\'; tl_buf_append(b, esc, 2); break;
      case '\n': esc[1] = 'n'; tl_buf_append(b, esc, 2); break;
      case '\r': esc[1] = 'r'; tl_buf_append(b, esc, 2); break;
      case '\t': esc[1] = 't'; tl_buf_append(b, esc, 2); break;
      default:
        esc[1] = 'u', esc[2] = '0', esc[3] = '0', esc[4] = hex[c >> 4], esc[5] = hex[c & 15];
        tl_buf_append(b, esc, 6);
    }
  }
  tl_buf_append(b, s + n - run, run);
  tl_buf_append(b, "\"", 1);
}

void tl_buf_free(tl_buf *b) {
  free(b->p);
  memset(b, 0, sizeof *b);
}
