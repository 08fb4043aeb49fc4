// A ring whose kernels call helpers that op2 import inlines, handles declared
// `auto`, std::printf (lines, parts of one), `sqrtf` and an exit status.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "op_seq.h"

#include "helpers_kernels.h"

int main(int argc, char **argv) {
  op_init(argc, argv, 2);
  const int n = 7;
  double xs[n];
  int ks[n];
  double zero[2 * n];
  int ring[2 * n];
  for (int i = 0; i < n; i++) {
    xs[i] = 0.3 * i - 0.7;
    ks[i] = (3 * i) % 5 - 1;
    zero[2 * i] = 0.0;
    zero[2 * i + 1] = 0.0;
    ring[2 * i] = i;
    ring[2 * i + 1] = (i + 1) % n;
  }
  auto nodes = op_decl_set(n, "nodes");
  auto edges = op_decl_set(n, "edges");
  auto pedge = op_decl_map(edges, nodes, 2, ring, "pedge");
  auto p_x = op_decl_dat(nodes, 1, "double", xs, "p_x");
  auto p_k = op_decl_dat(nodes, 1, "int", ks, "p_k");
  auto p_acc = op_decl_dat(nodes, 2, "double", zero, "p_acc");
  double biggest = -1.0e300;
  int smallest = 1000;
  double total = 0.0;
  double peak = -1.0e300;
  double weighed = 0.0;
  int use_k = argc > 0;
  op_par_loop(measure, "measure", edges,
              op_arg_dat(p_x, 0, pedge, 1, "double", OP_READ),
              op_arg_dat(p_x, 1, pedge, 1, "double", OP_READ),
              op_arg_dat(p_k, 0, pedge, 1, "int", OP_READ),
              op_arg_gbl(&biggest, 1, "double", OP_MAX),
              op_arg_gbl(&smallest, 1, "int", OP_MIN),
              op_arg_gbl(&total, 1, "double", OP_INC));
  // Each node is the first end of one edge.
  op_par_loop(spread, "spread", edges,
              op_arg_dat(p_x, 0, pedge, 1, "double", OP_READ),
              op_arg_dat(p_acc, 0, pedge, 2, "double", OP_INC));
  op_par_loop(grow, "grow", nodes,
              op_arg_dat(p_acc, -1, OP_ID, 2, "double", OP_INC),
              op_arg_gbl(&peak, 1, "double", OP_MAX));
  // Optional arguments: one whose flag the set-up computed, one never used.
  op_par_loop(weigh, "weigh", nodes,
              op_arg_dat(p_x, -1, OP_ID, 1, "double", OP_READ),
              op_opt_arg_dat(use_k, p_k, -1, OP_ID, 1, "int", OP_READ),
              op_opt_arg_dat(0, p_acc, 0, pedge, 2, "double", OP_WRITE),
              op_arg_gbl(&weighed, 1, "double", OP_INC));
  // A local of the host code that a par_loop takes.
  double sum = 0.0;
  op_par_loop(collect, "collect", nodes,
              op_arg_dat(p_acc, -1, OP_ID, 2, "double", OP_READ),
              op_arg_gbl(&sum, 1, "double", OP_INC));
  std::printf("biggest %.17g smallest %d total %.17g\n", biggest, smallest,
              total);
  std::printf("spread %.17g peak %.17g weighed %.17g\n", sum, peak, weighed);
  std::printf("%d nodes, %d edges, mean %.17g\n", op_get_size(nodes),
              op_get_size(edges), (total + sum) / n);
  std::printf("root %.9g\n", sqrtf(weighed));
  for (int i = 0; i < 3; i++)
    std::printf(" %7.4f", sum * i);
  std::printf("\n");
  op_exit();
  if (smallest < -5)
    exit(3);
  return 0;
}
