#!/usr/bin/env bash
# Install Triton's perf_analyzer into a virtual environment's bin/ (x86-64 Linux).
#
#   scripts/install-perf-analyzer.sh [VENV]          (default: .venv)
#
# PyPI's `perf-analyzer` 2.60 wheel needs glibc 2.38, so on older systems (Debian 12: 2.36) pip
# falls back to a 0.1.0 placeholder without the binary. The manylinux1 wheel of tritonclient 2.48
# still ships the C++ binary; it needs libcudart.so.12 (from the nvidia-cuda-runtime-cu12 wheel)
# and libb64.so.0d (Debian's libb64-0d). This script takes only those files - tritonclient 2.48 is
# never installed as a package - puts them in $VENV/lib/perf_analyzer/ and writes a wrapper
# $VENV/bin/perf_analyzer that sets LD_LIBRARY_PATH. Downloads are cached under .cache/ (gitignored).
# Idempotent: a working perf_analyzer already in $VENV/bin is left alone (FORCE=1 reinstalls).
set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
[[ -d "${1:-.venv}" ]] || { echo "install-perf-analyzer: error: no virtual environment at ${1:-.venv}" >&2; exit 1; }
VENV="$(cd "${1:-.venv}" && pwd)"
PYTHON="$VENV/bin/python"
CACHE="${PERF_ANALYZER_CACHE:-$REPO_ROOT/.cache/perf_analyzer}"
LIB="$VENV/lib/perf_analyzer"
WRAPPER="$VENV/bin/perf_analyzer"
TRITONCLIENT_VERSION="${TRITONCLIENT_VERSION:-2.48.0}"
CUDART_VERSION="${CUDART_VERSION:-12.9.79}"

log() { echo "install-perf-analyzer: $*" >&2; }
die() { log "error: $*"; exit 1; }

# Captured first: `cmd | grep -q` can fail under pipefail when grep exits before cmd has written all.
works() {
    local out
    [[ -x "$WRAPPER" ]] && out="$("$WRAPPER" --version 2>&1)" && [[ "$out" == *"Perf Analyzer Version"* ]]
}

# pip download --no-deps of one wheel into the cache; prints the wheel's path.
fetch_wheel() {
    local requirement="$1" pattern="$2" wheel
    wheel="$(find "$CACHE" -maxdepth 1 -name "$pattern" -print -quit)"
    if [[ -z "$wheel" ]]; then
        "$PYTHON" -m pip download --quiet --no-deps --only-binary=:all: \
            --platform manylinux1_x86_64 --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 \
            --dest "$CACHE" "$requirement" >&2
        wheel="$(find "$CACHE" -maxdepth 1 -name "$pattern" -print -quit)"
    fi
    [[ -n "$wheel" ]] || die "pip download $requirement produced no $pattern in $CACHE"
    echo "$wheel"
}

# unzip one member of a wheel into $LIB, flat.
extract() {
    local wheel="$1" member="$2"
    unzip -o -q -j "$wheel" "$member" -d "$LIB" || die "$member is not in $(basename "$wheel")"
}

have_system_libb64() {
    local cache
    cache="$(ldconfig -p 2>/dev/null || true)"
    [[ "$cache" == *"libb64.so.0d "* ]]
}

# libb64.so.0d: the system's if present; else Debian's package unpacked into $LIB (no root
# needed); else apt-get install as a last resort when running as root.
install_libb64() {
    have_system_libb64 && return 0
    [[ -e "$LIB/libb64.so.0d" ]] && return 0
    local deb unpacked
    deb="$(find "$CACHE" -maxdepth 1 -name 'libb64-0d_*.deb' -print -quit)"
    if [[ -z "$deb" ]] && command -v apt-get >/dev/null; then
        (cd "$CACHE" && apt-get download libb64-0d >/dev/null 2>&1) || true
        deb="$(find "$CACHE" -maxdepth 1 -name 'libb64-0d_*.deb' -print -quit)"
    fi
    if [[ -n "$deb" ]]; then
        unpacked="$(mktemp -d)"
        dpkg-deb -x "$deb" "$unpacked"
        find "$unpacked" -name 'libb64.so.0d*' -exec cp -P {} "$LIB/" \;
        rm -rf "$unpacked"
        [[ -e "$LIB/libb64.so.0d" ]] && return 0
    fi
    if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null; then
        log "installing libb64-0d with apt-get"
        apt-get install -y -qq libb64-0d >/dev/null || { apt-get update -qq && apt-get install -y -qq libb64-0d >/dev/null; }
        have_system_libb64 && return 0
    fi
    die "libb64.so.0d not found: install Debian/Ubuntu's libb64-0d package"
}

write_wrapper() {
    cat >"$WRAPPER" <<EOF
#!/usr/bin/env bash
# perf_analyzer ${TRITONCLIENT_VERSION} from the tritonclient wheel; written by scripts/install-perf-analyzer.sh
export LD_LIBRARY_PATH="$LIB\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
exec "$LIB/perf_analyzer" "\$@"
EOF
    chmod 0755 "$WRAPPER"
}

main() {
    [[ -x "$PYTHON" ]] || die "$PYTHON not found: create the virtual environment first"
    if [[ "${FORCE:-0}" != 1 ]] && works; then
        log "already installed: $("$WRAPPER" --version 2>&1)"
        return 0
    fi
    [[ "$(uname -s)-$(uname -m)" == Linux-x86_64 ]] || die "only x86-64 Linux is supported, not $(uname -s)-$(uname -m)"
    command -v unzip >/dev/null || die "unzip is required"
    mkdir -p "$CACHE" "$LIB"

    local triton cudart
    triton="$(fetch_wheel "tritonclient==$TRITONCLIENT_VERSION" "tritonclient-$TRITONCLIENT_VERSION-*manylinux*x86_64*.whl")"
    cudart="$(fetch_wheel "nvidia-cuda-runtime-cu12==$CUDART_VERSION" "nvidia_cuda_runtime_cu12-$CUDART_VERSION-*x86_64*.whl")"
    extract "$triton" "tritonclient-$TRITONCLIENT_VERSION.data/data/bin/perf_analyzer"
    extract "$cudart" "nvidia/cuda_runtime/lib/libcudart.so.12"
    chmod 0755 "$LIB/perf_analyzer"
    install_libb64
    write_wrapper

    if ! works; then
        "$WRAPPER" --version || true
        LD_LIBRARY_PATH="$LIB" ldd "$LIB/perf_analyzer" | grep 'not found' >&2 || true
        die "$WRAPPER does not run"
    fi
    log "installed $WRAPPER: $("$WRAPPER" --version 2>&1)"
}

main
