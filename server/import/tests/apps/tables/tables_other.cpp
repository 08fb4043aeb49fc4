#include "op_seq.h"

#define SCALE 0.5

void shrink(double *x) { *x = *x * SCALE; }
