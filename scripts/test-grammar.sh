#!/usr/bin/env bash
# Grammar checks: corpus and highlight tests, the committed parser equals a
# fresh `tree-sitter generate`, and every example program parses with zero
# ERROR or MISSING nodes.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

command -v node >/dev/null || fail "node is needed (tree-sitter generate runs grammar.js with it)"
"$ROOT/scripts/install-tree-sitter.sh"
cd "$ROOT/grammar"

step "tree-sitter generate reproduces the committed parser"
fresh="$(mktemp -d)"
trap 'rm -rf "$fresh"' EXIT
cp grammar.js tree-sitter.json "$fresh/"
(cd "$fresh" && tree-sitter generate >/dev/null)
if ! diff -r "$fresh/src" src >/dev/null; then
  diff -r "$fresh/src" src | head -20 || true
  fail "grammar/src is stale: run \`tree-sitter generate\` in grammar/ and commit the result"
fi
echo "grammar/src is up to date"

step "tree-sitter test (corpus and highlight tests)"
tree-sitter test

step "every example program parses with zero ERROR or MISSING nodes"
examples=()
while IFS= read -r -d '' file; do examples+=("$file"); done < <(find "$ROOT/docs/examples" -name '*.op2' -print0 | sort -z)
# Each ```op2 block of the user docs is a program too.
blocks="$fresh/blocks"
mkdir -p "$blocks"
awk -v dir="$blocks" '
  /^```op2[[:space:]]*$/ { n++; file = sprintf("%s/language_block_%02d.op2", dir, n); inside = 1; next }
  /^```/ && inside { inside = 0; close(file); next }
  inside { print > file }
' "$ROOT/docs/language.md"
while IFS= read -r -d '' file; do examples+=("$file"); done < <(find "$blocks" -name '*.op2' -print0 | sort -z)
[ "${#examples[@]}" -gt 0 ] || fail "no example programs found"
stat="$(tree-sitter parse --quiet --stat "${examples[@]}" 2>&1 || true)"
echo "$stat" | tail -n 3
if ! echo "$stat" | grep -Eq "failed parses: 0"; then
  tree-sitter parse --quiet "${examples[@]}" || true
  fail "some example programs have ERROR or MISSING nodes"
fi
echo "${#examples[@]} example programs parse cleanly"
