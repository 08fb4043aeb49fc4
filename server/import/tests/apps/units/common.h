#ifndef UNITS_COMMON_H
#define UNITS_COMMON_H
#define HALF 0.5
#endif
