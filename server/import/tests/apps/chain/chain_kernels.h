inline void edge_length(const double *x0, const double *x1, double *len) {
  *len = fabs(x1[0] - x0[0]);
}

inline void flux(const double *u0, const double *u1, const double *len,
                 double *f0, double *f1) {
  for (int k = 0; k < 2; k++) {
    // C names that `.op2` reserves: renamed `printf_`, `exit_`, `fetch_`.
    double printf = u1[k] - u0[k];
    double exit = *len + weights[k];
    double fetch = alpha * printf / exit;
    f0[k] += fetch;
    f1[k] -= fetch;
  }
}

inline void step(double *f, double *u, const double *dt, double *total,
                 double *lo, double *hi) {
  for (int k = 0; k < 2; k++) {
    u[k] += *dt * f[k] * weights[2];
    f[k] = 0.0;
  }
  *total += u[0] * u[0] + u[1] * u[1];
  if (u[0] < *lo)
    *lo = u[0];
  if (u[1] > *hi)
    *hi = u[1];
}
