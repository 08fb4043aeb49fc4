#!/usr/bin/env bash
# The project's whole test suite: grammar, Rust crates (unit, integration,
# end-to-end), documentation freshness. Installs what it needs on a fresh
# machine from the package registries.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"

"$ROOT/scripts/test-grammar.sh"

ensure_hdf5

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings

# op2 import's tests compile OP2-style applications (they skip, loudly,
# without a C++ compiler).
if ! command -v c++ >/dev/null && ! command -v g++ >/dev/null && [ -z "${CXX:-}" ] \
    && command -v apt-get >/dev/null; then
    step "installing a C++ compiler for op2 import's tests"
    apt-get update -qq && apt-get install -y -qq g++
fi

step "cargo test (workspace)"
cargo test --workspace --locked

"$ROOT/scripts/test-editors.sh"
echo
echo "all tests passed"
