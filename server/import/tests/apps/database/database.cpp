// An application built with per-file flags, as CMake builds OP2 codes: the
// include directories, definitions, language standard and forced include of
// each translation unit come from its entry in `compile_commands.json`
// (which the test writes), none from op2 import's command line.
#include <cstdio>

#include "op_seq.h"
#include "params.h"
#include "step.h"

#if __cplusplus != 201703L
#error "the main file's entry builds it as C++17"
#endif

// database_mesh.cpp
void build_mesh(op_set *cells, op_dat *p_u);

int main(int argc, char **argv) {
  op_init(argc, argv, 2);
  op_set cells;
  op_dat p_u;
  build_mesh(&cells, &p_u);
  double total = 0.0;
  for (int iter = 0; iter < STEPS; iter++) {
    op_par_loop(step, "step", cells, op_arg_dat(p_u, -1, OP_ID, 1, "double", OP_RW));
    total = 0.0;
    op_par_loop(sum, "sum", cells, op_arg_dat(p_u, -1, OP_ID, 1, "double", OP_READ),
                op_arg_gbl(&total, 1, "double", OP_INC));
    op_printf("iteration %d total %.17g\n", iter, total);
  }
  op_exit();
  return 0;
}
