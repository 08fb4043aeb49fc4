// Adds `x` to `z` and `w` where the global says the optional arguments are
// set, and touches neither where they are not.
inline void bump(const int *on, const double *x, double *z, double *w) {
  if (*on) {
    z[0] += x[0];
    w[0] += x[0];
  }
}
