// The mesh, built in a unit of its own: a chain of `n` nodes and `n - 1`
// edges, its sets, map and dats declared here.
#include <cstdlib>

#include "op_seq.h"
#include "units.h"

void build_chain(int n, op_set *nodes, op_set *edges, op_map *pedge, op_dat *p_x, op_dat *p_f) {
  int *ends = (int *)malloc(sizeof(int) * 2 * (n - 1));
  double *x = (double *)malloc(sizeof(double) * n);
  double *f = (double *)malloc(sizeof(double) * n);
  for (int i = 0; i < n - 1; i++) {
    ends[2 * i] = i;
    ends[2 * i + 1] = i + 1;
  }
  for (int i = 0; i < n; i++) {
    x[i] = (i * 7 % 5) * 0.375 - 0.5;
    f[i] = 0.0;
  }
  *nodes = op_decl_set(n, "nodes");
  *edges = op_decl_set(n - 1, "edges");
  *pedge = op_decl_map(*edges, *nodes, 2, ends, "pedge");
  *p_x = op_decl_dat(*nodes, 1, "double", x, "p_x");
  *p_f = op_decl_dat(*nodes, 1, "double", f, "p_f");
}
