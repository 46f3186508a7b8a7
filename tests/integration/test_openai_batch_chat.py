"""Chat lines in a batch on SmolLM2: answered as the synchronous call answers them at temperature 0,
over /v1/batches (the official client) and offline with ``mcp batch run``."""

from __future__ import annotations

import io
import sys
import time
from pathlib import Path
from typing import Any

import openai
import orjson
import pytest

from mcp2026ai.cli import context
from mcp2026ai.cli.main import main
from mcp2026ai.generation.config import EngineConfig
from mcp2026ai.ir.llm_convert import CACHE_VARIABLE
from mcp2026ai.server.config import ServerConfig
from mcp2026ai.testing import BackgroundServer
from tests.support.llm import LLM_CACHE, register_smollm2

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]
QUESTIONS = ["What is 2+2?", "Name a colour.", "Say hello.", "What is the capital of France?"]


def chat_lines() -> bytes:
    lines = [
        {
            "custom_id": f"q{index}",
            "method": "POST",
            "url": "/v1/chat/completions",
            "body": {
                "model": "smollm2",
                "messages": [{"role": "user", "content": question}],
                "max_tokens": 8,
                "temperature": 0,
            },
        }
        for index, question in enumerate(QUESTIONS)
    ]
    return b"".join(orjson.dumps(line) + b"\n" for line in lines)


def answers(lines: list[dict[str, Any]]) -> dict[str, str]:
    return {line["custom_id"]: line["response"]["body"]["choices"][0]["message"]["content"] for line in lines}


def test_chat_batch_and_mcp_batch_run_answer_as_synchronous_calls(
    tmp_path: Path, smollm2_gguf: Path, smollm2_int4: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    home = tmp_path / "home"
    register_smollm2(home, smollm2_gguf)
    config = ServerConfig(
        http_port=0, grpc_port=None, drain_timeout_s=5, generation=EngineConfig(max_num_seqs=4, max_model_len=256)
    )
    with BackgroundServer(register_smollm2(home, smollm2_gguf), ["smollm2"], config) as server:
        client = openai.OpenAI(base_url=f"http://{server.http_url}/v1", api_key="unused", max_retries=0)
        alone = {
            f"q{index}": client.chat.completions.create(
                model="smollm2", messages=[{"role": "user", "content": question}], max_tokens=8, temperature=0
            )
            .choices[0]
            .message.content
            for index, question in enumerate(QUESTIONS)
        }
        uploaded = client.files.create(file=("chat.jsonl", io.BytesIO(chat_lines())), purpose="batch")
        batch = client.batches.create(
            input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h"
        )
        deadline = time.monotonic() + 300
        while (batch := client.batches.retrieve(batch.id)).status not in ("completed", "failed"):
            assert time.monotonic() < deadline, batch
            time.sleep(0.2)
        assert batch.output_file_id is not None
        output = [orjson.loads(line) for line in client.files.content(batch.output_file_id).content.splitlines()]
    assert answers(output) == alone

    source, out = tmp_path / "chat.jsonl", tmp_path / "out.jsonl"
    source.write_bytes(chat_lines())
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("MCP_HOME", str(home))
        patch.setenv(CACHE_VARIABLE, str(LLM_CACHE))
        patch.setattr(sys, "argv", ["mcp", "batch", "run", str(source), "--out", str(out)])
        context.settings.cache_clear()
        with pytest.raises(SystemExit) as exited:
            main()
        context.settings.cache_clear()
    assert exited.value.code in (0, None), capsys.readouterr().err
    offline = [orjson.loads(line) for line in out.read_bytes().splitlines()]
    assert [line["custom_id"] for line in offline] == [f"q{index}" for index in range(len(QUESTIONS))]
    assert answers(offline) == alone
    assert "4 lines answered (0 with an error)" in capsys.readouterr().out


def test_mcp_batch_run_names_the_bad_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source = tmp_path / "bad.jsonl"
    source.write_bytes(chat_lines() + b"{not json\n")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sys, "argv", ["mcp", "batch", "run", str(source), "--out", str(tmp_path / "out.jsonl")])
        with pytest.raises(SystemExit) as exited:
            main()
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert f"{source}: line 5: not valid JSON" in err.replace("\n", "") and "Traceback" not in err
    assert not (tmp_path / "out.jsonl").exists()


def test_cancel_aborts_the_lines_in_flight(tmp_path: Path, smollm2_gguf: Path, smollm2_int4: Path) -> None:
    """Lines of 256 forced tokens take seconds each; a cancel ends the batch at once, their generations
    aborted (the engine holds no sequence afterwards), none of them recorded."""
    registry = register_smollm2(tmp_path / "home", smollm2_gguf)
    config = ServerConfig(
        http_port=0, grpc_port=None, drain_timeout_s=5, generation=EngineConfig(max_num_seqs=4, max_model_len=512)
    )
    rows = [
        {
            "custom_id": f"long{i}",
            "method": "POST",
            "url": "/v1/chat/completions",
            "body": {"model": "smollm2", "messages": [{"role": "user", "content": f"Story {i}"}],
                     "max_tokens": 256, "ignore_eos": True},
        }
        for i in range(6)
    ]  # fmt: skip
    content = b"".join(orjson.dumps(row) + b"\n" for row in rows)
    with BackgroundServer(registry, ["smollm2"], config) as server:
        client = openai.OpenAI(base_url=f"http://{server.http_url}/v1", api_key="unused", max_retries=0)
        uploaded = client.files.create(file=("long.jsonl", io.BytesIO(content)), purpose="batch")
        batch = client.batches.create(
            input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h"
        )
        engine = server.plane.llms.get("smollm2").engine
        deadline = time.monotonic() + 60
        while not engine.busy:
            assert time.monotonic() < deadline, "the batch's lines never reached the engine"
            time.sleep(0.02)
        cancelled_at = time.monotonic()
        client.batches.cancel(batch.id)
        while (batch := client.batches.retrieve(batch.id)).status != "cancelled":
            assert time.monotonic() - cancelled_at < 10, batch.status
            time.sleep(0.05)
        assert not engine.busy, "the aborted generations left the engine"
    assert time.monotonic() - cancelled_at < 10
    assert batch.request_counts is not None and batch.request_counts.completed == 0
