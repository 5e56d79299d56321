/*
** sha256.c: SHA-256 (FIPS 180-4), see sha256.h.
**
** Portable C with the 64 rounds unrolled eight at a time, so the working variables rotate by
** renaming instead of by moves, and a 16-word rolling message schedule that stays in registers.
** Whole input blocks are compressed straight from the caller's buffer; only a trailing partial
** block is copied. On x86-64 processors with the SHA extensions (sha_ni), the rounds run on
** them instead (four rounds per sha256rnds2 pair, the schedule by sha256msg1/msg2): several
** times faster, which matters because every input byte is hashed. The processor is asked at
** each call (__builtin_cpu_supports reads what the runtime found at start-up), so no global
** state is kept here.
*/
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* GNU strerror_r: thread-safe errno text */
#endif
#include "util/sha256.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

#define ROR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))
#define BSIG0(x) (ROR(x, 2) ^ ROR(x, 13) ^ ROR(x, 22))
#define BSIG1(x) (ROR(x, 6) ^ ROR(x, 11) ^ ROR(x, 25))
#define SSIG0(x) (ROR(x, 7) ^ ROR(x, 18) ^ ((x) >> 3))
#define SSIG1(x) (ROR(x, 17) ^ ROR(x, 19) ^ ((x) >> 10))
#define CH(x, y, z) (((x) & ((y) ^ (z))) ^ (z))
#define MAJ(x, y, z) (((x) & (y)) | ((z) & ((x) | (y))))

/* W[i & 15] becomes schedule word i (i >= 16) from the four words it depends on. */
#define EXPAND(i) \
  (W[(i) & 15] += SSIG1(W[((i) - 2) & 15]) + W[((i) - 7) & 15] + SSIG0(W[((i) - 15) & 15]))

#define ROUND(a, b, c, d, e, f, g, h, i, w)                  \
  do {                                                       \
    uint32_t t1 = (h) + BSIG1(e) + CH(e, f, g) + K[i] + (w); \
    uint32_t t2 = BSIG0(a) + MAJ(a, b, c);                   \
    (d) += t1;                                               \
    (h) = t1 + t2;                                           \
  } while (0)

#define EIGHT_ROUNDS(j, W_OF)                          \
  do {                                                 \
    ROUND(a, b, c, d, e, f, g, h, (j) + 0, W_OF((j) + 0)); \
    ROUND(h, a, b, c, d, e, f, g, (j) + 1, W_OF((j) + 1)); \
    ROUND(g, h, a, b, c, d, e, f, (j) + 2, W_OF((j) + 2)); \
    ROUND(f, g, h, a, b, c, d, e, (j) + 3, W_OF((j) + 3)); \
    ROUND(e, f, g, h, a, b, c, d, (j) + 4, W_OF((j) + 4)); \
    ROUND(d, e, f, g, h, a, b, c, (j) + 5, W_OF((j) + 5)); \
    ROUND(c, d, e, f, g, h, a, b, (j) + 6, W_OF((j) + 6)); \
    ROUND(b, c, d, e, f, g, h, a, (j) + 7, W_OF((j) + 7)); \
  } while (0)

#define W_LOADED(i) W[(i) & 15]
#define W_EXPANDED(i) EXPAND(i)

static inline uint32_t load_be32(const uint8_t *p) {
  return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

static void compress(uint32_t state[8], const uint8_t *p, size_t nblocks) {
  for (; nblocks; nblocks--, p += 64) {
    uint32_t W[16];
    for (int i = 0; i < 16; i++) W[i] = load_be32(p + 4 * i);
    uint32_t a = state[0], b = state[1], c = state[2], d = state[3];
    uint32_t e = state[4], f = state[5], g = state[6], h = state[7];
    EIGHT_ROUNDS(0, W_LOADED);
    EIGHT_ROUNDS(8, W_LOADED);
    for (int j = 16; j < 64; j += 8) EIGHT_ROUNDS(j, W_EXPANDED);
    state[0] += a, state[1] += b, state[2] += c, state[3] += d;
    state[4] += e, state[5] += f, state[6] += g, state[7] += h;
  }
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#include <cpuid.h>
#define TL_SHA_NI 1

/* The state is kept as ABEF and CDGH for sha256rnds2; K is added four words at a time. */
__attribute__((target("sha,sse4.1"))) static void compress_shani(uint32_t state[8],
                                                                  const uint8_t *p,
                                                                  size_t nblocks) {
  const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
  __m128i tmp = _mm_loadu_si128((const __m128i *)&state[0]);     /* DCBA */
  __m128i s1 = _mm_loadu_si128((const __m128i *)&state[4]);      /* HGFE */
  tmp = _mm_shuffle_epi32(tmp, 0xB1);                            /* CDAB */
  s1 = _mm_shuffle_epi32(s1, 0x1B);                              /* EFGH */
  __m128i s0 = _mm_alignr_epi8(tmp, s1, 8);                      /* ABEF */
  s1 = _mm_blend_epi16(s1, tmp, 0xF0);                           /* CDGH */
  for (; nblocks; nblocks--, p += 64) {
    __m128i abef = s0, cdgh = s1;
    __m128i msg[4];
    for (int i = 0; i < 4; i++)
      msg[i] = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16 * i)), bswap);
    /* msg holds schedule words 4i .. 4i+15 (groups i .. i+3) when group i runs. */
    for (int i = 0; i < 16; i++) {
      __m128i wk = _mm_add_epi32(msg[i & 3], _mm_loadu_si128((const __m128i *)&K[4 * i]));
      s1 = _mm_sha256rnds2_epu32(s1, s0, wk);
      s0 = _mm_sha256rnds2_epu32(s0, s1, _mm_shuffle_epi32(wk, 0x0E));
      if (i < 12) { /* group i + 4 from groups i .. i+3 */
        __m128i next = _mm_sha256msg1_epu32(msg[i & 3], msg[(i + 1) & 3]);
        next = _mm_add_epi32(next, _mm_alignr_epi8(msg[(i + 3) & 3], msg[(i + 2) & 3], 4));
        msg[i & 3] = _mm_sha256msg2_epu32(next, msg[(i + 3) & 3]);
      }
    }
    s0 = _mm_add_epi32(s0, abef);
    s1 = _mm_add_epi32(s1, cdgh);
  }
  tmp = _mm_shuffle_epi32(s0, 0x1B);                             /* FEBA */
  s1 = _mm_shuffle_epi32(s1, 0xB1);                              /* DCHG */
  s0 = _mm_blend_epi16(tmp, s1, 0xF0);                           /* DCBA */
  s1 = _mm_alignr_epi8(s1, tmp, 8);                              /* HGFE */
  _mm_storeu_si128((__m128i *)&state[0], s0);
  _mm_storeu_si128((__m128i *)&state[4], s1);
}
#endif

int tl_sha256_accelerated(void) {
#ifdef TL_SHA_NI
  /* CPUID directly: clang's __builtin_cpu_supports knows no "sha" (leaf 7 EBX bit 29; SSE4.1
  ** is leaf 1 ECX bit 19) */
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 19))) return 0;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return 0;
  return (b >> 29) & 1u;
#else
  return 0;
#endif
}

/* The rounds of nblocks whole blocks, on the SHA extensions where there are some. */
static void compress_blocks(const tl_sha256 *s, uint32_t state[8], const uint8_t *p,
                            size_t nblocks) {
#ifdef TL_SHA_NI
  if (!s->portable) { /* tl_sha256_init found the extensions */
    compress_shani(state, p, nblocks);
    return;
  }
#endif
  compress(state, p, nblocks);
}

void tl_sha256_init_portable(tl_sha256 *s) {
  tl_sha256_init(s);
  s->portable = 1;
}

void tl_sha256_init(tl_sha256 *s) {
  static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  memcpy(s->h, iv, sizeof iv);
  s->nbytes = 0;
  s->used = 0;
  /* asked once per digest, not per block: CPUID traps to the hypervisor in a virtual
  ** machine (about 25 us each measured), which made hashing many short texts slow */
  s->portable = !tl_sha256_accelerated();
}

void tl_sha256_update(tl_sha256 *s, const void *data, size_t n) {
  const uint8_t *p = data;
  s->nbytes += n;
  if (s->used) {
    size_t take = 64 - s->used < n ? 64 - s->used : n;
    memcpy(s->block + s->used, p, take);
    s->used += take, p += take, n -= take;
    if (s->used < 64) return;
    compress_blocks(s, s->h, s->block, 1);
    s->used = 0;
  }
  if (n >= 64) {
    compress_blocks(s, s->h, p, n / 64);
    p += n & ~(size_t)63;
    n &= 63;
  }
  if (n) memcpy(s->block, p, n);
  s->used = n;
}

void tl_sha256_final(tl_sha256 *s, uint8_t out[32]) {
  uint64_t bits = s->nbytes * 8;
  s->block[s->used++] = 0x80;
  if (s->used > 56) {
    memset(s->block + s->used, 0, 64 - s->used);
    compress_blocks(s, s->h, s->block, 1);
    s->used = 0;
  }
  memset(s->block + s->used, 0, 56 - s->used);
  for (int i = 0; i < 8; i++) s->block[56 + i] = (uint8_t)(bits >> (56 - 8 * i));
  compress_blocks(s, s->h, s->block, 1);
  for (int i = 0; i < 8; i++) {
    out[4 * i] = (uint8_t)(s->h[i] >> 24);
    out[4 * i + 1] = (uint8_t)(s->h[i] >> 16);
    out[4 * i + 2] = (uint8_t)(s->h[i] >> 8);
    out[4 * i + 3] = (uint8_t)s->h[i];
  }
  s->used = 0;
}

void tl_sha256_hex(const uint8_t digest[32], char hex[65]) {
  static const char digits[] = "0123456789abcdef";
  for (int i = 0; i < 32; i++) {
    hex[2 * i] = digits[digest[i] >> 4];
    hex[2 * i + 1] = digits[digest[i] & 15];
  }
  hex[64] = 0;
}

int tl_sha256_file(const char *path, char hex[65], int64_t *size, tl_err *e) {
  return tl_sha256_file_cancellable(path, hex, size, NULL, NULL, e);
}

int tl_sha256_file_cancellable(const char *path, char hex[65], int64_t *size,
                               int (*stop)(void *ctx), void *ctx, tl_err *e) {
  enum { CHUNK = 1 << 20 };
  unsigned chunks = 0;
  char why[128];
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    return tl_fail(e, "cannot open \"%s\" to hash it: %s", path, strerror_r(err, why, sizeof why));
  }
  uint8_t *chunk = malloc(CHUNK);
  if (!chunk) {
    close(fd);
    return tl_nomem(e);
  }
#ifdef POSIX_FADV_SEQUENTIAL
  (void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
#endif
  tl_sha256 s;
  tl_sha256_init(&s);
  int rc = TL_OK;
  for (;;) {
    ssize_t got = read(fd, chunk, CHUNK);
    if (got < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      rc = tl_fail(e, "cannot read \"%s\" to hash it: %s", path, strerror_r(err, why, sizeof why));
      break;
    }
    if (got == 0) break;
    tl_sha256_update(&s, chunk, (size_t)got);
    if (stop && (++chunks & 63) == 0 && stop(ctx)) {
      rc = tl_fail_code(e, TL_ERR_INTERRUPTED,
                        "interrupted while hashing \"%s\"; nothing was published", path);
      break;
    }
  }
  free(chunk);
  close(fd);
  if (rc != TL_OK) return rc;
  uint8_t digest[32];
  tl_sha256_final(&s, digest);
  tl_sha256_hex(digest, hex);
  if (size) *size = (int64_t)s.nbytes;
  return TL_OK;
}
