// The mesh, in a unit of its own with flags of its own: `NCELLS` is defined
// by its entry, `SPACING` in `mesh_inc/mesh.h`, and it is built as C++14.
#include <cstdlib>

#include "mesh.h"
#include "op_seq.h"

#if __cplusplus != 201402L
#error "the mesh's entry builds it as C++14"
#endif

void build_mesh(op_set *cells, op_dat *p_u) {
  double *u = (double *)malloc(sizeof(double) * NCELLS);
  for (int i = 0; i < NCELLS; i++)
    u[i] = SPACING * i - 1.0;
  *cells = op_decl_set(NCELLS, "cells");
  *p_u = op_decl_dat(*cells, 1, "double", u, "p_u");
}
