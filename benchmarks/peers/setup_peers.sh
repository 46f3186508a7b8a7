#!/usr/bin/env bash
# Install the peer servers for benchmarks/compare/run.py, each in its own venv under benchmarks/.venvs/
# (gitignored; the project venv is never touched). Re-running is cheap: existing venvs are kept.
#   mlserver: MLServer 1.7.1 + onnxruntime. uvloop < 0.22: MLServer 1.7.1's inference-pool workers
#             call asyncio.get_event_loop() with no loop set, which uvloop >= 0.22 turns into an error.
#   pytriton: nvidia-pytriton 0.7.0 (bundles tritonserver 2.51) + onnxruntime.
#
# PyTriton's interpreter. The Triton Python backend stub PyTriton bundles for Python 3.11 is linked
# against libpython3.11.so.1.0 (no rpath to it) and runs the venv's standard library. If the stub
# loads another build's libpython than the venv's interpreter, the model fails to load: pyenv's
# 3.11.7 stdlib over Debian's libpython 3.11.2 raises "'_thread.RLock' object has no attribute
# '_recursion_count'". servers.py starts PyTriton with LD_LIBRARY_PATH set to the interpreter's
# LIBDIR, so the stub loads the right library when the interpreter either
#   - owns the libpython3.11.so.1.0 the dynamic loader finds anyway (Debian's /usr/bin/python3.11), or
#   - is a shared build (--enable-shared) with its own libpython3.11.so.1.0 in its LIBDIR.
# A static build (pyenv's default) matches neither. So: the candidates below are probed in order
# (PYTRITON_PYTHON first if set), the first that passes this test gets a venv, and the venv is kept
# only if PyTriton really loads and runs a model with it (peers/pytriton_check.py, ~10 s). If none
# does, the script says why and run.py reports pytriton as not measured.
set -euo pipefail
cd "$(dirname "$0")/.."  # benchmarks/: the venvs go to benchmarks/.venvs/
PYTHON="${PYTHON:-$(command -v python3.11 || command -v python3)}"

make_venv() {
    local python="$1" name="$2"; shift 2
    if [ -x ".venvs/$name/bin/python" ] && [ -f ".venvs/$name/.installed" ]; then
        echo "benchmarks/.venvs/$name: present"
        return
    fi
    rm -rf ".venvs/$name"
    "$python" -m venv ".venvs/$name"
    if ".venvs/$name/bin/python" -m pip install --quiet "$@"; then
        touch ".venvs/$name/.installed"
        echo "benchmarks/.venvs/$name: installed $* with $python"
    else
        echo "benchmarks/.venvs/$name: install failed; run.py will report $name as unavailable" >&2
        return 1
    fi
}

# The interpreter's LIBDIR (what servers.py puts on LD_LIBRARY_PATH) and whether the libpython the
# stub will load there is its own: prints "LIBDIR" on success, nothing otherwise.
stub_libdir() {
    "$1" - <<'EOF' 2>/dev/null
import os, subprocess, sys, sysconfig
if sys.version_info[:2] != (3, 11):
    raise SystemExit(1)
libdir = sysconfig.get_config_var("LIBDIR") or ""
soname = sysconfig.get_config_var("INSTSONAME") or "libpython3.11.so.1.0"
own = os.path.join(libdir, soname)
if sysconfig.get_config_var("Py_ENABLE_SHARED") and os.path.exists(own):
    print(libdir)  # a shared build: LD_LIBRARY_PATH=LIBDIR makes the stub load this very file
    raise SystemExit(0)
cache = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True).stdout
found = [line.split("=>")[-1].strip() for line in cache.splitlines() if "libpython3.11.so.1.0 " in line]
if found and os.path.exists(own) and os.path.realpath(found[0]) == os.path.realpath(own):
    print(libdir)  # owns the library the loader finds by default
    raise SystemExit(0)
raise SystemExit(1)
EOF
}

pytriton_check() {
    local libdir="$1" log=".venvs/pytriton/check.log"
    if LD_LIBRARY_PATH="$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" timeout 180 \
        .venvs/pytriton/bin/python peers/pytriton_check.py >"$log" 2>&1; then
        tail -n 1 "$log"
        touch .venvs/pytriton/.checked
        return 0
    fi
    echo "benchmarks/.venvs/pytriton: PyTriton could not load a model (last lines of $log):" >&2
    grep -v '^[IWE][0-9]\{4\} \|^[+|]' "$log" | tail -n 4 >&2
    return 1
}

setup_pytriton() {
    local candidate real libdir seen=" "
    if [ -f .venvs/pytriton/.checked ] && [ -f .venvs/pytriton/.installed ]; then
        echo "benchmarks/.venvs/pytriton: present (checked)"
        return 0
    fi
    if [ -f .venvs/pytriton/.installed ]; then  # made by an older setup: check it once
        if libdir="$(stub_libdir .venvs/pytriton/bin/python)" && pytriton_check "$libdir"; then
            return 0
        fi
        rm -rf .venvs/pytriton
    fi
    for candidate in ${PYTRITON_PYTHON:-} /usr/bin/python3.11 /usr/local/bin/python3.11 $(type -ap python3.11); do
        [ -x "$candidate" ] || continue
        real="$(realpath "$("$candidate" -c 'import sys; print(sys.executable)' 2>/dev/null)" 2>/dev/null)" || continue
        case "$seen" in *" $real "*) continue ;; esac
        seen="$seen$real "
        if ! libdir="$(stub_libdir "$candidate")"; then
            echo "benchmarks/.venvs/pytriton: skipping $real (not Python 3.11, or a static build that does not own the libpython3.11 the stub loads)"
            continue
        fi
        make_venv "$candidate" pytriton "nvidia-pytriton==0.7.0" "onnxruntime" || return 1
        if pytriton_check "$libdir"; then
            return 0
        fi
        rm -rf .venvs/pytriton
    done
    echo "benchmarks/.venvs/pytriton: no Python 3.11 here can run PyTriton's Python backend (tried:${seen% })." >&2
    echo "  Install one that owns the system libpython3.11 (Debian/Ubuntu: apt-get install python3.11-venv libpython3.11)" >&2
    echo "  or a shared build (pyenv: PYTHON_CONFIGURE_OPTS=--enable-shared pyenv install 3.11), then set PYTRITON_PYTHON=<it>." >&2
    return 1
}

make_venv "$PYTHON" mlserver "mlserver==1.7.1" "onnxruntime" "uvloop<0.22" || true
setup_pytriton || echo "benchmarks/.venvs/pytriton: not installed; run.py will report pytriton as unavailable" >&2
