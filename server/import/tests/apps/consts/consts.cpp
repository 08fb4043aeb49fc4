// The set-up declares its consts in functions of its own, as larger OP2
// codes do: `read_input` here calls `declare_more` of another unit, and
// `main` only calls `read_input`.
#include <cstdio>

#include "consts.h"
#include "op_seq.h"

double gam, cfl;
int order;

void read_input() {
  gam = 1.25;
  cfl = 0.5;
  op_decl_const(1, "double", &gam);
  declare_more();
}

int main(int argc, char **argv) {
  op_init(argc, argv, 2);
  double xs[5] = {1.0, -2.0, 0.5, 3.0, 0.25};
  op_set nodes = op_decl_set(5, "nodes");
  op_dat p_x = op_decl_dat(nodes, 1, "double", xs, "p_x");
  read_input();
  double total = 0.0;
  for (int i = 0; i < 3; i++) {
    op_par_loop(step, "step", nodes, op_arg_dat(p_x, -1, OP_ID, 1, "double", OP_RW),
                op_arg_gbl(&cfl, 1, "double", OP_READ));
    total = 0.0;
    op_par_loop(sum, "sum", nodes, op_arg_dat(p_x, -1, OP_ID, 1, "double", OP_READ),
                op_arg_gbl(&total, 1, "double", OP_INC));
    op_printf("iteration %d total %.17g\n", i, total);
  }
  op_exit();
  return 0;
}
