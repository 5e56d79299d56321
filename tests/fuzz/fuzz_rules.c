/*
** fuzz_rules.c: libFuzzer harness for the YAML rules loader (tl_rules_load in
** ext/classify/rules.c over the YAML reader of ext/classify/yamldoc.c).
**
** The loader takes a path, so the input is written to a scratch file first. Every kind of
** rules file goes through the same entry point: a traceloom-analysis-rules-v1 config, a
** legacy match-rules config or a single traceloom-policy-v1 manifest.
*/
#include <stdint.h>
#include <stddef.h>
#include <sys/stat.h>

#include "fuzz_common.h"
#include "classify/classify.h"
#include "util/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char path[512];
  snprintf(path, sizeof path, "%s/rules.yaml", tl_fuzz_scratch());
  tl_fuzz_write(path, data, size);
  tl_err e = {0};
  tl_rules *rules = NULL;
  int rc = tl_rules_load(path, &rules, &e);
  if (rc != TL_OK && rules) abort(); /* on error *out is NULL */
  tl_fuzz_check(rc, &e, "tl_rules_load");
  if (rc == TL_OK) {
    tl_buf b = {0};
    if (tl_rules_options_json(rules, &b) == 0 && !b.oom) {
      /* The rules part of the recorded analysis options must be valid JSON. */
      tl_json *doc = NULL;
      if (tl_json_parse(b.p, b.n, &doc, &e) != TL_OK) {
        fprintf(stderr, "rules options JSON does not parse: %s\n%s\n", e.msg, b.p);
        abort();
      }
      tl_json_free(doc);
    }
    (void)tl_rules_digest(rules);
    tl_buf_free(&b);
    tl_rules_free(rules);
  }
  return 0;
}
