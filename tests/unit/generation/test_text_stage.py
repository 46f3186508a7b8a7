"""Text made off the engine's step (generation/text_stage.py): a stop string found a step late gives
the same tokens, text, logprobs, finish reason and usage as a check inside the step."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from mcp2026ai.generation.engine import Engine
from mcp2026ai.generation.text_stage import TextStage, TokenStep
from mcp2026ai.generation.tokenizer import TextTokenizer
from mcp2026ai.generation.types import Choice, FinishReason, GenerationRequest, SamplingParams, Usage
from tests.support.llm import chat_ids

pytestmark = pytest.mark.timeout(180)

PROMPTS = [
    "Explain what a compiler does.",
    "Write a haiku about the sea.",
    "Describe a rainy day in a city.",
    "What is the water cycle?",
    "Tell me about the moon.",
    "Give me a tip for sleeping well.",
    "Why do leaves change color?",
    "How does a bicycle work?",
]
TOKENS = 32


async def generate(engine: Engine, ids: list[int], **params: object) -> tuple[Choice, Usage]:
    sampling = SamplingParams.model_validate(params)
    stream = engine.submit(GenerationRequest(f"t{time.monotonic_ns()}", ids, sampling))
    (choice,) = await stream.collect(1)
    return choice, stream.usage


def spanning_stop(tokenizer: TextTokenizer, token_ids: list[int], after: int) -> tuple[str, int]:
    """A stop string of 2 + 2 characters across the first boundary past token ``after`` where both
    neighbours carry 2+ characters, and the index of the token that completes it."""
    texts = [tokenizer.decode(token_ids[: i + 1]) for i in range(len(token_ids))]
    boundary = next(
        i
        for i in range(after, len(texts) - 1)
        if len(texts[i]) - len(texts[i - 1]) >= 2 <= len(texts[i + 1]) - len(texts[i])
    )
    stop = texts[boundary + 1][len(texts[boundary]) - 2 : len(texts[boundary]) + 2]
    return stop, next(i for i, text in enumerate(texts) if stop in text)


def test_stop_strings_in_a_full_batch_end_choices_exactly_where_an_in_step_check_did(engine: Engine) -> None:
    prompts = [chat_ids(engine, text) for text in PROMPTS]
    params = {"max_tokens": TOKENS, "temperature": 0, "ignore_eos": True, "logprobs": 2}

    async def batch(stops: list[list[str]]) -> list[tuple[Choice, Usage]]:
        return await asyncio.gather(
            *(generate(engine, ids, stop=s, **params) for ids, s in zip(prompts, stops, strict=True))
        )

    full = asyncio.run(batch([[] for _ in prompts]))
    stops = [spanning_stop(engine.tokenizer, choice.token_ids, 3 + 2 * i) for i, (choice, _) in enumerate(full)]
    cut = asyncio.run(batch([[stop] for stop, _ in stops]))
    for (whole, _), (stop, last), (choice, usage) in zip(full, stops, cut, strict=True):
        assert choice.finish_reason == FinishReason.STOP
        assert choice.token_ids == whole.token_ids[: last + 1]
        assert choice.text == whole.text[: whole.text.index(stop)]
        assert [lp.token_id for lp in choice.logprobs] == choice.token_ids
        assert [lp.top[0][0] for lp in choice.logprobs] == [lp.top[0][0] for lp in whole.logprobs[: last + 1]]
        assert usage.completion_tokens == last + 1
    deadline = time.monotonic() + 10
    while engine.busy and time.monotonic() < deadline:  # the stopped choices leave at the engine's next step
        time.sleep(0.01)
    assert not engine.busy and engine.slots.active == 0


def test_steps_sampled_after_a_stop_string_are_dropped(smollm2_int4: Path) -> None:
    tokenizer = TextTokenizer(smollm2_int4)
    ids = tokenizer.encode("The quick brown fox jumps over the lazy dog.", add_special_tokens=False)
    finished: list[tuple[FinishReason, int]] = []
    stage = TextStage(tokenizer, SamplingParams(stop=("fox",), max_tokens=50), lambda *end: finished.append(end))
    made = [stage.assemble([TokenStep(0, token)]) for token in ids]
    ended = next(i for i, result in enumerate(made) if result is not None and result[2])
    assert tokenizer.decode(ids[: ended + 1]).endswith("fox")
    deltas = [delta for result in made[: ended + 1] if result for delta in result[0]]
    assert "".join(delta.text for delta in deltas) == "The quick brown "
    assert deltas[-1].finish_reason == FinishReason.STOP
    last = made[ended]
    assert last is not None and last[1] == ended + 1  # tokens generated: up to the stop's last
    assert all(result is None for result in made[ended + 1 :])
    assert stage.stopped == {0} and finished == [(FinishReason.STOP, ended + 1)]


def test_a_length_end_flushes_held_back_text_and_an_abort_ends_the_rest(smollm2_int4: Path) -> None:
    tokenizer = TextTokenizer(smollm2_int4)
    ids = tokenizer.encode("Hello world", add_special_tokens=False)
    finished: list[tuple[FinishReason, int]] = []
    params = SamplingParams(stop=("world peace",), n=2)
    stage = TextStage(tokenizer, params, lambda *end: finished.append(end))
    first = stage.assemble(
        [TokenStep(0, token) for token in ids[:-1]] + [TokenStep(0, ids[-1], finish=FinishReason.LENGTH)]
    )
    assert first is not None and not first[2]
    assert "".join(delta.text for delta in first[0]) == "Hello world"  # "world" was held back as a stop's prefix
    last = stage.assemble([TokenStep(1, finish=FinishReason.ABORT)])
    assert last is not None and last[2] and last[1] == len(ids)
    assert [(delta.index, delta.text, delta.finish_reason) for delta in last[0]] == [(1, "", FinishReason.ABORT)]
    assert stage.stopped == set() and finished == [(FinishReason.LENGTH, len(ids))]
