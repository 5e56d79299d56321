/*
** fuzz_split.c: libFuzzer harness for the split Ascend reader (ext/source/msprof_split.c):
** a PROF_* directory of device_N/sqlite/NAME.db and host/sqlite/NAME.db files, discovered and
** loaded as traceloom_analyze does, then related and replayed.
**
** As in fuzz_reader.c, the input mutates a valid profile instead of raw database bytes:
**
**   byte 0     which base split profile (mod 2): exact_hlt/split, split_golden/split
**   byte 1     which of its files the SQL runs on (mod the number of files, sorted by path:
**              device_0/sqlite/ascend_task.db, device_0/sqlite/hccl_single_device.db,
**              host/sqlite/api_event.db, ...)
**   the rest   SQL executed on a fresh copy of that file (fuzz_profile.h guards)
**
** The whole directory is rewritten for each input, so the other files stay pristine. Then
** tl_profile_discover + tl_profile_inventory + tl_trace_load must return TL_OK or TL_ERROR
** with a message; a loaded trace must have no event ending before it starts, and relate,
** replay build and promotion must keep the invariants of fuzz_profile.h.
*/
#include <stddef.h>
#include <stdint.h>

#include "fuzz_profile.h"

static const char *const bases[] = {"exact_hlt/split", "split_golden/split"};
#define NBASES (sizeof bases / sizeof bases[0])

static tl_fuzz_tree trees[NBASES];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  for (size_t i = 0; i < NBASES; i++) tl_fuzz_tree_load(&trees[i], bases[i], "fuzz_split");
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2) return 0;
  size_t which = data[0] % NBASES;
  const tl_fuzz_tree *t = &trees[which];
  size_t file = data[1] % t->n;
  char *sql = tl_fuzz_sql(data + 2, size - 2);
  if (!sql) return 0;
  char dir[512], path[2048];
  snprintf(dir, sizeof dir, "%s/split%zu", tl_fuzz_scratch(), which);
  tl_fuzz_tree_write(t, dir);
  snprintf(path, sizeof path, "%s/%s", dir, t->files[file].rel);
  if (*sql) tl_fuzz_mutate_db(path, sql);
  free(sql);

  tl_fuzz_load_profile(dir, 1);
  return 0;
}
