//! Every integration test of this crate, in one test binary: each `tests/*.rs` is a
//! module here (one link of the whole graph instead of one per file; docs/benchmarks.md,
//! "The test command"). A new test file needs its `mod` line below, which
//! `op2-cli`'s `layout::every_test_file_is_compiled` checks; run one file's tests with
//! `cargo test -p op2-lsp --test integration FILE::`.

mod support;

mod editing;
mod generated;
mod import;
mod navigation;
mod parse_limit;
mod transport;
mod transport_binary;
mod transport_build;
mod transport_features;
mod transport_framing;
mod transport_malformed;
mod transport_panic;
mod transport_props;
mod transport_watchdog;
