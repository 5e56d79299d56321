/*
** traceloom_names.c: the text of the shared enums in traceloom.h.
*/
#include "traceloom.h"

#include <ctype.h>
#include <string.h>

const char *tl_kind_name(tl_kind k) {
  static const char *const names[TL_KIND_COUNT] = {
      "compute", "communication", "data_move", "sync", "control", "graph_launch", "other"};
  return (unsigned)k < TL_KIND_COUNT ? names[k] : "other";
}

static const char *const source_kinds[TL_FAMILY_COUNT] = {
    "ascend_sqlite_hot_path", "ascend_sqlite_split", "cuda_nsys_sqlite", "hygon_sqlite",
    "kineto_json"};

const char *tl_family_source_kind(tl_family f) {
  return (unsigned)f < TL_FAMILY_COUNT ? source_kinds[f] : "unknown";
}

int tl_family_from_source_kind(const char *s) {
  for (int i = 0; i < TL_FAMILY_COUNT; i++)
    if (strcmp(s, source_kinds[i]) == 0) return i;
  return -1;
}

const char *tl_provider_name(tl_provider p) {
  switch (p) {
    case TL_PROVIDER_ASCEND: return "ascend";
    case TL_PROVIDER_CUDA: return "cuda";
    case TL_PROVIDER_HYGON: return "hygon";
    default: return "unknown";
  }
}

tl_provider tl_family_provider(tl_family f) {
  switch (f) {
    case TL_FAMILY_ASCEND_MONO:
    case TL_FAMILY_ASCEND_SPLIT: return TL_PROVIDER_ASCEND;
    case TL_FAMILY_NSYS:
    case TL_FAMILY_KINETO: return TL_PROVIDER_CUDA;
    case TL_FAMILY_HYGON: return TL_PROVIDER_HYGON;
    default: return TL_PROVIDER_UNKNOWN;
  }
}

char *tl_task_type_key(const char *in, char *out, size_t cap) {
  size_t n = 0;
  int pending_sep = 0;
  if (cap == 0) return out;
  for (const unsigned char *p = (const unsigned char *)in; p && *p; p++) {
    if (isalnum(*p)) {
      if (pending_sep && n > 0 && n + 1 < cap) out[n++] = '_';
      pending_sep = 0;
      if (n + 1 < cap) out[n++] = (char)toupper(*p);
    } else {
      pending_sep = 1;
    }
  }
  out[n] = 0;
  return out;
}
