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
  /* Hash table: per slot the string's 32-bit hash above its id + 1 (0 = empty). A probe
  ** compares the hash before it touches the string, and growing the table moves the slots
  ** without hashing a string again. */
  uint64_t *slots;
  size_t nslots;     /* power of two */
};

/* The hash of n bytes: eight at a time (the ids never depend on it, only the probing). */
static uint32_t str_hash(const char *s, size_t n) {
  uint64_t h = 0x9e3779b97f4a7c15ull ^ (uint64_t)n;
  for (; n >= 8; s += 8, n -= 8) {
    uint64_t w;
    memcpy(&w, s, 8);
    h = (h ^ w) * 0xbf58476d1ce4e5b9ull;
    h ^= h >> 31;
  }
  uint64_t w = 0;
  memcpy(&w, s, n);
  h = (h ^ w) * 0x94d049bb133111ebull;
  h ^= h >> 32;
  h *= 0xbf58476d1ce4e5b9ull;
  return (uint32_t)(h >> 32);
}

#define SLOT(hash, id) ((uint64_t)(hash) << 32 | ((uint64_t)(id) + 1))
#define SLOT_ID(v) ((uint32_t)(v) - 1)
#define SLOT_HASH(v) ((uint32_t)((v) >> 32))

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

/* Moves the slots into a table of nslots (a power of two, more than twice the count). */
static int rehash_to(tl_strpool *p, size_t nslots) {
  uint64_t *slots = calloc(nslots, sizeof *slots);
  if (!slots) return -1;
  for (size_t k = 0; k < p->nslots; k++) {
    uint64_t v = p->slots[k];
    if (!v) continue;
    size_t i = (size_t)SLOT_HASH(v) & (nslots - 1);
    while (slots[i]) i = (i + 1) & (nslots - 1);
    slots[i] = v;
  }
  free(p->slots);
  p->slots = slots;
  p->nslots = nslots;
  return 0;
}

static int rehash(tl_strpool *p) { return rehash_to(p, p->nslots * 2); }

int tl_strpool_reserve(tl_strpool *p, size_t nstr, size_t nbytes) {
  if (nstr > UINT32_MAX - 1 - (size_t)p->count) return -1;
  size_t ids = (size_t)p->count + nstr, bytes = p->nbytes + nbytes + nstr;
  if (ids > p->capids) {
    size_t *off = realloc(p->offset, ids * sizeof *off);
    if (!off) return -1;
    p->offset = off;
    uint32_t *len = realloc(p->len, ids * sizeof *len);
    if (!len) return -1;
    p->len = len;
    p->capids = (uint32_t)ids;
  }
  if (bytes > p->capbytes) {
    char *b = realloc(p->bytes, bytes);
    if (!b) return -1;
    p->bytes = b;
    p->capbytes = bytes;
  }
  size_t nslots = p->nslots;
  while (ids * 2 > nslots) nslots *= 2;
  return nslots > p->nslots ? rehash_to(p, nslots) : 0;
}

/* The slot of s: where it is, or the empty slot where it would go. */
static size_t find_slot(const tl_strpool *p, const char *s, size_t n, uint32_t h) {
  size_t i = (size_t)h & (p->nslots - 1);
  for (uint64_t v; (v = p->slots[i]); i = (i + 1) & (p->nslots - 1)) {
    uint32_t id = SLOT_ID(v);
    if (SLOT_HASH(v) == h && p->len[id] == n && memcmp(p->bytes + p->offset[id], s, n) == 0)
      break;
  }
  return i;
}

uint32_t tl_strpool_find(const tl_strpool *p, const char *s, size_t n) {
  uint64_t v = p->slots[find_slot(p, s, n, str_hash(s, n))];
  return v ? SLOT_ID(v) : TL_STR_NOMEM;
}

uint32_t tl_strpool_intern(tl_strpool *p, const char *s, size_t n) {
  if (n > UINT32_MAX - 1) return TL_STR_NOMEM;
  uint32_t h = str_hash(s, n);
  size_t i = find_slot(p, s, n, h);
  if (p->slots[i]) return SLOT_ID(p->slots[i]);
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
  p->slots[i] = SLOT(h, id);
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

uint32_t *tl_strpool_merge(tl_strpool *into, const tl_strpool *from) {
  uint32_t n = from->count;
  uint32_t *map = malloc((n ? n : 1) * sizeof *map);
  for (uint32_t i = 0; map && i < n; i++) {
    map[i] = tl_strpool_intern(into, tl_strpool_str(from, i), tl_strpool_len(from, i));
    if (map[i] == TL_STR_NOMEM) free(map), map = NULL;
  }
  return map;
}
