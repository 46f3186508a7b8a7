#!/usr/bin/env bash
# Install the peer servers for benchmarks/run.py, each in its own venv under benchmarks/.venvs/
# (gitignored; the project venv is never touched). Re-running is cheap: existing venvs are kept.
#   mlserver: MLServer 1.7.1 + onnxruntime. uvloop < 0.22: MLServer 1.7.1's inference-pool workers
#             call asyncio.get_event_loop() with no loop set, which uvloop >= 0.22 turns into an error.
#   pytriton: nvidia-pytriton 0.7.0 (bundles tritonserver 2.51) + onnxruntime.
set -euo pipefail
cd "$(dirname "$0")"
PYTHON="${PYTHON:-$(command -v python3.11 || command -v python3)}"

make_venv() {
    local name="$1"; shift
    if [ -x ".venvs/$name/bin/python" ] && [ -f ".venvs/$name/.installed" ]; then
        echo "benchmarks/.venvs/$name: present"
        return
    fi
    "$PYTHON" -m venv ".venvs/$name"
    if ".venvs/$name/bin/python" -m pip install --quiet "$@"; then
        touch ".venvs/$name/.installed"
        echo "benchmarks/.venvs/$name: installed $*"
    else
        echo "benchmarks/.venvs/$name: install failed; run.py will report $name as unavailable" >&2
    fi
}

make_venv mlserver "mlserver==1.7.1" "onnxruntime" "uvloop<0.22"
make_venv pytriton "nvidia-pytriton==0.7.0" "onnxruntime"
