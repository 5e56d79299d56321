/*
** err.c: tl_err messages and small allocation helpers.
*/
#include "err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *vmprintf(const char *fmt, va_list ap) {
  va_list ap2;
  va_copy(ap2, ap);
  int n = vsnprintf(NULL, 0, fmt, ap2);
  va_end(ap2);
  if (n < 0) return NULL;
  char *s = malloc((size_t)n + 1);
  if (s) vsnprintf(s, (size_t)n + 1, fmt, ap);
  return s;
}

int tl_vfail(tl_err *e, const char *fmt, va_list ap) {
  if (e && !e->msg) {
    e->msg = vmprintf(fmt, ap);
    if (!e->msg) e->msg = tl_strdup("out of memory");
  }
  return TL_ERROR;
}

int tl_fail(tl_err *e, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  tl_vfail(e, fmt, ap);
  va_end(ap);
  return TL_ERROR;
}

int tl_nomem(tl_err *e) { return tl_fail(e, "out of memory"); }

void tl_err_clear(tl_err *e) {
  if (!e) return;
  free(e->msg);
  e->msg = NULL;
}

char *tl_err_take(tl_err *e) {
  char *m = e->msg;
  e->msg = NULL;
  return m;
}

char *tl_mprintf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *s = vmprintf(fmt, ap);
  va_end(ap);
  return s;
}

char *tl_strdup(const char *s) {
  if (!s) return NULL;
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}
