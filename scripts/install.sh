#!/usr/bin/env bash
# Installs op2 for the current user: the binary (cargo install, into
# ~/.cargo/bin), shell completions for bash, zsh and fish, and the manual
# pages. With --editors, also the Neovim plugin (a link into Neovim's package
# path) and, when `code` is on PATH, the VS Code extension (built with npm).
# Idempotent: run it again after pulling to update everything.
#
# Environment: PREFIX (default ~/.local) for completions and manual pages;
# CARGO_INSTALL_ROOT as cargo understands it, for the binary.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"

editors=0
for arg in "$@"; do
  case "$arg" in
    --editors) editors=1 ;;
    -h | --help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) fail "unknown argument \`$arg\` (try --help)" ;;
  esac
done
PREFIX="${PREFIX:-$HOME/.local}"
data="${XDG_DATA_HOME:-$HOME/.local/share}"
[ "$PREFIX" = "$HOME/.local" ] || data="$PREFIX/share"

step "cargo install --path server/cli (a few minutes the first time)"
cargo install --locked --path server/cli
bin_dir="${CARGO_INSTALL_ROOT:-${CARGO_HOME:-$HOME/.cargo}}/bin"
op2="$bin_dir/op2"
[ -x "$op2" ] || fail "cargo install did not leave $op2"
"$op2" --version

step "shell completions"
mkdir -p "$data/bash-completion/completions" "$data/zsh/site-functions" \
  "${XDG_CONFIG_HOME:-$HOME/.config}/fish/completions"
"$op2" completions bash >"$data/bash-completion/completions/op2"
"$op2" completions zsh >"$data/zsh/site-functions/_op2"
"$op2" completions fish >"${XDG_CONFIG_HOME:-$HOME/.config}/fish/completions/op2.fish"
echo "bash: $data/bash-completion/completions/op2 (loaded by bash-completion on first use)"
echo "zsh:  $data/zsh/site-functions/_op2 (add that directory to fpath before compinit)"
echo "fish: ${XDG_CONFIG_HOME:-$HOME/.config}/fish/completions/op2.fish"

step "manual pages"
mkdir -p "$data/man/man1"
"$op2" man --out-dir "$data/man/man1"
echo "$data/man/man1: op2(1) and one page per command (man op2-simulate)"

if [ "$editors" = 1 ]; then
  step "Neovim plugin"
  pack="$data/nvim/site/pack/op2/start"
  mkdir -p "$pack"
  ln -sfn "$ROOT/editors/nvim" "$pack/op2"
  echo "$pack/op2 -> editors/nvim (see docs/editors.md for the tree-sitter parser)"
  if command -v code >/dev/null 2>&1; then
    step "VS Code extension"
    (cd editors/vscode && npm ci --no-audit --no-fund && npm run package)
    code --install-extension editors/vscode/dist/op2.vsix --force
  else
    echo "no \`code\` on PATH: the VS Code extension was not installed (docs/editors.md)"
  fi
fi

case ":$PATH:" in
  *":$bin_dir:"*) ;;
  *) echo; echo "note: $bin_dir is not on PATH; add it (export PATH=\"$bin_dir:\$PATH\")" ;;
esac
echo
echo "installed: $("$op2" --version) at $op2"
