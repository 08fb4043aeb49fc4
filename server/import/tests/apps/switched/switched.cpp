// A ring whose time loop switches optional arguments: one on every other
// iteration (a flag the loop assigns, which changes nothing of how the
// argument is passed), one from a counter's expression, and one that the
// loop assigns, shared by two arguments through maps, and a `double` one.
#include <cstdio>

#include "op_seq.h"

#include "switched_kernels.h"

int main(int argc, char **argv) {
  op_init(argc, argv, 2);
  const int n = 5;
  double xs[n], srcs[n], outs[n], ys[n];
  int ring[2 * n], next[n];
  for (int i = 0; i < n; i++) {
    xs[i] = 1.5 - 0.75 * i;
    srcs[i] = 0.25 * i * i;
    outs[i] = -1.0;
    ys[i] = 0.0;
    ring[2 * i] = i;
    ring[2 * i + 1] = (i + 2) % n;
    next[i] = (i + 1) % n;
  }
  op_set nodes = op_decl_set(n, "nodes");
  op_set edges = op_decl_set(n, "edges");
  op_map pedge = op_decl_map(edges, nodes, 2, ring, "pedge");
  op_map pnext = op_decl_map(nodes, nodes, 1, next, "pnext");
  op_dat p_x = op_decl_dat(nodes, 1, "double", xs, "p_x");
  op_dat p_src = op_decl_dat(nodes, 1, "double", srcs, "p_src");
  op_dat p_out = op_decl_dat(nodes, 1, "double", outs, "p_out");
  op_dat p_y = op_decl_dat(nodes, 1, "double", ys, "p_y");
  int use_src = 0;
  int use_out = 1;
  for (int it = 0; it < 6; it++) {
    double acc = 0.0;
    double sum = 0.0;
    use_src = !use_src;
    int every_third = it % 3 == 0;
    op_par_loop(relax, "relax", nodes,
                op_arg_gbl(&use_src, 1, "int", OP_READ),
                op_arg_gbl(&every_third, 1, "int", OP_READ),
                op_arg_dat(p_x, -1, OP_ID, 1, "double", OP_READ),
                op_opt_arg_dat(use_src, p_src, -1, OP_ID, 1, "double", OP_READ),
                op_opt_arg_dat(it % 3 == 0, p_out, -1, OP_ID, 1, "double", OP_WRITE),
                op_arg_gbl(&acc, 1, "double", OP_INC));
    op_par_loop(gather, "gather", edges,
                op_arg_gbl(&use_out, 1, "int", OP_READ),
                op_opt_arg_dat(use_out, p_out, 1, pedge, 1, "double", OP_READ),
                op_opt_arg_dat(use_out, p_y, 0, pedge, 1, "double", OP_INC));
    op_par_loop(gather, "gather", nodes,
                op_arg_gbl(&use_out, 1, "int", OP_READ),
                op_opt_arg_dat(use_out, p_out, 0, pnext, 1, "double", OP_READ),
                op_opt_arg_dat(use_out, p_y, 0, pnext, 1, "double", OP_INC));
    op_par_loop(gather, "gather", nodes,
                op_arg_gbl(&use_src, 1, "int", OP_READ),
                op_arg_dat(p_out, -1, OP_ID, 1, "double", OP_READ),
                op_arg_gbl(&sum, 1, "double", OP_INC));
    // A `double` flag: OP2 takes its `int`, so 0.5 is not set.
    double ratio = 0.25 * it;
    op_par_loop(mark, "mark", nodes,
                op_arg_gbl(&ratio, 1, "double", OP_READ),
                op_opt_arg_dat(ratio, p_y, -1, OP_ID, 1, "double", OP_WRITE));
    use_out = it < 3;
    printf("%d acc %.17g sum %.17g\n", it, acc, sum);
  }
  op_fetch_data(p_y, ys);
  for (int i = 0; i < n; i++)
    printf("y %d %.17g\n", i, ys[i]);
  op_exit();
  return 0;
}
