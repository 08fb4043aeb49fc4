// Host code that reads dats after op_fetch_data and op_fetch_data_idx, and a
// check function with loops and early returns, as OP2's jac apps end.
#include <math.h>
#include <stdlib.h>

#include "op_seq.h"

#define STRIDE 2
#include "check.h"

inline void step(const double *w, double *x) {
  x[0] += w[0];
  x[1] -= w[0];
}

inline void scale(double *w) { w[0] *= 2.0; }

op_set cells;
op_dat p_x, p_w;

// A host function that runs a par_loop, inlined where `main` calls it.
void advance(int steps) {
  for (int s = 0; s < steps; s++)
    op_par_loop(step, "step", cells,
                op_arg_dat(p_w, -1, OP_ID, 1, "double", OP_READ),
                op_arg_dat(p_x, -1, OP_ID, 2, "double", OP_RW));
}

int main(int argc, char **argv) {
  op_init(argc, argv, 2);
  const int n = 6;
  double *x = (double *)malloc(2 * n * sizeof(double));
  double *w = (double *)malloc(n * sizeof(double));
  for (int i = 0; i < n; i++) {
    x[2 * i] = 0.25 * i + 0.5;
    x[2 * i + 1] = -0.125 * i;
    w[i] = 0.25 * i + 0.25;
  }
  cells = op_decl_set(n, "cells");
  p_x = op_decl_dat(cells, 2, "double", x, "p_x");
  p_w = op_decl_dat(cells, 1, "double", w, "p_w");
  op_par_loop(step, "step", cells,
              op_arg_dat(p_w, -1, OP_ID, 1, "double", OP_READ),
              op_arg_dat(p_x, -1, OP_ID, 2, "double", OP_RW));
  advance(1);
  op_fetch_data(p_x, x);
  op_par_loop(scale, "scale", cells, op_arg_dat(p_w, -1, OP_ID, 1, "double", OP_RW));
  op_fetch_data_idx(p_w, w, 0, op_get_size(cells) - 1);
  for (int i = 0; i < n; i++)
    op_printf("%d: %.17g %.17g (weight %g)\n", i, x[2 * i], x[2 * i + 1], w[i]);
  int result = check<double>(x, n, 1e-12);
  op_exit();
  free(x);
  free(w);
  return result;
}
