// `scaled` is not `static`, and the two units that include this header give
// it two texts: C++'s one-definition rule is broken, and which the native
// build runs is its compiler's and linker's choice.
#ifndef ODR_H
#define ODR_H

inline void scaled(double *x) { *x = *x * SCALE + 1.0; }

extern op_set cells;
extern op_dat p_x;

void rescale();

#endif
