// Globals that `main`'s set-up declares again: the kernel `heat` reads the
// global `gam` and the host function `grow` the global `scale`, while
// `main` has a `gam` and a `scale` of its own, which it prints and
// changes. In C each reads its own.
#include <cstdio>
#include <cstdlib>

#include "op_seq.h"

double gam = 1.25;
double scale = 3.0;
int steps = 3;

inline void heat(double *t) { *t = *t * gam + 1.0; }
inline void total(const double *t, double *s) { *s += *t; }
double grow(double v) { return v * scale; }

int main(int argc, char **argv) {
  op_init(argc, argv, 2);
  double gam = 0.5;
  double scale = 10.0;
  int n = 6;
  double *t = (double *)malloc(sizeof(double) * n);
  for (int i = 0; i < n; i++)
    t[i] = 0.25 * i - gam;
  op_set cells = op_decl_set(n, "cells");
  op_dat p_t = op_decl_dat(cells, 1, "double", t, "p_t");
  double sum = 0.0;
  for (int i = 0; i < steps; i++) {
    op_par_loop(heat, "heat", cells, op_arg_dat(p_t, -1, OP_ID, 1, "double", OP_RW));
    sum = 0.0;
    op_par_loop(total, "total", cells, op_arg_dat(p_t, -1, OP_ID, 1, "double", OP_READ),
                op_arg_gbl(&sum, 1, "double", OP_INC));
    double grown = grow(sum);
    printf("step %d sum %.17g grown %.17g main's gam %.17g scale %.17g\n", i, sum, grown, gam,
           scale);
    gam = gam * 2.0 + scale;
  }
  op_exit();
  return 0;
}
