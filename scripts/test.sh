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

step "cargo fmt --check"
timed "cargo fmt --check" cargo fmt --all -- --check

step "cargo clippy"
timed "cargo clippy" cargo clippy --workspace --all-targets --locked -- -D warnings

# op2 import's tests compile OP2-style applications (they skip, loudly,
# without a C++ compiler).
if ! command -v c++ >/dev/null && ! command -v g++ >/dev/null && [ -z "${CXX:-}" ] \
    && command -v apt-get >/dev/null; then
    step "installing a C++ compiler for op2 import's tests"
    apt-get update -qq && apt-get install -y -qq g++
fi

step "cargo test (workspace)"
timed "cargo test" cargo test --workspace --locked

# The editors test the `op2` that `cargo test` just built (the CLI's
# end-to-end tests need it), rather than building it once more.
export OP2_BIN="$ROOT/target/debug/op2"
timed "editors" "$ROOT/scripts/test-editors.sh"

echo
echo "time by phase:"
printf '%s\n' "${times[@]}"
printf '%5ds  total\n' "$SECONDS"
echo "all tests passed"
