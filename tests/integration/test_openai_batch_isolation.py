"""Bad batch input is an OpenAI-shaped 400 naming the line (or the file), and none of it touches a batch
that is running meanwhile: it completes with every line once and exact ``request_counts``."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest

from mcp2026ai.server.config import ServerConfig
from mcp2026ai.server.http.openai.batch import lines
from mcp2026ai.testing import BackgroundServer
from tests.integration.test_openai_batch import embedding_lines, output_lines, register_minilm, wait_done

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]
RUNNING_LINES = 300
UNKNOWN = b'{"custom_id": "x", "method": "POST", "url": "/v1/images/generations", "body": {"model": "minilm"}}\n'


@pytest.fixture
def client(tmp_path: Path) -> Iterator[openai.OpenAI]:
    config = ServerConfig(http_port=0, grpc_port=None, drain_timeout_s=5, max_request_bytes=1 << 20)
    with BackgroundServer(register_minilm(tmp_path / "home"), ["minilm"], config) as server:
        yield openai.OpenAI(base_url=f"http://{server.http_url}/v1", api_key="unused", max_retries=0)


def refused(client: openai.OpenAI, content: bytes) -> dict[str, str]:
    """The 400 of a batch created from ``content``."""
    uploaded = client.files.create(file=("bad.jsonl", io.BytesIO(content)), purpose="batch")
    with pytest.raises(openai.BadRequestError) as error:
        client.batches.create(input_file_id=uploaded.id, endpoint="/v1/embeddings", completion_window="24h")
    body = error.value.body
    assert isinstance(body, dict)
    return body


def test_bad_input_names_the_line_and_leaves_a_running_batch_alone(
    client: openai.OpenAI, monkeypatch: pytest.MonkeyPatch
) -> None:
    uploaded = client.files.create(file=("good.jsonl", io.BytesIO(embedding_lines(RUNNING_LINES))), purpose="batch")
    running = client.batches.create(input_file_id=uploaded.id, endpoint="/v1/embeddings", completion_window="24h")

    malformed = refused(client, embedding_lines(3) + b'{"custom_id": "e9", "method": \n')
    assert (malformed["param"], malformed["type"]) == ("line 4", "invalid_request_error")
    assert malformed["message"].startswith("line 4: not valid JSON")
    unknown = refused(client, embedding_lines(1) + UNKNOWN)
    assert unknown["param"] == "line 2" and "/v1/images/generations" in unknown["message"]
    with pytest.raises(openai.BadRequestError) as too_big:
        client.files.create(file=("big.jsonl", io.BytesIO(b"x" * (2 << 20))), purpose="batch")
    assert isinstance(too_big.value.body, dict) and too_big.value.body["param"] == "file"
    monkeypatch.setattr(lines, "MAX_LINES", 10)
    too_many = refused(client, embedding_lines(11))
    assert too_many["param"] == "line 11" and "more than 10 requests" in too_many["message"]
    monkeypatch.undo()

    assert client.batches.retrieve(running.id).status in ("validating", "in_progress", "completed")
    done = wait_done(client, running.id, timeout_s=240)
    assert done.status == "completed" and done.request_counts is not None
    assert (done.request_counts.total, done.request_counts.completed, done.request_counts.failed) == (
        RUNNING_LINES,
        RUNNING_LINES,
        0,
    )
    answered = [line["custom_id"] for line in output_lines(client, done.output_file_id)]
    assert sorted(answered) == sorted(f"e{i}" for i in range(RUNNING_LINES))
    assert [batch.id for batch in client.batches.list() if batch.status != "completed"] == []  # nothing else was made
