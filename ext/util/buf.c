/*
** buf.c: growable text buffer (see buf.h).
*/
#include "util/buf.h"

#include <math.h>
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

void tl_buf_i64(tl_buf *b, int64_t v) { tl_buf_i64w(b, v, 1); }

void tl_buf_i64w(tl_buf *b, int64_t v, int width) {
  char tmp[48];
  int n = (int)sizeof tmp, min = (int)sizeof tmp - (width < 40 ? width : 40) + (v < 0);
  uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
  do tmp[--n] = (char)('0' + u % 10), u /= 10;
  while (u);
  while (n > min) tmp[--n] = '0';
  if (v < 0) tmp[--n] = '-';
  tl_buf_append(b, tmp + n, sizeof tmp - (size_t)n);
}

void tl_buf_milli(tl_buf *b, int64_t v) {
  char tmp[32];
  int n = (int)sizeof tmp;
  uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
  uint64_t q = u / 1000, r = u % 1000;
  tmp[--n] = (char)('0' + r % 10);
  tmp[--n] = (char)('0' + r / 10 % 10);
  tmp[--n] = (char)('0' + r / 100);
  tmp[--n] = '.';
  do tmp[--n] = (char)('0' + q % 10), q /= 10;
  while (q);
  if (v < 0) tmp[--n] = '-';
  tl_buf_append(b, tmp + n, sizeof tmp - (size_t)n);
}

void tl_buf_f3(tl_buf *b, double x) {
  double ax = x < 0 ? -x : x;
  if (ax < 1073741824.0) { /* 2^30: x * 1000 < 2^40 is then exact to 2^-13 */
    double s = ax * 1000.0;
    int64_t k = (int64_t)(s + 0.5);
    double d = s - (double)k;
    /* |1000 x - k| < 0.4 + 2^-13: k / 1000 is the nearest multiple, and no tie is near, so
    ** printf (which rounds the exact binary value) writes k / 1000 too; the sign is
    ** printf's (it writes "-0.000" for a negative x that rounds to zero, and for -0.0). */
    if (d > -0.4 && d < 0.4) {
      if (signbit(x)) tl_buf_append(b, "-", 1);
      tl_buf_milli(b, k);
      return;
    }
  }
  tl_buf_printf(b, "%.3f", x);
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

/* The name is the last token at template depth 0 before the parameter list: a return type
** before it (`void `, `std::enable_if<true, void>::type `) is dropped. */
void tl_buf_display_label(tl_buf *b, const char *l, size_t n) {
  size_t start = 0, open = n; /* where the name starts (after a space), its first '<' */
  int depth = 0;
  for (size_t i = 0; n > TL_DISPLAY_WHOLE && i < n; i++) {
    char ch = l[i];
    if (ch == '<') {
      if (depth++ == 0 && open == n) open = i;
    } else if (ch == '>') {
      if (depth > 0) depth--;
    } else if (depth == 0 && ch == ' ') {
      start = i + 1, open = n;
    } else if (depth == 0 && ch == '(') {
      size_t end = open < i ? open : i;
      if (end > start) {
        tl_buf_append(b, l + start, end - start);
        if (open < i) tl_buf_append(b, "<...>", 5);
        tl_buf_append(b, "(...)", 5);
        return;
      }
      break;
    }
  }
  tl_buf_append(b, l, n);
}
