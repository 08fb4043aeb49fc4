//! Every integration test of this crate, in one test binary: each `tests/*.rs` is a
//! module here (one link of the whole graph instead of one per file; docs/benchmarks.md,
//! "The test command"). A new test file needs its `mod` line below, which
//! `op2-cli`'s `layout::every_test_file_is_compiled` checks; run one file's tests with
//! `cargo test -p op2-exec --test integration FILE::`.

mod support;

mod airfoil;
mod another_order;
mod c_semantics;
mod chains;
mod differential;
mod examples;
mod faults;
mod fetch;
mod graph_identity;
mod inc_in_place;
mod indices;
mod limits;
mod long_arrays;
mod loop_start;
mod output;
mod repeated_inc;
mod simulate_engines;
mod threads;
mod tolerance;
