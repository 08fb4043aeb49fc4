// A ring whose optional arguments' flags are expressions of options read
// from options.dat: not known where the import reads the code, so `main`
// tests them: `visc != 0`, shared by two arguments that are passed alike
// set or not, `order > 1`, set, and `limit > 0.5`, not set.
#include <cstdio>

#include "op_seq.h"

int visc = 0;
int order = 0;
double limit = 0.0;

#include "options_kernels.h"

int main(int argc, char **argv) {
  op_init(argc, argv, 2);
  FILE *in = fopen("options.dat", "r");
  if (!in || fscanf(in, "%d %d %lf", &visc, &order, &limit) != 3) {
    printf("cannot read options.dat\n");
    return 1;
  }
  fclose(in);
  const int n = 6;
  double xs[n], mus[n], caps[n], res[n], grads[n];
  int ring[2 * n];
  for (int i = 0; i < n; i++) {
    xs[i] = 0.5 * i * i - 1.25 * i;
    mus[i] = 1.0 + 0.125 * i;
    caps[i] = 2.0 - 0.25 * i;
    res[i] = 0.0;
    grads[i] = 0.0;
    ring[2 * i] = i;
    ring[2 * i + 1] = (i + 1) % n;
  }
  op_set nodes = op_decl_set(n, "nodes");
  op_set edges = op_decl_set(n, "edges");
  op_map pedge = op_decl_map(edges, nodes, 2, ring, "pedge");
  op_dat p_x = op_decl_dat(nodes, 1, "double", xs, "p_x");
  op_dat p_mu = op_decl_dat(nodes, 1, "double", mus, "p_mu");
  op_dat p_cap = op_decl_dat(nodes, 1, "double", caps, "p_cap");
  op_dat p_res = op_decl_dat(nodes, 1, "double", res, "p_res");
  op_dat p_grad = op_decl_dat(edges, 1, "double", grads, "p_grad");
  op_decl_const(1, "int", &visc);
  op_decl_const(1, "int", &order);
  op_decl_const(1, "double", &limit);
  for (int it = 0; it < 3; it++) {
    double total = 0.0;
    double sum = 0.0;
    op_par_loop(smooth, "smooth", edges,
                op_arg_dat(p_x, 0, pedge, 1, "double", OP_READ),
                op_arg_dat(p_x, 1, pedge, 1, "double", OP_READ),
                op_opt_arg_dat(visc != 0, p_mu, 0, pedge, 1, "double", OP_READ),
                op_opt_arg_dat(visc != 0, p_mu, 1, pedge, 1, "double", OP_READ),
                op_opt_arg_dat(order > 1, p_grad, -1, OP_ID, 1, "double", OP_WRITE),
                op_arg_dat(p_res, 0, pedge, 1, "double", OP_INC));
    op_par_loop(clip, "clip", nodes,
                op_arg_dat(p_x, -1, OP_ID, 1, "double", OP_RW),
                op_arg_dat(p_res, -1, OP_ID, 1, "double", OP_READ),
                op_opt_arg_dat(limit > 0.5, p_cap, -1, OP_ID, 1, "double", OP_WRITE),
                op_arg_gbl(&total, 1, "double", OP_INC));
    op_par_loop(tally, "tally", edges,
                op_arg_dat(p_grad, -1, OP_ID, 1, "double", OP_READ),
                op_arg_gbl(&sum, 1, "double", OP_INC));
    printf("%d total %.17g grad %.17g\n", it, total, sum);
  }
  op_exit();
  return 0;
}
