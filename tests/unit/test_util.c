/*
** test_util.c: string interning, the int64 hash map, the radix sort, task-type keys, and
** the shape interner of the core-and-shape publication.
*/
#include "tl_check.h"
#include "strpool.h"
#include "i64map.h"
#include "sort.h"
#include "publish/shapes.h"
#include "traceloom.h"

#include <string.h>

START_TEST(strpool_interns_once_and_zero_is_empty) {
  tl_strpool *p = tl_strpool_new();
  ck_assert_ptr_nonnull(p);
  ck_assert_str_eq(tl_strpool_str(p, 0), "");
  uint32_t a = tl_strpool_intern_cstr(p, "MatMul");
  uint32_t b = tl_strpool_intern_cstr(p, "AllReduce");
  ck_assert_uint_eq(a, 1);
  ck_assert_uint_eq(b, 2);
  ck_assert_uint_eq(tl_strpool_intern(p, "MatMulV2", 6), a); /* first 6 bytes: "MatMul" */
  ck_assert_uint_eq(tl_strpool_intern_cstr(p, ""), 0);
  ck_assert_uint_eq(tl_strpool_find(p, "AllReduce", 9), b);
  ck_assert_uint_eq(tl_strpool_find(p, "nothing", 7), TL_STR_NOMEM);
  /* Embedded NUL bytes are part of the key. */
  uint32_t c = tl_strpool_intern(p, "a\0b", 3);
  ck_assert_uint_ne(c, tl_strpool_intern(p, "a", 1));
  ck_assert_uint_eq(tl_strpool_len(p, c), 3);
  tl_strpool_free(p);
}
END_TEST

START_TEST(strpool_survives_growth) {
  tl_strpool *p = tl_strpool_new();
  char buf[32];
  for (int i = 0; i < 100000; i++) {
    int n = snprintf(buf, sizeof buf, "kernel_%d", i);
    ck_assert_uint_eq(tl_strpool_intern(p, buf, (size_t)n), (uint32_t)i + 1);
  }
  for (int i = 0; i < 100000; i += 997) {
    snprintf(buf, sizeof buf, "kernel_%d", i);
    ck_assert_str_eq(tl_strpool_str(p, (uint32_t)i + 1), buf);
  }
  ck_assert_uint_eq(tl_strpool_count(p), 100001);
  tl_strpool_free(p);
}
END_TEST

START_TEST(i64map_put_get_replace) {
  tl_i64map m = {0};
  ck_assert_ptr_null(tl_i64map_get(&m, 5));
  for (int64_t k = -50000; k < 50000; k += 3) ck_assert_int_eq(tl_i64map_put(&m, k * 1000003, k), 0);
  ck_assert_int_eq(*tl_i64map_get(&m, -49997LL * 1000003), -49997);
  ck_assert_ptr_null(tl_i64map_get(&m, 1));
  tl_i64map_put(&m, INT64_MIN, 7);
  tl_i64map_put(&m, INT64_MIN, 8);
  ck_assert_int_eq(*tl_i64map_get(&m, INT64_MIN), 8);
  tl_i64map_free(&m);
}
END_TEST

START_TEST(radix_sort_is_stable_and_ordered) {
  enum { N = 200000 };
  uint64_t *k = malloc(N * sizeof *k);
  uint32_t *v = malloc(N * sizeof *v);
  uint64_t x = 88172645463325252ull;
  for (uint32_t i = 0; i < N; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    k[i] = (i % 3 == 0) ? (x % 50) : x; /* many duplicates mixed with wide keys */
    v[i] = i;
  }
  ck_assert_int_eq(tl_radix_sort_u64(k, v, N), 0);
  for (uint32_t i = 1; i < N; i++) {
    ck_assert(k[i - 1] <= k[i]);
    if (k[i - 1] == k[i]) ck_assert_uint_lt(v[i - 1], v[i]); /* stability */
  }
  free(k), free(v);
}
END_TEST

START_TEST(signed_order_mapping) {
  int64_t vals[] = {INT64_MIN, -1700000000000000000LL, -1, 0, 1, 1712345678901234567LL, INT64_MAX};
  for (size_t i = 1; i < sizeof vals / sizeof vals[0]; i++)
    ck_assert(tl_order_i64(vals[i - 1]) < tl_order_i64(vals[i]));
}
END_TEST

START_TEST(task_type_keys) {
  char out[64];
  ck_assert_str_eq(tl_task_type_key("Model-Execute", out, sizeof out), "MODEL_EXECUTE");
  ck_assert_str_eq(tl_task_type_key("  notify  wait__", out, sizeof out), "NOTIFY_WAIT");
  ck_assert_str_eq(tl_task_type_key("ai_core", out, sizeof out), "AI_CORE");
  ck_assert_str_eq(tl_task_type_key("", out, sizeof out), "");
  ck_assert_str_eq(tl_task_type_key("memcpy.async", out, 6), "MEMCP");
}
END_TEST

START_TEST(shapes_ids_are_dense_in_first_seen_order) {
  tl_shapes s;
  tl_shapes_init(&s, 3);
  int fresh;
  uint64_t a[3] = {7, 0, 1}, b[3] = {7, 0, 2}, zero[3] = {0, 0, 0};
  ck_assert_int_eq(tl_shapes_intern(&s, a, &fresh), 1);
  ck_assert_int_eq(fresh, 1);
  ck_assert_int_eq(tl_shapes_intern(&s, b, &fresh), 2);
  ck_assert_int_eq(fresh, 1);
  ck_assert_int_eq(tl_shapes_intern(&s, a, &fresh), 1);
  ck_assert_int_eq(fresh, 0);
  /* An all-zero key is a key like any other. */
  ck_assert_int_eq(tl_shapes_intern(&s, zero, &fresh), 3);
  ck_assert_int_eq(fresh, 1);
  ck_assert_int_eq(tl_shapes_intern(&s, b, &fresh), 2);
  ck_assert_int_eq(fresh, 0);
  tl_shapes_free(&s);
}
END_TEST

/* Many keys that differ in one word only, against the id a plain counter gives them:
** exercises growth and any probing after equal hashes. */
START_TEST(shapes_many_keys_keep_their_ids) {
  tl_shapes s;
  tl_shapes_init(&s, 2);
  int fresh;
  for (uint64_t i = 0; i < 50000; i++) {
    uint64_t k[2] = {i % 3, i};
    ck_assert_int_eq(tl_shapes_intern(&s, k, &fresh), (int64_t)i + 1);
    ck_assert_int_eq(fresh, 1);
  }
  for (uint64_t i = 0; i < 50000; i += 7) {
    uint64_t k[2] = {i % 3, i};
    ck_assert_int_eq(tl_shapes_intern(&s, k, &fresh), (int64_t)i + 1);
    ck_assert_int_eq(fresh, 0);
  }
  uint64_t other[2] = {1, 0}; /* word 0 differs from the key {0, 0} */
  ck_assert_int_eq(tl_shapes_intern(&s, other, &fresh), 50001);
  ck_assert_int_eq(s.n, 50001);
  tl_shapes_free(&s);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("util");
  TCase *tc = tcase_create("util");
  tcase_add_test(tc, strpool_interns_once_and_zero_is_empty);
  tcase_add_test(tc, strpool_survives_growth);
  tcase_add_test(tc, i64map_put_get_replace);
  tcase_add_test(tc, radix_sort_is_stable_and_ordered);
  tcase_add_test(tc, signed_order_mapping);
  tcase_add_test(tc, task_type_keys);
  tcase_add_test(tc, shapes_ids_are_dense_in_first_seen_order);
  tcase_add_test(tc, shapes_many_keys_keep_their_ids);
  suite_add_tcase(s, tc);
  return s;
}

TL_CHECK_MAIN(suite)
