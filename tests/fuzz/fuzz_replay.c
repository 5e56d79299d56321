/*
** fuzz_replay.c: libFuzzer harness for graph replay reconstruction (ext/replay/: ACL graphs
** from MODEL_EXECUTE / NOTIFY controls and the CaptureStreamInfo companion, CUDA graphs
** from graphNodeId rows), run on mutated profiles that do contain graph launches:
**
**   byte 0     which base (mod 4): exact_hlt/mono and aclgraph_smoke/mono and
**              body_mismatch/mono (Ascend msprof_0.db + host/sqlite/stream_info.db), and
**              nsys/nsys_graph.sqlite (CUDA graph launches)
**   byte 1     which file of the base the SQL runs on (mod its number of files, sorted by
**              path: PROF_0/host/sqlite/stream_info.db, PROF_0/msprof_0.db)
**   the rest   SQL executed on a fresh copy of that file (fuzz_profile.h guards)
**
** Then discover + tl_trace_load + tl_relate + tl_replay_build + tl_replay_promote, as
** traceloom_analyze runs them, and the invariants of the replay arrays (fuzz_profile.h):
** every member's event index is below the number of real events, the members of a launch
** are contiguous and in its range, the launches of a unit are contiguous with member_order
** 0.., controls and host calls in range, one synthetic event per promoted launch mapping
** back to it, and no event (synthetic ones included) ending before it starts.
*/
#include <stddef.h>
#include <stdint.h>

#include "fuzz_profile.h"

static const struct {
  const char *root;   /* folder under the fixtures that is copied */
  const char *target; /* what is discovered, relative to the copy ("" = the copy itself) */
} bases[] = {
    {"exact_hlt/mono", ""},
    {"aclgraph_smoke/mono", ""},
    {"body_mismatch/mono", ""},
    {"nsys", "nsys_graph.sqlite"},
};
#define NBASES (sizeof bases / sizeof bases[0])

static tl_fuzz_tree trees[NBASES];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  for (size_t i = 0; i < NBASES; i++) {
    tl_fuzz_tree_load(&trees[i], bases[i].root, "fuzz_replay");
    if (*bases[i].target) {
      /* Keep only the target file of a folder of unrelated profiles. */
      tl_fuzz_tree *t = &trees[i];
      size_t k = 0;
      for (size_t j = 0; j < t->n; j++) {
        if (strcmp(t->files[j].rel, bases[i].target) == 0) {
          t->files[k++] = t->files[j];
        } else {
          free(t->files[j].rel);
          free(t->files[j].bytes);
        }
      }
      t->n = k;
      if (!k) {
        fprintf(stderr, "fuzz_replay: fixture %s/%s missing\n", bases[i].root, bases[i].target);
        exit(1);
      }
    }
  }
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2) return 0;
  size_t which = data[0] % NBASES;
  const tl_fuzz_tree *t = &trees[which];
  size_t file = data[1] % t->n;
  char *sql = tl_fuzz_sql(data + 2, size - 2);
  if (!sql) return 0;
  char dir[512], path[2048], target[1024];
  snprintf(dir, sizeof dir, "%s/replay%zu", tl_fuzz_scratch(), which);
  tl_fuzz_tree_write(t, dir);
  snprintf(path, sizeof path, "%s/%s", dir, t->files[file].rel);
  if (*sql) tl_fuzz_mutate_db(path, sql);
  free(sql);
  snprintf(target, sizeof target, "%s%s%s", dir, *bases[which].target ? "/" : "",
           bases[which].target);

  tl_fuzz_load_profile(target, 1);
  return 0;
}
