// op2 import's recording implementation of OP2's HDF5 API (op_hdf5.h).
//
// Included by the recording op_seq.h when the application calls OP2's HDF5
// functions; op2 import then compiles it against the HDF5 C library. The
// op_decl_*_hdf5 calls read OP2's layout (a dataset per set holding its
// size; a dataset per map, dat and const, one row per element) and declare
// what they read exactly as op_decl_set, op_decl_map and op_decl_dat do, so
// the capture sees the mesh as if the program had read it by hand. As with
// OP2, a map or dat that the file lacks gives NULL; a missing file or set, or
// a dataset of the wrong shape, ends the set-up with a message naming it.
// Writing calls (op_dump_to_hdf5, op_write_const_hdf5, ...) write nothing.
#ifndef OP2_IMPORT_RECORDING_HDF5_H
#define OP2_IMPORT_RECORDING_HDF5_H

#include <hdf5.h>
#include <vector>

// Ends the set-up the way OP2 does for a file it cannot use.
static void op2_import_hdf5_fail(const char *what, const char *name, const char *file) {
  fflush(stdout);
  fprintf(stderr, "op2 import: %s `%s` in HDF5 file `%s`\n", what, name, file);
  exit(2);
}

// The file, opened read-only (HDF5's own error printing off).
static hid_t op2_import_hdf5_open(const char *file) {
  // Recorded (its bytes in hex), so that the import never writes its
  // instance over a file the application reads.
  FILE *capture = op2_import_file();
  fputs("read ", capture);
  for (const char *c = file; *c; c++)
    fprintf(capture, "%02x", (unsigned)(unsigned char)*c);
  fputc('\n', capture);
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  FILE *probe = fopen(file, "rb");
  hid_t id = probe ? H5Fopen(file, H5F_ACC_RDONLY, H5P_DEFAULT) : -1;
  if (probe)
    fclose(probe);
  if (id < 0) {
    fflush(stdout);
    fprintf(stderr, "op2 import: %s `%s`\n",
            probe ? "not an HDF5 file:" : "cannot open the HDF5 file", file);
    exit(2);
  }
  return id;
}

// Reads dataset `name` of `file` as `count` values of the memory type
// `type` into `out`. Returns false when the file has no such dataset; ends
// the set-up when it holds a different number of values.
static bool op2_import_hdf5_read(const char *file, const char *name, hid_t type,
                                 long long count, void *out) {
  hid_t file_id = op2_import_hdf5_open(file);
  if (H5Lexists(file_id, name, H5P_DEFAULT) <= 0) {
    H5Fclose(file_id);
    return false;
  }
  hid_t dataset = H5Dopen2(file_id, name, H5P_DEFAULT);
  if (dataset < 0)
    op2_import_hdf5_fail("cannot open dataset", name, file);
  hid_t space = H5Dget_space(dataset);
  long long stored = (long long)H5Sget_simple_extent_npoints(space);
  if (stored != count) {
    fflush(stdout);
    fprintf(stderr, "op2 import: dataset `%s` in HDF5 file `%s` holds %lld values where %lld were declared\n",
            name, file, stored, count);
    exit(2);
  }
  if (count > 0 && H5Dread(dataset, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, out) < 0)
    op2_import_hdf5_fail("cannot read dataset", name, file);
  H5Sclose(space);
  H5Dclose(dataset);
  H5Fclose(file_id);
  return true;
}

// The type named by an OP2 `type` string, without a `:soa` suffix.
static bool op2_import_hdf5_is(const char *type, const char *name) {
  size_t n = strlen(name);
  return strncmp(type, name, n) == 0 && (type[n] == '\0' || type[n] == ':');
}

inline op_set op_decl_set_hdf5(char const *file, char const *name) {
  int size = 0;
  if (!op2_import_hdf5_read(file, name, H5T_NATIVE_INT, 1, &size))
    op2_import_hdf5_fail("no set", name, file);
  if (size < 0)
    op2_import_hdf5_fail("a negative size for set", name, file);
  return op_decl_set(size, name);
}

inline op_map op_decl_map_hdf5(op_set from, op_set to, int dim, char const *file,
                               char const *name) {
  if (dim < 0)
    op2_import_hdf5_fail("a negative dim for map", name, file);
  std::vector<int> data((size_t)from->size * dim);
  if (!op2_import_hdf5_read(file, name, H5T_NATIVE_INT, (long long)data.size(), data.data()))
    return NULL;
  return op_decl_map(from, to, dim, data.data(), name);
}

template <class T>
static op_dat op2_import_hdf5_dat(op_set set, int dim, char const *type, char const *file,
                                  char const *name, hid_t h5type) {
  if (dim < 0)
    op2_import_hdf5_fail("a negative dim for dat", name, file);
  std::vector<T> data((size_t)set->size * dim);
  if (!op2_import_hdf5_read(file, name, h5type, (long long)data.size(), data.data()))
    return NULL;
  return op_decl_dat(set, dim, type, data.data(), name);
}

inline op_dat op_decl_dat_hdf5(op_set set, int dim, char const *type, char const *file,
                               char const *name) {
  if (op2_import_hdf5_is(type, "double"))
    return op2_import_hdf5_dat<double>(set, dim, type, file, name, H5T_NATIVE_DOUBLE);
  if (op2_import_hdf5_is(type, "float"))
    return op2_import_hdf5_dat<float>(set, dim, type, file, name, H5T_NATIVE_FLOAT);
  if (op2_import_hdf5_is(type, "int"))
    return op2_import_hdf5_dat<int>(set, dim, type, file, name, H5T_NATIVE_INT);
  if (op2_import_hdf5_is(type, "long long") || op2_import_hdf5_is(type, "long"))
    return op2_import_hdf5_dat<long long>(set, dim, type, file, name, H5T_NATIVE_LLONG);
  if (op2_import_hdf5_is(type, "unsigned int") || op2_import_hdf5_is(type, "uint"))
    return op2_import_hdf5_dat<unsigned>(set, dim, type, file, name, H5T_NATIVE_UINT);
  op2_import_hdf5_fail("unknown type for dat", name, file);
  return NULL;
}

inline void op_get_const_hdf5(char const *name, int dim, char const *type, char *data,
                              char const *file) {
  hid_t h5type = H5T_NATIVE_DOUBLE;
  if (op2_import_hdf5_is(type, "float"))
    h5type = H5T_NATIVE_FLOAT;
  else if (op2_import_hdf5_is(type, "int"))
    h5type = H5T_NATIVE_INT;
  else if (op2_import_hdf5_is(type, "long long") || op2_import_hdf5_is(type, "long"))
    h5type = H5T_NATIVE_LLONG;
  else if (!op2_import_hdf5_is(type, "double"))
    op2_import_hdf5_fail("unknown type for const", name, file);
  if (!op2_import_hdf5_read(file, name, h5type, dim, data))
    op2_import_hdf5_fail("no const", name, file);
}

inline void op_dump_to_hdf5(char const *) {}
inline void op_write_hdf5(char const *) {}
inline void op_write_const_hdf5(char const *, int, char const *, char *, char const *) {}
inline void op_fetch_data_hdf5_file(op_dat, char const *) {}
inline void op_fetch_data_hdf5_file_path(op_dat, char const *, char const *) {}

#endif
