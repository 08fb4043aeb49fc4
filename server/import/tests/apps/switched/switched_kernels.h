// Kernels whose optional arguments the time loop switches on and off; each
// is told by a global argument whether it has them.
inline void relax(const int *use_src, const int *use_out, const double *x, const double *src,
                  double *out, double *acc) {
  double v = 0.5 * x[0];
  if (*use_src)
    v += src[0];
  if (*use_out)
    out[0] = v;
  *acc += v;
}

inline void gather(const int *use, const double *x, double *sum) {
  if (*use)
    sum[0] += x[0];
}

// Stores its ratio where OP2's `int` of it is not 0 (from 1.0 on).
inline void mark(const double *ratio, double *y) {
  if ((int)*ratio != 0)
    y[0] = *ratio;
}
