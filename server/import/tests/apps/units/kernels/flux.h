#ifndef UNITS_KERNELS_FLUX_H
#define UNITS_KERNELS_FLUX_H
// `common.h` is next to the main file, not here: found as the compiler
// finds it, on the main file's directory.
#include "common.h"

inline void flux(const double *a, const double *b, double *fa, double *fb) {
  double f = HALF * (*b - *a);
  *fa += f;
  *fb -= f;
}
#endif
