// Host code whose blocks declare names that mean another variable
// outside them: C scopes `main`'s names per block.
#include <cstdio>
#include <cstdlib>

#include "op_seq.h"

double s = 7.0;

inline void step(double *x, const double *dt) { *x += *dt; }
inline void total(const double *x, double *sum) { *sum += *x; }

int main(int argc, char **argv) {
  op_init(argc, argv, 2);
  double dt = 0.25;
  int n = 4;
  double *x = (double *)malloc(sizeof(double) * n);
  for (int i = 0; i < n; i++)
    x[i] = 1.5 * i;
  op_set cells = op_decl_set(n, "cells");
  op_dat p_x = op_decl_dat(cells, 1, "double", x, "p_x");
  for (int i = 0; i < 3; i++) {
    op_par_loop(step, "step", cells, op_arg_dat(p_x, -1, OP_ID, 1, "double", OP_RW),
                op_arg_gbl(&dt, 1, "double", OP_READ));
    {
      // Not the set-up's `dt`.
      double dt = 100.0 + i;
      printf("inner dt %.17g\n", dt);
    }
    {
      // Not the global `s`: a par_loop takes it.
      double s = 0.0;
      op_par_loop(total, "total", cells, op_arg_dat(p_x, -1, OP_ID, 1, "double", OP_READ),
                  op_arg_gbl(&s, 1, "double", OP_INC));
      printf("block sum %.17g\n", s);
    }
    {
      double w = 2.0 * i;
      printf("w %.17g\n", w);
    }
    {
      double w = 3.0 * i;
      printf("w %.17g\n", w);
    }
    printf("outer dt %.17g s %.17g\n", dt, s);
    dt = dt * 2.0;
    s = s + 1.0;
  }
  op_exit();
  return 0;
}
