/*
** traceloom.h: types shared by every stage of the analysis.
**
** Data flows one way: source (read + normalize) -> trace (arrays) -> later stages
** (classify, replay, recover, cost) -> publish. This header holds only the small
** vocabulary all of them use: versions, event kinds, providers. The profile families are
** the registry of ext/source (source.h, families.c).
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

/* Host runtime call providers (inputs.md section 9.2). */
typedef enum tl_provider {
  TL_PROVIDER_UNKNOWN = 0,
  TL_PROVIDER_ASCEND,
  TL_PROVIDER_CUDA,
  TL_PROVIDER_HYGON
} tl_provider;

const char *tl_kind_name(tl_kind k);
const char *tl_provider_name(tl_provider p);     /* "ascend", "cuda", "hygon", "unknown" */

/* Normalizes a task-type key: upper-case, non-alphanumeric -> '_', runs collapsed, trimmed.
** Writes at most cap-1 bytes plus NUL into out; returns out. */
char *tl_task_type_key(const char *in, char *out, size_t cap);

#endif
