#include "op_seq.h"

#define SCALE 0.5
#include "odr.h"

void rescale() {
  op_par_loop(scaled, "scaled", cells, op_arg_dat(p_x, -1, OP_ID, 1, "double", OP_RW));
}
