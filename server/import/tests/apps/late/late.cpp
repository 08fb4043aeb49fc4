// Declares a dat after its first par_loop, which the capture cannot see.
#include "op_seq.h"

inline void touch(double *x) { x[0] = 1.0; }

int main(int argc, char **argv) {
  op_init(argc, argv, 2);
  op_set nodes = op_decl_set(3, "nodes");
  op_dat p_x = op_decl_dat(nodes, 1, "double", (double *)0, "p_x");
  op_par_loop(touch, "touch", nodes, op_arg_dat(p_x, -1, OP_ID, 1, "double", OP_WRITE));
  op_dat p_y = op_decl_dat(nodes, 1, "double", (double *)0, "p_y");
  op_par_loop(touch, "touch", nodes, op_arg_dat(p_y, -1, OP_ID, 1, "double", OP_WRITE));
  op_exit();
}
