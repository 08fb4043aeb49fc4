// Kernels whose macros name other macros: function-like macros in another
// macro's body and in an object-like one's, a call of a macro in its own
// argument, a macro whose body calls C's `fabsf`, and a variadic macro.
#define SQR(x) ((x) * (x))
#define NORM2(a, b) (SQR(a) + SQR(b))
#define UNIT NORM2(0.6, 0.8)
#define ABS(x) fabsf(x)
#define PAIR_SUM(a, b) ((a) + (b))
#define SUM(first, ...) ((first) + PAIR_SUM(__VA_ARGS__))
#define TWICE(x) (2 * (x))

inline void shape(const double *x, const float *f, double *out) {
  out[0] = NORM2(x[0], x[1]) * UNIT;
  out[1] = ABS(*f - 1.5f);
  out[2] = SUM(x[0], x[1], *f);
  out[3] = TWICE(TWICE(x[1]));
}

inline void add(const double *out, double *sums) {
  for (int k = 0; k < 4; k++)
    sums[k] += out[k];
}
