"""The TTFT budget counts the prompts ahead, not only the wait for a slot (issue 34, item 5): with every
slot free, a burst whose prefill cannot reach its first tokens in time is refused at once (429 with
Retry-After), and the requests admitted are served."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from mcp2026ai.errors import OverloadedError
from mcp2026ai.generation.config import EngineConfig
from mcp2026ai.generation.engine import build_engine
from mcp2026ai.generation.pressure import PrefillPace
from mcp2026ai.generation.types import GenerationRequest, SamplingParams

pytestmark = pytest.mark.timeout(120)
SHORT = SamplingParams(max_tokens=2, temperature=0, ignore_eos=True)


def test_the_pace_is_a_running_mean_and_nothing_measured_waits_nothing() -> None:
    pace = PrefillPace()
    assert pace.seconds_for(1000) == 0.0
    pace.observe(100, 0.1)  # 1,000 tokens/s
    pace.observe(0, 0.1)  # nothing ran: ignored
    assert pace.seconds_for(500) == pytest.approx(0.5)
    pace.observe(100, 0.05)  # 2,000 tokens/s moves the mean a fifth of the way
    assert pace.tokens_per_s == pytest.approx(1200)


def test_a_burst_the_prefill_cannot_serve_in_time_is_refused_though_slots_are_free(smollm2_int4: Path) -> None:
    config = EngineConfig(max_num_seqs=8, max_model_len=512, prefill_chunk_tokens=32, max_num_batched_tokens=40)
    engine = build_engine("smollm2", smollm2_int4, config)
    words = engine.tokenizer.encode("The lighthouse keeper wrote a long letter every night. " * 40)
    prompt = words[:96]
    try:

        async def burst() -> tuple[list[OverloadedError], int]:
            warm = engine.submit(GenerationRequest("warm", words[:320], SHORT))  # 10 chunks: the pace is measured
            await warm.collect(1)
            assert engine.prefill_pace.tokens_per_s is not None
            budget = 2.5 * engine.prefill_pace.seconds_for(len(prompt))  # two prompts' prefill, not eight
            refused, streams = [], []
            for index in range(8):
                request = GenerationRequest(f"burst-{index}", prompt, SHORT, ttft_budget_s=budget)
                try:
                    streams.append(engine.submit(request))
                except OverloadedError as exc:
                    refused.append(exc)
            served = await asyncio.gather(*(stream.collect(1) for stream in streams))
            assert all(len(choices[0].token_ids) == 2 for choices in served)
            return refused, len(streams)

        refused, admitted = asyncio.run(burst())
    finally:
        engine.close()
    assert admitted >= 1 and refused, (admitted, len(refused))  # all 8 slots were free
    assert all("prompt tokens ahead" in str(exc) and exc.retry_after_s > 0 for exc in refused)
