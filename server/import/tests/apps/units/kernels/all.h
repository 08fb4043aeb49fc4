// The kernels kept in headers, each in its own, included from here.
#ifndef UNITS_KERNELS_ALL_H
#define UNITS_KERNELS_ALL_H
#include "flux.h"
#include "sum.h"
#endif
