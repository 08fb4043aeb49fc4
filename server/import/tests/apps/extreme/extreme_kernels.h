// Each edge compares the values at its two ends; the largest jump records
// the edge and its nodes (op_arg_info of an int[3]), the smallest the
// edge's own index; ties keep the first edge, as OP2's sequential loop
// does.
inline void jump(const double *a, const double *b, const int *edge,
                 const int *n0, const int *n1, double *big, int *where,
                 double *small, int *at, int *stamp) {
  double d = fabs(a[0] - b[0]);
  if (d > *big) {
    *big = d;
    where[0] = *edge;
    where[1] = *n0;
    where[2] = *n1;
  }
  if (d < *small) {
    *small = d;
    *at = *edge;
  }
  stamp[0] = *edge * 1000 + *n0;
}

// Moves every node's value by an amount that depends on its index, so the
// extremes move from step to step.
inline void shift(double *v, const int *node, const int *step) {
  v[0] = v[0] * 0.75 + (double)((*node * 7 + *step * 3) % 11) - 5.0;
}
