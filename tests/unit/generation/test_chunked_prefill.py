"""One token budget per step: prompts prefilled in chunks beside the running decodes (real SmolLM2 int4).

Greedy answers are token-identical with and without chunking; no step runs more prompt tokens than
the budget leaves after its decode rows; a long prompt is cut into chunks that ride along with the
running sequences' steps. (How long running streams wait is measured in
``benchmarks/engine/long_prompt.py``, not timed here.)"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from mcp2026ai.generation.config import BatchInvariance, EngineConfig
from mcp2026ai.generation.engine import Engine, build_engine
from mcp2026ai.generation.prefill import PrefillTask, plan_chunks
from mcp2026ai.generation.types import GenerationRequest, SamplingParams
from tests.support.llm import chat_ids

pytestmark = pytest.mark.timeout(300)
TOPICS = ["rivers", "compilers", "bees", "volcanoes", "chess", "bridges", "tea", "comets", "jazz", "forests"]
FILLER = "the sea, the hills and the wind, "
PROMPTS = [f"Tell me about {TOPICS[i % 10]} ({i}): " + FILLER * (i % 5 + 1) for i in range(20)]


async def generate_all(engine: Engine, prompts: Sequence[list[int]], tokens: int) -> list[list[int]]:
    params = SamplingParams(max_tokens=tokens, temperature=0, ignore_eos=True)
    streams = [engine.submit(GenerationRequest(f"r{i}", ids, params)) for i, ids in enumerate(prompts)]
    return [(await stream.collect(1))[0].token_ids for stream in streams]


def engine_with(folder: Path, chunk: int, budget: int, seqs: int = 8) -> Engine:
    config = EngineConfig(
        max_num_seqs=seqs,
        max_model_len=1024,
        prefill_chunk_tokens=chunk,
        max_num_batched_tokens=budget,
        prefix_cache_mb=0,
        batch_invariance=BatchInvariance.AUTO,  # the answers are compared across batch compositions
    )
    return build_engine("smollm2", folder, config)


@pytest.fixture(scope="module")
def whole(smollm2_int4: Path) -> Iterator[Engine]:
    """Prompts run whole: a chunk and a budget longer than any prompt."""
    engine = engine_with(smollm2_int4, 1024, 4096)
    yield engine
    engine.close()


@pytest.fixture(scope="module")
def chunked(smollm2_int4: Path) -> Iterator[Engine]:
    engine = engine_with(smollm2_int4, 16, 40)
    yield engine
    engine.close()


def test_chunks_keep_to_the_budget_the_chunk_size_and_block_boundaries() -> None:
    rng = np.random.default_rng(0)
    for _ in range(200):
        tasks = [PrefillTask(i, [0] * int(rng.integers(1, 300)), int(rng.integers(0, 3)) * 16) for i in range(5)]
        tasks = [task for task in tasks if task.remaining > 0]
        budget, chunk = int(rng.integers(16, 400)), 16 * int(rng.integers(1, 10))
        planned = plan_chunks(tasks, budget, chunk)
        assert sum(size for _, size in planned) <= budget
        assert [task for task, _ in planned] == tasks[: len(planned)]  # oldest first, none skipped
        for task, size in planned:
            assert 0 < size <= min(chunk, task.remaining)
            assert size == task.remaining or (task.done + size) % 16 == 0
        if len(planned) < len(tasks):  # stopped only when too little budget was left for an aligned piece
            assert budget - sum(size for _, size in planned) < 16


def test_the_budget_must_leave_room_for_a_chunk_beside_every_sequence() -> None:
    with pytest.raises(ValidationError, match="max_num_batched_tokens 20 must be at least max_num_seqs \\+ 16 = 24"):
        EngineConfig(max_num_seqs=8, max_num_batched_tokens=20)
    with pytest.raises(ValidationError, match="prefill_chunk_tokens 100 must be a multiple of 16"):
        EngineConfig(prefill_chunk_tokens=100)
    assert EngineConfig(max_num_seqs=256).step_tokens == 256 + 64


def test_greedy_answers_are_the_same_with_and_without_chunking(whole: Engine, chunked: Engine) -> None:
    prompts = [chat_ids(whole, text) for text in PROMPTS[:6]]
    assert asyncio.run(generate_all(chunked, prompts, 16)) == asyncio.run(generate_all(whole, prompts, 16))


@pytest.mark.slow
def test_greedy_answers_over_twenty_prompts_are_the_same_with_and_without_chunking(
    whole: Engine, chunked: Engine
) -> None:
    prompts = [chat_ids(whole, text) for text in PROMPTS]
    assert asyncio.run(generate_all(chunked, prompts, 24)) == asyncio.run(generate_all(whole, prompts, 24))


def test_a_long_prompt_rides_along_with_the_running_decodes_within_the_budget(smollm2_int4: Path) -> None:
    engine = engine_with(smollm2_int4, 64, 96, seqs=5)
    steps: list[dict[str, list[int]]] = []  # per decode run: its rows, then the prompt chunks after it
    decode, prefill = engine.decoder.decode, engine.decoder.prefill

    def recorded_decode(tokens: Sequence[int], lengths: Sequence[int]) -> np.ndarray:
        steps.append({"rows": [len(tokens)], "chunks": []})
        return decode(tokens, lengths)

    def recorded_prefill(slot: int, tokens: Sequence[int], cached: int = 0) -> np.ndarray:
        if steps:
            steps[-1]["chunks"].append(len(tokens) - cached)
        return prefill(slot, tokens, cached)

    engine.decoder.decode = recorded_decode  # type: ignore[method-assign,assignment]
    engine.decoder.prefill = recorded_prefill  # type: ignore[method-assign,assignment]
    try:
        short = [chat_ids(engine, text) for text in PROMPTS[:4]]
        long = chat_ids(engine, "Summarize this: " + " ".join(PROMPTS))
        assert len(long) > 400

        async def scenario() -> None:
            params = SamplingParams(max_tokens=60, temperature=0, ignore_eos=True)
            running = [engine.submit(GenerationRequest(f"s{i}", ids, params)) for i, ids in enumerate(short)]
            for stream in running:
                await anext(stream)
            await asyncio.gather(generate_all(engine, [long], 4), *(stream.collect(1) for stream in running))

        asyncio.run(scenario())
    finally:
        engine.close()
    with_long = [step for step in steps if step["rows"][0] >= 4 and step["chunks"]]
    assert len(with_long) >= 400 // 64  # the long prompt took several steps, each decoding the 4 streams
    for step in steps:
        assert sum(step["chunks"]) <= 96 - step["rows"][0]
        assert all(size <= 64 for size in step["chunks"])
