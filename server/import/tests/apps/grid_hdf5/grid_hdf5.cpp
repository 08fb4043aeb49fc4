// The grid application of ../grid with its mesh read from OP2's HDF5 layout
// (op_decl_*_hdf5 and op_get_const_hdf5), as OP2's airfoil_hdf5 reads its
// mesh. A map the file lacks gives NULL, as in OP2. The test writes
// grid.h5 in the working directory from the plain grid's mesh.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

float scale;

#include "op_seq.h"
#include "grid_kernels.h"

int main(int argc, char **argv) {
  op_init(argc, argv, 2);
  char file[] = "grid.h5";
  op_set nodes = op_decl_set_hdf5(file, "nodes");
  op_set cells = op_decl_set_hdf5(file, "cells");
  op_map pcell = op_decl_map_hdf5(cells, nodes, 4, file, "pcell");
  op_map absent = op_decl_map_hdf5(cells, nodes, 4, file, "no_such_map");
  if (absent == NULL)
    op_printf("no_such_map not found\n");
  op_dat p_xy = op_decl_dat_hdf5(nodes, 2, "double", file, "p_xy");
  op_dat p_kind = op_decl_dat_hdf5(cells, 1, "int", file, "p_kind");
  op_dat p_area = op_decl_dat(cells, 1, "float", (float *)NULL, "p_area");
  op_get_const_hdf5("scale", 1, "float", (char *)&scale, file);
  op_decl_const(1, "float", &scale);
  op_dump_to_hdf5("grid_out.h5");

  double biggest = 0.0, sum = 0.0;
  int where = -1, count = 0;
  op_par_loop(area, "area", cells,
              op_arg_dat(p_xy, 0, pcell, 2, "double", OP_READ),
              op_arg_dat(p_xy, 1, pcell, 2, "double", OP_READ),
              op_arg_dat(p_xy, 2, pcell, 2, "double", OP_READ),
              op_arg_dat(p_xy, 3, pcell, 2, "double", OP_READ),
              op_arg_dat(p_area, -1, OP_ID, 1, "float", OP_WRITE));
  int pass = 0;
  while (pass < 3) {
    op_par_loop(weigh, "weigh", cells,
                op_arg_dat(p_area, -1, OP_ID, 1, "float", OP_READ),
                op_arg_dat(p_kind, -1, OP_ID, 1, "int", OP_READ),
                op_arg_idx(-1, OP_ID),
                op_arg_gbl(&sum, 1, "double", OP_INC),
                op_arg_gbl(&count, 1, "int", OP_INC),
                op_arg_gbl(&biggest, 1, "double", OP_MAX));
    double mean = sum / op_get_size(cells);
    op_printf("pass %d: sum %.17g mean %.10e count %d biggest %g\n", pass, sum,
              mean, count, biggest);
    pass++;
  }
  op_exit();
  return 0;
}
