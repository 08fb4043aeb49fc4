// Constructs op2 import reports rather than translates: a vector-map
// parameter used other than as `x[i][j]`, printf's value in a kernel, a helper that
// is not one `return`, a macro whose body calls a function, `expf` and C++'s
// `float` `pow`, host functions that cannot be inlined into `main` (a `return` in
// a loop; a call in an expression; calls initialising two variables of one
// declaration), and a pointer of the set-up that the host code reads.
#include <stdio.h>

#include "op_seq.h"

inline double twice(double v) { double w = 2 * v; return w; }
inline double lookup(double v) { double w = v + 1; return w; }
#define NAMED(x) lookup(x)

inline void tally(double *x) {
  x[0] = NAMED(x[0]);
}

inline void gather(const double **x, double *sum) {
  for (int k = 0; k < 2; k++)
    *sum += **x;
}

inline void show(const double *x) {
  int n = printf("%g\n", x[0]);
}

inline void scale(double *x) {
  x[0] = twice(x[0]);
}

inline void decay(float *v) {
  v[0] = expf(v[0]) + std::pow(v[0], 2.0f);
}

inline int first_big(const double *v, int n) {
  for (int i = 0; i < n; i++)
    if (v[i] > 3.0)
      return i;
  return -1;
}

int main(int argc, char **argv) {
  op_init(argc, argv, 2);
  int pairs[4] = {0, 1, 1, 2};
  double xs[3] = {1.0, 2.0, 4.0};
  op_set nodes = op_decl_set(3, "nodes");
  op_set edges = op_decl_set(2, "edges");
  op_map pedge = op_decl_map(edges, nodes, 2, pairs, "pedge");
  op_dat p_x = op_decl_dat(nodes, 1, "double", xs, "p_x");
  float fs[3] = {0.5f, 1.5f, 2.5f};
  op_dat p_f = op_decl_dat(nodes, 1, "float", fs, "p_f");
  int *ends = pairs;
  double sum = 0.0;
  op_par_loop(gather, "gather", edges,
              op_arg_dat(p_x, -2, pedge, 1, "double", OP_READ),
              op_arg_gbl(&sum, 1, "double", OP_INC));
  op_par_loop(show, "show", nodes, op_arg_dat(p_x, -1, OP_ID, 1, "double", OP_READ));
  op_par_loop(scale, "scale", nodes, op_arg_dat(p_x, -1, OP_ID, 1, "double", OP_RW));
  op_par_loop(tally, "tally", nodes, op_arg_dat(p_x, -1, OP_ID, 1, "double", OP_RW));
  op_par_loop(decay, "decay", nodes, op_arg_dat(p_f, -1, OP_ID, 1, "float", OP_RW));
  op_printf("sum %g\n", sum);
  op_fetch_data(p_x, xs);
  op_fetch_data_idx(p_f, fs, 1, 2);
  op_printf("fs %g\n", fs[1]);
  int at = first_big(xs, 3);
  op_printf("first big %d, then %d\n", at, 1 + first_big(xs, 2));
  double lo = twice(xs[0]), hi = twice(xs[2]);
  op_printf("lo %g hi %g\n", lo, hi);
  op_printf("ends %d %d\n", ends[0], ends[3]);
  op_exit();
}
