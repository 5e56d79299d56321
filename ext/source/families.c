/*
** families.c: the registry of profile families, in detection order (inputs.md section 1).
**
** One line per family; each family's file defines its tl_family_def (detection, readers,
** inventory). Discovery, the cursors, the inventory, the option source_kind and
** traceloom_debug() all go through this table, so adding a format is a new reader file
** and one line here.
*/
#include "source/source.h"

#include <string.h>

extern const tl_family_def tl_nsys_family, tl_hygon_family, tl_kineto_family;

const tl_family_def *const tl_families[] = {
    &tl_msprof_family,       /* msprof.c: msprof_*.db, ascend_pytorch_profiler_<rank>.db */
    &tl_msprof_split_family, /* msprof_split.c: PROF_x/{host,device_N}/sqlite/x.db */
    &tl_nsys_family,         /* nsys.c: nsys export --type sqlite */
    &tl_hygon_family,        /* hygon.c: hipprof / rocprof SQLite */
    &tl_kineto_family,       /* kineto.c: PyTorch profiler Chrome-trace JSON */
    NULL,
};

const tl_family_def *tl_family_by_source_kind(const char *source_kind) {
  for (const tl_family_def *const *f = tl_families; *f; f++)
    if (strcmp((*f)->source_kind, source_kind) == 0) return *f;
  return NULL;
}

void tl_family_kinds_list(tl_buf *b, const char *sep) {
  for (const tl_family_def *const *f = tl_families; *f; f++) {
    if (f != tl_families) tl_buf_puts(b, sep);
    tl_buf_puts(b, (*f)->source_kind);
  }
}

const char *tl_family_source_kind(const tl_family_def *f) { return f ? f->source_kind : "unknown"; }

tl_provider tl_family_provider(const tl_family_def *f) {
  return f ? f->provider : TL_PROVIDER_UNKNOWN;
}
