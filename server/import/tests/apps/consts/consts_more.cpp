#include "consts.h"
#include "op_seq.h"

void declare_more() {
  order = 2;
  op_decl_const(1, "double", &cfl);
  op_decl_const(1, "int", &order);
}
