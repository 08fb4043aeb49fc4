// What the three units share: the kernels of the headers below, and the
// declarations of what the other units define.
#ifndef UNITS_H
#define UNITS_H

#include "kernels/all.h"

// units_mesh.cpp
void build_chain(int n, op_set *nodes, op_set *edges, op_map *pedge, op_dat *p_x, op_dat *p_f);
// units_kernels.cpp
extern double gain;
void scale(double *x);
// units_host.cpp
double mean(double total, int n);

#endif
