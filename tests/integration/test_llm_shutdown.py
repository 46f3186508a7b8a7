"""Shutdown with text generations in flight (issue 38, finding 1 of ../shared/llm-reliability-findings.md).

`mcp serve` with 4 streams running, a streaming and a non-streaming request queued behind them, then
SIGTERM with a drain timeout shorter than the streams: every running stream ends with its last token
or an error event, then ``data: [DONE]`` (never cut off); the queued ones get 503 at once (OpenAI's
error JSON) or an error event and ``[DONE]``; the process exits 0. While the gate is closed, new
requests get 503 on every text route.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from mcp2026ai.ir.llm_convert import CACHE_VARIABLE
from mcp2026ai.server.config import ServerConfig
from mcp2026ai.testing import BackgroundServer
from tests.support.llm import LLM_CACHE, register_smollm2

from .conftest import listening_line, mcp_command
from .test_llm_streams_under_pressure import STORY

pytestmark = pytest.mark.timeout(180)
DRAIN_S = 3.0


@pytest.fixture()
def serving(tmp_path: Path, smollm2_gguf: Path, smollm2_int4: Path) -> Iterator[tuple[subprocess.Popen[str], str]]:
    home = tmp_path / "home"
    register_smollm2(home, smollm2_gguf)
    command = [*mcp_command(), "serve", "--name", "smollm2", "--port", "0", "--grpc-port", "-1", "--no-policy"]
    command += ["--max-num-seqs", "4", "--max-model-len", "512", "--drain-timeout", str(DRAIN_S)]
    env = {**os.environ, "MCP_HOME": str(home), CACHE_VARIABLE: str(LLM_CACHE)}
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert process.stdout is not None
    try:
        for line in process.stdout:
            if line.startswith("listening"):
                match = re.search(r"http=(\d+)", line)
                assert match, line
                yield process, f"http://127.0.0.1:{match.group(1)}"
                return
        pytest.fail(f"mcp serve ended before listening: {process.stderr.read() if process.stderr else ''}")
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def waiting_sequences(url: str) -> float:
    text = httpx.get(f"{url}/metrics", timeout=10).text
    match = re.search(r'mcp_generation_sequences\{model="smollm2",state="waiting"\} (\S+)', text)
    return float(match.group(1)) if match else 0.0


def test_sigterm_ends_every_stream_cleanly_and_queued_requests_get_503(
    serving: tuple[subprocess.Popen[str], str],
) -> None:
    process, url = serving
    body = {"model": "smollm2", "messages": STORY, "max_tokens": 450, "ignore_eos": True}
    streams: list[list[str]] = [[] for _ in range(5)]
    first_events = threading.Semaphore(0)
    queued: dict[str, object] = {}

    def stream(index: int) -> None:
        with httpx.stream("POST", f"{url}/v1/chat/completions", json={**body, "stream": True}, timeout=60) as answer:
            for line in answer.iter_lines():
                if line.startswith("data: "):
                    if not streams[index]:
                        first_events.release()
                    streams[index].append(line)

    def whole() -> None:
        answer = httpx.post(f"{url}/v1/chat/completions", json=body, timeout=60)
        queued["status"], queued["document"] = answer.status_code, answer.json()

    running = [threading.Thread(target=stream, args=(index,)) for index in range(4)]
    for thread in running:
        thread.start()
    for _ in running:
        assert first_events.acquire(timeout=60), "a stream never started"
    behind = [threading.Thread(target=stream, args=(4,)), threading.Thread(target=whole)]
    for thread in behind:
        thread.start()
    deadline = time.monotonic() + 20
    while waiting_sequences(url) < 2:
        assert time.monotonic() < deadline, "the two requests never queued"
        time.sleep(0.05)

    process.send_signal(signal.SIGTERM)
    started = time.monotonic()
    for thread in [*running, *behind]:
        thread.join(60)
    _, err = process.communicate(timeout=60)
    stopped_s = time.monotonic() - started
    assert process.returncode == 0, err
    assert "Traceback" not in err and "Cancel" not in err, err

    for events in streams:
        assert events[-1] == "data: [DONE]", events[-3:]  # never cut off
        last = json.loads(events[-2].removeprefix("data: "))
        assert "error" in last or last["choices"][0]["finish_reason"] == "length", last
    assert "shutting down" in json.loads(streams[4][-2].removeprefix("data: "))["error"]["message"]
    assert len(streams[4]) == 2  # the queued stream: no tokens, the error, [DONE]
    assert queued["status"] == 503, queued
    assert queued["document"]["error"]["type"] == "server_error"  # type: ignore[index]
    assert stopped_s < DRAIN_S + 5, f"shutdown took {stopped_s:.1f} s with a {DRAIN_S} s drain"


def test_new_requests_get_503_once_the_gate_closes(tmp_path: Path, smollm2_gguf: Path, smollm2_int4: Path) -> None:
    registry = register_smollm2(tmp_path / "home", smollm2_gguf)
    config = ServerConfig(http_port=0, grpc_port=None, drain_timeout_s=2)
    with BackgroundServer(registry, ["smollm2"], config) as server:
        server.plane.stop_accepting()
        base = f"http://{server.http_url}"
        chat = {"model": "smollm2", "messages": STORY, "max_tokens": 2}
        answer = httpx.post(f"{base}/v1/chat/completions", json=chat, timeout=30)
        assert answer.status_code == 503 and "shutting down" in answer.json()["error"]["message"]
        answer = httpx.post(f"{base}/v1/chat/completions", json={**chat, "stream": True}, timeout=30)
        assert answer.status_code == 503 and answer.json()["error"]["type"] == "server_error"
        answer = httpx.post(f"{base}/v2/models/smollm2/generate", json={"text_input": "Hi"}, timeout=30)
        assert answer.status_code == 503 and "shutting down" in answer.json()["error"]
        assert httpx.get(f"{base}/v2/health/ready", timeout=30).status_code != 200


@pytest.mark.slow
def test_sigterm_answers_every_queued_chat_when_the_drain_allows(
    tmp_path: Path, smollm2_gguf: Path, smollm2_int4: Path
) -> None:
    """Issue 51, item 5: 16 streams hold every slot, 4 chats (2 streaming, 2 not) queue behind them,
    SIGTERM with a drain timeout long enough: every chat sent before the signal is answered 200 with
    all its tokens; the engine closes only afterwards."""
    home = tmp_path / "home"
    register_smollm2(home, smollm2_gguf)
    command = [*mcp_command(), "serve", "--name", "smollm2", "--port", "0", "--grpc-port", "-1", "--no-policy"]
    command += ["--max-num-seqs", "16", "--max-model-len", "256", "--drain-timeout", "120"]
    env = {**os.environ, "MCP_HOME": str(home), CACHE_VARIABLE: str(LLM_CACHE)}
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        match = re.search(r"http=(\d+)", listening_line(process))
        assert match, process.stderr.read() if process.stderr else ""
        url = f"http://127.0.0.1:{match.group(1)}"
        body = {"model": "smollm2", "messages": STORY, "max_tokens": 32, "ignore_eos": True}
        finished: list[tuple[int, str | None]] = []
        started = threading.Semaphore(0)

        def stream() -> None:
            streamed = {**body, "stream": True}
            with httpx.stream("POST", f"{url}/v1/chat/completions", json=streamed, timeout=120) as answer:
                events = []
                for line in answer.iter_lines():
                    if line.startswith("data: "):
                        if not events:
                            started.release()
                        events.append(line)
            last = json.loads(events[-2].removeprefix("data: ")) if len(events) > 1 else {}
            reason = last.get("choices", [{}])[0].get("finish_reason") if "choices" in last else str(last)
            finished.append((answer.status_code if events[-1:] == ["data: [DONE]"] else 0, reason))

        def whole() -> None:
            answer = httpx.post(f"{url}/v1/chat/completions", json=body, timeout=120)
            reason = answer.json()["choices"][0]["finish_reason"] if answer.status_code == 200 else answer.text
            finished.append((answer.status_code, reason))

        running = [threading.Thread(target=stream) for _ in range(16)]
        for thread in running:
            thread.start()
        for _ in running:
            assert started.acquire(timeout=120), "a stream never started"
        behind = [threading.Thread(target=target) for target in (stream, stream, whole, whole)]
        for thread in behind:
            thread.start()
        deadline = time.monotonic() + 30
        while waiting_sequences(url) < 4:
            assert time.monotonic() < deadline, "the four chats never queued"
            time.sleep(0.05)
        process.send_signal(signal.SIGTERM)
        for thread in [*running, *behind]:
            thread.join(150)
        _, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, err
    assert finished == [(200, "length")] * 20, finished
