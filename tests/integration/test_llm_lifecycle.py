"""Language-model versions under the serving sync (issue 51, item 1), on the real server with SmolLM2.

1.0.0 and 2.0.0 are the same GGUF registered twice (two registry versions, two engines). With 8
streams running on 1.0.0, ``mcp model promote --name smollm2 --version 2.0.0 --stage production``:
every stream ends on 1.0.0 with its last token and ``[DONE]``; answers say 2.0.0 within the sync
interval; 200 requests sent across the swap are all answered 2xx; once its last stream ends the old
engine is closed. ``X-Model-Version`` pins a version; ``/v1/models`` shows the default version.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from mcp2026ai.generation.config import EngineConfig
from mcp2026ai.ir.llm_convert import CACHE_VARIABLE
from mcp2026ai.registry import ModelRegistry, Stage
from mcp2026ai.server.config import ServerConfig
from mcp2026ai.testing import BackgroundServer
from tests.support.llm import LLM_CACHE

from .conftest import mcp_command

pytestmark = [pytest.mark.timeout(420), pytest.mark.slow]
SYNC_S = 0.5
STREAMS = 8
REQUESTS = 200
HELLO = [{"role": "user", "content": "Say hello."}]
ONE_TOKEN = {"model": "smollm2", "messages": HELLO, "max_tokens": 1}


def two_versions(home: Path, gguf: Path) -> ModelRegistry:
    """smollm2 1.0.0 in production, 2.0.0 registered beside it (dev): the default is 1.0.0."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(CACHE_VARIABLE, str(LLM_CACHE))
        registry = ModelRegistry(home)
        registry.register("smollm2", gguf, version="1.0.0", stage=Stage.PRODUCTION)
        registry.register("smollm2", gguf, version="2.0.0")
    return registry


@pytest.fixture()
def server(tmp_path: Path, smollm2_gguf: Path, smollm2_int4: Path) -> Iterator[BackgroundServer]:
    registry = two_versions(tmp_path / "home", smollm2_gguf)
    config = ServerConfig(
        http_port=0,
        grpc_port=None,
        drain_timeout_s=60,
        sync_interval_s=SYNC_S,
        generation=EngineConfig(max_num_seqs=STREAMS, max_model_len=256),
    )
    with BackgroundServer(registry, ["smollm2"], config) as running:
        yield running


def promote(home: Path, version: str) -> None:
    command = [*mcp_command(), "model", "promote", "--name", "smollm2", "--version", version, "--stage", "production"]
    done = subprocess.run(command, env={**os.environ, "MCP_HOME": str(home)}, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def stream(base: str, started: threading.Semaphore) -> tuple[str, list[str]]:
    body = {"model": "smollm2", "messages": HELLO, "max_tokens": 48, "ignore_eos": True, "stream": True}
    events: list[str] = []
    with httpx.stream("POST", f"{base}/v1/chat/completions", json=body, timeout=120) as answer:
        assert answer.status_code == 200
        version = answer.headers["x-model-version"]
        for line in answer.iter_lines():
            if line.startswith("data: "):
                if not events:
                    started.release()
                events.append(line)
    return version, events


def test_promote_under_load_finishes_streams_on_the_old_version(server: BackgroundServer) -> None:
    base = f"http://{server.http_url}"
    home = server.registry.home
    assert httpx.get(f"{base}/v1/models").json()["data"][0]["version"] == "1.0.0"
    started = threading.Semaphore(0)
    with ThreadPoolExecutor(STREAMS + 4) as pool:
        streams = [pool.submit(stream, base, started) for _ in range(STREAMS)]
        for _ in range(STREAMS):
            assert started.acquire(timeout=120), "a stream never started"
        statuses: list[int] = []
        versions: list[str] = []

        def traffic() -> None:
            with httpx.Client(base_url=base, timeout=60) as client:
                for _ in range(REQUESTS):
                    answer = client.post("/v1/chat/completions", json=ONE_TOKEN)
                    statuses.append(answer.status_code)
                    versions.append(answer.headers.get("x-model-version", ""))

        across = pool.submit(traffic)
        time.sleep(0.5)
        promote(home, "2.0.0")
        promoted_at = time.monotonic()
        outcomes = [future.result(timeout=240) for future in streams]
        across.result(timeout=240)

    for version, events in outcomes:
        assert version == "1.0.0"
        assert events[-1] == "data: [DONE]", events[-3:]
        last = json.loads(events[-2].removeprefix("data: "))
        assert last["choices"][0]["finish_reason"] == "length", last
    assert len(statuses) == REQUESTS and all(200 <= status < 300 for status in statuses), set(statuses)
    assert {"1.0.0", "2.0.0"} >= set(versions) and versions[-1] == "2.0.0"

    deadline = promoted_at + SYNC_S * 4 + 5
    while True:
        answer = httpx.post(f"{base}/v1/chat/completions", json=ONE_TOKEN)
        if answer.headers["x-model-version"] == "2.0.0":
            break
        assert time.monotonic() < deadline, "new requests still go to 1.0.0"
    assert httpx.get(f"{base}/v1/models").json()["data"][0]["version"] == "2.0.0"
    closed_by = time.monotonic() + 30
    while len(server.plane.llms.engines()) > 1:  # the old engine closes once its last stream ended
        assert time.monotonic() < closed_by, "the retired engine was never closed"
        time.sleep(0.1)
    assert [served.record.version for served in server.plane.llms.served_versions("smollm2")] == ["2.0.0"]


def test_x_model_version_pins_a_loaded_version_and_refuses_others(server: BackgroundServer) -> None:
    base = f"http://{server.http_url}"
    chat = ONE_TOKEN
    answer = httpx.post(f"{base}/v1/chat/completions", json=chat, headers={"X-Model-Version": "1.0.0"})
    assert answer.status_code == 200 and answer.headers["x-model-version"] == "1.0.0"
    answer = httpx.post(f"{base}/v1/chat/completions", json=chat, headers={"X-Model-Version": "2.0.0"})
    assert answer.status_code == 404 and "no loaded version 2.0.0" in answer.json()["error"]["message"]
    answer = httpx.post(f"{base}/v1/chat/completions", json=chat, headers={"X-Model-Version": "latest"})
    assert answer.status_code == 400 and "X-Model-Version" in answer.json()["error"]["message"]
    pinned = f"{base}/v2/models/smollm2/versions/1.0.0/generate"
    generated = httpx.post(pinned, json={"text_input": "Hi", "max_tokens": 1})
    assert generated.status_code == 200 and generated.json()["model_version"] == "1.0.0"
    assert generated.headers["x-model-version"] == "1.0.0"
