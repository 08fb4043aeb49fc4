// A ring of nodes whose kernels declare names that hide others: the import
// renames the kernels' variables where `.op2` would read another one, and
// resolves names block by block, as C does.
#include <cstdio>

double c1, exit_, g, len, len_, set_;

#include "op_seq.h"

#include "scopes_kernels.h"

// Host functions inlined into `main`: one reads the global `c1`, which
// `main` declares too; the other's local `t` would hide `main`'s `t` that
// its result goes to. `main`'s are renamed.
void report(double v) { printf("scaled %.17g\n", v * c1); }

double twice(double v) {
  double t = 2.0 * v;
  return t;
}

int main(int argc, char **argv) {
  op_init(argc, argv, 2);
  const int n = 5;
  double xs[n];
  double zero[n];
  int ring[2 * n];
  for (int i = 0; i < n; i++) {
    xs[i] = 0.3 * i + 0.1;
    zero[i] = 0.0;
    ring[2 * i] = i;
    ring[2 * i + 1] = (i + 1) % n;
  }
  c1 = 10.0;
  exit_ = 5.0;
  g = 0.25;
  len = 3.0;
  len_ = 0.5;
  set_ = 7.5;
  op_set nodes = op_decl_set(n, "nodes");
  op_set edges = op_decl_set(n, "edges");
  op_set set = op_decl_set(n, "set");
  op_map pedge = op_decl_map(edges, nodes, 2, ring, "pedge");
  op_dat p_x = op_decl_dat(nodes, 1, "double", xs, "p_x");
  op_dat p_acc = op_decl_dat(nodes, 1, "double", zero, "p_acc");
  op_decl_const(1, "double", &c1);
  op_decl_const(1, "double", &exit_);
  op_decl_const(1, "double", &g);
  op_decl_const(1, "double", &len);
  op_decl_const(1, "double", &len_);
  op_dat p_y = op_decl_dat(set, 1, "double", xs, "p_y");
  double s1 = 0.0, s2 = 0.0, s3 = 0.0, s4 = 0.0, s5 = 0.0, total = 0.0, s6 = 0.0;
  op_par_loop(hidden_by_local, "hidden_by_local", nodes,
              op_arg_dat(p_x, -1, OP_ID, 1, "double", OP_READ),
              op_arg_gbl(&s1, 1, "double", OP_INC));
  op_par_loop(hidden_by_parameter, "hidden_by_parameter", nodes,
              op_arg_dat(p_x, -1, OP_ID, 1, "double", OP_READ),
              op_arg_gbl(&s2, 1, "double", OP_INC));
  op_par_loop(reserved, "reserved", nodes,
              op_arg_dat(p_x, -1, OP_ID, 1, "double", OP_READ),
              op_arg_gbl(&s3, 1, "double", OP_INC));
  op_par_loop(blocks, "blocks", nodes,
              op_arg_dat(p_x, -1, OP_ID, 1, "double", OP_READ),
              op_arg_gbl(&s4, 1, "double", OP_INC));
  op_par_loop(shadowed_increment, "shadowed_increment", edges,
              op_arg_dat(p_x, 0, pedge, 1, "double", OP_READ),
              op_arg_dat(p_acc, 1, pedge, 1, "double", OP_INC),
              op_arg_gbl(&s5, 1, "double", OP_INC));
  op_par_loop(hidden_by_parameter, "hidden_by_parameter", nodes,
              op_arg_dat(p_acc, -1, OP_ID, 1, "double", OP_READ),
              op_arg_gbl(&total, 1, "double", OP_INC));
  op_par_loop(lengths, "lengths", set,
              op_arg_dat(p_y, -1, OP_ID, 1, "double", OP_READ),
              op_arg_gbl(&s6, 1, "double", OP_INC));
  double c1 = 2.0;
  double t = c1;
  t = twice(s1 + t);
  report(t + c1);
  // `exit` is `exit_` in `.op2`, the global `main` reads: renamed.
  double exit = 2.0;
  printf("exit %.17g\n", exit * exit_);
  printf("local %.17g parameter %.17g reserved %.17g\n", s1, s2, s3);
  printf("blocks %.17g increment %.17g total %.17g\n", s4, s5, total);
  printf("lengths %.17g set_ %.17g\n", s6, set_);
  op_exit();
  return 0;
}
