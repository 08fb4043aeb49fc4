#!/usr/bin/env bash
# The main job on a bundled example: check the Jacobi example, build its POETS
# graph with its instance data, run its reference semantics, and simulate the
# graph with an adversarial message order, checking that both agree. Leaves
# what it writes in target/demo/ (or $OP2_DEMO_DIR) and says so at the end.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"

ensure_hdf5

step "building op2 (release)"
cargo build --release --locked --bin op2
op2="$ROOT/target/release/op2"
example=docs/examples/jacobi
out="${OP2_DEMO_DIR:-$ROOT/target/demo}"
mkdir -p "$out"

step "op2 check $example.op2"
"$op2" check "$example.op2"

step "op2 build $example.op2 --instance $example.instance.json"
"$op2" build "$example.op2" --instance "$example.instance.json" -o "$out/jacobi.graph.xml"

step "op2 run $example.op2 --instance $example.instance.json"
"$op2" run "$example.op2" --instance "$example.instance.json" --final-state "$out/run.json"

step "op2 simulate --check $example.op2 --instance $example.instance.json --seed 7"
"$op2" simulate "$example.op2" --instance "$example.instance.json" --seed 7 --check --final-state "$out/simulate.json"

step "done: the outputs are in $out"
ls -l "$out"
cat <<'EOF'
  jacobi.graph.xml  the POETS application graph (graph type and instance)
  run.json          the final dats and globals of `op2 run`
  simulate.json     the same, from the simulated graph
EOF
