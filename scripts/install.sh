#!/usr/bin/env bash
# Installs op2 for the current user: the binary (cargo install, into
# ~/.cargo/bin), its manual pages beside it (~/.cargo/share/man, which `man`
# finds from PATH), and shell completions for bash, zsh and fish. With
# --editors, also the Neovim plugin (a link into Neovim's package path) and,
# when `code` is on PATH, the VS Code extension (built with npm).
# Idempotent: run it again after pulling to update everything.
#
# Options: --editors as above; --binary PATH installs that op2 (one you
# built) instead of building with cargo install.
# Environment: CARGO_INSTALL_ROOT as cargo understands it, for the binary and
# the manual pages; XDG_DATA_HOME and XDG_CONFIG_HOME for the completions
# and the Neovim plugin.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"

editors=0
binary=""
while [ $# -gt 0 ]; do
  case "$1" in
    --editors) editors=1 ;;
    --binary)
      [ $# -ge 2 ] || fail "--binary needs the path of an op2 binary"
      binary="$2"
      shift
      ;;
    -h | --help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) fail "unknown argument \`$1\` (try --help)" ;;
  esac
  shift
done
data="${XDG_DATA_HOME:-$HOME/.local/share}"
config="${XDG_CONFIG_HOME:-$HOME/.config}"
root="${CARGO_INSTALL_ROOT:-${CARGO_HOME:-$HOME/.cargo}}"
bin_dir="$root/bin"
op2="$bin_dir/op2"

if [ -n "$binary" ]; then
  step "installing $binary as $op2"
  [ -x "$binary" ] || fail "--binary $binary: not an executable file"
  mkdir -p "$bin_dir"
  cp "$binary" "$op2.tmp.$$"
  mv -f "$op2.tmp.$$" "$op2"
else
  # op2 reads OP2's HDF5 meshes through the HDF5 C library.
  ensure_hdf5
  step "cargo install --path server/cli (a few minutes the first time)"
  cargo install --locked --path server/cli
fi
[ -x "$op2" ] || fail "$op2 was not installed"
"$op2" --version

# `man` looks in <dir>/../share/man for each <dir> on PATH: with op2 on PATH,
# `man op2` works without MANPATH.
step "manual pages"
man_dir="$root/share/man/man1"
mkdir -p "$man_dir"
"$op2" man --out-dir "$man_dir"
echo "$man_dir: op2(1) and one page per command (man op2-simulate)"

step "shell completions"
bash_file="$data/bash-completion/completions/op2"
mkdir -p "$(dirname "$bash_file")" "$data/zsh/site-functions" "$config/fish/completions"
# Each written whole and renamed into place, as the binary is: a failure
# leaves the old file, and a link (a dotfiles manager's) is replaced, not
# written through.
for shell_file in "bash:$bash_file" "zsh:$data/zsh/site-functions/_op2" "fish:$config/fish/completions/op2.fish"; do
  shell="${shell_file%%:*}" file="${shell_file#*:}"
  "$op2" completions "$shell" >"$file.tmp.$$" || { rm -f "$file.tmp.$$"; fail "op2 completions $shell failed"; }
  mv -f "$file.tmp.$$" "$file"
done
if [ -r /usr/share/bash-completion/bash_completion ]; then
  echo "bash: $bash_file (bash-completion loads it on first use)"
else
  echo "bash: $bash_file (bash-completion is not installed: add \`source $bash_file\` to ~/.bashrc)"
fi
echo "zsh:  $data/zsh/site-functions/_op2 (add that directory to fpath before compinit)"
echo "fish: $config/fish/completions/op2.fish"

if [ "$editors" = 1 ]; then
  step "Neovim plugin"
  pack="$data/nvim/site/pack/op2/start"
  mkdir -p "$pack"
  # `ln -sfn` over a directory would make the link inside it, and Neovim
  # would go on loading the directory: an older copy of the plugin.
  if [ -e "$pack/op2" ] && [ ! -L "$pack/op2" ]; then
    fail "$pack/op2 is a directory or file, not the link this script makes (an older copy of the plugin?): remove it and run again"
  fi
  ln -sfn "$ROOT/editors/nvim" "$pack/op2"
  echo "$pack/op2 -> editors/nvim (see docs/editors.md for the tree-sitter parser)"
  if command -v code >/dev/null 2>&1; then
    step "VS Code extension"
    command -v npm >/dev/null 2>&1 ||
      fail "\`code\` is on PATH but \`npm\` is not: install Node.js 20 or newer to build the extension, or run without --editors"
    # A server bundled by an earlier scripts/bundle-server.mjs would go into
    # this generic package, and the extension would prefer it to the op2
    # just installed.
    if [ -e editors/vscode/server ]; then
      rm -rf editors/vscode/server
      echo "removed editors/vscode/server: a server bundled by an earlier scripts/bundle-server.mjs, which this package must not carry"
    fi
    (cd editors/vscode && npm ci --no-audit --no-fund && npm run package)
    code --install-extension editors/vscode/dist/op2.vsix --force
  else
    echo "no \`code\` on PATH: the VS Code extension was not installed (docs/editors.md)"
  fi
fi

case ":$PATH:" in
  *":$bin_dir:"*) ;;
  *) echo; echo "note: $bin_dir is not on PATH; add it (export PATH=\"$bin_dir:\$PATH\" in your shell's profile)" ;;
esac
echo
echo "installed: $("$op2" --version) at $op2"
