//! Quick fixes as data: a program with one diagnostic, the program after
//! its fix is applied, and the check that the fixed program no longer has
//! the diagnostic.

use std::path::Path;

use op2_analysis::{Options, analyse_text};
use op2_syntax::{Code, Diagnostic, Fix};

fn diagnostics(text: &str) -> Vec<Diagnostic> {
    analyse_text(Path::new("fix.op2"), text, &Options::default()).diagnostics
}

/// Applies every edit of `fix` to `text`.
fn apply(text: &str, fix: &Fix) -> String {
    let mut edits = fix.edits.clone();
    edits.sort_by_key(|e| std::cmp::Reverse((e.range.start, e.range.end)));
    let mut out = text.to_owned();
    for edit in edits {
        assert_eq!(edit.file, op2_syntax::FileId::MAIN, "edit in another file");
        out.replace_range(edit.range.to_usize(), &edit.replacement);
    }
    out
}

/// `before` has exactly one diagnostic `code`; its first fix, whose title
/// contains `title`, turns the text into `after`, which has no `code`.
#[track_caller]
fn check_fix(code: Code, title: &str, before: &str, after: &str) {
    let found: Vec<Diagnostic> = diagnostics(before)
        .into_iter()
        .filter(|d| d.code == code)
        .collect();
    assert_eq!(
        found.len(),
        1,
        "expected one {code} in:\n{before}\nfound {found:#?}"
    );
    let diagnostic = &found[0];
    let fix = diagnostic
        .fixes
        .first()
        .unwrap_or_else(|| panic!("{code} has no fix: {diagnostic:#?}"));
    assert!(
        fix.title.contains(title),
        "{code}: fix title {:?} does not contain {title:?}",
        fix.title
    );
    let fixed = apply(before, fix);
    assert_eq!(fixed, after, "{code}: the fix produced:\n{fixed}");
    let remaining: Vec<Diagnostic> = diagnostics(&fixed)
        .into_iter()
        .filter(|d| d.code == code)
        .collect();
    assert!(
        remaining.is_empty(),
        "{code} remains after its fix: {remaining:#?}"
    );
}

const PRELUDE: &str =
    "set cells;\ndat p_q: double[2] on cells;\ndat p_r: double on cells;\nglobal total: double;\n";

/// The prelude, a kernel and `main`.
fn program(kernels: &str, main: &str) -> String {
    format!("{PRELUDE}{kernels}\nmain {{\n{main}\n    print(\"%g\", total);\n}}\n")
}

#[test]
fn e501_read_parameter_written_becomes_rw() {
    let kernels = "kernel k(double *q, double *t) { q[0] = 1.0; *t += q[1]; }";
    check_fix(
        Code::E501,
        "change the mode to `RW`",
        &program(kernels, "    par_loop k over cells (p_q READ, total INC);"),
        &program(kernels, "    par_loop k over cells (p_q RW, total INC);"),
    );
}

#[test]
fn e502_direct_inc_parameter_read_becomes_rw() {
    let kernels = "kernel k(double *r, double *t) { r[0] = r[0] * 2.0; *t += r[0]; }";
    // The `=` and the read are one E502, for the one argument.
    check_fix(
        Code::E502,
        "change the mode to `RW`",
        &program(kernels, "    par_loop k over cells (p_r INC, total INC);"),
        &program(kernels, "    par_loop k over cells (p_r RW, total INC);"),
    );
    let found: Vec<Diagnostic> = diagnostics(&program(
        kernels,
        "    par_loop k over cells (p_r INC, total INC);",
    ))
    .into_iter()
    .filter(|d| d.code == Code::E502)
    .collect();
    assert_eq!(found.len(), 1, "{found:#?}");
    // The argument, and the two reads as further uses.
    assert_eq!(found[0].related.len(), 3, "{found:#?}");
}

#[test]
fn e502_through_a_map_offers_no_mode_change() {
    // `RW` through a map would overwrite where INC sums (a race, E704) or
    // conflict with the other INC on the dat (E401): the kernel must add.
    let text = "set cells;\nset edges;\nmap m: edges -> cells[2];\ndat p_r: double on cells;\n\
                kernel k(double *a, double *b) { a[0] = a[0] + 1.0; b[0] += 1.0; }\n\
                main { par_loop k over edges (p_r[m[0]] INC, p_r[m[1]] INC); }\n";
    let found: Vec<Diagnostic> = diagnostics(text)
        .into_iter()
        .filter(|d| d.code == Code::E502)
        .collect();
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(found[0].fixes.is_empty(), "{:#?}", found[0].fixes);
}

#[test]
fn w503_write_parameter_read_first_becomes_rw() {
    let kernels = "kernel k(double *r, double *t) { r[0] += 1.0; *t += r[0]; }";
    check_fix(
        Code::W503,
        "change the mode to `RW`",
        &program(kernels, "    par_loop k over cells (p_r WRITE, total INC);"),
        &program(kernels, "    par_loop k over cells (p_r RW, total INC);"),
    );
}

#[test]
fn e504_removes_const() {
    let main = "    par_loop k over cells (p_r INC, total INC);";
    check_fix(
        Code::E504,
        "remove `const`",
        &program(
            "kernel k(const double *r, double *t) { r[0] += 1.0; *t += 1.0; }",
            main,
        ),
        &program(
            "kernel k(double *r, double *t) { r[0] += 1.0; *t += 1.0; }",
            main,
        ),
    );
}

#[test]
fn h505_adds_const() {
    let main = "    par_loop k over cells (p_r READ, total INC);";
    check_fix(
        Code::H505,
        "`const`",
        &program("kernel k(double *r, double *t) { *t += r[0]; }", main),
        &program("kernel k(const double *r, double *t) { *t += r[0]; }", main),
    );
}

#[test]
fn h506_weakens_rw_to_read() {
    let kernels = "kernel k(double *r, double *t) { *t += r[0]; }";
    check_fix(
        Code::H506,
        "change the mode to `READ`",
        &program(kernels, "    par_loop k over cells (p_r RW, total INC);"),
        &program(kernels, "    par_loop k over cells (p_r READ, total INC);"),
    );
}

#[test]
fn h506_weakens_rw_to_write() {
    let kernels = "kernel k(const double *q, double *r) { r[0] = q[0]; }\nkernel s(const double *r, double *t) { *t += r[0]; }";
    let tail = "\n    par_loop s over cells (p_r READ, total INC);";
    check_fix(
        Code::H506,
        "change the mode to `WRITE`",
        &program(
            kernels,
            &format!("    par_loop k over cells (p_q READ, p_r RW);{tail}"),
        ),
        &program(
            kernels,
            &format!("    par_loop k over cells (p_q READ, p_r WRITE);{tail}"),
        ),
    );
}

#[test]
fn e311_duplicate_as_name_is_renamed() {
    let kernels = "kernel k(const double *r, double *t) { *t += r[0]; }";
    check_fix(
        Code::E311,
        "rename the invocation",
        &program(
            kernels,
            "    par_loop k as step over cells (p_r READ, total INC);\n    par_loop k as step over cells (p_r READ, total INC);",
        ),
        &program(
            kernels,
            "    par_loop k as step over cells (p_r READ, total INC);\n    par_loop k as step_loop over cells (p_r READ, total INC);",
        ),
    );
}

#[test]
fn e311_as_name_of_a_set_named_like_a_type_is_renamed_without_the_keyword() {
    // `intx_loop`, `intx_loop_1`, … all start with `int` (E312): the search
    // for a free name used to never end.
    let prelude = format!("{PRELUDE}set intx;\ndat p_x: double on intx;\n");
    let kernels = "kernel k(const double *r, double *t) { *t += r[0]; }";
    let text = |name: &str| {
        format!(
            "{prelude}{kernels}\nmain {{\n    par_loop k as {name} over intx (p_x READ, total INC);\n    print(\"%g\", total);\n}}\n"
        )
    };
    check_fix(
        Code::E311,
        "rename the invocation to `run_intx_loop`",
        &text("intx"),
        &text("run_intx_loop"),
    );
}

#[test]
fn e311_as_name_of_a_dat_is_renamed() {
    let kernels = "kernel k(const double *r, double *t) { *t += r[0]; }";
    check_fix(
        Code::E311,
        "rename the invocation",
        &program(
            kernels,
            "    par_loop k as p_r over cells (p_r READ, total INC);",
        ),
        &program(
            kernels,
            "    par_loop k as p_r_loop over cells (p_r READ, total INC);",
        ),
    );
}

#[test]
fn e312_kernel_name_gets_an_as_name() {
    let kernels = "kernel double_it(const double *r, double *t) { *t += 2.0 * r[0]; }";
    check_fix(
        Code::E312,
        "name the invocation",
        &program(
            kernels,
            "    par_loop double_it over cells (p_r READ, total INC);",
        ),
        &program(
            kernels,
            "    par_loop double_it as run_double_it over cells (p_r READ, total INC);",
        ),
    );
}

#[test]
fn e312_as_name_is_replaced() {
    let kernels = "kernel k(const double *r, double *t) { *t += r[0]; }";
    check_fix(
        Code::E312,
        "name the invocation",
        &program(
            kernels,
            "    par_loop k as int_loop over cells (p_r READ, total INC);",
        ),
        &program(
            kernels,
            "    par_loop k as run_int_loop over cells (p_r READ, total INC);",
        ),
    );
}

#[test]
fn e101_did_you_mean_in_a_par_loop() {
    let kernels = "kernel k(const double *r, double *t) { *t += r[0]; }";
    check_fix(
        Code::E101,
        "use `p_r`",
        &program(kernels, "    par_loop k over cells (p_rr READ, total INC);"),
        &program(kernels, "    par_loop k over cells (p_r READ, total INC);"),
    );
    check_fix(
        Code::E101,
        "use `cells`",
        &program(kernels, "    par_loop k over cels (p_r READ, total INC);"),
        &program(kernels, "    par_loop k over cells (p_r READ, total INC);"),
    );
    check_fix(
        Code::E101,
        "use `k`",
        &program(kernels, "    par_loop kk over cells (p_r READ, total INC);"),
        &program(kernels, "    par_loop k over cells (p_r READ, total INC);"),
    );
}

#[test]
fn e101_did_you_mean_in_a_declaration() {
    check_fix(
        Code::E101,
        "use `cells`",
        "set cells;\ndat p_q: double on cels;\n",
        "set cells;\ndat p_q: double on cells;\n",
    );
}

#[test]
fn e308_const_argument_becomes_read() {
    let kernels = "kernel k(const double *s, double *t) { *t += s[0]; }";
    let prelude = "const scale: double = 2.0;\n";
    check_fix(
        Code::E308,
        "use `READ`",
        &format!(
            "{prelude}{}",
            program(kernels, "    par_loop k over cells (scale INC, total INC);")
        ),
        &format!(
            "{prelude}{}",
            program(
                kernels,
                "    par_loop k over cells (scale READ, total INC);"
            )
        ),
    );
}

/// E501's "change the mode to `RW`" is offered only for an argument that
/// may be `RW`: for `idx`, a const, `len(…)` or a global it would trade the
/// error for E308, so there is no fix (the kernel must not write there).
#[test]
fn no_mode_fix_where_the_mode_is_not_allowed() {
    let text = "set cells;
const c: double = 1.0;
global g: double;
dat p: double on cells;
kernel kiw(int *i, double *d, double *e) { i[0] = 1; d[0] = 2.0; e[0] = 3.0; }
kernel wi(int *x) { x[0] = 1; }
kernel w(double *x) { x[0] = 1.0; }
main {
    par_loop kiw over cells (idx, c READ, g READ);
    par_loop wi over cells (len(cells) READ);
    par_loop w over cells (p READ);
    print(\"%g\", g);
}
";
    let found: Vec<(String, usize)> = diagnostics(text)
        .into_iter()
        .filter(|d| d.code == Code::E501)
        .map(|d| (d.message.clone(), d.fixes.len()))
        .collect();
    assert_eq!(found.len(), 5, "{found:#?}");
    for (message, fixes) in &found {
        let expected = usize::from(message.contains("argument `p`"));
        assert_eq!(*fixes, expected, "{message}");
    }
}
