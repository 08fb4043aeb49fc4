// Kernels that both translation units include: `scaled` reads `SCALE`, which
// each unit defines differently before including this header (2.0 in
// shared.cpp, 0.5 in shared_other.cpp), so each has its own `static` kernel;
// `shift` is the same text in both.
#ifndef SHARED_H
#define SHARED_H

static inline void scaled(double *x) { *x = *x * SCALE + 1.0; }

// Run only by shared_other.cpp's `rescale`: SCALE is 0.5 there.
static inline void halve(double *x) { *x = *x * SCALE; }

inline void shift(double *x) { *x -= 0.75; }

inline void sum(const double *x, double *total) { *total += *x; }

// The mesh and its dat, declared in shared.cpp.
extern op_set cells;
extern op_dat p_x;

// shared_other.cpp
void rescale();

#endif
