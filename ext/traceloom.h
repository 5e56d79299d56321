/*
** traceloom.h: types shared by every stage of the analysis.
**
** Data flows one way: source (read + normalize) -> trace (arrays) -> later stages
** (classify, replay, recover, cost) -> publish. This header holds only the small
** vocabulary all of them use: versions, event kinds, source families, providers.
*/
#ifndef TRACELOOM_H
#define TRACELOOM_H

#include <stddef.h>
#include <stdint.h>

#include "sqlite-traceloom.h" /* TRACELOOM_VERSION, TRACELOOM_SCHEMA_VERSION */

/* Absent values. Every SQL surface turns these into NULL (outputs.md section 0). */
#define TL_NO_STREAM UINT32_MAX   /* stream id 4294967295 = no stream */
#define TL_ABSENT    (-1)         /* absent int64 id (correlation, context, model, task) */

/* Normalized device-event kinds (inputs.md section 9.1). */
typedef enum tl_kind {
  TL_KIND_COMPUTE = 0,
  TL_KIND_COMMUNICATION,
  TL_KIND_DATA_MOVE,
  TL_KIND_SYNC,
  TL_KIND_CONTROL,
  TL_KIND_GRAPH_LAUNCH,
  TL_KIND_OTHER,
  TL_KIND_COUNT
} tl_kind;

/* Profile families. The order is the auto-detection order of inputs.md section 1. */
typedef enum tl_family {
  TL_FAMILY_ASCEND_MONO = 0, /* msprof_*.db, ascend_pytorch_profiler_<rank>.db */
  TL_FAMILY_ASCEND_SPLIT,    /* PROF_x/{host,device_N}/sqlite/x.db */
  TL_FAMILY_NSYS,            /* nsys export --type sqlite */
  TL_FAMILY_HYGON,           /* hipprof / rocprof SQLite */
  TL_FAMILY_KINETO,          /* PyTorch profiler Chrome-trace JSON */
  TL_FAMILY_COUNT
} tl_family;

/* Host runtime call providers (inputs.md section 9.2). */
typedef enum tl_provider {
  TL_PROVIDER_UNKNOWN = 0,
  TL_PROVIDER_ASCEND,
  TL_PROVIDER_CUDA,
  TL_PROVIDER_HYGON
} tl_provider;

const char *tl_kind_name(tl_kind k);
const char *tl_family_source_kind(tl_family f);   /* "ascend_sqlite_hot_path", ... */
int tl_family_from_source_kind(const char *s);   /* -1 if unknown; "auto" is handled by callers */
const char *tl_provider_name(tl_provider p);     /* "ascend", "cuda", "hygon", "unknown" */
tl_provider tl_family_provider(tl_family f);

/* Normalizes a task-type key: upper-case, non-alphanumeric -> '_', runs collapsed, trimmed.
** Writes at most cap-1 bytes plus NUL into out; returns out. */
char *tl_task_type_key(const char *in, char *out, size_t cap);

#endif
