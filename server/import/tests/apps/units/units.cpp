// An application of three translation units, in the way larger OP2 codes
// are laid out: the mesh is built by a function of `units_mesh.cpp`, the
// kernel `scale` and the global it reads are defined in `units_kernels.cpp`,
// the host function `mean` in `units_host.cpp`, and the kernels `flux` and
// `sum` in headers that `units.h` includes through `kernels/all.h`.
#include <cstdio>
#include <cstdlib>

#include "op_seq.h"
#include "units.h"

int main(int argc, char **argv) {
  op_init(argc, argv, 2);
  int n = 12;
  op_set nodes, edges;
  op_map pedge;
  op_dat p_x, p_f;
  build_chain(n, &nodes, &edges, &pedge, &p_x, &p_f);
  // A dat of this unit, numbered after those of `units_mesh.cpp`.
  double *w = (double *)malloc(sizeof(double) * n);
  for (int i = 0; i < n; i++)
    w[i] = 1.0 + 0.125 * i;
  op_dat p_w = op_decl_dat(nodes, 1, "double", w, "p_w");
  gain = 1.5;
  op_decl_const(1, "double", &gain);
  double total = 0.0;
  for (int iter = 0; iter < 4; iter++) {
    op_par_loop(scale, "scale", nodes, op_arg_dat(p_x, -1, OP_ID, 1, "double", OP_RW));
    op_par_loop(flux, "flux", edges, op_arg_dat(p_x, 0, pedge, 1, "double", OP_READ),
                op_arg_dat(p_x, 1, pedge, 1, "double", OP_READ),
                op_arg_dat(p_f, 0, pedge, 1, "double", OP_INC),
                op_arg_dat(p_f, 1, pedge, 1, "double", OP_INC));
    total = 0.0;
    op_par_loop(sum, "sum", nodes, op_arg_dat(p_f, -1, OP_ID, 1, "double", OP_READ),
                op_arg_dat(p_w, -1, OP_ID, 1, "double", OP_READ),
                op_arg_gbl(&total, 1, "double", OP_INC));
    double average = mean(total, n);
    op_printf("iteration %d total %.17g mean %.17g\n", iter, total, average);
  }
  op_exit();
  return 0;
}
