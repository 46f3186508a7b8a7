"""The engine on the real SmolLM2 int4 decoder: continuous batching, stops, abort, usage, errors."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

import pytest

from mcp2026ai.contract import SLAClass
from mcp2026ai.errors import ContextLengthError, InvalidArgumentError, OverloadedError
from mcp2026ai.generation.config import EngineConfig, default_generation_classes
from mcp2026ai.generation.engine import Engine, build_engine
from mcp2026ai.generation.stream import GenerationStream
from mcp2026ai.generation.types import Choice, FinishReason, GenerationRequest, SamplingParams, Usage
from tests.support.llm import chat_ids

pytestmark = pytest.mark.timeout(180)
T = TypeVar("T")

PROMPTS = [
    "What is the capital of France?",
    "Write a haiku about the sea.",
    "List three colors.",
    "What is 12 times 12?",
    "Explain what a compiler does.",
    "Name a famous painter.",
    "Give me a tip for sleeping well.",
    "What do bees make?",
]


async def generate(engine: Engine, ids: list[int], **params: object) -> tuple[list[Choice], Usage]:
    sampling = SamplingParams.model_validate(params)
    stream = engine.submit(GenerationRequest(f"t{time.monotonic_ns()}", ids, sampling))
    return await stream.collect(sampling.n), stream.usage


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(coroutine)


def test_eight_concurrent_greedy_prompts_match_each_alone(engine: Engine) -> None:
    prompts = [chat_ids(engine, text) for text in PROMPTS]
    alone = [run(generate(engine, ids, max_tokens=24, temperature=0, ignore_eos=True)) for ids in prompts]

    async def together() -> list[tuple[list[Choice], Usage]]:
        return await asyncio.gather(
            *(generate(engine, ids, max_tokens=24, temperature=0, ignore_eos=True) for ids in prompts)
        )

    batched = run(together())
    for (single, _), (joint, _) in zip(alone, batched, strict=True):
        assert joint[0].token_ids == single[0].token_ids and len(single[0].token_ids) == 24


def test_a_seeded_request_draws_the_same_tokens_whatever_runs_beside_it(engine: Engine) -> None:
    ids = chat_ids(engine, "Tell me a short story.")
    params = {"max_tokens": 20, "temperature": 0.9, "top_p": 0.95, "seed": 1234}
    (alone, _) = run(generate(engine, ids, **params))

    async def crowded() -> list[Choice]:
        others = [generate(engine, chat_ids(engine, text), max_tokens=30, temperature=1.0) for text in PROMPTS[:5]]
        results = await asyncio.gather(generate(engine, ids, **params), *others)
        return results[0][0]

    assert run(crowded())[0].token_ids == alone[0].token_ids


def test_n_choices_share_the_prompt_and_differ(engine: Engine) -> None:
    ids = chat_ids(engine, "Invent a name for a cat.")
    choices, usage = run(generate(engine, ids, max_tokens=12, temperature=1.0, seed=7, n=3))
    assert [choice.index for choice in choices] == [0, 1, 2]
    assert len({tuple(choice.token_ids) for choice in choices}) > 1
    assert usage.completion_tokens == sum(
        len(choice.token_ids) + (choice.finish_reason == "stop") for choice in choices
    )
    again, _ = run(generate(engine, ids, max_tokens=12, temperature=1.0, seed=7, n=3))
    assert [c.token_ids for c in again] == [c.token_ids for c in choices]


def test_a_stop_string_spanning_tokens_cuts_the_text_before_it(engine: Engine) -> None:
    ids = chat_ids(engine, "Explain what a compiler does.")
    (full,), _ = run(generate(engine, ids, max_tokens=40, temperature=0, ignore_eos=True))
    pieces = [engine.tokenizer.decode(full.token_ids[: i + 1]) for i in range(len(full.token_ids))]
    # a boundary where both neighbouring tokens carry 2+ characters: the stop takes 2 of each
    boundary = next(
        i for i in range(5, 38) if len(pieces[i]) - len(pieces[i - 1]) >= 2 <= len(pieces[i + 1]) - len(pieces[i])
    )
    stop = pieces[boundary + 1][len(pieces[boundary]) - 2 : len(pieces[boundary]) + 2]
    (cut,), usage = run(generate(engine, ids, max_tokens=40, temperature=0, ignore_eos=True, stop=[stop]))
    assert cut.finish_reason == FinishReason.STOP
    assert cut.text == full.text[: full.text.index(stop)] and stop not in cut.text
    assert usage.completion_tokens == len(cut.token_ids) < len(full.token_ids)


def test_a_stop_token_ends_the_choice_without_its_text(engine: Engine) -> None:
    ids = chat_ids(engine, "List three colors.")
    (full,), _ = run(generate(engine, ids, max_tokens=20, temperature=0, ignore_eos=True))
    stop_id = full.token_ids[5]
    (cut,), usage = run(generate(engine, ids, max_tokens=20, temperature=0, stop_token_ids=[stop_id]))
    first = full.token_ids.index(stop_id)
    assert cut.finish_reason == FinishReason.STOP and cut.token_ids == full.token_ids[:first]
    assert cut.text == engine.tokenizer.decode(full.token_ids[:first])
    assert usage.completion_tokens == first + 1  # the stop token was generated


def test_usage_and_length_finish(engine: Engine) -> None:
    ids = chat_ids(engine, "Describe the sea.")
    (choice,), usage = run(generate(engine, ids, max_tokens=9, temperature=0, ignore_eos=True))
    assert choice.finish_reason == FinishReason.LENGTH and len(choice.token_ids) == 9
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (len(ids), 9, len(ids) + 9)
    assert choice.text == engine.tokenizer.decode(choice.token_ids)


def test_abort_frees_the_slots_within_a_step(engine: Engine) -> None:
    ids = chat_ids(engine, "Write a long essay about rivers.")

    async def abort_all() -> list[Choice]:
        streams = [engine.submit(GenerationRequest(f"a{i}", ids, SamplingParams(max_tokens=400))) for i in range(8)]
        for stream in streams:
            await anext(stream)  # each is running
        assert engine.slots.active == 8
        for stream in streams:
            stream.abort()
        endings = [await stream.collect(1) for stream in streams]
        return [choices[0] for choices in endings]

    endings = run(abort_all())
    assert all(choice.finish_reason == FinishReason.ABORT for choice in endings)
    assert engine.slots.active == 0 and engine.slots.used_tokens == 0
    (after,), _ = run(generate(engine, ids, max_tokens=3, temperature=0))
    assert len(after.token_ids) == 3


def test_prompt_plus_max_tokens_over_the_context_names_both(engine: Engine) -> None:
    ids = chat_ids(engine, "Hi")
    with pytest.raises(
        ContextLengthError,
        match=rf"maximum context length is 512 tokens.*requested {len(ids) + 600} tokens \({len(ids)} in the prompt",
    ) as refused:
        run(generate(engine, ids, max_tokens=600))
    assert refused.value.max_len == 512
    with pytest.raises(ContextLengthError, match=r"maximum context length is 512 tokens.*prompt has 600 tokens"):
        run(generate(engine, ids[:1] * 600))
    with pytest.raises(InvalidArgumentError, match="prompt is empty"):
        run(generate(engine, [], max_tokens=1))


def test_a_full_class_queue_refuses_with_overloaded(smollm2_int4: Path) -> None:
    classes = default_generation_classes()
    classes[SLAClass.THROUGHPUT_GUARANTEED] = classes[SLAClass.THROUGHPUT_GUARANTEED].model_copy(update={"capacity": 1})
    small = build_engine("tiny", smollm2_int4, EngineConfig(max_num_seqs=1, max_model_len=128, classes=classes))
    try:

        async def flood() -> None:
            ids = chat_ids(small, "Hi")
            first = small.submit(GenerationRequest("r1", ids, SamplingParams(max_tokens=50)))
            await anext(first)  # running: holds the only slot
            small.submit(GenerationRequest("r2", ids, SamplingParams(max_tokens=5)))  # waits
            with pytest.raises(OverloadedError, match="throughput-guaranteed queue is full"):
                small.submit(GenerationRequest("r3", ids, SamplingParams(max_tokens=5)))
            first.abort()

        run(flood())
    finally:
        small.close()


def test_waiting_requests_start_in_weighted_fair_order_by_sla_class(smollm2_int4: Path) -> None:
    single = build_engine("wfq", smollm2_int4, EngineConfig(max_num_seqs=1, max_model_len=128))
    try:

        async def order() -> list[str]:
            ids = chat_ids(single, "Hi")
            started: list[str] = []
            blocker = single.submit(GenerationRequest("blocker", ids, SamplingParams(max_tokens=40, ignore_eos=True)))
            await anext(blocker)  # holds the only slot while the others queue
            classes = [SLAClass.BEST_EFFORT] * 3 + [SLAClass.LATENCY_CRITICAL]
            streams = [
                single.submit(GenerationRequest(f"{cls.value}-{i}", ids, SamplingParams(max_tokens=1), cls))
                for i, cls in enumerate(classes)
            ]

            async def watch(stream: GenerationStream) -> None:
                await anext(stream)
                started.append(stream.request_id)

            await asyncio.gather(blocker.collect(1), *(watch(stream) for stream in streams))
            return started

        started = run(order())
        assert started[0] == "latency-critical-3", started  # weight 5 vs 1: it overtakes the queued best-effort
    finally:
        single.close()


def test_more_choices_than_sequences_is_refused(engine: Engine) -> None:
    with pytest.raises(InvalidArgumentError, match=r"n=9 choices .* at most 8 \(max_num_seqs\)"):
        run(generate(engine, chat_ids(engine, "Hi"), max_tokens=2, n=9))
