// Macros whose value the preprocessor decides: a default that `-D`
// overrides, the `#else` of an `#if 0`, a redefinition after `#undef`, and
// bodies with comments and continued lines.
#ifndef SCALE
#define SCALE 2.0
#endif

#if 0
#define OFF 100.0
#else
#define OFF 1.0
#endif

#ifdef FAST
#define ORDER 1
#else
#define ORDER 2
#endif

#define STEP 0.5
#undef STEP
#define STEP 0.25

#define GAM 1.4 // ratio of specific heats
#define SQR(v) ((v) * (v)) /* square */
#define SUM2(a, b) ((a) + \
                    (b))

inline void shift(const double *x, double *out) {
  out[0] = SCALE * x[0] + OFF;
  out[1] = GAM * SQR(x[1]) + ORDER;
  out[2] = SUM2(x[0], STEP);
}

inline void add(const double *out, double *sums) {
  for (int k = 0; k < 3; k++)
    sums[k] += out[k];
}
