#!/usr/bin/env bash
# Optional, for working on the grammar by hand (`tree-sitter parse`, `generate`,
# `test`): no test needs it (grammar/tests/grammar.rs does the checks).
# Installs the pinned tree-sitter CLI from crates.io into .tools/ unless that
# exact version is already on PATH. Idempotent.
#
# Compiled from source: the npm package `tree-sitter-cli` downloads its binary
# from the web when it installs, which CI cannot reach (only the package
# registries), and no registry ships the binary itself. Without default features:
# they add an embedded QuickJS runtime (C code and bindgen) that `generate`
# uses only with `--js-runtime native`; this project's scripts use node, the
# default runtime, which the editor tests need anyway.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

if command -v tree-sitter >/dev/null 2>&1 &&
  tree-sitter --version 2>/dev/null | grep -q "tree-sitter $TREE_SITTER_VERSION"; then
  exit 0
fi
step "installing tree-sitter-cli $TREE_SITTER_VERSION from crates.io into .tools/ (a few minutes, once)"
cargo install tree-sitter-cli --version "$TREE_SITTER_VERSION" --locked --no-default-features --root "$TOOLS"
tree-sitter --version
