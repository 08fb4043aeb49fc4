// `OFFSET` comes from the forced include `pre/forced.h`, `HALF` from a
// definition the entry's command quotes.
inline void step(double *u) { *u = *u * GAIN + OFFSET * (HALF + HALF); }

inline void sum(const double *u, double *total) { *total += *u; }
