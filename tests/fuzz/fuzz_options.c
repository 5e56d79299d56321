/*
** fuzz_options.c: libFuzzer harness for the analyze options (tl_options_parse in
** ext/analyze/analyze.c), the JSON object behind traceloom_analyze(path, options).
**
** The input is the options text. Options that are accepted must have a canonical form
** that is accepted again and canonicalizes to itself; rules_config names are not loaded
** here (fuzz_rules covers the loader).
*/
#include <stdint.h>
#include <stddef.h>
#include <sys/stat.h>

#include "fuzz_common.h"
#include "analyze/analyze.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = tl_fuzz_cstr(data, size);
  tl_err e = {0};
  tl_options o;
  char *canonical = NULL;
  int rc = tl_options_parse(text, &o, &canonical, &e);
  tl_fuzz_check(rc, &e, "tl_options_parse");
  if (rc == TL_OK) {
    if (!canonical) abort();
    tl_options o2;
    char *canonical2 = NULL;
    if (tl_options_parse(canonical, &o2, &canonical2, &e) != TL_OK) {
      fprintf(stderr, "canonical options rejected: %s\n%s\n", e.msg, canonical);
      abort();
    }
    if (strcmp(canonical, canonical2) != 0) {
      fprintf(stderr, "canonical options are not a fixed point:\n%s\n%s\n", canonical, canonical2);
      abort();
    }
    free(canonical2);
    tl_options_free(&o2);
    tl_options_free(&o);
  }
  free(canonical);
  free(text);
  return 0;
}
