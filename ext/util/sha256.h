/*
** sha256.h: SHA-256 (FIPS 180-4) for content fingerprints.
**
** Profiles are identified by the digest of their bytes, so the same capture copied to another
** path or host is recognised as the same input. Streaming use:
**
**   tl_sha256 s;
**   tl_sha256_init(&s);
**   tl_sha256_update(&s, data, n);      (any number of times, any split)
**   tl_sha256_final(&s, digest);        (s must be re-initialised before reuse)
**   tl_sha256_hex(digest, hex);         (64 lowercase hex digits + NUL)
**
** tl_sha256_file() does all of this for a whole file, reading it read-only.
*/
#ifndef TL_SHA256_H
#define TL_SHA256_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

typedef struct tl_sha256 {
  uint32_t h[8];      /* chaining state */
  uint64_t nbytes;    /* total bytes fed so far */
  uint8_t block[64];  /* pending partial block */
  size_t used;        /* bytes pending in block */
  int portable;       /* 1: the portable rounds (no SHA extensions here, or
                         tl_sha256_init_portable, for tests) */
} tl_sha256;

/* Asks the processor whether it has the SHA extensions (CPUID: tens of microseconds in a
** virtual machine): to hash many short texts, initialise one state and copy it for each. */
void tl_sha256_init(tl_sha256 *s);
/* The same, but always with the portable C rounds, even where the processor has the x86 SHA
** extensions (which tl_sha256_init uses when present): both give the same digest. */
void tl_sha256_init_portable(tl_sha256 *s);
/* 1 when tl_sha256_init's digests use the processor's SHA extensions here. */
int tl_sha256_accelerated(void);
void tl_sha256_update(tl_sha256 *s, const void *data, size_t n);
void tl_sha256_final(tl_sha256 *s, uint8_t out[32]);
void tl_sha256_hex(const uint8_t digest[32], char hex[65]); /* lowercase */

/* Hashes a whole file read-only in 1 MiB chunks; sets *size (bytes hashed) when size is not
** NULL. Returns TL_OK, or TL_ERROR with a message naming the path and the errno text. */
int tl_sha256_file(const char *path, char hex[65], int64_t *size, tl_err *e);
/* The same, asking stop(ctx) every 64 MiB: a non-zero answer ends it with "interrupted". */
int tl_sha256_file_cancellable(const char *path, char hex[65], int64_t *size,
                               int (*stop)(void *ctx), void *ctx, tl_err *e);

#endif
