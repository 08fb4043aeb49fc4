#!/usr/bin/env bash
# The main job on a bundled example: check the Jacobi example, build its POETS
# graph with its instance data, run its reference semantics, and simulate the
# graph with an adversarial message order, checking that both agree.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$ROOT"

step "building op2 (release)"
cargo build --release --locked --bin op2
op2="$ROOT/target/release/op2"
example=docs/examples/jacobi
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

step "op2 check $example.op2"
"$op2" check "$example.op2" && echo "no diagnostics"

step "op2 build $example.op2 --instance $example.instance.json"
"$op2" build "$example.op2" --instance "$example.instance.json" -o "$out/jacobi.graph.xml"

step "op2 run $example.op2 --instance $example.instance.json"
"$op2" run "$example.op2" --instance "$example.instance.json" --final-state "$out/run.json"

step "op2 simulate --check $example.op2 --instance $example.instance.json --seed 7"
"$op2" simulate "$example.op2" --instance "$example.instance.json" --seed 7 --check --atol 1e-12
