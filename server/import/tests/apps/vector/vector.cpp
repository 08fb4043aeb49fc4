// Vector-map arguments (a negative map index): READ, WRITE, RW and INC,
// indices that are constants, loop variables and expressions, early
// returns, a kernel run by two par_loops, and an index and a dimension
// `#define`d.
#include <cstdio>

#include "op_seq.h"

#include "vector_kernels.h"

#define PAIR -2
#define XY 2

int main(int argc, char **argv) {
  op_init(argc, argv, 2);
  // A 3 x 2 grid of quads over 4 x 3 nodes, and a pairing of the nodes.
  const int nnode = 12, ncell = 6, npair = 6;
  double xs[2 * nnode], us[nnode], rs[nnode], ws[2 * nnode], areas[ncell] = {0.0};
  int quad[4 * ncell], pair[2 * npair];
  for (int n = 0; n < nnode; n++) {
    xs[2 * n] = (n % 4) + 0.125 * (n / 4) * (n % 3);
    xs[2 * n + 1] = (n / 4) * 1.5 - 0.0625 * (n % 4) * (n % 4);
    us[n] = 1.0 / (n + 1);
    rs[n] = 0.0;
    ws[2 * n] = ws[2 * n + 1] = 0.0;
  }
  for (int c = 0; c < ncell; c++) {
    int i = c % 3, j = c / 3, base = 4 * j + i;
    quad[4 * c] = base;
    quad[4 * c + 1] = base + 1;
    quad[4 * c + 2] = base + 5;
    quad[4 * c + 3] = base + 4;
  }
  // Each node in exactly one pair, in a shuffled order.
  for (int p = 0; p < npair; p++) {
    pair[2 * p] = (5 * p + 3) % nnode;
    pair[2 * p + 1] = (5 * p + 9) % nnode;
  }
  op_set nodes = op_decl_set(nnode, "nodes");
  op_set cells = op_decl_set(ncell, "cells");
  op_set pairs = op_decl_set(npair, "pairs");
  op_map pcell = op_decl_map(cells, nodes, 4, quad, "pcell");
  op_map ppair = op_decl_map(pairs, nodes, 2, pair, "ppair");
  op_dat p_x = op_decl_dat(nodes, 2, "double", xs, "p_x");
  op_dat p_u = op_decl_dat(nodes, 1, "double", us, "p_u");
  op_dat p_r = op_decl_dat(nodes, 1, "double", rs, "p_r");
  op_dat p_w = op_decl_dat(nodes, 2, "double", ws, "p_w");
  op_dat p_area = op_decl_dat(cells, 1, "double", areas, "p_area");
  double cap = 0.75;
  double sums[3];
  for (int step = 1; step <= 3; step++) {
    op_par_loop(measure, "measure", cells,
                op_arg_dat(p_x, -4, pcell, XY, "double", OP_READ),
                op_arg_dat(p_u, -4, pcell, 1, "double", OP_READ),
                op_arg_dat(p_area, -1, OP_ID, 1, "double", OP_WRITE),
                op_arg_dat(p_r, -4, pcell, 1, "double", OP_INC));
    op_par_loop(centre, "centre", pairs,
                op_arg_dat(p_w, PAIR, ppair, 2, "double", OP_WRITE),
                op_arg_dat(p_x, -2, ppair, 2, "double", OP_READ));
    op_par_loop(clip, "clip", pairs,
                op_arg_dat(p_u, -2, ppair, 1, "double", OP_RW),
                op_arg_gbl(&cap, 1, "double", OP_READ));
    op_par_loop(spread, "spread", cells,
                op_arg_dat(p_r, -2, pcell, 1, "double", OP_INC),
                op_arg_dat(p_area, -1, OP_ID, 1, "double", OP_READ));
    op_par_loop(clip, "clip", pairs,
                op_arg_dat(p_u, -2, ppair, 1, "double", OP_RW),
                op_arg_gbl(&cap, 1, "double", OP_READ));
    for (int k = 0; k < 3; k++)
      sums[k] = 0.0;
    op_par_loop(total, "total", nodes,
                op_arg_dat(p_u, -1, OP_ID, 1, "double", OP_READ),
                op_arg_dat(p_r, -1, OP_ID, 1, "double", OP_READ),
                op_arg_dat(p_w, -1, OP_ID, 2, "double", OP_READ),
                op_arg_gbl(sums, 3, "double", OP_INC));
    op_printf("step %d: u %.17g r %.17g w %.17g\n", step, sums[0], sums[1], sums[2]);
    cap = cap * 0.5;
  }
  op_exit();
  return 0;
}
