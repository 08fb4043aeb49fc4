// A 1-D chain of nodes joined by edges, built in host loops: direct and
// indirect arguments, READ/WRITE/RW/INC, global INC/MIN/MAX and a global READ
// of a host variable the time loop changes.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

double alpha, weights[3];

#include "op_seq.h"
#include "chain_kernels.h"

// Host functions whose `return` converts to their type: an `int` and a
// `float` of `double` expressions.
int steps_of(double v) { return v * 1.5; }
float third_of(double v) { return v / 3.0; }

int main(int argc, char **argv) {
  op_init(argc, argv, 2);

  int nnode = 12;
  int nedge = nnode - 1;
  int *edge = (int *)malloc(2 * nedge * sizeof(int));
  double *x = (double *)malloc(nnode * sizeof(double));
  double *u = (double *)malloc(2 * nnode * sizeof(double));
  for (int n = 0; n < nedge; n++) {
    edge[2 * n] = n;
    edge[2 * n + 1] = n + 1;
  }
  for (int n = 0; n < nnode; n++) {
    x[n] = 0.1 * n * n;
    u[2 * n] = sin(x[n]);
    u[2 * n + 1] = 1.0f / (1 + n);
  }
  alpha = 0.25f;
  weights[0] = 0.5;
  weights[1] = 1.5;
  weights[2] = -0.25;
  int niter = 5;
  double dt = 0.5, total = 0.0, lo = 0.0, hi = 0.0;
  op_printf("chain of %d nodes\n", nnode);

  op_set nodes = op_decl_set(nnode, "nodes");
  op_set edges = op_decl_set(nedge, "edges");
  op_map pedge = op_decl_map(edges, nodes, 2, edge, "pedge");
  op_dat p_x = op_decl_dat(nodes, 1, "double", x, "p_x");
  op_dat p_u = op_decl_dat(nodes, 2, "double", u, "p_u");
  op_dat p_flux = op_decl_dat(nodes, 2, "double", (double *)NULL, "p_flux");
  op_dat p_len = op_decl_dat(edges, 1, "double", (double *)NULL, "p_len");
  op_decl_const(1, "double", &alpha);
  op_decl_const(3, "double", weights);
  free(edge);
  free(x);
  free(u);

  for (int iter = 0; iter < niter; iter++) {
    op_par_loop(edge_length, "edge_length", edges,
                op_arg_dat(p_x, 0, pedge, 1, "double", OP_READ),
                op_arg_dat(p_x, 1, pedge, 1, "double", OP_READ),
                op_arg_dat(p_len, -1, OP_ID, 1, "double", OP_WRITE));
    op_par_loop(flux, "flux", edges,
                op_arg_dat(p_u, 0, pedge, 2, "double", OP_READ),
                op_arg_dat(p_u, 1, pedge, 2, "double", OP_READ),
                op_arg_dat(p_len, -1, OP_ID, 1, "double", OP_READ),
                op_arg_dat(p_flux, 0, pedge, 2, "double", OP_INC),
                op_arg_dat(p_flux, 1, pedge, 2, "double", OP_INC));
    total = 0.0;
    lo = 1e30;
    hi = -1e30;
    op_par_loop(step, "step", nodes,
                op_arg_dat(p_flux, -1, OP_ID, 2, "double", OP_RW),
                op_arg_dat(p_u, -1, OP_ID, 2, "double", OP_RW),
                op_arg_gbl(&dt, 1, "double", OP_READ),
                op_arg_gbl(&total, 1, "double", OP_INC),
                op_arg_gbl(&lo, 1, "double", OP_MIN),
                op_arg_gbl(&hi, 1, "double", OP_MAX));
    op_printf("iter %d total %.15e min %.15e max %.15e\n", iter, total, lo, hi);
    double steps = steps_of(total + 3.0);
    double third;
    third = third_of(dt);
    op_printf("steps %.17g third %.17g\n", steps, third);
    // Narrowed by their length modifiers (60000 is -5536 as a short).
    op_printf("narrowed %hd %hhu %hx\n", iter * 30000, iter * 200, iter * 30000);
    // An early end of the program: the last iteration and the line after
    // the loop are not printed.
    if (iter == niter - 2)
      return 0;
    dt = dt * 0.9;
  }
  op_printf("edges %d nodes %d\n", op_get_size(edges), nnode);
  op_exit();
  return 0;
}
