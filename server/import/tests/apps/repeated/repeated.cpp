// A kernel that adds to one float INC argument several times per call:
// OP2's sequential build hands it a pointer into the dat and into `rms`,
// so every addition rounds into the target in turn, and `op2 run` must
// print the same bits.
#include <cstdio>

#include "op_seq.h"

#include "repeated_kernels.h"

int main(int argc, char **argv) {
  op_init(argc, argv, 2);
  const int ncell = 50, nnode = 7;
  float xs[ncell], acc[2 * nnode];
  int cell_node[ncell];
  for (int i = 0; i < ncell; i++) {
    xs[i] = 0.1f + 0.377f * i - 0.0131f * ((i * i) % 7);
    cell_node[i] = (5 * i + 1) % nnode;
  }
  for (int k = 0; k < 2 * nnode; k++)
    acc[k] = 1000.25f - 333.3f * k;
  op_set cells = op_decl_set(ncell, "cells");
  op_set nodes = op_decl_set(nnode, "nodes");
  op_map pnode = op_decl_map(cells, nodes, 1, cell_node, "pnode");
  op_dat p_x = op_decl_dat(cells, 1, "float", xs, "p_x");
  op_dat p_acc = op_decl_dat(nodes, 2, "float", acc, "p_acc");
  float rms = 1234.5f;
  for (int it = 0; it < 4; it++) {
    op_par_loop(spread, "spread", cells,
                op_arg_dat(p_x, -1, OP_ID, 1, "float", OP_READ),
                op_arg_dat(p_acc, 0, pnode, 2, "float", OP_INC),
                op_arg_gbl(&rms, 1, "float", OP_INC));
    printf("%d rms %.9e\n", it, rms);
  }
  op_fetch_data(p_acc, acc);
  for (int k = 0; k < 2 * nnode; k++)
    printf("acc %d %.9e\n", k, acc[k]);
  op_exit();
  return 0;
}
