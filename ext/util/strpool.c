/*
** strpool.c: string interning (see strpool.h).
*/
#include "util/strpool.h"

#include <stdlib.h>
#include <string.h>

struct tl_strpool {
  char *bytes;       /* arena of NUL-terminated strings */
  size_t nbytes, capbytes;
  size_t *offset;    /* offset[id] into bytes */
  uint32_t *len;     /* len[id] */
  uint32_t count, capids;
  uint32_t *slots;   /* hash table of id+1 (0 = empty) */
  size_t nslots;     /* power of two */
};

static uint64_t fnv1a(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++) {
    h ^= (unsigned char)s[i];
    h *= 1099511628211ull;
  }
  return h;
}

tl_strpool *tl_strpool_new(void) {
  tl_strpool *p = calloc(1, sizeof *p);
  if (!p) return NULL;
  p->nslots = 1024;
  p->slots = calloc(p->nslots, sizeof *p->slots);
  if (!p->slots || tl_strpool_intern(p, "", 0) != 0) {
    tl_strpool_free(p);
    return NULL;
  }
  return p;
}

void tl_strpool_free(tl_strpool *p) {
  if (!p) return;
  free(p->bytes);
  free(p->offset);
  free(p->len);
  free(p->slots);
  free(p);
}

static int rehash(tl_strpool *p) {
  size_t nslots = p->nslots * 2;
  uint32_t *slots = calloc(nslots, sizeof *slots);
  if (!slots) return -1;
  for (uint32_t id = 0; id < p->count; id++) {
    size_t i = (size_t)fnv1a(p->bytes + p->offset[id], p->len[id]) & (nslots - 1);
    while (slots[i]) i = (i + 1) & (nslots - 1);
    slots[i] = id + 1;
  }
  free(p->slots);
  p->slots = slots;
  p->nslots = nslots;
  return 0;
}

uint32_t tl_strpool_find(const tl_strpool *p, const char *s, size_t n) {
  size_t i = (size_t)fnv1a(s, n) & (p->nslots - 1);
  while (p->slots[i]) {
    uint32_t id = p->slots[i] - 1;
    if (p->len[id] == n && memcmp(p->bytes + p->offset[id], s, n) == 0) return id;
    i = (i + 1) & (p->nslots - 1);
  }
  return TL_STR_NOMEM;
}

uint32_t tl_strpool_intern(tl_strpool *p, const char *s, size_t n) {
  if (n > UINT32_MAX - 1) return TL_STR_NOMEM;
  size_t i = (size_t)fnv1a(s, n) & (p->nslots - 1);
  while (p->slots[i]) {
    uint32_t id = p->slots[i] - 1;
    if (p->len[id] == n && memcmp(p->bytes + p->offset[id], s, n) == 0) return id;
    i = (i + 1) & (p->nslots - 1);
  }
  if (p->count == UINT32_MAX - 1) return TL_STR_NOMEM;
  if (p->count == p->capids) {
    uint32_t cap = p->capids ? p->capids * 2 : 256;
    size_t *off = realloc(p->offset, cap * sizeof *off);
    if (!off) return TL_STR_NOMEM;
    p->offset = off;
    uint32_t *len = realloc(p->len, cap * sizeof *len);
    if (!len) return TL_STR_NOMEM;
    p->len = len;
    p->capids = cap;
  }
  if (p->nbytes + n + 1 > p->capbytes) {
    size_t cap = p->capbytes ? p->capbytes : 4096;
    while (cap < p->nbytes + n + 1) cap *= 2;
    char *b = realloc(p->bytes, cap);
    if (!b) return TL_STR_NOMEM;
    p->bytes = b;
    p->capbytes = cap;
  }
  uint32_t id = p->count++;
  p->offset[id] = p->nbytes;
  p->len[id] = (uint32_t)n;
  if (n) memcpy(p->bytes + p->nbytes, s, n);
  p->bytes[p->nbytes + n] = 0;
  p->nbytes += n + 1;
  p->slots[i] = id + 1;
  if ((size_t)p->count * 2 > p->nslots && rehash(p) != 0) {
    /* The string is stored; only the table failed to grow. Keep the pool consistent. */
    p->count--;
    p->nbytes = p->offset[id];
    p->slots[i] = 0;
    return TL_STR_NOMEM;
  }
  return id;
}

uint32_t tl_strpool_intern_cstr(tl_strpool *p, const char *s) {
  return tl_strpool_intern(p, s ? s : "", s ? strlen(s) : 0);
}

const char *tl_strpool_str(const tl_strpool *p, uint32_t id) {
  return id < p->count ? p->bytes + p->offset[id] : "";
}

size_t tl_strpool_len(const tl_strpool *p, uint32_t id) {
  return id < p->count ? p->len[id] : 0;
}

uint32_t tl_strpool_count(const tl_strpool *p) { return p->count; }
