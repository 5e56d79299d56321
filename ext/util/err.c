/*
** err.c: tl_err messages and small allocation helpers.
*/
#include "util/err.h"

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

static int vfail_code(tl_err *e, tl_err_code code, const char *fmt, va_list ap) {
  if (e && !e->msg) {
    e->msg = vmprintf(fmt, ap);
    e->code = code;
    if (!e->msg) e->msg = tl_strdup("out of memory"), e->code = TL_ERR_NOMEM;
  }
  return TL_ERROR;
}

int tl_vfail(tl_err *e, const char *fmt, va_list ap) {
  return vfail_code(e, TL_ERR_FAILED, fmt, ap);
}

int tl_fail(tl_err *e, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vfail_code(e, TL_ERR_FAILED, fmt, ap);
  va_end(ap);
  return TL_ERROR;
}

int tl_fail_code(tl_err *e, tl_err_code code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vfail_code(e, code, fmt, ap);
  va_end(ap);
  return TL_ERROR;
}

int tl_nomem(tl_err *e) { return tl_fail_code(e, TL_ERR_NOMEM, "out of memory"); }

void tl_err_set_code(tl_err *e, tl_err_code code) {
  if (e && e->msg) e->code = code;
}

void tl_err_clear(tl_err *e) {
  if (!e) return;
  free(e->msg);
  e->msg = NULL;
  e->code = TL_ERR_NONE;
}

char *tl_err_take(tl_err *e) {
  char *m = e->msg;
  e->msg = NULL;
  e->code = TL_ERR_NONE;
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

int tl_err_pass(tl_err *e, const tl_err *from, const char *fallback) {
  return tl_fail_code(e, from->code ? (tl_err_code)from->code : TL_ERR_FAILED, "%s",
                      from->msg ? from->msg : fallback);
}
