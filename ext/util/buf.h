/*
** buf.h: a growable byte buffer for building text (SQL, JSON, Markdown, messages).
** Appends never fail silently: after an allocation failure `oom` is set and later appends
** are ignored, so callers check once at the end.
*/
#ifndef TL_BUF_H
#define TL_BUF_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct tl_buf {
  char *p;      /* NUL-terminated while not oom */
  size_t n, cap;
  int oom;
} tl_buf;

void tl_buf_append_slow(tl_buf *b, const char *s, size_t n);
/* Appends n bytes; the common case (room left) is inline: tokenizers call it per token. */
static inline void tl_buf_append(tl_buf *b, const char *s, size_t n) {
  if (!b->oom && b->n + n < b->cap) {
    if (n) memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
    return;
  }
  tl_buf_append_slow(b, s, n);
}
/* Room for extra more bytes (and the NUL) at p + n: 0, or -1 once out of memory. For writers
** that put bytes at p + n themselves (then advance n and write the NUL). */
int tl_buf_reserve(tl_buf *b, size_t extra);
void tl_buf_puts(tl_buf *b, const char *s);
void tl_buf_printf(tl_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void tl_buf_i64(tl_buf *b, int64_t v);
/* v in decimal as printf's %0<width>lld writes it (the sign counts in the width), without
** printf: the reports write hundreds of thousands of numbers. */
void tl_buf_i64w(tl_buf *b, int64_t v, int width);
/* v / 1000 with exactly three decimals ("-1.005" for -1005): nanoseconds as microseconds,
** from the integer, so no rounding is involved. */
void tl_buf_milli(tl_buf *b, int64_t v);
/* x exactly as printf's "%.3f" writes it, without printf where that is certain: a value
** within 0.4 thousandths of a multiple k of 0.001 (a total in ns / 1000, a rounded average)
** is written from k; one near a half-way point, or large, or not finite, by printf. */
void tl_buf_f3(tl_buf *b, double x);
/* Appends s as a JSON string literal (quotes, escapes; bytes >= 0x80 copied as-is). */
void tl_buf_json_string(tl_buf *b, const char *s, size_t n);
/* Appends a label for Markdown (the loop tree, the comparison report): one over
** TL_DISPLAY_WHOLE characters that is a raw C++ name (a CUDA kernel's, when no lifting rule
** names it: return type, qualified name, template arguments, parameters) as its qualified
** name with "<...>" and "(...)", `at_cuda_detail::cub::detail::scan::DeviceScanKernel<...>(...)`;
** any other as it is. The label in the views and the Perfetto export stays whole. */
#define TL_DISPLAY_WHOLE 64
void tl_buf_display_label(tl_buf *b, const char *s, size_t n);
/* Empties, keeps memory. */
static inline void tl_buf_reset(tl_buf *b) {
  b->n = 0;
  if (b->p) b->p[0] = 0;
}
void tl_buf_free(tl_buf *b);

#endif
