// Kernels whose macros the preprocessor decides (see conditional_kernels.h);
// the test imports and builds it with `-D SCALE=3.0 -D FAST`.
#include <cstdio>

#include "op_seq.h"

#include "conditional_kernels.h"

int main(int argc, char **argv) {
  op_init(argc, argv, 2);
  const int n = 5;
  double xs[2 * n], outs[3 * n];
  for (int i = 0; i < n; i++) {
    xs[2 * i] = 0.7 * i - 1.0;
    xs[2 * i + 1] = 1.0 / (i + 3);
    for (int k = 0; k < 3; k++)
      outs[3 * i + k] = 0.0;
  }
  op_set nodes = op_decl_set(n, "nodes");
  op_dat p_x = op_decl_dat(nodes, 2, "double", xs, "p_x");
  op_dat p_out = op_decl_dat(nodes, 3, "double", outs, "p_out");
  op_par_loop(shift, "shift", nodes,
              op_arg_dat(p_x, -1, OP_ID, 2, "double", OP_READ),
              op_arg_dat(p_out, -1, OP_ID, 3, "double", OP_WRITE));
  double sums[3] = {0.0, 0.0, 0.0};
  op_par_loop(add, "add", nodes,
              op_arg_dat(p_out, -1, OP_ID, 3, "double", OP_READ),
              op_arg_gbl(sums, 3, "double", OP_INC));
  op_printf("scaled %.17g squared %.17g summed %.17g\n", sums[0], sums[1], sums[2]);
  op_printf("%d nodes, scale %.17g order %d\n", op_get_size(nodes), SCALE, ORDER);
  op_exit();
  return 0;
}
