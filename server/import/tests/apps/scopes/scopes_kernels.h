// Kernels whose names C resolves block by block, and which op2 import must
// rename to keep their meaning in `.op2`.
#ifndef SCOPES_KERNELS_H
#define SCOPES_KERNELS_H

#include <cmath>

// Reads the kernel's `c1` where it is used, as cpp puts its text there.
#define TWICE_C1 (2.0 * c1)

// Reads the const `c1`, wherever it is inlined.
inline double scaled(double v) { return v * c1; }

// A local `c1` would hide the const `scaled` reads: it is renamed, and the
// macro reads the renamed local.
inline void hidden_by_local(const double *x, double *s) {
  double c1 = 2.0;
  *s += scaled(*x) + c1 + TWICE_C1;
}

// The same with a parameter.
inline void hidden_by_parameter(const double *c1, double *s) {
  *s += scaled(*c1) + *c1;
}

// `exit` is `exit_` in `.op2`, which is the const this kernel also reads.
inline void reserved(const double *x, double *s) {
  double exit = *x + 1.0;
  double t = exit * exit_;
  {
    // And an inner block declaring `exit` again.
    double exit = 0.5;
    t += exit;
  }
  *s += t;
}

// An inner block's `g` hides the const `g` in that block only; `v` is a
// `double` in one block and a `float` in another (whose `std::sqrt` is
// C++'s `float` overload); `m` has two dimensions in one block and one in
// another.
inline void blocks(const double *x, double *s) {
  // Summed here and added once: `.op2` adds a kernel's increments of a
  // global to it together (language.md §8), OP2's sequential build one by
  // one, which can differ in the last bit.
  double t = 0.0;
  {
    double g = *x * 3.0;
    t += g;
  }
  t += g * *x;
  {
    double v = *x;
    t += v;
  }
  {
    float v = (float)*x;
    t += std::sqrt(v) * 0.001;
  }
  {
    double m[2][2];
    for (int i = 0; i < 2; i++)
      for (int j = 0; j < 2; j++)
        m[i][j] = *x * (i + 1) + j;
    t += m[1][0] - m[0][1];
  }
  {
    double m[3] = {1.0, 2.0, *x};
    t += m[2] * m[1];
  }
  *s += t;
}

// A parameter bound to an INC argument through a map, hidden in an inner
// block by a local that the kernel assigns: only the parameter's own uses
// count (it is only added to, so it is not staged).
inline void shadowed_increment(const double *x, double *acc, double *s) {
  {
    double acc = *x * 2.0;
    acc = acc + 1.0;
    *s += acc;
  }
  *acc += *x;
}

// A helper whose object-like macro names the helper's parameter `v`: C
// expands it inside the helper, where `v` is the parameter, not the
// kernel's `v`.
#define SCALED_V (v * 3.0)
inline double scaled_v(double v) { return SCALED_V; }

// The consts `len` and `len_`, which `.op2` would both spell `len_`, read
// over the set `set`.
inline void lengths(const double *x, double *s) {
  double v = 100.0;
  *s += scaled_v(*x) + v + len * 10.0 + len_;
}

#endif
