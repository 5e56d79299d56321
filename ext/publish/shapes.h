/*
** shapes.h: interning of fixed-width keys, for publishing repeated text once.
**
** The large published relations (events, runtime calls, relations) store their per-row
** integers in a *_core table and their text columns, which take a few hundred distinct
** values across millions of rows, once per distinct combination in a *_shape table; a view
** joins the two back under the public name. A key is a few 64-bit words (string ids, enum
** codes, pointers to static strings) chosen by the caller; tl_shapes gives each distinct key
** a dense 1-based id in first-seen order, so ids are deterministic for a given input.
**
**   tl_shapes s;
**   tl_shapes_init(&s, 4);
**   int fresh;
**   int64_t id = tl_shapes_intern(&s, words, &fresh);   // fresh: insert the shape row now
**   tl_shapes_free(&s);
*/
#ifndef TL_SHAPES_H
#define TL_SHAPES_H

#include <stddef.h>
#include <stdint.h>

#include "util/i64map.h"

typedef struct tl_shapes {
  size_t width;    /* words per key */
  uint64_t *keys;  /* key of id k at keys[(k - 1) * width] */
  size_t n, cap;   /* ids handed out; capacity of keys in keys */
  tl_i64map by_hash; /* hash (probed on collision) -> id */
} tl_shapes;

void tl_shapes_init(tl_shapes *s, size_t width);
/* Returns the key's id (>= 1), setting *fresh when it was not seen before; -1 on OOM. */
int64_t tl_shapes_intern(tl_shapes *s, const uint64_t *key, int *fresh);
void tl_shapes_free(tl_shapes *s);

#endif
