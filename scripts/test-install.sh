#!/usr/bin/env bash
# Tests scripts/install.sh as a new user runs it: in an empty HOME, with the op2
# that `cargo test` built (OP2_BIN; --binary skips the release build), then
# checks what the README promises: `op2 --version` from the installed binary,
# bash completing a subcommand and an option from the installed script,
# `man op2` found from PATH alone, the zsh and fish files, the Neovim plugin
# link, the note when the binary's directory is not on PATH, a second run
# over the first, an older copy of the plugin where the link goes refused, and
# a bundled VS Code server removed before the generic package is made.
# Prints "N passed, N failed".
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

binary="${OP2_BIN:-$ROOT/target/debug/op2}"
[ -x "$binary" ] || fail "no op2 at $binary (build it, or set OP2_BIN)"
home="$(mktemp -d)"
trap 'rm -rf "$home"' EXIT
passed=0
failed=0
check() {
  local what="$1"
  shift
  if "$@" >/dev/null 2>&1; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAILED: $what"
  fi
}
# A new user's environment: nothing but HOME, a PATH without op2, and the
# locale; no CARGO_HOME or XDG variables.
user() {
  env -i HOME="$home" PATH="/usr/local/bin:/usr/bin:/bin" LANG=C.UTF-8 "$@"
}

log="$home/install.log"
user bash "$ROOT/scripts/install.sh" --binary "$binary" --editors >"$log" 2>&1 \
  || { cat "$log"; fail "install.sh failed"; }
cargo_bin="$home/.cargo/bin"
data="$home/.local/share"
path="$cargo_bin:/usr/local/bin:/usr/bin:/bin"

check "the binary is installed and runs" \
  user "$cargo_bin/op2" --version
check "op2 --version is the installed binary's" \
  test "$(user "$cargo_bin/op2" --version)" = "$("$binary" --version)"
check "install.sh says the binary's directory is not on PATH" \
  grep -q "note: $cargo_bin is not on PATH" "$log"

# bash: the installed script, sourced as bash-completion (or ~/.bashrc) does,
# completes `op2 si` to simulate and `op2 simulate --ch` to --check.
complete_bash() {
  user PATH="$path" bash -c '
    source "$1"
    spec="$(complete -p op2)" || exit 1
    function="${spec##*-F }"; function="${function%% *}"
    shift
    COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
    "$function" op2 "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
    printf "%s\n" "${COMPREPLY[@]}"' _ "$data/bash-completion/completions/op2" "$@"
}
subcommand="$(complete_bash op2 si || true)"
check "bash completes \`op2 si\` to simulate (got: $subcommand)" test "$subcommand" = simulate
option="$(complete_bash op2 simulate --ch || true)"
check "bash completes \`op2 simulate --ch\` to --check (got: $option)" test "$option" = --check
check "zsh completion file" test -s "$data/zsh/site-functions/_op2"
check "fish completion file" test -s "$home/.config/fish/completions/op2.fish"

# man: the pages sit beside the binary, so PATH alone finds them.
if command -v man >/dev/null 2>&1; then
  check "man op2 is found from PATH alone" \
    user PATH="$path" man -w op2
  check "man op2-simulate is found from PATH alone" \
    user PATH="$path" man -w op2-simulate
  # In the C locale too, where groff has no glyph for most of Unicode.
  warnings="$(env -i HOME="$home" PATH="$path" MANPAGER=cat man op2 2>&1 >/dev/null || true)"
  check "man op2 renders without warnings in the C locale (got: $warnings)" test -z "$warnings"
else
  echo "SKIPPED: no \`man\` on this machine, so \`man op2\` was not tried"
fi
check "the manual pages are written" test -s "$home/.cargo/share/man/man1/op2-simulate.1"

check "the Neovim plugin is linked" \
  test "$(readlink "$data/nvim/site/pack/op2/start/op2")" = "$ROOT/editors/nvim"

check "a second run over the first succeeds" \
  user bash "$ROOT/scripts/install.sh" --binary "$binary" --editors
# A real directory where the link goes (an older copy of the plugin) is
# refused and left alone: `ln -sfn` made the link inside it.
rm "$data/nvim/site/pack/op2/start/op2"
mkdir "$data/nvim/site/pack/op2/start/op2"
refused() { ! user bash "$ROOT/scripts/install.sh" --binary "$binary" --editors; }
check "an older copy of the plugin where the link goes is refused" refused
check "and left as it was" \
  test -d "$data/nvim/site/pack/op2/start/op2" -a ! -L "$data/nvim/site/pack/op2/start/op2" -a ! -e "$data/nvim/site/pack/op2/start/op2/nvim"
rmdir "$data/nvim/site/pack/op2/start/op2"
# With `code` on PATH the script packages and installs the VS Code extension
# (`npm` and `code` stand-ins here record what they are asked): a server an
# earlier bundle-server.mjs left in editors/vscode/server must not go into
# that generic package, so the script removes it first.
fakes="$home/fakes"
mkdir -p "$fakes"
printf '#!/bin/sh\necho "npm $*" >> "%s/calls"\n' "$fakes" > "$fakes/npm"
printf '#!/bin/sh\necho "code $*" >> "%s/calls"\n' "$fakes" > "$fakes/code"
chmod +x "$fakes/npm" "$fakes/code"
bundled="$ROOT/editors/vscode/server"
if [ -e "$bundled" ]; then
  echo "SKIPPED (loudly): $bundled exists (a bundled server of yours); the check that install.sh removes it would remove it"
else
  mkdir -p "$bundled" && printf 'an old build\n' > "$bundled/op2"
  user PATH="$fakes:/usr/local/bin:/usr/bin:/bin" bash "$ROOT/scripts/install.sh" --binary "$binary" --editors \
    >"$home/vscode.log" 2>&1 || true
  check "with code on PATH, the extension is packaged and installed" \
    grep -q "^code --install-extension editors/vscode/dist/op2.vsix" "$fakes/calls"
  check "a bundled server is removed before the generic package is made" \
    test ! -e "$bundled"
  check "and the script says so" grep -q "removed editors/vscode/server" "$home/vscode.log"
  rm -rf "$bundled"
fi

check "an unknown argument is refused" \
  bash -c '! "$1" --bogus' _ "$ROOT/scripts/install.sh"

echo "install: $passed passed, $failed failed"
[ "$failed" = 0 ]
