/*
** fuzz_json.c: libFuzzer harness for the strict JSON parser (ext/util/json.c).
**
** The input is the JSON text. A document that parses is walked completely (every
** accessor on every node) and written back canonically; the canonical text must parse
** again and write back to the same bytes (tl_json_write is a fixed point).
*/
#include <stdint.h>
#include <stddef.h>
#include <sys/stat.h>

#include "fuzz_common.h"
#include "util/json.h"

static void walk(const tl_json *j, int depth) {
  size_t n = tl_json_len(j);
  int64_t i64;
  double d;
  size_t len;
  (void)tl_json_i64(j, &i64);
  (void)tl_json_double(j, &d);
  (void)tl_json_str(j, &len);
  (void)tl_json_bool(j);
  (void)tl_json_number_text(j);
  if (tl_json_type_of(j) == TL_JSON_OBJECT) {
    for (size_t i = 0; i < n; i++) {
      const char *k = tl_json_key_at(j, i);
      if (!k) abort();
      /* Lookup by C string finds this member (keys are unique), unless the key holds a
      ** \u0000: then the C string is only its prefix and matches no key or another one. */
      const tl_json *found = tl_json_get(j, k);
      if (found != tl_json_value_at(j, i)) {
        size_t m = 0;
        while (m < n && tl_json_value_at(j, m) != found) m++;
        if (found && (m == n || strcmp(tl_json_key_at(j, m), k) != 0)) abort();
      }
      walk(tl_json_value_at(j, i), depth + 1);
    }
  } else if (tl_json_type_of(j) == TL_JSON_ARRAY) {
    for (size_t i = 0; i < n; i++) walk(tl_json_at(j, i), depth + 1);
    if (tl_json_at(j, n) != NULL) abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tl_err e = {0};
  tl_json *doc = NULL;
  int rc = tl_json_parse((const char *)data, size, &doc, &e);
  if (rc != TL_OK && doc) abort(); /* on error *out is NULL */
  tl_fuzz_check(rc, &e, "tl_json_parse");
  if (rc != TL_OK) return 0;
  walk(doc, 0);
  tl_buf once = {0}, twice = {0};
  tl_json_write(doc, &once);
  tl_json *again = NULL;
  if (!once.oom) {
    if (tl_json_parse(once.p, once.n, &again, &e) != TL_OK) {
      fprintf(stderr, "canonical JSON does not parse: %s\n%.*s\n", e.msg, (int)once.n, once.p);
      abort();
    }
    tl_json_write(again, &twice);
    if (!twice.oom && (twice.n != once.n || memcmp(twice.p, once.p, once.n) != 0)) {
      fprintf(stderr, "canonical JSON is not a fixed point\n");
      abort();
    }
  }
  tl_json_free(again);
  tl_json_free(doc);
  tl_buf_free(&once);
  tl_buf_free(&twice);
  return 0;
}
