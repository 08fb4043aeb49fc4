// Quadrilateral cells read from a mesh file with fscanf: indirect reads
// through a map of arity 4, the element index (op_arg_idx), int and float
// dats, and host arithmetic on what the par_loops reduce.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

float scale;

#include "op_seq.h"
#include "grid_kernels.h"

int main(int argc, char **argv) {
  op_init(argc, argv, 2);
  int nnode, ncell;
  FILE *fp = fopen("grid.dat", "r");
  if (fp == NULL || fscanf(fp, "%d %d", &nnode, &ncell) != 2) {
    op_printf("cannot read grid.dat\n");
    exit(1);
  }
  double *xy = (double *)malloc(2 * nnode * sizeof(double));
  int *cell = (int *)malloc(4 * ncell * sizeof(int));
  int *kind = (int *)malloc(ncell * sizeof(int));
  for (int n = 0; n < nnode; n++)
    if (fscanf(fp, "%lf %lf", &xy[2 * n], &xy[2 * n + 1]) != 2)
      exit(1);
  for (int n = 0; n < ncell; n++)
    if (fscanf(fp, "%d %d %d %d %d", &cell[4 * n], &cell[4 * n + 1],
               &cell[4 * n + 2], &cell[4 * n + 3], &kind[n]) != 5)
      exit(1);
  fclose(fp);
  scale = 1.5f;

  op_set nodes = op_decl_set(nnode, "nodes");
  op_set cells = op_decl_set(ncell, "cells");
  op_map pcell = op_decl_map(cells, nodes, 4, cell, "pcell");
  op_dat p_xy = op_decl_dat(nodes, 2, "double", xy, "p_xy");
  op_dat p_kind = op_decl_dat(cells, 1, "int", kind, "p_kind");
  op_dat p_area = op_decl_dat(cells, 1, "float", (float *)NULL, "p_area");
  op_decl_const(1, "float", &scale);

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
