#!/usr/bin/env bash
# Install the peer servers for benchmarks/run.py, each in its own venv under benchmarks/.venvs/
# (gitignored; the project venv is never touched). Re-running is cheap: existing venvs are kept.
#   mlserver: MLServer 1.7.1 + onnxruntime. uvloop < 0.22: MLServer 1.7.1's inference-pool workers
#             call asyncio.get_event_loop() with no loop set, which uvloop >= 0.22 turns into an error.
#   pytriton: nvidia-pytriton 0.7.0 (bundles tritonserver 2.51) + onnxruntime.
#
# PyTriton's interpreter: the Triton Python backend stub it bundles for Python 3.11 links the system's
# libpython3.11.so.1.0 and runs the venv's standard library with it. A venv made from another 3.11
# build fails at model load (pyenv's 3.11.7 over Debian's libpython 3.11.2: "'_thread.RLock' object
# has no attribute '_recursion_count'"), so the pytriton venv is made from the python3.11 that owns
# the library the loader finds (Debian's /usr/bin/python3.11 here).
set -euo pipefail
cd "$(dirname "$0")"
PYTHON="${PYTHON:-$(command -v python3.11 || command -v python3)}"

system_libpython() {
    local path
    path="$(ldconfig -p | awk '/libpython3\.11\.so\.1\.0 / {print $NF; exit}')"
    [ -n "$path" ] && realpath "$path"
}

owned_libpython() {
    "$1" -c 'import os, sysconfig as s; print(os.path.realpath(os.path.join(s.get_config_var("LIBDIR"), s.get_config_var("INSTSONAME") or "")))' 2>/dev/null
}

pytriton_python() {
    local wanted candidate
    wanted="$(system_libpython)" || true
    if [ -z "$wanted" ]; then
        echo "benchmarks: no system libpython3.11.so.1.0 for PyTriton's Python backend (apt-get install libpython3.11)" >&2
        return 1
    fi
    for candidate in /usr/bin/python3.11 /usr/local/bin/python3.11 $(type -ap python3.11) "$PYTHON"; do
        if [ -x "$candidate" ] && [ "$(owned_libpython "$candidate")" = "$wanted" ]; then
            echo "$candidate"
            return 0
        fi
    done
    echo "benchmarks: no python3.11 owns $wanted (the libpython PyTriton's Python backend loads); apt-get install python3.11-venv" >&2
    return 1
}

make_venv() {
    local python="$1" name="$2"; shift 2
    if [ -x ".venvs/$name/bin/python" ] && [ -f ".venvs/$name/.installed" ]; then
        echo "benchmarks/.venvs/$name: present"
        return
    fi
    "$python" -m venv ".venvs/$name"
    if ".venvs/$name/bin/python" -m pip install --quiet "$@"; then
        touch ".venvs/$name/.installed"
        echo "benchmarks/.venvs/$name: installed $*"
    else
        echo "benchmarks/.venvs/$name: install failed; run.py will report $name as unavailable" >&2
    fi
}

make_venv "$PYTHON" mlserver "mlserver==1.7.1" "onnxruntime" "uvloop<0.22"
if triton_python="$(pytriton_python)"; then
    make_venv "$triton_python" pytriton "nvidia-pytriton==0.7.0" "onnxruntime"
else
    echo "benchmarks/.venvs/pytriton: not installed; run.py will report pytriton as unavailable" >&2
fi
