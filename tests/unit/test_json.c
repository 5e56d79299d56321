/*
** test_json.c: the strict JSON parser and canonical writer (ext/util/json.h).
**
** Expected values come from RFC 8259 and Unicode (UTF-8 byte sequences of the code points
** written as \u escapes), and error positions are counted by hand from the input text.
*/
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/json.h"
#include "tl_check.h"

static tl_json *parse_ok_n(const char *text, size_t len) {
  tl_json *j = NULL;
  tl_err e = {0};
  int rc = tl_json_parse(text, len, &j, &e);
  ck_assert_msg(rc == TL_OK, "parse failed for %s: %s", text, e.msg ? e.msg : "(no message)");
  ck_assert_ptr_nonnull(j);
  ck_assert_ptr_null(e.msg);
  return j;
}

static tl_json *parse_ok(const char *text) { return parse_ok_n(text, strlen(text)); }

/* Asserts the exact message, so both the position and the wording are checked. */
static void expect_error_n(const char *text, size_t len, const char *want) {
  tl_json *j = (tl_json *)&j; /* must be reset to NULL */
  tl_err e = {0};
  ck_assert_int_eq(tl_json_parse(text, len, &j, &e), TL_ERROR);
  ck_assert_ptr_null(j);
  ck_assert_ptr_nonnull(e.msg);
  ck_assert_msg(strcmp(e.msg, want) == 0, "input %s\n  got:  %s\n  want: %s", text, e.msg, want);
  tl_err_clear(&e);
}

static void expect_error(const char *text, const char *want) {
  expect_error_n(text, strlen(text), want);
}

static char *written(const tl_json *j) {
  tl_buf b = {0};
  tl_json_write(j, &b);
  ck_assert(!b.oom);
  return b.p;
}

/* ---- valid documents ---- */

START_TEST(scalars) {
  tl_json *j = parse_ok(" null ");
  ck_assert_int_eq(tl_json_type_of(j), TL_JSON_NULL);
  ck_assert_int_eq(tl_json_bool(j), -1);
  ck_assert_ptr_null(tl_json_str(j, NULL));
  ck_assert_ptr_null(tl_json_number_text(j));
  ck_assert_uint_eq(tl_json_len(j), 0);
  tl_json_free(j);

  j = parse_ok("true");
  ck_assert_int_eq(tl_json_type_of(j), TL_JSON_BOOL);
  ck_assert_int_eq(tl_json_bool(j), 1);
  tl_json_free(j);
  j = parse_ok("\t\r\nfalse\n");
  ck_assert_int_eq(tl_json_bool(j), 0);
  tl_json_free(j);

  j = parse_ok("-1.50E+03");
  ck_assert_int_eq(tl_json_type_of(j), TL_JSON_NUMBER);
  ck_assert_str_eq(tl_json_number_text(j), "-1.50E+03");
  double d = 0;
  ck_assert_int_eq(tl_json_double(j, &d), 0);
  ck_assert(d == -1500.0);
  int64_t v = 7;
  ck_assert_int_eq(tl_json_i64(j, &v), -1);
  ck_assert_int_eq(v, 7);
  ck_assert_int_eq(tl_json_bool(j), -1);
  tl_json_free(j);

  j = parse_ok("\"hello\"");
  ck_assert_int_eq(tl_json_type_of(j), TL_JSON_STRING);
  size_t len = 0;
  ck_assert_str_eq(tl_json_str(j, &len), "hello");
  ck_assert_uint_eq(len, 5);
  ck_assert_ptr_null(tl_json_number_text(j));
  tl_json_free(j);

  j = parse_ok("\"\"");
  ck_assert_str_eq(tl_json_str(j, &len), "");
  ck_assert_uint_eq(len, 0);
  tl_json_free(j);

  j = parse_ok("[]");
  ck_assert_int_eq(tl_json_type_of(j), TL_JSON_ARRAY);
  ck_assert_uint_eq(tl_json_len(j), 0);
  ck_assert_ptr_null(tl_json_at(j, 0));
  tl_json_free(j);

  j = parse_ok("{ }");
  ck_assert_int_eq(tl_json_type_of(j), TL_JSON_OBJECT);
  ck_assert_uint_eq(tl_json_len(j), 0);
  ck_assert_ptr_null(tl_json_get(j, "a"));
  ck_assert_ptr_null(tl_json_key_at(j, 0));
  tl_json_free(j);

  tl_json_free(NULL);
}
END_TEST

START_TEST(nested_access) {
  const char *text =
      "{\n"
      "  \"trace\": {\"window_ns\": 1712345678901234567, \"ranks\": [0, 1, 2],\n"
      "            \"name\": \"decode\", \"opts\": {\"on\": true, \"none\": null}},\n"
      "  \"weights\": [0.5, 2e-3, [[]], {}]\n"
      "}";
  tl_json *doc = parse_ok(text);
  ck_assert_uint_eq(tl_json_len(doc), 2);
  ck_assert_str_eq(tl_json_key_at(doc, 0), "trace");
  ck_assert_str_eq(tl_json_key_at(doc, 1), "weights");
  ck_assert_ptr_null(tl_json_key_at(doc, 2));
  ck_assert_ptr_null(tl_json_value_at(doc, 2));

  const tl_json *trace = tl_json_get(doc, "trace");
  ck_assert_ptr_eq(trace, tl_json_value_at(doc, 0));
  ck_assert_int_eq(tl_json_type_of(trace), TL_JSON_OBJECT);
  ck_assert_uint_eq(tl_json_len(trace), 4);
  const char *order[] = {"window_ns", "ranks", "name", "opts"};
  for (size_t i = 0; i < 4; i++) ck_assert_str_eq(tl_json_key_at(trace, i), order[i]);

  int64_t ns = 0;
  ck_assert_int_eq(tl_json_i64(tl_json_get(trace, "window_ns"), &ns), 0);
  ck_assert(ns == INT64_C(1712345678901234567));

  const tl_json *ranks = tl_json_get(trace, "ranks");
  ck_assert_uint_eq(tl_json_len(ranks), 3);
  for (size_t i = 0; i < 3; i++) {
    int64_t r = -1;
    ck_assert_int_eq(tl_json_i64(tl_json_at(ranks, i), &r), 0);
    ck_assert_int_eq(r, (int64_t)i);
  }
  ck_assert_ptr_null(tl_json_at(ranks, 3));
  ck_assert_ptr_null(tl_json_get(ranks, "0")); /* not an object */
  ck_assert_ptr_null(tl_json_key_at(ranks, 0));
  ck_assert_ptr_null(tl_json_at(trace, 0)); /* not an array */

  ck_assert_str_eq(tl_json_str(tl_json_get(trace, "name"), NULL), "decode");
  const tl_json *opts = tl_json_get(trace, "opts");
  ck_assert_int_eq(tl_json_bool(tl_json_get(opts, "on")), 1);
  ck_assert_int_eq(tl_json_type_of(tl_json_get(opts, "none")), TL_JSON_NULL);
  ck_assert_ptr_null(tl_json_get(opts, "missing"));
  ck_assert_ptr_null(tl_json_get(opts, "o")); /* prefixes do not match */

  const tl_json *w = tl_json_get(doc, "weights");
  double d = 0;
  ck_assert_int_eq(tl_json_double(tl_json_at(w, 0), &d), 0);
  ck_assert(d == 0.5);
  ck_assert_int_eq(tl_json_double(tl_json_at(w, 1), &d), 0);
  ck_assert(d == 0.002);
  const tl_json *inner = tl_json_at(w, 2);
  ck_assert_uint_eq(tl_json_len(inner), 1);
  ck_assert_int_eq(tl_json_type_of(tl_json_at(inner, 0)), TL_JSON_ARRAY);
  ck_assert_uint_eq(tl_json_len(tl_json_at(inner, 0)), 0);
  ck_assert_int_eq(tl_json_type_of(tl_json_at(w, 3)), TL_JSON_OBJECT);
  tl_json_free(doc);
}
END_TEST

static void expect_i64(const char *text, int64_t want) {
  tl_json *j = parse_ok(text);
  int64_t v = 0;
  ck_assert_msg(tl_json_i64(j, &v) == 0, "%s should be an int64", text);
  ck_assert_msg(v == want, "%s: got %lld", text, (long long)v);
  tl_json_free(j);
}

static void expect_not_i64(const char *text) {
  tl_json *j = parse_ok(text);
  int64_t v = 42;
  ck_assert_msg(tl_json_i64(j, &v) == -1, "%s should not be an int64", text);
  ck_assert_int_eq(v, 42);
  double d;
  ck_assert_int_eq(tl_json_double(j, &d), 0); /* still a number */
  tl_json_free(j);
}

START_TEST(int64_edges) {
  expect_i64("9223372036854775807", INT64_MAX);
  expect_i64("-9223372036854775808", INT64_MIN);
  expect_i64("9223372036854775806", INT64_MAX - 1);
  expect_i64("-9223372036854775807", -INT64_MAX);
  /* nanosecond timestamps around 2024 are ~1.7e18: beyond double's 53-bit mantissa */
  expect_i64("1712345678901234567", INT64_C(1712345678901234567));
  expect_i64("1712345678901234568", INT64_C(1712345678901234568));
  expect_i64("-1712345678901234567", -INT64_C(1712345678901234567));
  expect_i64("0", 0);
  expect_i64("-0", 0);
}
END_TEST

START_TEST(int64_rejects) {
  expect_not_i64("9223372036854775808");
  expect_not_i64("-9223372036854775809");
  expect_not_i64("18446744073709551616");
  expect_not_i64("99999999999999999999999999");
  expect_not_i64("1.0");
  expect_not_i64("1e3");
  expect_not_i64("1E3");
  expect_not_i64("-0.0");
  tl_json *j = parse_ok("\"12\"");
  int64_t v;
  ck_assert_int_eq(tl_json_i64(j, &v), -1);
  double d;
  ck_assert_int_eq(tl_json_double(j, &d), -1);
  tl_json_free(j);
}
END_TEST

START_TEST(doubles) {
  static const struct {
    const char *text;
    double want;
  } cases[] = {
      {"0.1", 0.1}, {"-2.5e-3", -0.0025}, {"1E2", 100.0}, {"1e+2", 100.0},
      {"123456789012345678901234567890", 1.2345678901234568e29}, {"5e-324", 4.9406564584124654e-324},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    tl_json *j = parse_ok(cases[i].text);
    double d = 0;
    ck_assert_int_eq(tl_json_double(j, &d), 0);
    ck_assert_msg(d == cases[i].want, "%s: got %.17g", cases[i].text, d);
    ck_assert_str_eq(tl_json_number_text(j), cases[i].text);
    tl_json_free(j);
  }
  tl_json *j = parse_ok("1e400");
  double d = 0;
  ck_assert_int_eq(tl_json_double(j, &d), 0);
  ck_assert(isinf(d) && d > 0);
  tl_json_free(j);
}
END_TEST

START_TEST(string_escapes) {
  tl_json *j = parse_ok("\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"");
  size_t len = 0;
  const char *s = tl_json_str(j, &len);
  ck_assert_uint_eq(len, 8);
  ck_assert_mem_eq(s, "\"\\/\b\f\n\r\t", 8);
  tl_json_free(j);

  /* U+00E9 -> C3 A9, U+20AC -> E2 82 AC, U+1F600 (D83D DE00) -> F0 9F 98 80, U+10FFFF (DBFF DFFF) */
  j = parse_ok("\"a\\u00e9b\\u20ACc\\ud83d\\ude00d\\uDBFF\\uDFFF\"");
  s = tl_json_str(j, &len);
  static const char want[] = "a\xC3\xA9" "b\xE2\x82\xAC" "c\xF0\x9F\x98\x80" "d\xF4\x8F\xBF\xBF";
  ck_assert_uint_eq(len, sizeof want - 1);
  ck_assert_mem_eq(s, want, len);
  tl_json_free(j);

  /* U+0000 decodes to a NUL byte inside the string; len tells */
  j = parse_ok("\"x\\u0000y\"");
  s = tl_json_str(j, &len);
  ck_assert_uint_eq(len, 3);
  ck_assert_mem_eq(s, "x\0y", 3);
  ck_assert_uint_eq(s[3], 0);
  tl_json_free(j);

  /* one- to four-byte escapes at their range edges: U+007F, U+0080, U+07FF, U+0800, U+FFFF */
  j = parse_ok("\"\\u007f\\u0080\\u07ff\\u0800\\uffff\"");
  s = tl_json_str(j, &len);
  static const char edges[] = "\x7F" "\xC2\x80" "\xDF\xBF" "\xE0\xA0\x80" "\xEF\xBF\xBF";
  ck_assert_uint_eq(len, sizeof edges - 1);
  ck_assert_mem_eq(s, edges, len);
  tl_json_free(j);

  /* raw UTF-8 passes through unchanged */
  j = parse_ok("[\"\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\"]");
  s = tl_json_str(tl_json_at(j, 0), &len);
  ck_assert_uint_eq(len, 9);
  ck_assert_mem_eq(s, "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80", 9);
  tl_json_free(j);
}
END_TEST

START_TEST(keys_decoded_and_compared_by_length) {
  tl_json *j = parse_ok("{\"a\\u0000b\": 1, \"a\": 2, \"\\u00e9\": 3, \"\": 4}");
  ck_assert_uint_eq(tl_json_len(j), 4);
  ck_assert_str_eq(tl_json_key_at(j, 0), "a"); /* NUL-terminated view of "a\0b" */
  int64_t v = 0;
  ck_assert_int_eq(tl_json_i64(tl_json_get(j, "a"), &v), 0);
  ck_assert_int_eq(v, 2);
  ck_assert_int_eq(tl_json_i64(tl_json_get(j, "\xC3\xA9"), &v), 0);
  ck_assert_int_eq(v, 3);
  ck_assert_int_eq(tl_json_i64(tl_json_get(j, ""), &v), 0);
  ck_assert_int_eq(v, 4);
  tl_json_free(j);
}
END_TEST

START_TEST(large_object_and_array) {
  /* enough members to leave the linear duplicate scan for the hash set */
  tl_buf b = {0};
  tl_buf_puts(&b, "{");
  for (int i = 0; i < 1000; i++) tl_buf_printf(&b, "%s\"key%d\": [%d, \"v%d\"]", i ? "," : "", i, i, i);
  tl_buf_puts(&b, "}");
  ck_assert(!b.oom);
  tl_json *j = parse_ok(b.p);
  ck_assert_uint_eq(tl_json_len(j), 1000);
  for (int i = 0; i < 1000; i += 37) {
    char key[16], val[16];
    snprintf(key, sizeof key, "key%d", i);
    snprintf(val, sizeof val, "v%d", i);
    ck_assert_str_eq(tl_json_key_at(j, (size_t)i), key);
    const tl_json *m = tl_json_get(j, key);
    ck_assert_ptr_eq(m, tl_json_value_at(j, (size_t)i));
    int64_t v = -1;
    ck_assert_int_eq(tl_json_i64(tl_json_at(m, 0), &v), 0);
    ck_assert_int_eq(v, i);
    ck_assert_str_eq(tl_json_str(tl_json_at(m, 1), NULL), val);
  }
  tl_json_free(j);

  tl_buf_reset(&b);
  tl_buf_puts(&b, "[");
  for (int i = 0; i < 100000; i++) tl_buf_printf(&b, "%s%d", i ? "," : "", i * 3);
  tl_buf_puts(&b, "]");
  j = parse_ok(b.p);
  ck_assert_uint_eq(tl_json_len(j), 100000);
  int64_t v = 0;
  ck_assert_int_eq(tl_json_i64(tl_json_at(j, 99999), &v), 0);
  ck_assert_int_eq(v, 299997);
  tl_json_free(j);
  tl_buf_free(&b);
}
END_TEST

static char *nested(int depth, const char *open, const char *close) {
  tl_buf b = {0};
  for (int i = 0; i < depth; i++) tl_buf_puts(&b, open);
  for (int i = 0; i < depth; i++) tl_buf_puts(&b, close);
  ck_assert(!b.oom);
  return b.p;
}

START_TEST(nesting_limit) {
  char *ok = nested(256, "[", "]");
  tl_json *j = parse_ok(ok);
  const tl_json *cur = j;
  for (int i = 1; i < 256; i++) cur = tl_json_at(cur, 0);
  ck_assert_int_eq(tl_json_type_of(cur), TL_JSON_ARRAY);
  ck_assert_uint_eq(tl_json_len(cur), 0);
  tl_json_free(j);
  free(ok);

  tl_buf b = {0};
  for (int i = 0; i < 255; i++) tl_buf_puts(&b, "{\"k\":");
  tl_buf_puts(&b, "{}");
  for (int i = 0; i < 255; i++) tl_buf_puts(&b, "}");
  j = parse_ok(b.p);
  tl_json_free(j);
  tl_buf_free(&b);

  char *deep = nested(257, "[", "]");
  expect_error(deep, "invalid JSON at line 1, column 257: nesting deeper than 256");
  free(deep);
  deep = nested(100000, "[", "]");
  expect_error(deep, "invalid JSON at line 1, column 257: nesting deeper than 256");
  free(deep);
}
END_TEST

START_TEST(byte_order_mark_skipped) {
  tl_json *j = parse_ok("\xEF\xBB\xBF{\"a\":1}");
  ck_assert_uint_eq(tl_json_len(j), 1);
  tl_json_free(j);
  /* columns count from after the mark */
  expect_error("\xEF\xBB\xBF{\"a\" 1}", "invalid JSON at line 1, column 6: expected ':'");
}
END_TEST

/* ---- errors ---- */

START_TEST(errors_structure) {
  expect_error("{\"a\":1 \"b\":2}", "invalid JSON at line 1, column 8: expected ',' or '}'");
  expect_error("[1 2]", "invalid JSON at line 1, column 4: expected ',' or ']'");
  expect_error("[1,]", "invalid JSON at line 1, column 4: expected a value");
  expect_error("{\"a\":1,}", "invalid JSON at line 1, column 8: expected a string key");
  expect_error("{,}", "invalid JSON at line 1, column 2: expected a string key or '}'");
  expect_error("{a:1}", "invalid JSON at line 1, column 2: expected a string key or '}'");
  expect_error("{\"a\" 1}", "invalid JSON at line 1, column 6: expected ':'");
  expect_error("[true false]", "invalid JSON at line 1, column 7: expected ',' or ']'");
  expect_error("tru", "invalid JSON at line 1, column 1: expected a value");
  expect_error("nul", "invalid JSON at line 1, column 1: expected a value");
  expect_error("'a'", "invalid JSON at line 1, column 1: expected a value");
  expect_error("", "invalid JSON at line 1, column 1: expected a value");
  expect_error("  \n ", "invalid JSON at line 2, column 2: expected a value");
  expect_error("[1,", "invalid JSON at line 1, column 4: expected a value");
  expect_error("{\"a\":1", "invalid JSON at line 1, column 7: expected ',' or '}'");
  expect_error("[", "invalid JSON at line 1, column 2: expected a value");
  /* an embedded NUL is just an unexpected character: the length is authoritative */
  expect_error_n("[1,\0]", 5, "invalid JSON at line 1, column 4: expected a value");
}
END_TEST

START_TEST(errors_trailing) {
  expect_error("{} x", "invalid JSON at line 1, column 4: trailing characters after the value");
  expect_error("1 2", "invalid JSON at line 1, column 3: trailing characters after the value");
  expect_error("[1]]", "invalid JSON at line 1, column 4: trailing characters after the value");
  expect_error("truex", "invalid JSON at line 1, column 5: trailing characters after the value");
  expect_error("01", "invalid JSON at line 1, column 1: leading zeros are not allowed in numbers");
}
END_TEST

START_TEST(errors_numbers) {
  expect_error("NaN", "invalid JSON at line 1, column 1: NaN and Infinity are not valid JSON");
  expect_error("[Infinity]", "invalid JSON at line 1, column 2: NaN and Infinity are not valid JSON");
  expect_error("-Infinity", "invalid JSON at line 1, column 1: NaN and Infinity are not valid JSON");
  expect_error("[-012]", "invalid JSON at line 1, column 2: leading zeros are not allowed in numbers");
  expect_error("00", "invalid JSON at line 1, column 1: leading zeros are not allowed in numbers");
  expect_error("-", "invalid JSON at line 1, column 2: expected a digit after '-'");
  expect_error("-a", "invalid JSON at line 1, column 2: expected a digit after '-'");
  expect_error("1.", "invalid JSON at line 1, column 3: expected a digit after '.'");
  expect_error("1.e5", "invalid JSON at line 1, column 3: expected a digit after '.'");
  expect_error("1e", "invalid JSON at line 1, column 3: expected a digit in the exponent");
  expect_error("1e+", "invalid JSON at line 1, column 4: expected a digit in the exponent");
  expect_error(".5", "invalid JSON at line 1, column 1: expected a value");
  expect_error("+1", "invalid JSON at line 1, column 1: expected a value");
  expect_error("0x10", "invalid JSON at line 1, column 2: trailing characters after the value");
}
END_TEST

START_TEST(errors_strings) {
  expect_error("{\"a\":\"abc", "invalid JSON at line 1, column 6: unterminated string");
  expect_error("[{\"a\": \"b", "invalid JSON at line 1, column 8: unterminated string");
  expect_error("\"abc\\", "invalid JSON at line 1, column 1: unterminated string");
  expect_error("\"\\u12G4\"", "invalid JSON at line 1, column 2: invalid \\u escape");
  expect_error("\"\\u12\"", "invalid JSON at line 1, column 2: invalid \\u escape");
  expect_error("\"\\u", "invalid JSON at line 1, column 2: invalid \\u escape");
  expect_error("\"\\ud800\"",
               "invalid JSON at line 1, column 2: invalid \\u escape: unpaired high surrogate \\ud800");
  expect_error("\"\\ud800\\u0041\"",
               "invalid JSON at line 1, column 2: invalid \\u escape: unpaired high surrogate \\ud800");
  expect_error("\"\\uD800\\uD800\"",
               "invalid JSON at line 1, column 2: invalid \\u escape: unpaired high surrogate \\ud800");
  expect_error("\"x\\udc00\"",
               "invalid JSON at line 1, column 3: invalid \\u escape: unpaired low surrogate \\udc00");
  expect_error("\"\\x\"", "invalid JSON at line 1, column 2: invalid escape '\\x'");
  expect_error("\"a\tb\"",
               "invalid JSON at line 1, column 3: control character U+0009 in string must be escaped");
  expect_error("\"a\nb\"",
               "invalid JSON at line 1, column 3: control character U+000A in string must be escaped");
  expect_error_n("\"a\0b\"", 5,
                 "invalid JSON at line 1, column 3: control character U+0000 in string must be escaped");
}
END_TEST

START_TEST(errors_utf8) {
  static const char *bad[] = {
      "\"ab\xC3\x28\"",         /* lead byte without its continuation */
      "\"ab\xC0\xAF\"",         /* overlong '/' */
      "\"ab\xE0\x80\xAF\"",     /* overlong three-byte */
      "\"ab\xF0\x80\x80\xAF\"", /* overlong four-byte */
      "\"ab\xED\xA0\x80\"",     /* UTF-8-encoded surrogate U+D800 */
      "\"ab\xF4\x90\x80\x80\"", /* above U+10FFFF */
      "\"ab\xF8\x88\x80\x80\x80\"", /* five-byte form */
      "\"ab\x80\"",             /* stray continuation byte */
      "\"ab\xFF\"",
      "\"ab\xE2\x82\"",         /* truncated by the closing quote */
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    expect_error(bad[i], "invalid JSON at line 1, column 4: invalid UTF-8");
  }
  expect_error_n("\"ab\xE2\x82", 5, "invalid JSON at line 1, column 4: invalid UTF-8");
  /* in keys too */
  expect_error("{\"\xC3\":1}", "invalid JSON at line 1, column 3: invalid UTF-8");
}
END_TEST

START_TEST(errors_duplicate_keys) {
  expect_error("{\"x\":1,\"x\":2}", "invalid JSON at line 1, column 8: duplicate key \"x\"");
  /* equal after unescaping */
  expect_error("{\"a\":1, \"\\u0061\":2}", "invalid JSON at line 1, column 9: duplicate key \"a\"");
  /* the same key in different objects is fine */
  tl_json *j = parse_ok("[{\"x\":1},{\"x\":2,\"y\":{\"x\":3}}]");
  tl_json_free(j);
  /* quotes in the key are escaped in the message */
  expect_error("{\"q\\\"\":1,\"q\\\"\":2}", "invalid JSON at line 1, column 10: duplicate key \"q\\\"\"");

  /* past the linear-scan threshold, one member per line: the duplicate "k5" is on line 42 */
  tl_buf b = {0};
  tl_buf_puts(&b, "{\n");
  for (int i = 0; i < 40; i++) tl_buf_printf(&b, "  \"k%d\": %d,\n", i, i);
  tl_buf_puts(&b, "  \"k5\": 0\n}");
  expect_error(b.p, "invalid JSON at line 42, column 3: duplicate key \"k5\"");
  tl_buf_free(&b);
}
END_TEST

START_TEST(errors_positions_multiline) {
  expect_error("{\n  \"a\": 1,\n  \"b\" 2\n}", "invalid JSON at line 3, column 7: expected ':'");
  expect_error("[\r\n1,\r\n2 3]", "invalid JSON at line 3, column 3: expected ',' or ']'");
  /* columns count characters: the two-byte \xC3\xA9 is one column */
  expect_error("[\"\xC3\xA9\", x]", "invalid JSON at line 1, column 7: expected a value");
  expect_error("{\"a\": 1}\n\n  ]", "invalid JSON at line 3, column 3: trailing characters after the value");
}
END_TEST

/* ---- writer ---- */

START_TEST(writer_canonical) {
  const char *in =
      "{ \"b\" : [1, 2.50, -0, 1E+2, \"x\\u0041\\n\\/\\u0001\\\"\\\\\"],\n"
      "  \"a\": {\"z\": null, \"t\": true, \"f\": false},\n"
      "  \"\\u00e9\": \"\\ud83d\\ude00\", \"e\": [], \"o\": {} }";
  const char *want =
      "{\"b\":[1,2.50,-0,1E+2,\"xA\\n/\\u0001\\\"\\\\\"],"
      "\"a\":{\"z\":null,\"t\":true,\"f\":false},"
      "\"\xC3\xA9\":\"\xF0\x9F\x98\x80\",\"e\":[],\"o\":{}}";
  tl_json *j = parse_ok(in);
  char *out = written(j);
  ck_assert_str_eq(out, want);
  /* the canonical form is a fixed point */
  tl_json *again = parse_ok(out);
  char *out2 = written(again);
  ck_assert_str_eq(out2, want);
  free(out);
  free(out2);
  tl_json_free(again);
  tl_json_free(j);

  j = parse_ok("\"a\\u0000b\"");
  out = written(j);
  ck_assert_str_eq(out, "\"a\\u0000b\"");
  free(out);
  tl_json_free(j);

  j = parse_ok(" 1712345678901234567 ");
  out = written(j);
  ck_assert_str_eq(out, "1712345678901234567");
  free(out);
  tl_json_free(j);

  /* appends to what the buffer already holds */
  j = parse_ok("[null]");
  tl_buf b = {0};
  tl_buf_puts(&b, "x=");
  tl_json_write(j, &b);
  ck_assert_str_eq(b.p, "x=[null]");
  tl_buf_free(&b);
  tl_json_free(j);
}
END_TEST

START_TEST(writer_subtree) {
  tl_json *j = parse_ok("{\"opts\": {\"k\": [1, {\"n\": \"v\"}]}, \"z\": 0}");
  char *out = written(tl_json_get(j, "opts"));
  ck_assert_str_eq(out, "{\"k\":[1,{\"n\":\"v\"}]}");
  free(out);
  tl_json_free(j);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("json");
  TCase *tc = tcase_create("parse");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, scalars);
  tcase_add_test(tc, nested_access);
  tcase_add_test(tc, int64_edges);
  tcase_add_test(tc, int64_rejects);
  tcase_add_test(tc, doubles);
  tcase_add_test(tc, string_escapes);
  tcase_add_test(tc, keys_decoded_and_compared_by_length);
  tcase_add_test(tc, large_object_and_array);
  tcase_add_test(tc, nesting_limit);
  tcase_add_test(tc, byte_order_mark_skipped);
  suite_add_tcase(s, tc);
  TCase *te = tcase_create("errors");
  tcase_add_test(te, errors_structure);
  tcase_add_test(te, errors_trailing);
  tcase_add_test(te, errors_numbers);
  tcase_add_test(te, errors_strings);
  tcase_add_test(te, errors_utf8);
  tcase_add_test(te, errors_duplicate_keys);
  tcase_add_test(te, errors_positions_multiline);
  suite_add_tcase(s, te);
  TCase *tw = tcase_create("write");
  tcase_add_test(tw, writer_canonical);
  tcase_add_test(tw, writer_subtree);
  suite_add_tcase(s, tw);
  return s;
}

TL_CHECK_MAIN(suite)
