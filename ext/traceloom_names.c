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

const char *tl_provider_name(tl_provider p) {
  switch (p) {
    case TL_PROVIDER_ASCEND: return "ascend";
    case TL_PROVIDER_CUDA: return "cuda";
    case TL_PROVIDER_HYGON: return "hygon";
    default: return "unknown";
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
