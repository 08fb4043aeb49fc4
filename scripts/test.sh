#!/usr/bin/env bash
# The project's whole test suite: Rust crates (unit, integration, end-to-end,
# and the grammar's generate, corpus, highlight and tags checks), documentation
# freshness, editors. Installs what it needs on a fresh machine from the
# package registries. Prints how long each phase took.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"

times=()
timed() {
  local name="$1" start=$SECONDS
  shift
  "$@"
  times+=("$(printf '%5ds  %s' $((SECONDS - start)) "$name")")
}

# The grammar's checks (generate, corpus, highlight, tags, examples) are Rust
# tests of the grammar crate, run by `cargo test` below: no tree-sitter CLI.
# They run grammar.js with node, so CI must have it.
command -v node >/dev/null || fail "node is needed (the grammar tests run grammar.js with it)"

ensure_hdf5

# CI builds a fresh clone once: incremental compilation's bookkeeping would be
# written and never read (and without it a crate is 16 codegen units, not 256).
if [ "${CI:-}" = true ]; then
  export CARGO_INCREMENTAL=0
fi

step "cargo fmt --check"
timed "cargo fmt --check" cargo fmt --all -- --check

# op2 import's tests compile OP2-style applications (they skip, loudly,
# without a C++ compiler).
if ! command -v c++ >/dev/null && ! command -v g++ >/dev/null && [ -z "${CXX:-}" ] \
    && command -v apt-get >/dev/null; then
    step "installing a C++ compiler for op2 import's tests"
    apt-get update -qq && apt-get install -y -qq g++
fi

# Clippy's lints are checked by the build that the tests run from, not by a second
# compilation of the workspace: clippy's driver (a rustc with clippy's lints added)
# compiles the workspace's own crates, as `cargo clippy` has it do, but on to machine
# code, while the dependencies are compiled by plain rustc, once. `-D warnings` makes
# every lint and compiler warning an error that stops the build. Every target is built
# (libraries, binaries, tests, benches), so clippy sees what `cargo clippy
# --all-targets` sees. The variables stay set for `cargo test` below, so that it finds
# the build up to date. (docs/benchmarks.md, "The test command".)
if ! command -v clippy-driver >/dev/null; then
  step "installing clippy"
  rustup component add clippy
fi
RUSTC_WORKSPACE_WRAPPER="$(command -v clippy-driver)"
export RUSTC_WORKSPACE_WRAPPER
export CLIPPY_ARGS="-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__"

step "cargo build (every target, clippy's lints as errors)"
timed "cargo build + clippy" cargo test --workspace --all-targets --locked --no-run

# The editors test the `op2` that the build above made (the CLI's end-to-end tests
# need it), rather than building it once more. They run beside `cargo test`, which
# leaves a core idle whenever a test binary is down to one long test; their output is
# printed, and their status counts, once the Rust tests are done.
export OP2_BIN="$ROOT/target/debug/op2"
step "editors (in the background; their output follows the Rust tests)"
editors_log="$ROOT/target/editors.log"
(
  start=$SECONDS
  status=0
  "$ROOT/scripts/test-editors.sh" >"$editors_log" 2>&1 || status=$?
  printf '%5ds  %s\n' $((SECONDS - start)) "editors (beside cargo test)" >"$editors_log.time"
  exit "$status"
) &
editors_pid=$!
trap 'pkill -P "$editors_pid" 2>/dev/null; kill "$editors_pid" 2>/dev/null || true' EXIT

step "cargo test (workspace)"
timed "cargo test" cargo test --workspace --locked

step "editors (their output)"
editors_status=0
wait "$editors_pid" || editors_status=$?
trap - EXIT
cat "$editors_log"
times+=("$(cat "$editors_log.time")")
[ "$editors_status" = 0 ] || fail "the editor tests failed (above)"

step "install.sh into an empty HOME"
timed "install" "$ROOT/scripts/test-install.sh"

echo
echo "time by phase:"
printf '%s\n' "${times[@]}"
printf '%5ds  total\n' "$SECONDS"
echo "all tests passed"
