#include <cstdio>

#include "op_seq.h"

#define SCALE 2.0
#include "odr.h"

op_set cells;
op_dat p_x;

int main(int argc, char **argv) {
  op_init(argc, argv, 2);
  double xs[2] = {1.0, -0.5};
  cells = op_decl_set(2, "cells");
  p_x = op_decl_dat(cells, 1, "double", xs, "p_x");
  op_par_loop(scaled, "scaled", cells, op_arg_dat(p_x, -1, OP_ID, 1, "double", OP_RW));
  rescale();
  op_exit();
  return 0;
}
