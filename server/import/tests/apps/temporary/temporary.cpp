// A ring whose time loop declares a temporary dat each step and frees it
// (as OP2's airfoil_tempdats does), with a temporary dat of the set-up whose
// data argument OP2 does not read, `op_is_root` in the set-up and a timer.
#include <cstdio>
#include <cstdlib>

// A name the import would generate for the kernel zeroing `p_flux`.
double op2_zero_p_flux;

#include "op_seq.h"

#include "temporary_kernels.h"

int main(int argc, char **argv) {
  op_init(argc, argv, 2);
  const int n = 6;
  double xs[n];
  int ring[2 * n];
  for (int i = 0; i < n; i++) {
    xs[i] = 0.25 * i - 0.5;
    ring[2 * i] = i;
    ring[2 * i + 1] = (i + 1) % n;
  }
  op_set nodes = op_decl_set(n, "nodes");
  op_set edges = op_decl_set(n, "edges");
  op_map pedge = op_decl_map(edges, nodes, 2, ring, "pedge");
  op_dat p_x = op_decl_dat(nodes, 1, "double", xs, "p_x");
  op_dat p_w = op_decl_dat_temp(nodes, 1, "double", xs, "p_w");
  if (op_is_root())
    op_diagnostic_output();
  op2_zero_p_flux = 0.5;
  double started = 0.0;
  stopwatch(&started);
  for (int step = 1; step <= 3; step++) {
    double *none = NULL;
    op_dat p_flux = op_decl_dat_temp(nodes, 2, "double", none, "p_flux");
    op_par_loop(flux, "flux", edges,
                op_arg_dat(p_x, 0, pedge, 1, "double", OP_READ),
                op_arg_dat(p_x, 1, pedge, 1, "double", OP_READ),
                op_arg_dat(p_flux, 0, pedge, 2, "double", OP_INC),
                op_arg_dat(p_flux, 1, pedge, 2, "double", OP_INC));
    double total = 0.0;
    op_par_loop(apply, "apply", nodes,
                op_arg_dat(p_flux, -1, OP_ID, 2, "double", OP_READ),
                op_arg_dat(p_x, -1, OP_ID, 1, "double", OP_RW),
                op_arg_dat(p_w, -1, OP_ID, 1, "double", OP_INC),
                op_arg_gbl(&total, 1, "double", OP_INC));
    op_printf("step %d total %.17g\n", step, total);
    if (op_free_dat_temp(p_flux) < 0)
      op_printf("cannot free %s\n", p_flux->name);
  }
  double weight = 0.0;
  op_par_loop(sum, "sum", nodes,
              op_arg_dat(p_w, -1, OP_ID, 1, "double", OP_READ),
              op_arg_gbl(&weight, 1, "double", OP_INC));
  op_printf("weight %.17g zero %.17g\n", weight, op2_zero_p_flux);
  op_free_dat_temp(p_w);
  stopwatch(&started);
  op_exit();
  return 0;
}
