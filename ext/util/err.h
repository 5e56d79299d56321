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

/* What kind of failure a message reports, for callers that branch on it (traceloom.c maps
** them to SQLite result codes); the message says what happened. */
typedef enum tl_err_code {
  TL_ERR_NONE = 0,     /* no error */
  TL_ERR_FAILED,       /* anything else: bad input, bad options, a failed write */
  TL_ERR_NOMEM,        /* an allocation failed */
  TL_ERR_INTERRUPTED   /* sqlite3_interrupt() on the analysis connection stopped the work */
} tl_err_code;

typedef struct tl_err {
  char *msg; /* malloc'd; NULL while no error */
  int code;  /* tl_err_code of msg; TL_ERR_NONE while no error */
} tl_err;

/* Sets the message (printf format) unless one is already set, with code TL_ERR_FAILED.
** Always returns TL_ERROR. */
int tl_fail(tl_err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int tl_vfail(tl_err *e, const char *fmt, va_list ap);
/* The same with an explicit code. */
int tl_fail_code(tl_err *e, tl_err_code code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Out-of-memory shorthand (code TL_ERR_NOMEM). */
int tl_nomem(tl_err *e);
/* Replaces the code of a set message: the caller knows better why it failed (an interrupted
** connection makes any later step fail with whatever message). */
void tl_err_set_code(tl_err *e, tl_err_code code);
void tl_err_clear(tl_err *e);
/* Passes a worker thread's error on to e: its code and message (fallback when it set none).
** Always returns TL_ERROR. */
int tl_err_pass(tl_err *e, const tl_err *from, const char *fallback);
/* Takes ownership of the message (caller frees with free()); the error is cleared. */
char *tl_err_take(tl_err *e);

/* malloc'd printf; NULL on out-of-memory. */
char *tl_mprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
char *tl_strdup(const char *s);

#endif
