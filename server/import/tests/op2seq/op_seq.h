// A small sequential implementation of OP2's C++ API, for the tests of
// op2 import only: the test applications are compiled against it natively,
// and what they print is compared with `op2 run` of their import. Like
// OP2's own sequential library, a par_loop calls the kernel on elements
// 0, 1, ..., n-1 with pointers straight into the dats and globals.
#ifndef OP2_TEST_SEQ_H
#define OP2_TEST_SEQ_H

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <utility>
// As OP2's op_lib_core.h (which its op_seq.h includes): in C++ this makes
// the `float` overloads of `sqrt` and the rest what `sqrt(x)` calls for a
// `float` x, which the import must translate as such.
#include <math.h>

// OP2's own function-like macros (its op_lib_core.h defines them so).
#define MIN(a, b) ((a < b) ? (a) : (b))
#define MAX(a, b) ((a > b) ? (a) : (b))

typedef enum { OP_READ, OP_WRITE, OP_RW, OP_INC, OP_MIN, OP_MAX } op_access;

struct op_set_core { int size; };
struct op_map_core { op_set_core *from, *to; int dim; int *data; };
struct op_dat_core { op_set_core *set; int dim; size_t elem; char *data; const char *name; };
typedef op_set_core *op_set;
typedef op_map_core *op_map;
typedef op_dat_core *op_dat;

enum op_arg_kind { ARG_DAT, ARG_GBL, ARG_IDX };
struct op_arg { op_arg_kind kind; op_dat dat; int idx; op_map map; char *data; };

#define OP_ID ((op_map)0)
#define op_printf printf

inline void op_init(int, char **, int) {}
inline void op_exit() {}
inline void op_timers(double *cpu, double *wall) { *cpu = 0; *wall = 0; }
inline void op_diagnostic_output() {}
inline int op_is_root() { return 1; }
inline void op_timing_output() {}

inline op_set op_decl_set(int size, const char *) { return new op_set_core{size}; }

inline op_map op_decl_map(op_set from, op_set to, int dim, int *data, const char *) {
  int *copy = new int[(size_t)from->size * dim];
  memcpy(copy, data, sizeof(int) * (size_t)from->size * dim);
  return new op_map_core{from, to, dim, copy};
}

template <class T>
op_dat op_decl_dat(op_set set, int dim, const char *, T *data, const char *name) {
  size_t bytes = sizeof(T) * (size_t)set->size * dim;
  char *copy = new char[bytes];
  if (data)
    memcpy(copy, data, bytes);
  else
    memset(copy, 0, bytes);
  return new op_dat_core{set, dim, sizeof(T), copy, name};
}

// A temporary dat starts zeroed; as in OP2, `data` is not read.
template <class T>
op_dat op_decl_dat_temp(op_set set, int dim, const char *type, T *, const char *name) {
  return op_decl_dat(set, dim, type, (T *)0, name);
}

inline int op_free_dat_temp(op_dat dat) {
  if (!dat || !dat->data)
    return -1;
  delete[] dat->data;
  dat->data = 0;
  return 0;
}

template <class T> void op_decl_const(int, const char *, T *) {}

inline int op_get_size(op_set set) { return set->size; }

// The most map entries a vector-map argument (index -N) may pass here.
#define OP_TEST_MAX_VECTOR 16

inline op_arg op_arg_dat(op_dat dat, int idx, op_map map, int, const char *, op_access) {
  // As OP2 checks: -N takes the map's first N entries, so N <= its arity.
  if (idx < -1 && (!map || -idx > map->dim || -idx > OP_TEST_MAX_VECTOR)) {
    fprintf(stderr, "op_arg_dat: vector-map index %d is out of range\n", idx);
    exit(1);
  }
  return op_arg{ARG_DAT, dat, idx, map, 0};
}
// As in OP2's sequential library, an argument whose flag is not set is
// handed to the kernel as if direct; the kernel must not use it.
inline op_arg op_opt_arg_dat(int opt, op_dat dat, int idx, op_map map, int dim, const char *type,
                             op_access acc) {
  return opt ? op_arg_dat(dat, idx, map, dim, type, acc) : op_arg_dat(dat, -1, nullptr, dim, type, acc);
}
template <class T> op_arg op_arg_gbl(T *data, int, const char *, op_access) {
  return op_arg{ARG_GBL, 0, -1, 0, (char *)data};
}
inline op_arg op_arg_idx(int idx, op_map map) { return op_arg{ARG_IDX, 0, idx, map, 0}; }
// As in OP2's sequential library, the kernel gets the variable itself: it
// keeps what the kernel last stored, which is the element that last raised
// (or lowered) the MIN or MAX global the reference names.
template <class T> op_arg op_arg_info(T *data, int, const char *, int) {
  return op_arg{ARG_GBL, 0, -1, 0, (char *)data};
}

template <class T> void op_fetch_data(op_dat dat, T *out) {
  memcpy(out, dat->data, dat->elem * dat->dim * dat->set->size);
}

// Elements low to high of the dat, both included.
template <class T> void op_fetch_data_idx(op_dat dat, T *out, int low, int high) {
  if (low < 0 || high >= dat->set->size || low > high) {
    printf("op_fetch_data_idx: indices outside the elements of %s\n", dat->name);
    exit(2);
  }
  memcpy(out, dat->data + low * dat->elem * dat->dim, dat->elem * dat->dim * (high - low + 1));
}

// The pointer an argument gives the kernel for element n; vector-map
// arguments (idx < -1) give an array of pointers kept in `vec`.
inline char *op_test_pointer(const op_arg &arg, int n, int *index, char **vec) {
  switch (arg.kind) {
  case ARG_GBL:
    return arg.data;
  case ARG_IDX:
    *index = arg.map ? arg.map->data[n * arg.map->dim + arg.idx] : n;
    return (char *)index;
  case ARG_DAT:
    break;
  }
  size_t row = arg.dat->elem * arg.dat->dim;
  if (!arg.map)
    return arg.dat->data + row * n;
  if (arg.idx >= 0)
    return arg.dat->data + row * arg.map->data[n * arg.map->dim + arg.idx];
  for (int k = 0; k < -arg.idx; k++)
    vec[k] = arg.dat->data + row * arg.map->data[n * arg.map->dim + k];
  return (char *)vec;
}

template <class... T, class... A, size_t... I>
void op_test_loop(std::index_sequence<I...>, void (*kernel)(T *...), op_set set, A... args) {
  op_arg all[] = {args...};
  int indices[sizeof...(A)];
  char *vectors[sizeof...(A)][OP_TEST_MAX_VECTOR];
  for (int n = 0; n < set->size; n++)
    kernel((T *)op_test_pointer(all[I], n, &indices[I], vectors[I])...);
}

template <class... T, class... A>
void op_par_loop(void (*kernel)(T *...), const char *, op_set set, A... args) {
  static_assert(sizeof...(T) == sizeof...(A), "one argument per kernel parameter");
  op_test_loop(std::index_sequence_for<A...>{}, kernel, set, args...);
}

#endif
