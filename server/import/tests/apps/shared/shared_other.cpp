#include "op_seq.h"

#define SCALE 0.5
#include "shared.h"

// This unit's `scaled` (SCALE 0.5), `shift`, the same in both units, and
// `halve`, which only this unit runs.
void rescale() {
  op_par_loop(scaled, "scaled", cells, op_arg_dat(p_x, -1, OP_ID, 1, "double", OP_RW));
  op_par_loop(shift, "shift", cells, op_arg_dat(p_x, -1, OP_ID, 1, "double", OP_RW));
  op_par_loop(halve, "halve", cells, op_arg_dat(p_x, -1, OP_ID, 1, "double", OP_RW));
}
