/*
** strpool.h: string interning.
**
** Every string of an analysis is stored once and named by a dense uint32 id, assigned in
** first-intern order (so ids are deterministic for a deterministic reader order). Id 0 is
** always the empty string, which every SQL surface reports as NULL ("absent").
**
** Layout: one growing byte arena of NUL-terminated strings, an offset per id, and an
** open-addressing hash table (linear probing; each slot keeps its string's hash) from string
** to id.
*/
#ifndef TL_STRPOOL_H
#define TL_STRPOOL_H

#include <stddef.h>
#include <stdint.h>

#define TL_STR_NONE 0u            /* the empty string: "absent" */
#define TL_STR_NOMEM UINT32_MAX   /* returned by intern on out-of-memory */

typedef struct tl_strpool tl_strpool;

tl_strpool *tl_strpool_new(void);
void tl_strpool_free(tl_strpool *p);
/* Interns n bytes of s (need not be NUL-terminated). Returns the id or TL_STR_NOMEM. */
uint32_t tl_strpool_intern(tl_strpool *p, const char *s, size_t n);
uint32_t tl_strpool_intern_cstr(tl_strpool *p, const char *s);
/* Makes room for nstr more strings of nbytes bytes in all (NULs aside) before they are
** interned: the arrays and the hash table are sized once instead of doubling as they fill
** (each doubling copies them into fresh memory). A hint: the ids never depend on it.
** 0, or -1 on out-of-memory (the pool unchanged). */
int tl_strpool_reserve(tl_strpool *p, size_t nstr, size_t nbytes);
/* Looks up without inserting; returns TL_STR_NOMEM when absent. */
uint32_t tl_strpool_find(const tl_strpool *p, const char *s, size_t n);
const char *tl_strpool_str(const tl_strpool *p, uint32_t id);
size_t tl_strpool_len(const tl_strpool *p, uint32_t id);
uint32_t tl_strpool_count(const tl_strpool *p);
/* Interns every string of from into into, in from's id order (the order a single reader
** would have interned them after into's), and returns the malloc'd map from's id -> into's
** id (tl_strpool_count(from) entries); NULL on out-of-memory. A second thread reads with a
** pool of its own and the calling thread merges it after the join: the ids are those of one
** thread reading in turn. */
uint32_t *tl_strpool_merge(tl_strpool *into, const tl_strpool *from);

#endif
