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

# Clippy checks every target in a target directory of its own, in the background
# and at low priority, while `cargo test` builds and runs: the two share no
# artifacts (a check is not a build), and clippy takes the cores whenever the test
# build waits on one crate or a test binary runs one long test. Its output is
# printed, and its status counts, once the tests are done.
step "cargo clippy (in the background, into target/clippy; its output follows the tests)"
clippy_log="$ROOT/target/clippy.log"
mkdir -p "$ROOT/target"
(
  start=$SECONDS
  status=0
  CARGO_TARGET_DIR="$ROOT/target/clippy" nice -n 10 \
    cargo clippy --workspace --all-targets --locked --color never -- -D warnings \
    >"$clippy_log" 2>&1 || status=$?
  printf '%5ds  %s\n' $((SECONDS - start)) "cargo clippy (beside the tests)" >"$clippy_log.time"
  exit "$status"
) &
clippy_pid=$!
trap 'pkill -P "$clippy_pid" 2>/dev/null; kill "$clippy_pid" 2>/dev/null || true' EXIT

step "cargo test (workspace)"
timed "cargo test" cargo test --workspace --locked

# The editors test the `op2` that `cargo test` just built (the CLI's
# end-to-end tests need it), rather than building it once more.
export OP2_BIN="$ROOT/target/debug/op2"
timed "editors" "$ROOT/scripts/test-editors.sh"

step "install.sh into an empty HOME"
timed "install" "$ROOT/scripts/test-install.sh"

step "cargo clippy (its output)"
clippy_status=0
wait "$clippy_pid" || clippy_status=$?
trap - EXIT
cat "$clippy_log"
times+=("$(cat "$clippy_log.time")")
[ "$clippy_status" = 0 ] || fail "cargo clippy found problems (above)"

echo
echo "time by phase:"
printf '%s\n' "${times[@]}"
printf '%5ds  total\n' "$SECONDS"
echo "all tests passed"
