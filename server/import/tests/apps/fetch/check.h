// Host functions op2 import inlines into `main`: templates whose type comes
// from the call or from a cast argument, `return`s that end the function,
// and a pointer parameter that names the caller's buffer.
#ifndef CHECK_H
#define CHECK_H

#ifndef STRIDE
#define STRIDE 1
#endif

template <class T> inline int differs(int i, T val, T ref, T tol) {
  if (fabs(val - ref) > tol) {
    op_printf("element %d: expected %.17g, got %.17g\n", i, ref, val);
    return 1;
  }
  return 0;
}

template <class T> int check(T *v, int n, T tol) {
  int failed = 0;
  for (int i = 0; i < n; i++) {
    T expected = 0.75 * i + 1.0;
    int bad = differs(i, v[STRIDE * i], (T)expected, tol);
    failed += bad;
  }
  if (failed == 0)
    op_printf("check passed\n");
  else
    op_printf("check failed at %d elements\n", failed);
  return failed;
}

#endif
