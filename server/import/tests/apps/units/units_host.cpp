// A host function that `main` calls after its first par_loop.
double mean(double total, int n) { return total / n; }
