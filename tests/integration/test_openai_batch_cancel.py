"""``batches.cancel`` stops a batch within one engine step (SmolLM2, the official openai client).

Every step the engine plans is recorded (its start time and the requests it runs), and the cancel is
timed around the client's call: no step that starts once the cancel is answered runs a line of the
batch, and of the steps that start while it is being answered at most one does (the step already
planned when the lines in flight were aborted); no line waiting for a slot is admitted after it.
``request_counts`` then equals the output and error files, line for line."""

from __future__ import annotations

import io
import itertools
import time
from pathlib import Path
from typing import Any

import openai
import orjson
import pytest

from mcp2026ai.generation.config import EngineConfig
from mcp2026ai.generation.step_plan import StepPlan
from mcp2026ai.server.config import ServerConfig
from mcp2026ai.testing import BackgroundServer
from tests.support.llm import register_smollm2

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]
SHORT, LONG = 3, 9
"""Lines of two forced tokens (answered before the cancel) and of 400 (cut by it)."""


def line(custom_id: str, tokens: int) -> dict[str, Any]:
    body = {"model": "smollm2", "messages": [{"role": "user", "content": f"Tell me about {custom_id}."}],
            "max_tokens": tokens, "ignore_eos": True}  # fmt: skip
    return {"custom_id": custom_id, "method": "POST", "url": "/v1/chat/completions", "body": body}


def batch_lines() -> bytes:
    rows = [line(f"short{i}", 2) for i in range(SHORT)] + [line(f"long{i}", 400) for i in range(LONG)]
    return b"".join(orjson.dumps(row) + b"\n" for row in rows)


def runs_lines(plan: StepPlan) -> bool:
    """Whether a step runs any request's tokens (a decode row, a verification or a prompt chunk)."""
    rows = plan.decode is not None and any(sequence is not None for sequence in plan.decode.sequences)
    return rows or bool(plan.verify or plan.chunks or plan.scored)


def test_cancel_stops_the_lines_within_one_engine_step_and_counts_exactly(
    tmp_path: Path, smollm2_gguf: Path, smollm2_int4: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    registry = register_smollm2(tmp_path / "home", smollm2_gguf)
    generation = EngineConfig(max_num_seqs=4, max_model_len=512)
    config = ServerConfig(
        http_port=0, grpc_port=None, drain_timeout_s=5, generation=generation, batch_lines_in_flight=6
    )
    with BackgroundServer(registry, ["smollm2"], config) as server:
        engine = server.plane.llms.get("smollm2").engine
        steps: list[tuple[float, StepPlan]] = []
        schedule = engine.scheduler.schedule

        def recorded(*args: Any, **kwargs: Any) -> StepPlan:
            started = time.monotonic()
            plan = schedule(*args, **kwargs)
            steps.append((started, plan))
            return plan

        monkeypatch.setattr(engine.scheduler, "schedule", recorded)
        client = openai.OpenAI(base_url=f"http://{server.http_url}/v1", api_key="unused", max_retries=0)
        uploaded = client.files.create(file=("lines.jsonl", io.BytesIO(batch_lines())), purpose="batch")
        batch = client.batches.create(
            input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h"
        )
        deadline = time.monotonic() + 120
        while (batch := client.batches.retrieve(batch.id)).request_counts.completed < SHORT:  # type: ignore[union-attr]
            assert time.monotonic() < deadline, batch
            time.sleep(0.05)
        while engine.waiting.depth() == 0:  # long lines hold every slot, and more wait for one
            assert time.monotonic() < deadline, "no line waited for a slot"
            time.sleep(0.02)
        asked = time.monotonic()
        cancelled = client.batches.cancel(batch.id)
        answered = time.monotonic()
        assert cancelled.status in ("cancelling", "cancelled")
        assert not engine.busy, "a line of the cancelled batch still runs or waits"
        time.sleep(0.3)  # steps that would run the batch's lines, were any left
        while (batch := client.batches.retrieve(batch.id)).status != "cancelled":
            assert time.monotonic() < deadline, batch.status
            time.sleep(0.05)
        output = client.files.content(batch.output_file_id).content.splitlines() if batch.output_file_id else []
        errors = client.files.content(batch.error_file_id).content.splitlines() if batch.error_file_id else []
    after_ask = [plan for started, plan in steps if started >= asked and runs_lines(plan)]
    after_answer = [plan for started, plan in steps if started >= answered and runs_lines(plan)]
    step_s = sorted(b - a for (a, _), (b, _) in itertools.pairwise(steps))[len(steps) // 2]
    print(f"cancel answered in {(answered - asked) * 1000:.0f} ms (median step {step_s * 1000:.0f} ms); "
          f"steps running lines after it was asked: {len(after_ask)}")  # fmt: skip
    assert after_answer == []
    assert len(after_ask) <= 1
    assert not [plan for started, plan in steps if started >= asked and plan.admitted]  # nothing started
    counts = batch.request_counts
    assert counts is not None and counts.total == SHORT + LONG
    assert (counts.completed, counts.failed) == (len(output), len(errors))
    assert sorted(orjson.loads(row)["custom_id"] for row in output) == [f"short{i}" for i in range(SHORT)]


def test_batches_share_their_lines_in_flight_and_a_waiting_one_cancels_at_once(
    tmp_path: Path, smollm2_gguf: Path, smollm2_int4: Path
) -> None:
    """Two batches of long lines hold at most ``batch_lines_in_flight`` engine slots together (the rest
    stay free for latency-critical requests); the second, waiting for a line slot, is cancelled at once."""
    registry = register_smollm2(tmp_path / "home", smollm2_gguf)
    generation = EngineConfig(max_num_seqs=4, max_model_len=512)
    config = ServerConfig(
        http_port=0, grpc_port=None, drain_timeout_s=5, generation=generation, batch_lines_in_flight=2
    )
    content = b"".join(orjson.dumps(line(f"long{i}", 400)) + b"\n" for i in range(4))
    with BackgroundServer(registry, ["smollm2"], config) as server:
        engine = server.plane.llms.get("smollm2").engine
        client = openai.OpenAI(base_url=f"http://{server.http_url}/v1", api_key="unused", max_retries=0)
        ids = []
        for name in ("first", "second"):
            uploaded = client.files.create(file=(f"{name}.jsonl", io.BytesIO(content)), purpose="batch")
            created = client.batches.create(
                input_file_id=uploaded.id, endpoint="/v1/chat/completions", completion_window="24h"
            )
            ids.append(created.id)
        deadline = time.monotonic() + 60
        while engine.slots.active < 2:
            assert time.monotonic() < deadline, "the lines never reached the engine"
            time.sleep(0.02)
        held = []
        for _ in range(20):
            held.append(engine.slots.active + engine.waiting.depth())
            time.sleep(0.05)
        assert max(held) == 2
        asked = time.monotonic()
        for batch_id in reversed(ids):
            client.batches.cancel(batch_id)
        while {client.batches.retrieve(batch_id).status for batch_id in ids} != {"cancelled"}:
            assert time.monotonic() - asked < 20
            time.sleep(0.05)
        assert not engine.busy
