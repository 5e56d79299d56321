/*
** test_sha256.c: SHA-256 against NIST FIPS 180-4 example vectors and digests printed by
** coreutils `sha256sum` for the same bytes (hard-coded here, computed outside this code).
*/
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/sha256.h"
#include "tl_check.h"

static void digest_hex(const void *data, size_t n, char hex[65]) {
  tl_sha256 s;
  uint8_t d[32];
  tl_sha256_init(&s);
  tl_sha256_update(&s, data, n);
  tl_sha256_final(&s, d);
  tl_sha256_hex(d, hex);
}

static void check_digest(const char *msg, const char *want) {
  char hex[65];
  digest_hex(msg, strlen(msg), hex);
  ck_assert_str_eq(hex, want);
}

START_TEST(nist_short_vectors) {
  check_digest("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  check_digest("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  /* 448 bits: the padding no longer fits, so the digest needs a second block */
  check_digest("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
               "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  check_digest("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmno"
               "ijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
               "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
}
END_TEST

START_TEST(nist_million_a) {
  /* fed in uneven pieces so partial-block buffering is exercised too */
  tl_sha256 s;
  tl_sha256_init(&s);
  char a[997];
  memset(a, 'a', sizeof a);
  size_t left = 1000000;
  while (left) {
    size_t n = left < sizeof a ? left : sizeof a;
    tl_sha256_update(&s, a, n);
    left -= n;
  }
  uint8_t d[32];
  char hex[65];
  tl_sha256_final(&s, d);
  tl_sha256_hex(d, hex);
  ck_assert_str_eq(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  ck_assert_uint_eq(d[0], 0xcd);
  ck_assert_uint_eq(d[31], 0xd0);
}
END_TEST

/* Lengths around the 55/56 and 63/64 padding boundaries; digests from `head -c N ... | sha256sum`. */
START_TEST(padding_boundaries) {
  static const struct {
    size_t n;
    const char *hex;
  } cases[] = {
      {55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318"},
      {56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a"},
      {63, "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34"},
      {64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb"},
      {65, "635361c48bb9eab14198e76ea8ab7f1a41685d6ad62aa9146d301d4f17eb0ae0"},
      {119, "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb"},
      {120, "2f3d335432c70b580af0e8e1b3674a7c020d683aa5f73aaaedfdc55af904c21c"},
  };
  char a[128], hex[65];
  memset(a, 'a', sizeof a);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    digest_hex(a, cases[i].n, hex);
    ck_assert_msg(strcmp(hex, cases[i].hex) == 0, "length %zu: got %s", cases[i].n, hex);
  }
}
END_TEST

/* bytes (i*7+3) & 255 for i < 131; digest from python3 | sha256sum */
#define MSG131_HEX "4c14830d5f17552093a46de0f6884f8f3010789462dab3db3d1cc679575e01ad"

START_TEST(incremental_split_every_offset) {
  uint8_t msg[131];
  for (size_t i = 0; i < sizeof msg; i++) msg[i] = (uint8_t)((i * 7 + 3) & 255);
  char one_shot[65];
  digest_hex(msg, sizeof msg, one_shot);
  ck_assert_str_eq(one_shot, MSG131_HEX);
  for (size_t cut = 0; cut <= 130; cut++) {
    tl_sha256 s;
    uint8_t d[32];
    char hex[65];
    tl_sha256_init(&s);
    tl_sha256_update(&s, msg, cut);
    tl_sha256_update(&s, msg + cut, sizeof msg - cut);
    tl_sha256_final(&s, d);
    tl_sha256_hex(d, hex);
    ck_assert_msg(strcmp(hex, MSG131_HEX) == 0, "split at %zu: got %s", cut, hex);
  }
  /* byte at a time, with empty updates in between */
  tl_sha256 s;
  uint8_t d[32];
  char hex[65];
  tl_sha256_init(&s);
  for (size_t i = 0; i < sizeof msg; i++) {
    tl_sha256_update(&s, msg + i, 1);
    tl_sha256_update(&s, msg, 0);
  }
  tl_sha256_final(&s, d);
  tl_sha256_hex(d, hex);
  ck_assert_str_eq(hex, MSG131_HEX);
}
END_TEST

static char *write_temp(const void *data, size_t n) {
  char *path = strdup("/tmp/tl_sha256_test_XXXXXX");
  ck_assert_ptr_nonnull(path);
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  const char *p = data;
  while (n) {
    ssize_t w = write(fd, p, n);
    ck_assert_int_gt(w, 0);
    p += w, n -= (size_t)w;
  }
  close(fd);
  return path;
}

START_TEST(file_small) {
  static const char content[] = "TraceLoom fixture\nline two\n";
  char *path = write_temp(content, strlen(content));
  char hex[65];
  int64_t size = -1;
  tl_err e = {0};
  ck_assert_int_eq(tl_sha256_file(path, hex, &size, &e), TL_OK);
  /* printf 'TraceLoom fixture\nline two\n' | sha256sum */
  ck_assert_str_eq(hex, "45bc3c062e387530ce2bc93e9f13a62390e4e73b11ac67f855de634d9019bede");
  ck_assert_int_eq(size, 27);
  ck_assert_ptr_null(e.msg);
  unlink(path);
  free(path);
}
END_TEST

START_TEST(file_empty) {
  char *path = write_temp("", 0);
  char hex[65];
  int64_t size = -1;
  tl_err e = {0};
  ck_assert_int_eq(tl_sha256_file(path, hex, &size, &e), TL_OK);
  ck_assert_str_eq(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  ck_assert_int_eq(size, 0);
  unlink(path);
  free(path);
}
END_TEST

START_TEST(file_spanning_chunks) {
  /* 2.5 MiB + 17 bytes: two full 1 MiB reads and a ragged tail */
  size_t n = 2621440 + 17;
  uint8_t *buf = malloc(n);
  ck_assert_ptr_nonnull(buf);
  for (size_t i = 0; i < n; i++) buf[i] = (uint8_t)(i % 251);
  char *path = write_temp(buf, n);
  free(buf);
  char hex[65];
  int64_t size = -1;
  tl_err e = {0};
  ck_assert_int_eq(tl_sha256_file(path, hex, &size, &e), TL_OK);
  /* python3 -c "...bytes(i%251 for i in range(2621457))" | sha256sum */
  ck_assert_str_eq(hex, "add69bf5af8e31afa0371b8ad18f0a94cec36c94a31107b5a77820c686557afe");
  ck_assert_int_eq(size, (int64_t)n);
  unlink(path);
  free(path);
}
END_TEST

START_TEST(file_missing) {
  char hex[65];
  int64_t size = 123;
  tl_err e = {0};
  const char *path = "/tmp/tl_sha256_test_no_such_dir/profile.db";
  ck_assert_int_eq(tl_sha256_file(path, hex, &size, &e), TL_ERROR);
  ck_assert_ptr_nonnull(e.msg);
  ck_assert_msg(strstr(e.msg, path) != NULL, "message lacks the path: %s", e.msg);
  ck_assert_msg(strstr(e.msg, "No such file or directory") != NULL, "message lacks errno text: %s",
                e.msg);
  ck_assert_int_eq(size, 123); /* untouched on error */
  tl_err_clear(&e);
}
END_TEST

START_TEST(file_is_directory) {
  char hex[65];
  tl_err e = {0};
  ck_assert_int_eq(tl_sha256_file("/tmp", hex, NULL, &e), TL_ERROR);
  ck_assert_msg(strstr(e.msg, "\"/tmp\"") && strstr(e.msg, "Is a directory"), "got: %s", e.msg);
  tl_err_clear(&e);
}
END_TEST

/* The SHA-extension rounds (tl_sha256_init, where the processor has them) and the portable
** rounds give the same digest for every length and split: the known-answer tests above run
** on whichever tl_sha256_init picks, this one ties the other path to it. */
START_TEST(accelerated_matches_portable) {
  enum { N = 70000 };
  uint8_t *buf = malloc(N);
  ck_assert_ptr_nonnull(buf);
  uint32_t x = 2463534242u;
  for (size_t i = 0; i < N; i++) {
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    buf[i] = (uint8_t)x;
  }
  static const size_t lens[] = {0, 1, 55, 56, 63, 64, 65, 119, 128, 1000, 4096, 65535, N};
  for (size_t k = 0; k < sizeof lens / sizeof *lens; k++) {
    uint8_t a[32], b[32];
    tl_sha256 s;
    tl_sha256_init(&s);
    tl_sha256_update(&s, buf, lens[k] / 3);
    tl_sha256_update(&s, buf + lens[k] / 3, lens[k] - lens[k] / 3);
    tl_sha256_final(&s, a);
    tl_sha256_init_portable(&s);
    tl_sha256_update(&s, buf, lens[k]);
    tl_sha256_final(&s, b);
    ck_assert_msg(memcmp(a, b, 32) == 0, "length %zu", lens[k]);
  }
  /* The portable path against a known answer too (FIPS 180-4: "abc"). */
  tl_sha256 s;
  uint8_t d[32];
  char hex[65];
  tl_sha256_init_portable(&s);
  tl_sha256_update(&s, "abc", 3);
  tl_sha256_final(&s, d);
  tl_sha256_hex(d, hex);
  ck_assert_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  free(buf);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("sha256");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, nist_short_vectors);
  tcase_add_test(tc, nist_million_a);
  tcase_add_test(tc, padding_boundaries);
  tcase_add_test(tc, incremental_split_every_offset);
  tcase_add_test(tc, file_small);
  tcase_add_test(tc, file_empty);
  tcase_add_test(tc, file_spanning_chunks);
  tcase_add_test(tc, file_missing);
  tcase_add_test(tc, file_is_directory);
  tcase_add_test(tc, accelerated_matches_portable);
  suite_add_tcase(s, tc);
  return s;
}

TL_CHECK_MAIN(suite)
