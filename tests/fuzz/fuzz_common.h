/*
** fuzz_common.h: helpers shared by the libFuzzer harnesses in tests/fuzz.
**
** A harness turns one fuzz input into a call of the code under test and checks the one
** contract every entry point has (err.h): it returns TL_OK, or TL_ERROR with a message.
** Crashes, leaks and undefined behaviour are caught by the sanitizers the harnesses are
** built with (make fuzz); a TL_ERROR without a message aborts here, so it is found too.
*/
#ifndef TL_FUZZ_COMMON_H
#define TL_FUZZ_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/err.h"

/* An error must come with a message; the first-message-wins rule of err.h would
** otherwise hide a failure that nobody described. */
static inline void tl_fuzz_check(int rc, tl_err *e, const char *what) {
  if (rc == TL_OK && e->msg) {
    fprintf(stderr, "%s: TL_OK but an error message is set: %s\n", what, e->msg);
    abort();
  }
  if (rc != TL_OK && (!e->msg || !*e->msg)) {
    fprintf(stderr, "%s: TL_ERROR without a message\n", what);
    abort();
  }
  tl_err_clear(e);
}

/* A private scratch directory per harness process (libFuzzer forks jobs as processes,
** so the pid keeps parallel workers apart). Returns the path, created once. */
static inline const char *tl_fuzz_scratch(void) {
  static char dir[256];
  if (!dir[0]) {
    const char *base = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/traceloom-fuzz-%ld", base && *base ? base : "/tmp",
             (long)getpid());
    if (mkdir(dir, 0700) != 0 && access(dir, W_OK) != 0) {
      perror(dir);
      abort();
    }
  }
  return dir;
}

/* Writes data to path (replacing it); aborts on I/O failure (not the code under test). */
static inline void tl_fuzz_write(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  if (!f || (n && fwrite(data, 1, n, f) != n) || fclose(f) != 0) {
    perror(path);
    abort();
  }
}

/* A NUL-terminated copy of the input (the parsers take C strings or text + length). */
static inline char *tl_fuzz_cstr(const unsigned char *data, size_t n) {
  char *s = malloc(n + 1);
  if (!s) abort();
  memcpy(s, data, n);
  s[n] = 0;
  return s;
}

#endif
