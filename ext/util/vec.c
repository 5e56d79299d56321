/*
** vec.c: growth for TL_VEC arrays.
*/
#include "util/vec.h"

#include <stdint.h>

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
