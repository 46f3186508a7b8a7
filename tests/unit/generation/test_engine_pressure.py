"""The engine under pressure (real SmolLM2 int4): a stream nobody reads is cut off and its slot freed,
the TTFT budget refuses at once what the queue cannot serve in time and expires what waited too long,
and drain() fails the waiting requests while the running ones finish (issue 38)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp2026ai.errors import OverloadedError, UnavailableError
from mcp2026ai.generation.config import EngineConfig
from mcp2026ai.generation.engine import Engine, build_engine
from mcp2026ai.generation.stream import SlowReaderError
from mcp2026ai.generation.types import GenerationRequest, SamplingParams

pytestmark = pytest.mark.timeout(120)
LONG = SamplingParams(max_tokens=60, temperature=0, ignore_eos=True)
BLOCKER = SamplingParams(max_tokens=240, temperature=0, ignore_eos=True)  # holds the one slot for 0.5-5 s


@pytest.fixture(scope="module")
def engine(smollm2_int4: Path) -> Iterator[Engine]:
    built = build_engine(
        "smollm2", smollm2_int4, EngineConfig(max_num_seqs=1, max_model_len=256, stream_buffer_deltas=8)
    )
    yield built
    built.close()


def prompt(engine: Engine) -> list[int]:
    return engine.tokenizer.encode("Once upon a time")


async def until_idle(engine: Engine, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while engine.busy:
        assert time.monotonic() < deadline, "the engine never let go"
        await asyncio.sleep(0.02)


def test_a_stream_nobody_reads_is_cut_off_and_frees_its_slot(engine: Engine) -> None:
    async def scenario() -> None:
        stream = engine.submit(GenerationRequest("unread", prompt(engine), LONG))
        await until_idle(engine)  # nobody read: the engine stopped on its own
        assert engine.slots.active == 0
        with pytest.raises(SlowReaderError, match="stream_buffer_deltas 8"):
            async for _ in stream:
                pass
        assert stream.usage.completion_tokens < 20  # a few steps past the buffer, not 60

    asyncio.run(scenario())


def test_the_ttft_budget_expires_waiters_and_refuses_at_once(engine: Engine) -> None:
    async def scenario() -> None:
        running = engine.submit(GenerationRequest("running", prompt(engine), BLOCKER))
        reading = asyncio.ensure_future(running.collect(1))  # read, so it is never cut off as a slow reader
        waiting = engine.submit(GenerationRequest("waiting", prompt(engine), LONG, ttft_budget_s=0.1))
        with pytest.raises(OverloadedError, match="past the TTFT budget"):
            await waiting.collect(1)  # it could not start within 0.1 s: 429, not a late start
        await reading  # measured: the engine now knows how long a slot is held
        assert engine.queue_wait.service_s is not None
        busy = engine.submit(GenerationRequest("busy", prompt(engine), BLOCKER))
        reading = asyncio.ensure_future(busy.collect(1))
        await asyncio.sleep(0.05)
        started = time.monotonic()
        with pytest.raises(OverloadedError, match="exceeds the time-to-first-token budget") as refused:
            engine.submit(GenerationRequest("late", prompt(engine), LONG, ttft_budget_s=0.05))
        assert time.monotonic() - started < 0.05 and refused.value.retry_after_s > 0.05
        await reading

    asyncio.run(scenario())


def test_drain_fails_the_waiting_and_lets_the_running_finish(smollm2_int4: Path) -> None:
    engine = build_engine("smollm2", smollm2_int4, EngineConfig(max_num_seqs=1, max_model_len=256))

    async def scenario() -> None:
        params = SamplingParams(max_tokens=30, temperature=0, ignore_eos=True)
        running = engine.submit(GenerationRequest("running", prompt(engine), params))
        waiting = engine.submit(GenerationRequest("waiting", prompt(engine), params))
        await asyncio.sleep(0.05)
        engine.drain()
        with pytest.raises(UnavailableError, match="shutting down"):
            await waiting.collect(1)
        with pytest.raises(UnavailableError, match="shutting down"):
            engine.submit(GenerationRequest("new", prompt(engine), params))
        choice = (await running.collect(1))[0]
        assert len(choice.token_ids) == 30 and choice.finish_reason == "length"

    try:
        asyncio.run(scenario())
    finally:
        engine.close()
