#!/usr/bin/env bash
# Copies the tree-sitter queries from grammar/queries/ into the plugin's
# runtime layout (queries/op2/). scripts/test-editors.sh fails when the copies
# are stale; run this and commit the result.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
for query in highlights locals folds indents; do
  cp "$here/../../grammar/queries/$query.scm" "$here/queries/op2/$query.scm"
done
echo "copied grammar/queries/{highlights,locals,folds,indents}.scm to editors/nvim/queries/op2/"
