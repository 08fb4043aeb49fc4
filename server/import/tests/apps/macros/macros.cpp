// Macros that name other macros, in kernels (see macros_kernels.h), and a
// local array of the host code that a par_loop takes.
#include <cmath>
#include <cstdio>

#include "op_seq.h"

#include "macros_kernels.h"

int main(int argc, char **argv) {
  op_init(argc, argv, 2);
  const int n = 7;
  double xs[2 * n], outs[4 * n];
  float fs[n];
  for (int i = 0; i < n; i++) {
    xs[2 * i] = 0.3 * i - 1.0;
    xs[2 * i + 1] = 1.0 / (i + 2);
    fs[i] = 0.4f * i;
    for (int k = 0; k < 4; k++)
      outs[4 * i + k] = 0.0;
  }
  op_set nodes = op_decl_set(n, "nodes");
  op_dat p_x = op_decl_dat(nodes, 2, "double", xs, "p_x");
  op_dat p_f = op_decl_dat(nodes, 1, "float", fs, "p_f");
  op_dat p_out = op_decl_dat(nodes, 4, "double", outs, "p_out");
  for (int round = 1; round <= 2; round++) {
    op_par_loop(shape, "shape", nodes,
                op_arg_dat(p_x, -1, OP_ID, 2, "double", OP_READ),
                op_arg_dat(p_f, -1, OP_ID, 1, "float", OP_READ),
                op_arg_dat(p_out, -1, OP_ID, 4, "double", OP_WRITE));
    // A local array of the host code that a par_loop takes, declared anew
    // each round with two of its values given and the rest zero.
    double sums[4] = {0.0, 0.0};
    op_par_loop(add, "add", nodes,
                op_arg_dat(p_out, -1, OP_ID, 4, "double", OP_READ),
                op_arg_gbl(sums, 4, "double", OP_INC));
    op_printf("round %d, %d nodes: norms %.17g abs %.17g\n", round, op_get_size(nodes),
              sums[0], sums[1]);
    op_printf("sum %.17g twice %.17g difference %.17g\n", sums[2], sums[3], sums[2] - sums[3]);
  }
  op_exit();
  return 0;
}
