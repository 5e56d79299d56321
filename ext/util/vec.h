/*
** vec.h: growable arrays of plain C values.
**
**   TL_VEC(int64_t) xs = {0};
**   if (TL_VEC_PUSH(&xs, 42)) return tl_nomem(e);
**   ... xs.v[i] for i < xs.n ...
**   TL_VEC_FREE(&xs);
**
** Growth doubles capacity, so n pushes cost O(n) amortized.
*/
#ifndef TL_VEC_H
#define TL_VEC_H

#include <stddef.h>
#include <stdlib.h>

#define TL_VEC(T) struct { T *v; size_t n, cap; }

/* Ensures capacity for `need` elements of size `elem`. Returns 0, or -1 on out-of-memory. */
int tl_vec_reserve_(void **v, size_t *cap, size_t need, size_t elem);

#define TL_VEC_RESERVE(vec, need) \
  tl_vec_reserve_((void **)&(vec)->v, &(vec)->cap, (need), sizeof(*(vec)->v))
/* Appends x; evaluates to 0 on success, -1 on out-of-memory. */
#define TL_VEC_PUSH(vec, x) \
  (((vec)->n < (vec)->cap || TL_VEC_RESERVE((vec), (vec)->n + 1) == 0) \
       ? ((vec)->v[(vec)->n++] = (x), 0) : -1)
/* Maps the pages of elements [n, need) of vec's capacity in one system call, before they
** are first written one by one (each first write to a fresh page of a large array otherwise
** traps into the kernel for it: on the Perfetto export's arrays of hundreds of MB that trap,
** not the page's clearing, was most of the page faults' CPU). Only for what will be filled:
** a mapped page stays resident. A hint: nothing when the system cannot. */
void tl_vec_prefault_(void *v, size_t cap, size_t n, size_t need, size_t elem);
#define TL_VEC_PREFAULT(vec, need) \
  tl_vec_prefault_((vec)->v, (vec)->cap, (vec)->n, (need), sizeof(*(vec)->v))
#define TL_VEC_FREE(vec) (free((vec)->v), (vec)->v = NULL, (vec)->n = (vec)->cap = 0)

#endif
