#!/usr/bin/env bash
# Grammar checks alone: the committed parser equals a fresh generation from
# grammar.js, corpus, highlight and tags tests, and every example program
# parses with zero ERROR or MISSING nodes. They are Rust tests of the grammar
# crate (grammar/tests/grammar.rs), so `cargo test --workspace` (and
# scripts/test.sh) runs them too; no tree-sitter CLI is needed.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

command -v node >/dev/null || fail "node is needed (the generator runs grammar.js with it)"
cd "$ROOT"
step "grammar: generate, corpus, highlight and tags tests, example programs"
cargo test -p tree-sitter-op2 --locked
