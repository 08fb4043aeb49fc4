//! Every integration test of this crate, in one test binary: each `tests/*.rs` is a
//! module here (one link of the whole graph instead of one per file; docs/benchmarks.md,
//! "The test command"). A new test file needs its `mod` line below, which
//! `op2-cli`'s `layout::every_test_file_is_compiled` checks; run one file's tests with
//! `cargo test -p op2-analysis --test integration FILE::`.

mod support;

mod dependencies;
mod deps_cost;
mod docs_index;
mod examples;
mod explanations;
mod fixtures;
mod incremental;
mod order;
mod quick_fixes;
mod robustness;
