#ifndef TABLES_B_H
#define TABLES_B_H
// `SCALE` again, differently: `lift` is expanded with 3.0, `grow` (in
// tables.h, included before) still with 2.0.
#undef SCALE
#define SCALE 3.0

inline void lift(double *x) { *x = *x * SCALE - 1.0; }
#endif
