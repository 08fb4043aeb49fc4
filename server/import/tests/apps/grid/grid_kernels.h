inline void area(const double *a, const double *b, const double *c,
                 const double *d, float *out) {
  double twice = (a[0] * b[1] - b[0] * a[1]) + (b[0] * c[1] - c[0] * b[1]) +
                 (c[0] * d[1] - d[0] * c[1]) + (d[0] * a[1] - a[0] * d[1]);
  *out = scale * 0.5f * (float)fabs(twice);
}

inline void weigh(const float *ar, const int *kind, const int *index,
                  double *sum, int *count, double *biggest) {
  double w = *kind == 1 ? 2.0 * ar[0] : ar[0] / 3;
  *sum += w + 0.001 * (*index % 7);
  if (*kind == 1)
    *count += 1;
  *biggest = fmax(*biggest, w);
}
