//! Every integration test of this crate, in one test binary: each `tests/*.rs` is a
//! module here (one link of the whole graph instead of one per file; docs/benchmarks.md,
//! "The test command"). A new test file needs its `mod` line below, which
//! `op2-cli`'s `layout::every_test_file_is_compiled` checks; run one file's tests with
//! `cargo test -p op2-codegen --test integration FILE::`.

mod graph_type_support;

mod cpp_compiles;
mod fan_limits;
mod fetch;
mod fix_corpus;
mod generator;
mod graph_type_snapshots;
mod graph_type_structure;
mod instance_graph;
mod reduction_identities;
