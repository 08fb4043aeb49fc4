// `SCALE` defined differently for each kernel: `grow` (2.0, in tables.h) and
// `lift` (3.0, in tables_b.h, which redefines it) here, and `shrink` (0.5) in
// the other translation unit, tables_other.cpp.
#include <cstdio>

#include "op_seq.h"
#include "tables.h"
#include "tables_b.h"

// tables_other.cpp
void shrink(double *x);

int main(int argc, char **argv) {
  op_init(argc, argv, 2);
  double xs[4] = {1.0, -0.5, 2.25, 4.0};
  op_set cells = op_decl_set(4, "cells");
  op_dat p_x = op_decl_dat(cells, 1, "double", xs, "p_x");
  double total = 0.0;
  for (int i = 0; i < 3; i++) {
    op_par_loop(grow, "grow", cells, op_arg_dat(p_x, -1, OP_ID, 1, "double", OP_RW));
    op_par_loop(shrink, "shrink", cells, op_arg_dat(p_x, -1, OP_ID, 1, "double", OP_RW));
    op_par_loop(lift, "lift", cells, op_arg_dat(p_x, -1, OP_ID, 1, "double", OP_RW));
    total = 0.0;
    op_par_loop(sum, "sum", cells, op_arg_dat(p_x, -1, OP_ID, 1, "double", OP_READ),
                op_arg_gbl(&total, 1, "double", OP_INC));
    op_printf("iteration %d total %.17g\n", i, total);
  }
  op_exit();
  return 0;
}
