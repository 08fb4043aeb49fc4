// A header of kernels included by two translation units whose macros give
// the kernel `scaled` two texts: this unit's par_loop runs its own (SCALE
// 2.0), the one of `rescale` in shared_other.cpp its own (SCALE 0.5).
#include <cstdio>

#include "op_seq.h"

#define SCALE 2.0
#include "shared.h"

op_set cells;
op_dat p_x;

int main(int argc, char **argv) {
  op_init(argc, argv, 2);
  double xs[4] = {1.0, -0.5, 2.25, 4.0};
  cells = op_decl_set(4, "cells");
  p_x = op_decl_dat(cells, 1, "double", xs, "p_x");
  double total = 0.0;
  for (int i = 0; i < 3; i++) {
    op_par_loop(scaled, "scaled", cells, op_arg_dat(p_x, -1, OP_ID, 1, "double", OP_RW));
    op_par_loop(shift, "shift", cells, op_arg_dat(p_x, -1, OP_ID, 1, "double", OP_RW));
    rescale();
    total = 0.0;
    op_par_loop(sum, "sum", cells, op_arg_dat(p_x, -1, OP_ID, 1, "double", OP_READ),
                op_arg_gbl(&total, 1, "double", OP_INC));
    op_printf("iteration %d total %.17g\n", i, total);
  }
  op_exit();
  return 0;
}
