"""A 1,000-line batch through the official openai client: chat lines on SmolLM2 and embedding lines on
MiniLM, uploaded with ``files.create``, run by ``batches.create`` and polled to ``completed``; every
output line equals the synchronous answer for the same ``custom_id`` (chat at temperature 0, the
engine batch-invariant as ``mcp serve --batch-invariance auto`` runs it: docs/determinism.md)."""

from __future__ import annotations

import io
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import openai
import orjson
import pytest

from mcp2026ai.generation.config import BatchInvariance, EngineConfig
from mcp2026ai.registry import Preprocessing
from mcp2026ai.registry.records import TextPreprocessing
from mcp2026ai.server.config import ServerConfig
from mcp2026ai.testing import BackgroundServer
from tests.integration.test_openai_batch import TOKENIZER, minilm_onnx
from tests.support.llm import register_smollm2

pytestmark = [pytest.mark.slow, pytest.mark.timeout(420)]
CHAT_LINES, EMBEDDING_LINES = 40, 960
CHAT_TOKENS = 2
"""Few chat lines of few tokens: the 1,000 lines took 52-74 s on two cores shared with other work (load
average 6-14; the whole test at most 146 s with the synchronous answers and the server's start), most
of it the embeddings."""
PATIENCE_S = 200
"""How long the batches may take on a host much busier than that before the test fails."""


def chat_body(index: int) -> dict[str, Any]:
    question = f"What is {index} plus {index % 7}?"
    return {"model": "smollm2", "messages": [{"role": "user", "content": question}], "max_tokens": CHAT_TOKENS,
            "temperature": 0}  # fmt: skip


def embedding_body(index: int) -> dict[str, Any]:
    return {"model": "minilm", "input": f"sentence number {index} of the batch"}


def jsonl(url: str, bodies: dict[str, dict[str, Any]]) -> bytes:
    lines = [{"custom_id": key, "method": "POST", "url": url, "body": body} for key, body in bodies.items()]
    return b"".join(orjson.dumps(line) + b"\n" for line in lines)


def run_batch(client: openai.OpenAI, url: str, bodies: dict[str, dict[str, Any]]) -> str:
    uploaded = client.files.create(
        file=(f"{url[4:].replace('/', '_')}.jsonl", io.BytesIO(jsonl(url, bodies))), purpose="batch"
    )
    batch = client.batches.create(input_file_id=uploaded.id, endpoint=url, completion_window="24h")  # type: ignore[arg-type]
    assert batch.request_counts is not None and batch.request_counts.total == len(bodies)
    return batch.id


def completed(client: openai.OpenAI, batch_id: str, deadline: float) -> dict[str, dict[str, Any]]:
    """Poll to ``completed``; the output lines by custom_id."""
    while (batch := client.batches.retrieve(batch_id)).status != "completed":
        assert batch.status in ("validating", "in_progress", "finalizing"), batch
        assert time.monotonic() < deadline, batch
        time.sleep(0.5)
    assert batch.request_counts is not None and batch.request_counts.failed == 0 and batch.error_file_id is None
    assert batch.output_file_id is not None
    lines = [orjson.loads(line) for line in client.files.content(batch.output_file_id).content.splitlines()]
    by_id = {line["custom_id"]: line for line in lines}
    assert len(by_id) == len(lines) == batch.request_counts.completed == batch.request_counts.total
    assert all(line["response"]["status_code"] == 200 for line in lines)
    return by_id


def test_a_thousand_line_batch_answers_each_line_as_the_synchronous_call(
    tmp_path: Path, smollm2_gguf: Path, smollm2_int4: Path
) -> None:
    registry = register_smollm2(tmp_path / "home", smollm2_gguf)
    text = TextPreprocessing(tokenizer=str(TOKENIZER), max_length=128, pooling="mean", normalize=True)
    registry.register("minilm", minilm_onnx, preprocessing=Preprocessing(text=text))
    engine = EngineConfig(max_num_seqs=8, max_model_len=256, batch_invariance=BatchInvariance.AUTO)
    config = ServerConfig(http_port=0, grpc_port=None, drain_timeout_s=5, generation=engine, batch_lines_in_flight=32)
    chats = {f"chat-{i}": chat_body(i) for i in range(CHAT_LINES)}
    embeddings = {f"emb-{i}": embedding_body(i) for i in range(EMBEDDING_LINES)}
    with BackgroundServer(registry, ["smollm2", "minilm"], config) as server:
        client = openai.OpenAI(base_url=f"http://{server.http_url}/v1", api_key="unused", max_retries=0, timeout=60)
        started = time.monotonic()
        chat_batch = run_batch(client, "/v1/chat/completions", chats)
        embedding_batch = run_batch(client, "/v1/embeddings", embeddings)
        embedding_out = completed(client, embedding_batch, started + PATIENCE_S)
        embedding_s = time.monotonic() - started
        chat_out = completed(client, chat_batch, started + PATIENCE_S)
        batch_s = time.monotonic() - started
        with ThreadPoolExecutor(8) as pool:
            answers = pool.map(lambda body: client.chat.completions.create(**body), chats.values())
            alone_chats = dict(zip(chats, answers, strict=True))
        inputs = [body["input"] for body in embeddings.values()]  # the synchronous answers, 100 inputs a call
        vectors = [
            item.embedding
            for start in range(0, len(inputs), 100)
            for item in client.embeddings.create(model="minilm", input=inputs[start : start + 100]).data
        ]
    print(f"1,000 lines answered in {batch_s:.1f} s (the embeddings in {embedding_s:.1f} s)")
    assert sorted(chat_out) == sorted(chats) and sorted(embedding_out) == sorted(embeddings)
    for custom_id, alone in alone_chats.items():
        body = chat_out[custom_id]["response"]["body"]
        assert body["choices"][0]["message"]["content"] == alone.choices[0].message.content, custom_id
        assert body["usage"]["completion_tokens"] == alone.usage.completion_tokens  # type: ignore[union-attr]
    for custom_id, alone_vector in zip(embeddings, vectors, strict=True):
        vector = embedding_out[custom_id]["response"]["body"]["data"][0]["embedding"]
        assert vector == pytest.approx(alone_vector, abs=1e-6), custom_id
