// op2 import's recording implementation of OP2's C++ API.
//
// `op2 import` compiles the application against this header instead of OP2's
// own. The set-up part of the program runs as written (reading mesh files,
// allocating, computing); every op_decl_* call writes what it declares to the
// file named by OP2_IMPORT_CAPTURE, and the call op2 import inserts before the
// first op_par_loop writes the host values the rest of the program reads, then
// ends the run. Nothing here computes a par_loop.
#ifndef OP2_IMPORT_RECORDING_OP_SEQ_H
#define OP2_IMPORT_RECORDING_OP_SEQ_H

#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>

typedef enum { OP_READ, OP_WRITE, OP_RW, OP_INC, OP_MIN, OP_MAX } op_access;

struct op_set_core { int index; int size; char const *name; };
struct op_map_core { int index; op_set_core *from; op_set_core *to; int dim; char const *name; };
struct op_dat_core { int index; op_set_core *set; int dim; char const *name; };
typedef op_set_core *op_set;
typedef op_map_core *op_map;
typedef op_dat_core *op_dat;
struct op_arg { int unused; };

#define OP_ID ((op_map)0)
#ifndef MIN
#define MIN(a, b) ((a < b) ? (a) : (b))
#endif
#ifndef MAX
#define MAX(a, b) ((a > b) ? (a) : (b))
#endif
#define OP_GBL ((op_map)0)

// One capture file and one numbering of the declarations for the whole
// program: `inline` (C++17) makes each a single object across the
// application's translation units, which may each declare sets, maps and
// dats (a `static` would give every unit its own file and counters).
inline FILE *op2_import_file() {
  static FILE *file = 0;
  if (!file) {
    const char *path = getenv("OP2_IMPORT_CAPTURE");
    if (!path || !(file = fopen(path, "w"))) {
      fprintf(stderr, "op2 import: cannot open the capture file\n");
      exit(97);
    }
  }
  return file;
}

inline int op2_import_sets = 0, op2_import_maps = 0, op2_import_dats = 0;

// The element types OP2 allows, as op2 names them. Any other type is left
// undeclared, so using one fails to compile naming op2_import_kind<T>.
template <class T> struct op2_import_kind;
template <> struct op2_import_kind<double> { static const char *name() { return "double"; } static void put(FILE *f, double v) { fprintf(f, " %.17g", v); } };
template <> struct op2_import_kind<float> { static const char *name() { return "float"; } static void put(FILE *f, float v) { fprintf(f, " %.9g", (double)v); } };
template <> struct op2_import_kind<int> { static const char *name() { return "int"; } static void put(FILE *f, int v) { fprintf(f, " %d", v); } };
template <> struct op2_import_kind<unsigned> { static const char *name() { return "uint"; } static void put(FILE *f, unsigned v) { fprintf(f, " %u", v); } };
template <> struct op2_import_kind<long long> { static const char *name() { return "ll"; } static void put(FILE *f, long long v) { fprintf(f, " %lld", v); } };
template <> struct op2_import_kind<long> { static const char *name() { return "ll"; } static void put(FILE *f, long v) { fprintf(f, " %lld", (long long)v); } };
template <> struct op2_import_kind<unsigned long long> { static const char *name() { return "ull"; } static void put(FILE *f, unsigned long long v) { fprintf(f, " %llu", v); } };
template <> struct op2_import_kind<unsigned long> { static const char *name() { return "ull"; } static void put(FILE *f, unsigned long v) { fprintf(f, " %llu", (unsigned long long)v); } };
template <> struct op2_import_kind<bool> { static const char *name() { return "bool"; } static void put(FILE *f, bool v) { fprintf(f, " %d", v ? 1 : 0); } };

template <class T> inline void op2_import_values(const T *data, long long count) {
  FILE *f = op2_import_file();
  for (long long i = 0; i < count; i++)
    op2_import_kind<T>::put(f, data[i]);
  fputc('\n', f);
}

inline void op_init(int, char **, int) {}
inline void op_exit() {}
inline void op_timers(double *cpu, double *wall) { *cpu = 0; *wall = 0; }
inline void op_timers_core(double *cpu, double *wall) { *cpu = 0; *wall = 0; }
inline void op_timing_output() {}
inline void op_diagnostic_output() {}
// One process: the root.
inline int op_is_root() { return 1; }
inline void op_partition(const char *, const char *, op_set, op_map, op_dat) {}
inline void op_renumber(op_map) {}
#define op_printf printf

inline op_set op_decl_set(int size, char const *name) {
  op_set set = new op_set_core{op2_import_sets++, size, name};
  fprintf(op2_import_file(), "set %d %d\n", set->index, size);
  return set;
}

inline op_map op_decl_map(op_set from, op_set to, int dim, int *data, char const *name) {
  op_map map = new op_map_core{op2_import_maps++, from, to, dim, name};
  fprintf(op2_import_file(), "map %d %d %d %d\n", map->index, from->index, to->index, dim);
  if (data)
    op2_import_values(data, (long long)from->size * dim);
  else
    fputs("null\n", op2_import_file());
  return map;
}

template <class T>
op_dat op_decl_dat(op_set set, int dim, char const *, T *data, char const *name) {
  op_dat dat = new op_dat_core{op2_import_dats++, set, dim, name};
  fprintf(op2_import_file(), "dat %d %d %d %s\n", dat->index, set->index, dim,
          op2_import_kind<T>::name());
  if (data)
    op2_import_values(data, (long long)set->size * dim);
  else
    fputs("null\n", op2_import_file());
  return dat;
}

// A temporary dat: OP2 allocates it zeroed and ignores `data`.
template <class T>
op_dat op_decl_dat_temp(op_set set, int dim, char const *type, T *, char const *name) {
  return op_decl_dat(set, dim, type, (T *)0, name);
}
inline int op_free_dat_temp(op_dat) { return 0; }

// Values are read where op2 import stops the run, by name.
template <class T> void op_decl_const(int, char const *, T *) {}
template <class T> void op_decl_const2(char const *, int, char const *, T *) {}

inline int op_get_size(op_set set) { return set->size; }

inline op_arg op_arg_dat(op_dat, int, op_map, int, char const *, op_access) { return op_arg(); }
inline op_arg op_opt_arg_dat(int, op_dat, int, op_map, int, char const *, op_access) { return op_arg(); }
template <class T> op_arg op_arg_gbl(T *, int, char const *, op_access) { return op_arg(); }
inline op_arg op_arg_idx(int, op_map) { return op_arg(); }
template <class T> op_arg op_arg_info(T *, int, char const *, int) { return op_arg(); }

template <class... A> void op_par_loop(A...) {
  fprintf(stderr, "op2 import: the program reached an op_par_loop before the point where "
                  "op2 import stops it (a par_loop inside a function, or inside set-up "
                  "code?)\n");
  exit(98);
}

template <class T> void op_fetch_data(op_dat, T *) {}
template <class T> void op_fetch_data_idx(op_dat, T *, int, int) {}
inline void op_print_dat_to_txtfile(op_dat, const char *) {}
inline void op_print_dat_to_binfile(op_dat, const char *) {}
inline void *op_malloc(size_t size) { return malloc(size); }
inline void *op_calloc(size_t n, size_t size) { return calloc(n, size); }
inline void *op_realloc(void *p, size_t size) { return realloc(p, size); }
inline void op_free(void *p) { free(p); }

// Called where the program would start its first par_loop.
inline void op2_import_handle(const char *name, op_set s) { fprintf(op2_import_file(), "handle %s set %d\n", name, s ? s->index : -1); }
inline void op2_import_handle(const char *name, op_map m) { fprintf(op2_import_file(), "handle %s map %d\n", name, m ? m->index : -1); }
inline void op2_import_handle(const char *name, op_dat d) { fprintf(op2_import_file(), "handle %s dat %d\n", name, d ? d->index : -1); }
template <class T> void op2_import_value(const char *name, const T &value) {
  fprintf(op2_import_file(), "value %s %s 1\n", name, op2_import_kind<T>::name());
  op2_import_values(&value, 1);
}
template <class T, size_t N> void op2_import_value(const char *name, const T (&value)[N]) {
  fprintf(op2_import_file(), "value %s %s %d array\n", name, op2_import_kind<T>::name(), (int)N);
  op2_import_values(value, (long long)N);
}
inline void op2_import_stop() {
  fputs("stop\n", op2_import_file());
  fflush(stdout);
  if (fclose(op2_import_file()) != 0)
    exit(97);
  exit(0);
}

// OP2's HDF5 API, when op2 import found the application using it (it then
// compiles against the HDF5 C library).
#ifdef OP2_IMPORT_HDF5
#include "op2_import_hdf5.h"
#endif

#endif
