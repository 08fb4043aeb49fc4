// Element indices passed to kernels (op_arg_idx, direct and through a map)
// and globals that record where another global reached its extreme
// (op_arg_info of MIN and MAX globals), on a ring of nodes built in host
// loops.
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "op_seq.h"

#include "extreme_kernels.h"

int main(int argc, char **argv) {
  op_init(argc, argv, 2);
  int nnode = 12;
  int nedge = 12;
  int *edge = (int *)malloc(sizeof(int) * 2 * nedge);
  double *value = (double *)malloc(sizeof(double) * nnode);
  for (int n = 0; n < nnode; n++)
    value[n] = (double)((n * 5) % 7);
  for (int e = 0; e < nedge; e++) {
    edge[2 * e] = e;
    edge[2 * e + 1] = (e + 5) % nnode;
  }
  op_set nodes = op_decl_set(nnode, "nodes");
  op_set edges = op_decl_set(nedge, "edges");
  op_map pedge = op_decl_map(edges, nodes, 2, edge, "pedge");
  op_dat p_v = op_decl_dat(nodes, 1, "double", value, "p_v");
  op_dat p_stamp = op_decl_dat(edges, 1, "int", (int *)NULL, "p_stamp");

  double big = 0.0, small = 0.0;
  int where[3] = {-1, -1, -1};
  int at = -1;
  int step = 0;
  while (step < 6) {
    big = 0.0;
    small = 1.0e9;
    op_par_loop(jump, "jump", edges,
                op_arg_dat(p_v, 0, pedge, 1, "double", OP_READ),
                op_arg_dat(p_v, 1, pedge, 1, "double", OP_READ),
                op_arg_idx(-1, OP_ID),
                op_arg_idx(0, pedge),
                op_arg_idx(1, pedge),
                op_arg_gbl(&big, 1, "double", OP_MAX),
                op_arg_info(where, 3, "int", 5),
                op_arg_gbl(&small, 1, "double", OP_MIN),
                op_arg_info(&at, 1, "int", 7),
                op_arg_dat(p_stamp, -1, OP_ID, 1, "int", OP_WRITE));
    op_printf("step %d: largest jump %.17g on edge %d (%d-%d), smallest %.17g on edge %d\n",
              step, big, where[0], where[1], where[2], small, at);
    op_par_loop(shift, "shift", nodes,
                op_arg_dat(p_v, -1, OP_ID, 1, "double", OP_RW),
                op_arg_idx(-1, OP_ID),
                op_arg_gbl(&step, 1, "int", OP_READ));
    step++;
  }
  op_exit();
  return 0;
}
