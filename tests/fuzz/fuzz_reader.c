/*
** fuzz_reader.c: libFuzzer harness for profile discovery and the readers (Ascend
** monolithic msprof, Nsight Systems export, Hygon hipprof): tl_profile_discover followed
** by tl_trace_load, the same calls traceloom_analyze makes before any analysis stage.
**
** Fuzzing raw database bytes mostly exercises SQLite's own corruption checks, so the input
** is instead a mutation of a valid fixture profile:
**
**   byte 0     which base profile (mod 3): Ascend msprof_0.db, Nsight export, Hygon DB
**   the rest   SQL text executed on a fresh copy of that base (UPDATE/DELETE/DROP/ALTER/
**              CREATE ...), so readers meet wrong types, NULLs, missing columns and tables,
**              out-of-range ids and dangling string references on a schema they recognize
**
** The mutated copy is then discovered and loaded. Whatever the SQL did, the reader must
** return TL_OK or TL_ERROR with a message (fuzz_common.h), never crash or leak.
** The mutation SQL runs under an authorizer that refuses ATTACH and PRAGMA and with a
** statement-step budget, so it can neither touch other files nor run forever.
**
** Base profiles come from the materialized fixtures: TL_FUZZ_FIXTURES (default: the
** build folder's fixtures/, compiled in as TL_FUZZ_FIXTURES_DEFAULT).
*/
#include <ctype.h>
#include <stdint.h>
#include <stddef.h>
#include <sys/stat.h>

#include <sqlite3.h>

#include "fuzz_common.h"
#include "fuzz_profile.h"
#include "source/source.h"
#include "trace/trace.h"


/* Base profile: fixture file (relative to the fixtures folder) and the file name the copy
** gets, so discovery sees the same layout a real capture has. */
static const struct {
  const char *fixture, *name;
} bases[] = {
    {"exact_hlt/mono/PROF_0/msprof_0.db", "msprof_0.db"},
    {"nsys/nsys_basic.sqlite", "profile.sqlite"},
    {"hygon/hipprof.db", "hipprof.db"},
};
#define NBASES (sizeof bases / sizeof bases[0])

static struct {
  unsigned char *bytes;
  size_t n;
} base_db[NBASES];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  const char *dir = tl_fuzz_fixtures();
  for (size_t i = 0; i < NBASES; i++) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, bases[i].fixture);
    if (!(base_db[i].bytes = tl_fuzz_read_all(path, &base_db[i].n))) {
      fprintf(stderr, "fuzz_reader: cannot read base profile %s (run make fixtures, or set "
                      "TL_FUZZ_FIXTURES)\n", path);
      exit(1);
    }
  }
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  size_t which = data[0] % NBASES;
  char *sql = tl_fuzz_sql(data + 1, size - 1);
  if (!sql) return 0;
  char path[512];
  snprintf(path, sizeof path, "%s/%s", tl_fuzz_scratch(), bases[which].name);
  unlink(path);
  tl_fuzz_write(path, base_db[which].bytes, base_db[which].n);
  if (size > 1) tl_fuzz_mutate_db(path, sql);
  free(sql);

  tl_fuzz_load_profile(path, 0);
  return 0;
}
