#!/usr/bin/env bash
# The project's whole test suite: grammar, Rust crates (unit, integration,
# end-to-end), documentation freshness. Installs what it needs on a fresh
# machine from the package registries.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"

"$ROOT/scripts/test-grammar.sh"

step "cargo fmt --check"
cargo fmt --all -- --check

step "cargo clippy"
cargo clippy --workspace --all-targets --locked -- -D warnings

step "cargo test (workspace)"
cargo test --workspace --locked

"$ROOT/scripts/test-editors.sh"
echo
echo "all tests passed"
