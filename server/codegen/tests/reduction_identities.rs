//! The identities and the tie rule of the generated reductions
//! (compilation.md §10) behave in C++ as `op2 simulate` computes them: the
//! aggregator's begin handler starts a `double` MIN partial at `+inf`, a
//! `float` MAX partial at `-inf` and a `double` INC partial at `-0.0`
//! (taken from the generated handler, as written there), and the shared
//! code's `op2_below` and `op2_above`, which every generated MIN or MAX
//! combine uses for a floating type, prefer `-0.0` for MIN and `0.0` for
//! MAX and never take or lose to a NaN. The C++ is compiled with the system
//! compiler (as `cpp_compiles`) and run.

use crate::cpp_compiles::{compiler, work_dir};
use crate::graph_type_support::analyse_source;

use std::path::Path;
use std::process::Command;

use op2_codegen::model::DeviceKind;

const PROGRAM: &str = "\
set s;
dat x: double on s;
global lo: double;
global hi: float;
global sum: double;
global all: double;
kernel k(const double *v, double *l, float *h, double *t) { *l = *v; *h = (float)*v; *t += *v; }
main {
    par_loop k over s (x READ, lo MIN, hi MAX, sum INC);
    all = lo + hi + sum;
}
";

/// The value an aggregator's input handler gives `deviceState->{member}[0]`.
fn start_of(handlers: &[&str], member: &str) -> String {
    let prefix = format!("deviceState->{member}[0] = ");
    handlers
        .iter()
        .flat_map(|h| h.lines())
        .find_map(|line| line.trim().strip_prefix(&prefix))
        .and_then(|rest| rest.strip_suffix(';'))
        .unwrap_or_else(|| panic!("no start of `{member}` in {handlers:#?}"))
        .to_owned()
}

#[test]
fn reductions_start_at_their_identities_and_break_zero_ties_by_sign_in_cpp() {
    let analysis = analyse_source(Path::new("identities.op2"), PROGRAM);
    let graph = op2_codegen::graph_type_with_fan_limit(&analysis, "identities", 2);
    let aggregator = graph
        .device_types
        .iter()
        .find(|d| matches!(d.kind, DeviceKind::Aggregator(_)))
        .expect("a fan limit of 2 gives the par_loop aggregators");
    let handlers: Vec<&str> = aggregator
        .inputs
        .iter()
        .map(|p| p.handler.as_str())
        .collect();
    let lo = start_of(&handlers, "partial_lo");
    let hi = start_of(&handlers, "partial_hi");
    let sum = start_of(&handlers, "partial_sum");
    let program = format!(
        "#include <cstdio>
{shared}
static int failures = 0;
#define CHECK(c) do {{ if (!(c)) {{ std::printf(\"failed: %s\\n\", #c); failures++; }} }} while (0)
int main() {{
    volatile double lo = {lo};
    volatile float hi = {hi};
    volatile double sum = {sum};
    volatile double zero = 0.0, negative_zero = -0.0, one = 1.0, nan = NAN;
    volatile float zerof = 0.0f, negative_zerof = -0.0f;
    CHECK(std::isinf(lo) && lo > 0);
    CHECK(std::isinf(hi) && hi < 0);
    CHECK(sum == 0 && std::signbit(sum));
    // -0.0 is INC's identity: adding it keeps every value, -0.0 included.
    CHECK(std::signbit(sum + negative_zero));
    CHECK(!std::signbit(sum + zero));
    CHECK(sum + one == one);
    // MIN: smaller, or -0.0 against 0.0; MAX: larger, or 0.0 against -0.0.
    CHECK(op2_below(negative_zero, zero));
    CHECK(!op2_below(zero, negative_zero));
    CHECK(!op2_below(zero, zero) && !op2_below(negative_zero, negative_zero));
    CHECK(op2_above(zero, negative_zero));
    CHECK(!op2_above(negative_zero, zero));
    CHECK(!op2_above(zero, zero) && !op2_above(negative_zero, negative_zero));
    CHECK(op2_below(negative_zerof, zerof) && op2_above(zerof, negative_zerof));
    CHECK(!op2_below(zerof, negative_zerof) && !op2_above(negative_zerof, zerof));
    CHECK(op2_below(one, 2.0) && !op2_below(2.0, one) && op2_above(2.0, one));
    CHECK(op2_below(1e308, lo) && !op2_below(lo, lo));
    CHECK(op2_above(-3e38f, hi) && !op2_above(hi, hi));
    CHECK(!op2_below(nan, one) && !op2_below(one, nan) && !op2_below(nan, zero));
    CHECK(!op2_above(nan, one) && !op2_above(one, nan) && !op2_above(zero, nan));
    CHECK(op2_below(3, 4) && !op2_below(0, 0) && op2_above(4u, 3u));
    return failures;
}}
",
        shared = graph.shared_code
    );
    let dir = work_dir();
    let source = dir.join("reduction_identities.cpp");
    let binary = dir.join("reduction_identities");
    std::fs::write(&source, &program).expect("writing the program");
    let compiler = compiler();
    let built = Command::new(&compiler)
        .args(["-std=c++14", "-O1", "-o"])
        .arg(&binary)
        .arg(&source)
        .output()
        .unwrap_or_else(|e| panic!("running {compiler}: {e}"));
    assert!(
        built.status.success(),
        "{compiler} rejects {}:\n{}",
        source.display(),
        String::from_utf8_lossy(&built.stderr)
    );
    let ran = Command::new(&binary)
        .output()
        .unwrap_or_else(|e| panic!("running {}: {e}", binary.display()));
    assert!(
        ran.status.success(),
        "{} failed (lo = {lo}, hi = {hi}, sum = {sum}):\n{}",
        binary.display(),
        String::from_utf8_lossy(&ran.stdout)
    );
}
