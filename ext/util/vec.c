/*
** vec.c: growth for TL_VEC arrays.
*/
#include "util/vec.h"

#include <stdint.h>
#ifdef __linux__
#include <sys/mman.h>
#include <unistd.h>
#endif

int tl_vec_reserve_(void **v, size_t *cap, size_t need, size_t elem) {
  if (need <= *cap) return 0;
  size_t ncap = *cap ? *cap : 16;
  while (ncap < need) {
    if (ncap > SIZE_MAX / 2) return -1;
    ncap *= 2;
  }
  if (elem && ncap > SIZE_MAX / elem) return -1;
  void *nv = realloc(*v, ncap * elem);
  if (!nv) return -1;
  *v = nv;
  *cap = ncap;
  return 0;
}

void tl_vec_prefault_(void *v, size_t cap, size_t n, size_t need, size_t elem) {
#if defined(__linux__) && defined(MADV_POPULATE_WRITE)
  if (need > cap) need = cap;
  if (!v || need <= n || (need - n) * elem < ((size_t)1 << 20)) return; /* small: not worth it */
  long page = sysconf(_SC_PAGESIZE);
  if (page <= 0) return;
  uintptr_t lo = (uintptr_t)v + n * elem, hi = (uintptr_t)v + need * elem;
  lo = (lo + (uintptr_t)page - 1) & ~((uintptr_t)page - 1); /* whole pages inside the range */
  hi &= ~((uintptr_t)page - 1);
  if (hi > lo) (void)madvise((void *)lo, hi - lo, MADV_POPULATE_WRITE);
#else
  (void)v, (void)cap, (void)n, (void)need, (void)elem;
#endif
}
