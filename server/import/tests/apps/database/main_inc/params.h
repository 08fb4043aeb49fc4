#ifndef DATABASE_PARAMS_H
#define DATABASE_PARAMS_H
#ifdef LEGACY
#error "the main file's entry undefines LEGACY after defining it"
#endif
#ifdef FAST
#define STEPS 3
#else
#define STEPS 1
#endif
#define GAIN 1.5
#endif
