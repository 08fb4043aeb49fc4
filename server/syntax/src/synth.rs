//! Synthetic, valid `.op2` programs of a chosen size, for benchmarks and
//! tests that need a large realistic file, and the broken inputs on which
//! tree-sitter's error recovery is superlinear (F11, F12), for the tests of
//! the parse deadline.

use std::fmt::Write;

/// A valid program of about `lines` lines: airfoil-like declarations, many
/// kernels with C bodies of loops, locals and arithmetic, and a `main` that
/// runs each kernel once per iteration. Every declaration is used.
pub fn program(lines: usize) -> String {
    // Each kernel with its par_loop line takes 22 lines.
    let kernels = (lines.saturating_sub(30) / 22).max(1);
    let mut out = String::with_capacity(lines * 40);
    out.push_str(
        "// Synthetic program for benchmarks.\n\
         const gam: double = 1.4;\n\
         const gm1: double = gam - 1.0;\n\
         const weights: double[4] = {0.25, 0.25f, 0.5, 1.0e-3};\n\
         set nodes;\nset edges;\nset cells;\n\
         map pedge: edges -> nodes[2];\n\
         map pecell: edges -> cells[2];\n\
                  dat p_x: double[2] on nodes;\n\
         dat p_q: double[4] on cells;\n\
         dat p_res: double[4] on cells;\n\
         global rms: double = 0.0;\n\n",
    );
    for k in 0..kernels {
        let _ = write!(
            out,
            "kernel flux_{k}(const double *x1, const double *x2, const double *q1, const double *q2,\n\
             \x20               double *res1, double *res2) {{\n\
             \x20   double dx = x1[0] - x2[0];\n\
             \x20   double dy = x1[1] - x2[1], ri = 1.0 / q1[0];\n\
             \x20   double p1 = gm1 * (q1[3] - 0.5f * ri * (q1[1] * q1[1] + q1[2] * q1[2]));\n\
             \x20   double t[4] = {{0.0, 0.0, 0.0, 0.0}};\n\
             \x20   for (int n = 0; n < 4; n++) {{\n\
             \x20       t[n] = weights[n] * (q1[n] - q2[n]) + {k}.0 * dx;\n\
             \x20       if (t[n] > 1.0e3) {{\n\
             \x20           t[n] = 1.0e3;\n\
             \x20       }} else if (t[n] < -1.0e3) {{\n\
             \x20           t[n] = -1.0e3;\n\
             \x20       }}\n\
             \x20   }}\n\
             \x20   double f = sqrt(fabs(p1 * ri)) + dy * gam;\n\
             \x20   res1[0] += f * t[0];\n\
             \x20   res1[1] += f * t[1];\n\
             \x20   res2[0] -= f * t[0];\n\
             \x20   res2[1] -= f * t[1] + (double) ({m} % 3);\n\
             }}\n\n",
            m = k + 1
        );
    }
    out.push_str("kernel update(double *q, const double *res, double *r) {\n");
    out.push_str("    for (int n = 0; n < 4; n++) {\n        q[n] -= res[n];\n        *r += res[n] * res[n];\n    }\n}\n\n");
    out.push_str("main {\n    for (int iter = 0; iter < 10; iter++) {\n");
    for k in 0..kernels {
        let _ = writeln!(
            out,
            "        par_loop flux_{k} over edges (p_x[pedge[0]] READ, p_x[pedge[1]] READ, p_q[pecell[0]] READ, p_q[pecell[1]] READ, p_res[pecell[0]] INC, p_res[pecell[1]] INC);"
        );
    }
    out.push_str(
        "        rms = 0.0;\n        par_loop update over cells (p_q RW, p_res READ, rms INC);\n",
    );
    out.push_str("        print(\"%d %g\", iter, sqrt(rms / len(cells)));\n    }\n}\n");
    out
}

/// F11 of the fuzz findings: `n` unbraced `if` heads, a stray `[`, and `n`
/// more, in a kernel. tree-sitter's error recovery takes time superlinear
/// in `n` on it (1.9 s at `n` = 2,000 on the machine of
/// docs/reliability.md, unbounded), so a parse of it gives up (E002).
pub fn nested_ifs_with_a_stray_bracket(n: usize) -> String {
    let head = "if (h < 1.0) ";
    let mut out = String::with_capacity(80 + 2 * n * head.len());
    out.push_str("kernel k(double *q) { double h = 0.0;\n");
    out.push_str(&head.repeat(n));
    out.push_str("[ (h < 1.0) ");
    out.push_str(&head.repeat(n));
    out.push_str("h += 1.0; }\n");
    out
}

/// F12 of the fuzz findings: a kernel whose last statement is `s[2] =}`
/// on `n` lines. Quadratic in tree-sitter's error recovery (6.7 s at `n` =
/// 2,000, unbounded), so a parse of it gives up (E002).
pub fn broken_statement_lines(n: usize) -> String {
    let mut out = String::with_capacity(60 + 8 * n);
    out.push_str("set cells;\nkernel k(double *s) {\n    s[0] = 1;\n");
    out.push_str(&"s[2] =}\n".repeat(n));
    out
}

/// Fuzz campaign seed 3, case 520799: in a kernel, a call whose argument
/// opens `q[0lo, ` `n` times, then once without its `, `, `3n/8` times
/// more, then `q{0lo, ` and `3n/16` more; each followed by `spaces` spaces.
/// tree-sitter's error recovery asks for about 1,200 bytes of memory per
/// byte of it without spaces (40 KiB per progress call, with or without
/// them), and at the end of the text, where no progress call comes, walks
/// every path of its merged stack: at `n` = 8,000 (87 KB) that took 3.1 GB
/// (gross) and 4.6 s of CPU in one step; the case itself (310 KB) took 2.8
/// GB at once, and 39 GB gross. So a parse of it gives up (E002) on its
/// memory, before the end.
pub fn unclosed_subscripts_in_a_call(n: usize, spaces: usize) -> String {
    let unit = format!("q[0lo, {}", " ".repeat(spaces));
    let mut out = String::with_capacity(200 + 2 * unit.len() * n);
    out.push_str("kernel stats(const double *q, const double *s1, double *lo, double *sum) {\n");
    out.push_str("    *lo = fmin(*lo, ");
    out.push_str(&unit.repeat(n));
    out.push_str("q[0lo");
    out.push_str(&unit.repeat(3 * n / 8));
    out.push_str("q{0lo, ");
    out.push_str(&unit.repeat(3 * n / 16));
    out.push_str("q[0] * s1[0]);\n    *sum += q[0];\n}\n");
    out
}

/// The campaign of 883bf24, case 79163 (F13): a kernel of `n` lines
/// `    r[0] = t[0] + u[;`, each leaving a `[` open, with `middle` (any one
/// other token: `)`, a quote, `#`, a NUL) on a line of its own half way.
/// After it, tree-sitter's error recovery nests every later line inside the
/// one before, its stack grows with the text, and its walk over that stack
/// when the text ends is quadratic in it: at `n` = 16,000 (352 KB) 5.3 GB
/// and 21 s, the case's 45,485 lines (1 MB) 12 GB. A parse now gives up
/// before tree-sitter sees such a text ([`crate::limit::MOST_OPEN_SUBSCRIPTS`]).
pub fn open_subscripts_around(n: usize, middle: &str) -> String {
    let line = "    r[0] = t[0] + u[;\n";
    let mut out = String::with_capacity(100 + line.len() * n + middle.len());
    out.push_str("kernel k(double *r) {\n    double t[2];\n    double u[2];\n");
    out.push_str(&line.repeat(n / 2));
    out.push_str(middle);
    out.push('\n');
    out.push_str(&line.repeat(n - n / 2));
    out.push_str("}\n");
    out
}

/// Fuzz campaign seed 5, case 713594: in `main`'s `for`, `n` lines
/// `par_loop sum over cells (p_q READ, total INC)i++) {`, each opening a
/// block it never closes. The parser reads it in linear time; the root is
/// then one ERROR holding about two items per line, and asking tree-sitter
/// for each item's parent (a walk from the root past every earlier child)
/// made `op2 check` quadratic: 54 s at `n` = 32,982 (issue #12).
pub fn unclosed_par_loop_lines(n: usize) -> String {
    let line = "        par_loop sum over cells (p_q READ, total INC)i++) {\n";
    let mut out = String::with_capacity(400 + line.len() * n);
    out.push_str(
        "set cells;\ndat p_q: double on cells;\nglobal total: double;\n\
         kernel sum(const double *q, double *t) { *t += q[0]; }\n\n\
         main {\n    total = 0.0;\n    for (int i = 0; i < 3; i++) {\n",
    );
    out.push_str(&line.repeat(n));
    out.push_str("        par_loop sum over cells (p_q READ, total INC);\n    }\n}\n");
    out
}

/// `main` declaring `n` locals in one declaration (`double x0 = 0.0, x1 =
/// 0.0, …;`) and then using them: the lowering looked each name up by a
/// scan of the block's locals, and the controller counted the locals of
/// each name by a scan of all of them, so `op2 check` and `op2 build` were
/// quadratic in `n` (issue #12: at 32,000, 5.9 s and 9.4 s in a debug build).
pub fn many_locals(n: usize) -> String {
    let mut out = String::with_capacity(40 + 14 * n + 30 * n.min(1_000));
    out.push_str("main {\n    double ");
    comma_separated(&mut out, n, |out, i| {
        let _ = write!(out, "x{i} = 0.0");
    });
    out.push_str(";\n");
    for i in 0..n.min(1_000) {
        let _ = writeln!(out, "    x{i} = x{} + 1.0;", n - 1 - i);
    }
    out.push_str("}\n");
    out
}

/// A kernel of `n` parameters, each used once, run by one par_loop: a
/// duplicate parameter was looked for by a scan of the earlier ones, and
/// each use of a parameter by a scan of them all, so `op2 check` was
/// quadratic in `n` (issue #12: at 32,000, 9.2 s in a debug build).
pub fn many_parameters(n: usize) -> String {
    let mut out = String::with_capacity(60 * n + 100);
    out.push_str("set s;\ndat d: double on s;\nkernel k(");
    comma_separated(&mut out, n, |out, i| {
        let _ = write!(out, "double *q{i}");
    });
    out.push_str(") {\n");
    for i in 0..n {
        let _ = writeln!(out, "    q{i}[0] = q{i}[0] + 1.0;");
    }
    out.push_str("}\n\nmain {\n    par_loop k over s (");
    comma_separated(&mut out, n, |out, _| out.push_str("d RW"));
    out.push_str(");\n}\n");
    out
}

/// A par_loop of `n` arguments on one dat, each through another index of
/// a map (maps of 50,000 indices, under the arity limit) and `RW`, bound to
/// a kernel of `n` parameters that does nothing: no two conflict or
/// repeat, so each was compared with every earlier one, and each one's
/// H506 asked whether `READ` would conflict with any other, so `op2 check`
/// was quadratic in `n` (review of 2026-11-29: 3.4 s at 40,000 in a
/// release build).
pub fn many_arguments_on_one_dat(n: usize) -> String {
    const ARITY: usize = 50_000;
    let mut out = String::with_capacity(40 * n + 100);
    out.push_str("set s;\nset t;\n");
    for m in 0..n.div_ceil(ARITY) {
        let _ = writeln!(out, "map m{m}: s -> t [{ARITY}];");
    }
    out.push_str("dat x: double on t;\nkernel k(");
    comma_separated(&mut out, n, |out, i| {
        let _ = write!(out, "double *a{i}");
    });
    out.push_str(") { }\n\nmain {\n    par_loop k over s (");
    comma_separated(&mut out, n, |out, i| {
        let _ = write!(out, "x[m{}[{}]] RW", i / ARITY, i % ARITY);
    });
    out.push_str(");\n}\n");
    out
}

/// `n` par_loops of one kernel over one set, each `par_loop k over s (d
/// RW);`, or with a name of its own (`as k_I`) when `named`: the graph has
/// one device type with the pins of all of them and an aggregator type per
/// par_loop, which made the hardware-limit check and the code lenses
/// quadratic (docs/reliability.md, *Costs that were superlinear*).
pub fn par_loops_of_one_kernel(n: usize, named: bool) -> String {
    let mut out = String::with_capacity(40 * n + 100);
    out.push_str(
        "set s;\ndat d: double on s;\nkernel k(double *q) {\n    q[0] = q[0] + 1.0;\n}\nmain {\n",
    );
    for i in 0..n {
        if named {
            let _ = writeln!(out, "    par_loop k as k_{i} over s (d RW);");
        } else {
            out.push_str("    par_loop k over s (d RW);\n");
        }
    }
    out.push_str("}\n");
    out
}

/// Writes `n` items, `item(out, i)` for each `i`, separated by `, `.
fn comma_separated(out: &mut String, n: usize, item: impl Fn(&mut String, usize)) {
    for i in 0..n {
        if i > 0 {
            out.push_str(", ");
        }
        item(out, i);
    }
}
