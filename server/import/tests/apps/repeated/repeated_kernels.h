// Adds to a float dat through a map and to a float global four times per
// call, as OP2's airfoil `update` adds `del * del` to `rms`.
inline void spread(const float *x, float *acc, float *rms) {
  for (int n = 0; n < 4; n++) {
    float del = x[0] * (n + 1);
    acc[n % 2] += del;
    *rms += del * del;
  }
}
