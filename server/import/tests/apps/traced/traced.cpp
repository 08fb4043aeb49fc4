// A kernel that traces what it does with printf, as OP2's jac1/dp does in
// its kernel `res`: a whole line through an indirect loop, and part of a
// line (finished by the host) through a direct one.
#include <stdio.h>
#include <stdlib.h>

#include "op_seq.h"

inline void flow(const double *a, const double *b, const int *id, double *sum) {
  *sum += *b - *a;
  printf("edge %d: %g -> %g\n", *id, *a, *b);
}

inline void mark(const double *x) {
  if (*x > 0.5)
    printf(" %.3f", *x);
  else
    printf(" (%e)", *x);
}

int main(int argc, char **argv) {
  op_init(argc, argv, 2);
  int nnode = 5, nedge = 4;
  int *edge = (int *)malloc(2 * nedge * sizeof(int));
  int *ids = (int *)malloc(nedge * sizeof(int));
  double *x = (double *)malloc(nnode * sizeof(double));
  for (int n = 0; n < nedge; n++) {
    edge[2 * n] = n;
    edge[2 * n + 1] = (n * 3 + 1) % nnode;
    ids[n] = 10 * n + 1;
  }
  for (int n = 0; n < nnode; n++)
    x[n] = 0.3 * n * n - 0.1;
  op_set nodes = op_decl_set(nnode, "nodes");
  op_set edges = op_decl_set(nedge, "edges");
  op_map pedge = op_decl_map(edges, nodes, 2, edge, "pedge");
  op_dat p_x = op_decl_dat(nodes, 1, "double", x, "p_x");
  op_dat p_id = op_decl_dat(edges, 1, "int", ids, "p_id");
  double sum = 0.0;
  for (int iter = 0; iter < 2; iter++) {
    op_par_loop(flow, "flow", edges,
                op_arg_dat(p_x, 0, pedge, 1, "double", OP_READ),
                op_arg_dat(p_x, 1, pedge, 1, "double", OP_READ),
                op_arg_dat(p_id, -1, OP_ID, 1, "int", OP_READ),
                op_arg_gbl(&sum, 1, "double", OP_INC));
    op_printf("marks:");
    op_par_loop(mark, "mark", nodes,
                op_arg_dat(p_x, -1, OP_ID, 1, "double", OP_READ));
    op_printf("\nsum %g\n", sum);
  }
  op_exit();
  return 0;
}
