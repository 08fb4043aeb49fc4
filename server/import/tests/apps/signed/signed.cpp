// Dats holding `-0.0` that optional INC arguments not set must leave as they
// are: OP2 hands the kernel the dat, which does not touch it, so OP2 keeps
// the sign where adding the kernel's zero would not. The flags are known at
// import (0) and decided by `main` (from the time loop's counter); `p_z` is
// passed directly and `p_w` through a map of the par_loop's own set.
#include <cstdio>

#include "op_seq.h"

#include "signed_kernels.h"

int main(int argc, char **argv) {
  op_init(argc, argv, 2);
  const int n = 4;
  double xs[n], zs[n], ws[n];
  int next[n];
  for (int i = 0; i < n; i++) {
    xs[i] = 0.5 + i;
    zs[i] = i % 2 == 0 ? -0.0 : 1.0 * i;
    ws[i] = i % 2 == 0 ? 1.0 * i : -0.0;
    next[i] = (i + 1) % n;
  }
  op_set nodes = op_decl_set(n, "nodes");
  op_map pnext = op_decl_map(nodes, nodes, 1, next, "pnext");
  op_dat p_x = op_decl_dat(nodes, 1, "double", xs, "p_x");
  op_dat p_z = op_decl_dat(nodes, 1, "double", zs, "p_z");
  op_dat p_w = op_decl_dat(nodes, 1, "double", ws, "p_w");
  int off = 0;
  op_par_loop(bump, "bump", nodes,
              op_arg_gbl(&off, 1, "int", OP_READ),
              op_arg_dat(p_x, -1, OP_ID, 1, "double", OP_READ),
              op_opt_arg_dat(0, p_z, -1, OP_ID, 1, "double", OP_INC),
              op_opt_arg_dat(0, p_w, 0, pnext, 1, "double", OP_INC));
  op_fetch_data(p_z, zs);
  op_fetch_data(p_w, ws);
  for (int i = 0; i < n; i++)
    printf("known %d z %.17g w %.17g\n", i, zs[i], ws[i]);
  for (int it = 0; it < 3; it++) {
    int flag = it == 2;
    op_par_loop(bump, "bump", nodes,
                op_arg_gbl(&flag, 1, "int", OP_READ),
                op_arg_dat(p_x, -1, OP_ID, 1, "double", OP_READ),
                op_opt_arg_dat(flag, p_z, -1, OP_ID, 1, "double", OP_INC),
                op_opt_arg_dat(flag, p_w, 0, pnext, 1, "double", OP_INC));
    op_fetch_data(p_z, zs);
    op_fetch_data(p_w, ws);
    for (int i = 0; i < n; i++)
      printf("%d %d z %.17g w %.17g\n", it, i, zs[i], ws[i]);
  }
  op_exit();
  return 0;
}
