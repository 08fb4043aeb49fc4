# Shared helpers for the project's scripts. Source it; do not run it.
# shellcheck shell=bash

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS="$ROOT/.tools"
TREE_SITTER_VERSION="0.27.1"
export PATH="$TOOLS/bin:$PATH"

step() { printf '\n==> %s\n' "$*"; }
fail() { printf 'error: %s\n' "$*" >&2; exit 1; }

# The HDF5 C library (libhdf5-dev) that op2-instance's `hdf5-metno` binds
# (ARCHITECTURE.md): installed from Debian when pkg-config cannot find it.
ensure_hdf5() {
    if command -v pkg-config >/dev/null 2>&1 && pkg-config --exists hdf5; then
        return
    fi
    step "installing libhdf5-dev (the HDF5 library) from Debian"
    local sudo=""
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null 2>&1 || fail "libhdf5-dev is missing: install it (apt-get install libhdf5-dev pkg-config) as root"
        sudo="sudo"
    fi
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq libhdf5-dev pkg-config >/dev/null
    pkg-config --exists hdf5 || fail "libhdf5-dev was installed but pkg-config cannot find hdf5"
}
