// Kernels whose optional arguments are there only where a flag of
// options.dat says so; each tests the flag before it touches them.
inline void smooth(const double *a, const double *b, const double *mu_a, const double *mu_b,
                   double *grad, double *res) {
  double f = b[0] - a[0];
  if (visc != 0)
    f *= 0.5 * (mu_a[0] + mu_b[0]);
  if (order > 1)
    grad[0] = f * 0.5;
  res[0] += f;
}

inline void clip(double *x, const double *res, double *cap, double *total) {
  x[0] += 0.1 * res[0];
  if (limit > 0.5)
    cap[0] = x[0] > 1.0 ? 1.0 : x[0];
  *total += x[0];
}

inline void tally(const double *grad, double *sum) { *sum += grad[0]; }
