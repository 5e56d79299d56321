/*
** test_util.c: string interning, the int64 hash map, the radix sort, task-type keys, and
** the shape interner of the core-and-shape publication, the packed int64 column, and the
** text buffer's numbers written without printf (checked against printf itself).
*/
#include "tl_check.h"
#include "util/strpool.h"
#include "util/i64map.h"
#include "util/i64col.h"
#include "util/sort.h"
#include "util/buf.h"
#include "publish/shapes.h"
#include "traceloom.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The buffer's text of one call against printf's. */
#define CK_BUF_AS_PRINTF(call, fmt, ...)                                                   \
  do {                                                                                     \
    tl_buf b_ = {0};                                                                       \
    call;                                                                                  \
    char want_[400];                                                                       \
    snprintf(want_, sizeof want_, fmt, __VA_ARGS__);                                       \
    ck_assert_msg(b_.p && strcmp(b_.p, want_) == 0, "%s: got '%s', printf '%s'", #call,    \
                  b_.p ? b_.p : "(null)", want_);                                          \
    tl_buf_free(&b_);                                                                      \
  } while (0)

START_TEST(buf_integers_as_printf_writes_them) {
  static const int64_t v[] = {0, 1, 7, -7, 42, 999, 1000, -1000, 12345, INT64_MAX, INT64_MIN,
                              INT64_MIN + 1, 4503599627370496LL};
  for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
    CK_BUF_AS_PRINTF(tl_buf_i64(&b_, v[i]), "%lld", (long long)v[i]);
    for (int w = 0; w <= 22; w++)
      CK_BUF_AS_PRINTF(tl_buf_i64w(&b_, v[i], w), "%0*lld", w, (long long)v[i]);
  }
}
END_TEST

/* v / 1000 with three decimals: the quotient and the remainder, printed apart. */
START_TEST(buf_milli_is_the_integer_over_1000) {
  static const int64_t v[] = {0, 1, 9, 10, 999, 1000, 1001, 1234567, -1, -999, -1000, -1234567,
                              INT64_MAX, INT64_MIN + 1};
  for (size_t i = 0; i < sizeof v / sizeof *v; i++) {
    long long q = (long long)(v[i] / 1000), r = (long long)(v[i] % 1000);
    CK_BUF_AS_PRINTF(tl_buf_milli(&b_, v[i]), "%s%lld.%03lld", v[i] < 0 ? "-" : "",
                     q < 0 ? -q : q, r < 0 ? -r : r);
  }
}
END_TEST

/* tl_buf_f3 is printf's "%.3f" for every double: totals (ns / 1000), rounded averages,
** half-way values and their neighbours (where the shortcut must give way to printf),
** negatives, zeros, the 2^30 edge, huge and non-finite values, and random ones. */
/* Markdown labels: a raw C++ kernel name over 64 characters by its qualified name (worked
** out by hand from names of tests/data/kineto_gpu), anything else whole. */
static void display_is(const char *label, const char *want) {
  tl_buf b = {0};
  tl_buf_display_label(&b, label, strlen(label));
  ck_assert(!b.oom);
  ck_assert_str_eq(b.p ? b.p : "", want);
  tl_buf_free(&b);
}

START_TEST(buf_display_label_names_long_kernels) {
  display_is("void at_cuda_detail::cub::detail::scan::DeviceScanInitKernel<at_cuda_detail::cub::"
             "ScanTileState<long, true> >(at_cuda_detail::cub::ScanTileState<long, true>, int)",
             "at_cuda_detail::cub::detail::scan::DeviceScanInitKernel<...>(...)");
  /* a return type with a space inside its template arguments */
  display_is("std::enable_if<true, void>::type internal::gemvx::kernel<int, int, float, float, "
             "float, float, true, true, true, false, 6, false>(cublasGemvParamsEx<int, float>)",
             "internal::gemvx::kernel<...>(...)");
  /* no template: the parameters only */
  display_is("void some_namespace::a_very_long_kernel_function_name_without_templates_at_all"
             "(float const*, float*, int)",
             "some_namespace::a_very_long_kernel_function_name_without_templates_at_all(...)");
  /* short labels, and long ones that are no C++ signature, as they are */
  display_is("void k<int>(int)", "void k<int>(int)");
  display_is("CudaMatMul", "CudaMatMul");
  const char *prose = "a label of more than sixty-four characters that has no parameter list at all";
  display_is(prose, prose);
}
END_TEST

START_TEST(buf_f3_is_printf_percent_3f) {
  static const double fixed[] = {0.0, -0.0, 0.0004, -0.0004, 0.0005, -0.0005, 0.0015, 2.5e-4,
                                 1.0005, 66.7315, 0.1 + 0.2, 1073741823.9995, 1073741824.0,
                                 1073741824.0005, 4503599627370496.0, 1e300, -1e300, 5e-324,
                                 INFINITY, -INFINITY, NAN};
  for (size_t i = 0; i < sizeof fixed / sizeof *fixed; i++)
    CK_BUF_AS_PRINTF(tl_buf_f3(&b_, fixed[i]), "%.3f", fixed[i]);
  unsigned long long seed = 88172645463325252ULL; /* xorshift: the same values every run */
  for (int i = 0; i < 200000; i++) {
    seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
    int64_t ns = (int64_t)(seed % 20000000000ULL) >> (seed % 31); /* many magnitudes */
    int64_t denom = 1 + (int64_t)(seed >> 40) % 40;
    double total = (double)ns / 1000.0, avg = total / (double)denom;
    double half = ((double)ns + 0.5) / 1000.0; /* a tie in decimal: printf decides */
    double x[] = {total, -total, avg, half, nextafter(half, 0), nextafter(half, 1e300),
                  (double)(seed >> 11) * 0x1p-53 * 2e9};
    for (size_t k = 0; k < sizeof x / sizeof *x; k++)
      CK_BUF_AS_PRINTF(tl_buf_f3(&b_, x[k]), "%.3f", x[k]);
  }
}
END_TEST

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

START_TEST(strpool_reserve_keeps_ids) {
  /* Reserving is a hint: a pool reserved up front (here for fewer strings than come, so it
  ** also grows past the reservation) gives every string the id an unreserved pool gives,
  ** and finds each one again. */
  tl_strpool *plain = tl_strpool_new(), *reserved = tl_strpool_new();
  ck_assert_ptr_nonnull(plain);
  ck_assert_ptr_nonnull(reserved);
  ck_assert_uint_eq(tl_strpool_intern_cstr(reserved, "first"), 1);
  ck_assert_int_eq(tl_strpool_reserve(reserved, 3000, 3000 * 12), 0);
  ck_assert_uint_eq(tl_strpool_intern_cstr(plain, "first"), 1);
  char s[32];
  for (int i = 0; i < 5000; i++) {
    snprintf(s, sizeof s, "node-N%03d", i % 4000); /* repeats after 4000 */
    uint32_t a = tl_strpool_intern_cstr(plain, s), b = tl_strpool_intern_cstr(reserved, s);
    ck_assert_uint_eq(a, b);
    ck_assert_uint_ne(a, TL_STR_NOMEM);
  }
  ck_assert_uint_eq(tl_strpool_count(reserved), tl_strpool_count(plain));
  ck_assert_uint_eq(tl_strpool_count(reserved), 4002); /* "", "first", 4000 ids */
  for (int i = 0; i < 4000; i++) {
    snprintf(s, sizeof s, "node-N%03d", i);
    ck_assert_uint_eq(tl_strpool_find(reserved, s, strlen(s)), (uint32_t)i + 2);
    ck_assert_str_eq(tl_strpool_str(reserved, (uint32_t)i + 2), s);
  }
  /* a reservation below what the pool holds changes nothing */
  ck_assert_int_eq(tl_strpool_reserve(reserved, 0, 0), 0);
  ck_assert_uint_eq(tl_strpool_find(reserved, "first", 5), 1);
  tl_strpool_free(plain);
  tl_strpool_free(reserved);
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

typedef struct kv_pair {
  uint64_t k;
  uint32_t v;
} kv_pair;

static int cmp_kv_pair(const void *x, const void *y) {
  const kv_pair *a = x, *b = y;
  if (a->k != b->k) return a->k < b->k ? -1 : 1;
  return a->v < b->v ? -1 : a->v > b->v;
}

/* Keys whose varying bits are a span away from bit 0 (digits of equal width over the span,
** sort.c) come out as a comparison sort on (key, input position) puts them. */
START_TEST(radix_sort_narrow_spans_match_a_comparison_sort) {
  enum { N = 50000 };
  static const struct { int shift, bits; } spans[] = {{3, 34}, {20, 17}, {0, 1}, {40, 24}, {0, 64}};
  uint64_t *k = malloc(N * sizeof *k);
  uint32_t *v = malloc(N * sizeof *v);
  kv_pair *want = malloc(N * sizeof *want);
  uint64_t x = 88172645463325252ull;
  for (size_t s = 0; s < sizeof spans / sizeof *spans; s++) {
    uint64_t mask = spans[s].bits == 64 ? ~0ull : ((1ull << spans[s].bits) - 1);
    for (uint32_t i = 0; i < N; i++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      uint64_t r = i % 4 == 0 ? x % 7 : x; /* duplicates among wide keys */
      k[i] = (0x5a5a5a5a5a5a5a5aull & ~(mask << spans[s].shift)) | (r & mask) << spans[s].shift;
      v[i] = i;
      want[i] = (kv_pair){k[i], i};
    }
    qsort(want, N, sizeof *want, cmp_kv_pair);
    ck_assert_int_eq(tl_radix_sort_u64(k, v, N), 0);
    for (uint32_t i = 0; i < N; i++) {
      ck_assert_uint_eq(k[i], want[i].k);
      ck_assert_uint_eq(v[i], want[i].v);
    }
  }
  free(k), free(v), free(want);
}
END_TEST

static int cmp_i64_asc(const void *x, const void *y) {
  int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
  return (a > b) - (a < b);
}

/* tl_select_i64 puts at k the value a sort puts there, the smaller ones before it and the
** larger after: on wide values, on many repeats (three-way partition), sorted and reversed
** inputs, for ranks at both ends and between. */
START_TEST(select_finds_the_sorted_rank) {
  enum { N = 5001 };
  int64_t *v = malloc(N * sizeof *v), *sorted = malloc(N * sizeof *sorted);
  uint64_t x = 88172645463325252ull;
  for (int shape = 0; shape < 5; shape++) {
    for (size_t n = 1; n <= N; n = n * 3 + 1) {
      const size_t ks[] = {0, n / 2, (9 * n + 9) / 10 - 1, n - 1};
      for (size_t q = 0; q < sizeof ks / sizeof *ks; q++) {
        for (size_t i = 0; i < n; i++) {
          x ^= x << 13, x ^= x >> 7, x ^= x << 17;
          v[i] = shape == 0   ? (int64_t)x
                 : shape == 1 ? (int64_t)(x % 5) - 2 /* repeats, negatives */
                 : shape == 2 ? (int64_t)i
                 : shape == 3 ? (int64_t)(n - i)
                              : 7;
          sorted[i] = v[i];
        }
        qsort(sorted, n, sizeof *sorted, cmp_i64_asc);
        size_t k = ks[q];
        tl_select_i64(v, n, k);
        ck_assert_int_eq(v[k], sorted[k]);
        for (size_t i = 0; i < k; i++) ck_assert(v[i] <= v[k]);
        for (size_t i = k + 1; i < n; i++) ck_assert(v[i] >= v[k]);
        /* a permutation: the same multiset */
        qsort(v, n, sizeof *v, cmp_i64_asc);
        ck_assert(memcmp(v, sorted, n * sizeof *v) == 0);
      }
    }
  }
  free(v), free(sorted);
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

/* Appends values the way the trace loader does (grow by doubling, set in order) and
** checks every value and the representation against a plain array. */
static void i64col_append(tl_i64col *c, const int64_t *v, size_t n) {
  size_t cap = 0;
  for (size_t i = 0; i < n; i++) {
    if (i == cap) {
      cap = cap ? cap * 2 : 4;
      ck_assert_int_eq(tl_i64col_grow(c, cap), 0);
    }
    ck_assert_int_eq(tl_i64col_set(c, i, v[i]), 0);
  }
  for (size_t i = 0; i < n; i++) ck_assert_int_eq(tl_i64col_get(c, i), v[i]);
}

START_TEST(i64col_absent_narrow_and_rare_overflow) {
  enum { N = 1000 };
  int64_t v[N];
  tl_i64col c;
  /* All absent: no storage at all. */
  tl_i64col_init(&c, TL_I64COL_ABSENT);
  for (size_t i = 0; i < N; i++) v[i] = -1;
  i64col_append(&c, v, N);
  ck_assert_ptr_null(c.narrow);
  ck_assert_ptr_null(c.wide);
  ck_assert_uint_eq(tl_i64col_bytes(&c), 0);
  tl_i64col_free(&c);
  /* Absent first, then small ids, the largest narrow value and absent again: 4 bytes a row. */
  tl_i64col_init(&c, TL_I64COL_ABSENT);
  for (size_t i = 0; i < N; i++) v[i] = i < 100 ? -1 : i % 7 == 0 ? -1 : (int64_t)i * 3;
  v[500] = (int64_t)UINT32_MAX - 2; /* base + 2^32 - 1 - 1: the last narrow value */
  i64col_append(&c, v, N);
  ck_assert_ptr_nonnull(c.narrow);
  ck_assert_ptr_null(c.wide);
  ck_assert_uint_eq(c.overflow.n, 0);
  tl_i64col_free(&c);
  /* A few values outside the narrow range (negative, 2^32 - 2 and up, epoch ns) in a
  ** counting column: eight runs (0-2, 3, 4-9, 10, 11-699, 700, 701-997, 998-999: INT64_MAX
  ** then INT64_MIN count on, modulo 2^64). */
  tl_i64col_init(&c, TL_I64COL_ABSENT);
  for (size_t i = 0; i < N; i++) v[i] = (int64_t)i;
  v[3] = (int64_t)UINT32_MAX - 1, v[10] = -5, v[700] = 1712345678000000000LL;
  v[999] = INT64_MIN, v[998] = INT64_MAX;
  i64col_append(&c, v, N);
  ck_assert_ptr_null(c.narrow);
  ck_assert_ptr_null(c.wide);
  ck_assert_uint_eq(c.nruns, 8);
  /* Overwriting a row turns the runs into cells; the outliers stay exact in the overflow map
  ** without widening the column; an overflowed row set narrow (and back) reads right. */
  ck_assert_int_eq(tl_i64col_set(&c, 700, 12), 0);
  ck_assert_ptr_nonnull(c.narrow);
  ck_assert_ptr_null(c.wide);
  ck_assert_uint_eq(c.nruns, 0);
  ck_assert_uint_eq(c.overflow.n, 5);
  for (size_t i = 0; i < N; i++) ck_assert_int_eq(tl_i64col_get(&c, i), i == 700 ? 12 : v[i]);
  ck_assert_int_eq(tl_i64col_get(&c, 700), 12);
  ck_assert_int_eq(tl_i64col_set(&c, 700, -7), 0);
  ck_assert_int_eq(tl_i64col_get(&c, 700), -7);
  tl_i64col_free(&c);
  /* After free the column is empty again and reads its base. */
  ck_assert_int_eq(tl_i64col_get(&c, 0), TL_I64COL_ABSENT);
}
END_TEST

/* Columns that grow with the row, stay constant or switch between the two are a few runs. */
START_TEST(i64col_runs_for_counting_and_constant_columns) {
  enum { N = 100000 };
  int64_t *v = malloc(N * sizeof *v);
  ck_assert_ptr_nonnull(v);
  tl_i64col c;
  /* A source rowid: row + 1 everywhere, one run. */
  tl_i64col_init(&c, TL_I64COL_ABSENT);
  for (size_t i = 0; i < N; i++) v[i] = (int64_t)i + 1;
  i64col_append(&c, v, N);
  ck_assert_ptr_null(c.narrow);
  ck_assert_uint_eq(c.nruns, 1);
  ck_assert_uint_le(tl_i64col_bytes(&c), 4 * sizeof(tl_i64run));
  tl_i64col_free(&c);
  /* A context id: the same value on every row, one run. */
  tl_i64col_init(&c, TL_I64COL_ABSENT);
  for (size_t i = 0; i < N; i++) v[i] = 4294967295LL;
  i64col_append(&c, v, N);
  ck_assert_ptr_null(c.narrow);
  ck_assert_uint_eq(c.nruns, 1);
  tl_i64col_free(&c);
  /* globalTaskId: counting, jumping by 7 every 1000 rows: 100 runs (one per 1000 rows). */
  tl_i64col_init(&c, TL_I64COL_ABSENT);
  for (size_t i = 0; i < N; i++) v[i] = 5000 + (int64_t)i + 7 * (int64_t)(i / 1000);
  i64col_append(&c, v, N);
  ck_assert_ptr_null(c.narrow);
  ck_assert_uint_eq(c.nruns, 100);
  tl_i64col_free(&c);
  /* An op id: absent for the first 90000 rows, then 3, 4, 5, ...: a gap and one run; a
  ** later absent stretch and a value again add a base run and one more. */
  tl_i64col_init(&c, TL_I64COL_ABSENT);
  for (size_t i = 0; i < N; i++) v[i] = i < 90000 ? -1 : (int64_t)i - 89997;
  for (size_t i = 95000; i < 96000; i++) v[i] = -1;
  v[96000] = 42;
  i64col_append(&c, v, N);
  ck_assert_ptr_null(c.narrow);
  ck_assert_uint_eq(c.nruns, 4); /* 90000.. counting, base 95000.., 42 at 96000, 96001.. */
  tl_i64col_free(&c);
  /* A value every row that neither counts nor repeats: cells once the runs pass 64 and one
  ** per 32 rows. */
  tl_i64col_init(&c, TL_I64COL_ABSENT);
  for (size_t i = 0; i < N; i++) v[i] = 3 * (int64_t)i;
  i64col_append(&c, v, N);
  ck_assert_ptr_nonnull(c.narrow);
  ck_assert_uint_eq(c.nruns, 0);
  tl_i64col_free(&c);
  free(v);
}
END_TEST

START_TEST(i64col_widens_when_overflow_is_common) {
  enum { N = 5000 };
  int64_t v[N];
  tl_i64col c;
  /* Ascend globalTid = pid << 32 | tid: every value is large. */
  tl_i64col_init(&c, TL_I64COL_ABSENT);
  for (size_t i = 0; i < N; i++) v[i] = ((int64_t)(1000 + i % 3) << 32) | (int64_t)(i % 11);
  v[0] = -1;
  i64col_append(&c, v, N);
  ck_assert_ptr_nonnull(c.wide);
  ck_assert_ptr_null(c.narrow);
  ck_assert_uint_eq(c.overflow.n, 0);
  tl_i64col_free(&c);
  /* Durations (base 0) accumulated in random order, some past 2^32 ns. */
  tl_i64col_init(&c, 0);
  ck_assert_int_eq(tl_i64col_grow(&c, N), 0);
  int64_t ref[N];
  memset(ref, 0, sizeof ref);
  uint64_t x = 88172645463325252ull;
  for (int k = 0; k < 4 * N; k++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    size_t i = (size_t)(x % N);
    int64_t d = (x >> 40) % 50 == 0 ? 3000000000LL : (int64_t)((x >> 20) % 1000);
    ref[i] += d;
    ck_assert_int_eq(tl_i64col_add(&c, i, d), 0);
  }
  for (size_t i = 0; i < N; i++) ck_assert_int_eq(tl_i64col_get(&c, i), ref[i]);
  tl_i64col_free(&c);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("util");
  TCase *tc = tcase_create("util");
  /* 1.4M printf comparisons: seconds under ASan+UBSan on a busy machine; check's default
  ** 4 s limit would fail on load, not on a wrong result. */
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, strpool_interns_once_and_zero_is_empty);
  tcase_add_test(tc, strpool_reserve_keeps_ids);
  tcase_add_test(tc, strpool_survives_growth);
  tcase_add_test(tc, i64map_put_get_replace);
  tcase_add_test(tc, radix_sort_is_stable_and_ordered);
  tcase_add_test(tc, radix_sort_narrow_spans_match_a_comparison_sort);
  tcase_add_test(tc, select_finds_the_sorted_rank);
  tcase_add_test(tc, signed_order_mapping);
  tcase_add_test(tc, task_type_keys);
  tcase_add_test(tc, shapes_ids_are_dense_in_first_seen_order);
  tcase_add_test(tc, shapes_many_keys_keep_their_ids);
  tcase_add_test(tc, i64col_absent_narrow_and_rare_overflow);
  tcase_add_test(tc, i64col_runs_for_counting_and_constant_columns);
  tcase_add_test(tc, i64col_widens_when_overflow_is_common);
  tcase_add_test(tc, buf_integers_as_printf_writes_them);
  tcase_add_test(tc, buf_milli_is_the_integer_over_1000);
  tcase_add_test(tc, buf_f3_is_printf_percent_3f);
  tcase_add_test(tc, buf_display_label_names_long_kernels);
  suite_add_tcase(s, tc);
  return s;
}

TL_CHECK_MAIN(suite)
