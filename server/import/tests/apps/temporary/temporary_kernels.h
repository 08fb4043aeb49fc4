// Kernels of the temporary-dat test: `flux` adds into a temporary dat,
// which must start at zero each step; and a timer of the application's.
#include <sys/time.h>

inline void stopwatch(double *seconds) {
  struct timeval now;
  gettimeofday(&now, (struct timezone *)0);
  *seconds = now.tv_sec + now.tv_usec * 1.0e-6;
}
inline void flux(const double *a, const double *b, double *fa, double *fb) {
  double f = 0.5 * (*b - *a);
  fa[0] += f;
  fa[1] += f * f;
  fb[0] -= f;
  fb[1] += 0.5 * f;
}

inline void apply(const double *f, double *x, double *w, double *total) {
  *x += 0.25 * f[0] - 0.125 * f[1];
  *w += f[1];
  *total += *x;
}

inline void sum(const double *w, double *weight) { *weight += *w; }
