// Kernels that call what op2 import inlines: a function-like macro of the
// application's, OP2's MAX, a function of one `return` (with an int argument
// converted to its float parameter) and std::min; and kernels that read or
// assign parameters bound to INC arguments, through a map and directly; and
// a local array of two dimensions; and C's `fabsf` and `fminf`.
#ifndef HELPERS_KERNELS_H
#define HELPERS_KERNELS_H

#define HALF_SQUARE(v) (0.5 * (v) * (v))
#define WEIGHT 3

#ifndef FUN_PREFIX
#define FUN_PREFIX
#endif

static inline FUN_PREFIX double blend(double a, float b) {
  return a > b ? a - b : b * WEIGHT;
}

inline void measure(const double *a, const double *b, const int *k, double *big,
                    int *small, double *sum) {
  *big = MAX(*big, blend(*a, *k) + HALF_SQUARE(*b));
  *small = std::min(*small, *k);
  *sum += blend(*b, *k);
}

inline void spread(const double *x, double *acc) {
  acc[0] = *x;
  acc[1] = HALF_SQUARE(acc[0]);
}

inline void grow(double *v, double *peak) {
  v[0] += 1.0;
  *peak = MAX(*peak, v[0] + v[1]);
}

inline void weigh(const double *x, const int *k, double *unused, double *w) {
  *w += *x * *k + fabsf(fminf((float)*x, 0.25f));
}

inline void collect(const double *acc, double *total) {
  double m[2][2];
  for (int r = 0; r < 2; r++)
    for (int c = 0; c < 2; c++)
      m[r][c] = acc[c] * (r + 1);
  float s = (float)acc[0];
  // std::sqrt of a float is a float, and so is ::sqrt's: OP2's headers
  // include <math.h>, which declares its float overload.
  *total += m[0][0] + m[0][1] + 0.5 * m[1][1] + std::sqrt(s * s + 1.0f) / 3 + sqrt(s * s);
}

#endif
