// Kernels of the vector-map test: each `T **` parameter receives one
// pointer per map entry (`op_arg_dat(d, -N, map, …)`) and is used as
// `x[i][j]`, with constant, loop-variable and computed indices.

// READ (two vector arguments, one declared `const double *u[1]` as OP2's
// airfoil_vector declares them), a direct WRITE, and INC.
// An index may call a macro or index another two-dimensional array, and a
// macro may index a vector parameter itself.
#define NEXT(m) (((m) + 1) % 4)
#define V(i) x[i][0]

inline void measure(const double **x, const double *u[1], double *area, double **r) {
  double a = 0.0;
  for (int m = 0; m < 4; m++)
    a += x[m][0] * x[(m + 1) % 4][1] - x[(m + 1) % 4][0] * x[m][1];
  int idx[2][2];
  idx[0][0] = 3;
  idx[0][1] = 1;
  idx[1][0] = 0;
  idx[1][1] = 2;
  double b = 0.0;
  for (int m = 0; m < 4; m++)
    b += x[NEXT(m)][0] * x[idx[m % 2][1]][1];
  double c = 0.0;
  for (int k = 0; k < 2; k++)
    c += V(k) * x[idx[k][1]][0] - V(NEXT(k + 1)) * V(idx[k][0]);
  *area = 0.5 * a + 0.001 * b + 0.0001 * c;
  for (int m = 0; m < 4; m++)
    r[m][0] += 0.25 * (*area) * u[m][0];
}

// WRITE: every component of both entries set.
inline void centre(double **w, const double **x) {
  for (int e = 0; e < 2; e++) {
    w[e][0] = 0.5 * (x[0][0] + x[1][0]);
    w[e][1] = x[e][1] - 0.5 * x[1 - e][0];
  }
}

// RW, with an early return that must still store what it changed, and
// `*u[i]` for `u[i][0]`.
inline void clip(double **u, const double *cap) {
  u[0][0] = u[0][0] * 0.5 + u[1][0];
  if (u[0][0] > *cap) {
    u[0][0] = *cap;
    return;
  }
  *u[1] -= 0.25 * *u[0];
}

// INC with an early return after the first increment, and entries (by a
// loop variable) added to twice per call: a large term and its negation,
// which leave the target's low bits rounded away when added to it in turn,
// as OP2's sequential build does, and nothing when summed from zero first.
inline void spread(double **r, const double *area) {
  r[0][0] += *area;
  if (*area < 1.45)
    return;
  r[1][0] += 2.0 * (*area);
  for (int e = 0; e < 2; e++) {
    r[e][0] += 1.0e6 * (*area);
    r[e][0] -= 1.0e6 * (*area);
  }
}

inline void total(const double *u, const double *r, const double *w, double *sums) {
  sums[0] += *u;
  sums[1] += *r;
  sums[2] += w[0] * w[1];
}
