/*
** err.h: the error type every stage returns through.
**
** A stage returns TL_OK or TL_ERROR and, on error, leaves one message in a tl_err.
** The first message wins: callers add context only when none is set yet, so the
** innermost, most precise message (file, table, column, expectation) reaches the user.
*/
#ifndef TL_ERR_H
#define TL_ERR_H

#include <stdarg.h>

#define TL_OK 0
#define TL_ERROR 1

typedef struct tl_err {
  char *msg; /* malloc'd; NULL while no error */
} tl_err;

/* Sets the message (printf format) unless one is already set. Always returns TL_ERROR. */
int tl_fail(tl_err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int tl_vfail(tl_err *e, const char *fmt, va_list ap);
/* Out-of-memory shorthand. */
int tl_nomem(tl_err *e);
void tl_err_clear(tl_err *e);
/* Takes ownership of the message (caller frees with free()); the error is cleared. */
char *tl_err_take(tl_err *e);

/* malloc'd printf; NULL on out-of-memory. */
char *tl_mprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *tl_strdup(const char *s);

#endif
