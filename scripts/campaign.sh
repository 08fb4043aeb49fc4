#!/usr/bin/env bash
# A fuzz campaign of ten million cases in chunks (docs/reliability.md, "Ten million
# cases in chunks"): builds the campaign's binary from an export of COMMIT if it is not
# there yet, then runs chunks of CASES (default 300,000) from FROM on, one after
# another, until case 10,000,000 or a chunk that does not end cleanly (a finding, a
# stop). Each chunk's output is kept beside the export, and a line per start and end is
# appended to COMMIT-chunks.txt there; scripts/campaign-row.py turns an ended chunk into
# the row of docs/reliability.md.
#
#   scripts/campaign.sh build COMMIT             the export and its binary, and its SHA-256
#   scripts/campaign.sh run COMMIT SEED FROM [CASES]
#
# Campaigns live in $OP2_CAMPAIGNS (default /work/campaigns), outside the repository.
# The binary is built in the export's own target/ (no CARGO_BUILD_BUILD_DIR: a build
# directory elsewhere is named in the debug information, and the same commit then gives
# another binary), so that a new machine rebuilds it bit for bit.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

CAMPAIGNS="${OP2_CAMPAIGNS:-/work/campaigns}"

build() {
    local commit="$1" dir="$CAMPAIGNS/$1"
    if [ ! -d "$dir" ]; then
        mkdir -p "$dir"
        git -C "$ROOT" archive "$commit" | tar -x -C "$dir"
    fi
    ensure_hdf5
    (cd "$dir" && env -u CARGO_BUILD_BUILD_DIR -u CARGO_TARGET_DIR cargo build --release -p op2-fuzz)
    sha256sum "$dir/target/release/op2-fuzz"
}

run() {
    local commit="$1" seed="$2" from="$3" cases="${4:-300000}"
    local dir="$CAMPAIGNS/$commit" log
    local binary="$dir/target/release/op2-fuzz"
    [ -x "$binary" ] || fail "no binary at $binary: run \`$0 build $commit\` first"
    while [ "$from" -lt 10000000 ]; do
        log="$CAMPAIGNS/$commit-chunk-$from.log"
        echo "start $from $(date -u +%Y-%m-%dT%H:%M:%S) load $(cut -d' ' -f1-3 /proc/loadavg)" \
            >> "$CAMPAIGNS/$commit-chunks.txt"
        local started ended status=0
        started=$(date +%s.%N)
        nice -n 19 "$binary" --seed "$seed" --full-every 20 --slow-secs 10 --jobs 2 \
            --from "$from" --cases "$cases" --out "$dir/findings" > "$log" 2>&1 || status=$?
        ended=$(date +%s.%N)
        echo "end $from rc=$status $(date -u +%Y-%m-%dT%H:%M:%S) secs $(awk "BEGIN { print $ended - $started }") load $(cut -d' ' -f1-3 /proc/loadavg)" \
            >> "$CAMPAIGNS/$commit-chunks.txt"
        [ "$status" -eq 0 ] || break
        from=$((from + cases))
    done
}

case "${1:-}" in
    build) [ $# -eq 2 ] || fail "usage: $0 build COMMIT"; build "$2" ;;
    run) [ $# -ge 4 ] || fail "usage: $0 run COMMIT SEED FROM [CASES]"; shift; run "$@" ;;
    *) fail "usage: $0 build COMMIT | $0 run COMMIT SEED FROM [CASES]" ;;
esac
