/*
** fuzz_kineto.c: libFuzzer harness for the PyTorch profiler (Kineto) Chrome-trace JSON
** reader (ext/source/kineto.c over the streaming parser of kineto_json.c).
**
** The reader takes a path, so the input is written to a scratch file: trace.json, or
** trace.json.gz when the input starts with the gzip magic (the reader inflates .gz files
** itself, so truncated and corrupt streams are exercised too). Then, as traceloom_analyze
** does: tl_profile_discover (which runs tl_kineto_detect), tl_profile_inventory,
** tl_trace_load, and relate + replay (fuzz_profile.h). Every call must return TL_OK or
** TL_ERROR with a message; a loaded trace has no event or call ending before it starts.
*/
#include <stddef.h>
#include <stdint.h>

#include "fuzz_profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  int gz = size >= 2 && data[0] == 0x1f && data[1] == 0x8b;
  char path[512];
  snprintf(path, sizeof path, "%s/trace.json%s", tl_fuzz_scratch(), gz ? ".gz" : "");
  tl_fuzz_write(path, data, size);

  tl_fuzz_load_profile(path, 1);
  unlink(path);
  return 0;
}
