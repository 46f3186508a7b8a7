"""Speculative decoding: prompt-lookup drafts, and on the real SmolLM2 decoder greedy output identical
to one token at a time, with drafts accepted on a task that copies from its input."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from mcp2026ai.generation.config import EngineConfig
from mcp2026ai.generation.engine import Engine, build_engine
from mcp2026ai.generation.speculative import (
    GATE_PAUSE,
    MAX_GATE_PAUSE,
    DraftGate,
    DraftState,
    Speculation,
    gate_pause,
    prompt_lookup,
)
from mcp2026ai.generation.types import GenerationRequest, SamplingParams

pytestmark = pytest.mark.timeout(240)
TEXT = (
    "The keeper climbed the stairs at dusk, lit the great lamp, wound the clockwork that turned the lens, "
    "and wrote in the log that the sea was calm and the wind came from the west."
)


def test_prompt_lookup_follows_the_latest_occurrence_of_the_longest_ngram() -> None:
    context = [1, 2, 3, 9, 9, 1, 2, 3, 7, 8, 5, 1, 2, 3]
    assert prompt_lookup(context, 3) == [7, 8, 5]  # the later [1, 2, 3] wins
    assert prompt_lookup([4, 5, 6, 4, 5], 2) == [6, 4]
    assert prompt_lookup([1, 2, 3], 4) == []  # nothing recurs
    assert prompt_lookup([5, 5], 4) == [5]


def answer(engine: Engine, messages: list[dict[str, str]], tokens: int) -> list[int]:
    ids = engine.tokenizer.encode(engine.tokenizer.apply_chat_template(messages), add_special_tokens=False)

    async def run() -> list[int]:
        stream = engine.submit(GenerationRequest("s", ids, SamplingParams(max_tokens=tokens, temperature=0)))
        return (await stream.collect(1))[0].token_ids

    return asyncio.run(run())


def test_greedy_output_is_the_same_with_speculation(smollm2_fp32: Path) -> None:
    """On the fp32 decoder: the int4 one computes a multi-token run (prefill, verification) with other
    arithmetic than a one-token step (logits differ by up to ~0.6), so near-ties may break the other way."""
    plain = build_engine("smollm2", smollm2_fp32, EngineConfig(max_num_seqs=1, max_model_len=512))
    fast = build_engine("smollm2", smollm2_fp32, EngineConfig(max_num_seqs=1, max_model_len=512, speculative_tokens=4))
    try:
        assert fast.decoder.multi_row_logits
        for messages in (
            [{"role": "user", "content": f"Repeat this text exactly: {TEXT}"}],
            [{"role": "user", "content": "Write a short poem about the sea."}],
        ):
            assert answer(fast, messages, 64) == answer(plain, messages, 64)
        assert fast.telemetry.accepted_tokens > 0
        assert plain.telemetry.drafted_tokens == 0
    finally:
        plain.close()
        fast.close()


def test_drafts_are_accepted_when_the_answer_copies_its_input(smollm2_int4: Path) -> None:
    engine = build_engine(
        "smollm2", smollm2_int4, EngineConfig(max_num_seqs=1, max_model_len=512, speculative_tokens=4)
    )
    try:
        tokens = answer(engine, [{"role": "user", "content": f"Repeat this text exactly: {TEXT}"}], 48)
        assert len(tokens) >= 24
        assert engine.telemetry.accepted_tokens > engine.telemetry.drafted_tokens // 3
        assert engine.telemetry.accepted_tokens > len(tokens) // 3  # a third of the tokens came from drafts
    finally:
        engine.close()


def test_the_draft_gate_weighs_kept_tokens_against_run_times() -> None:
    gate = DraftGate(weight=1.0)
    assert gate.worth(0.0)  # nothing measured yet: drafts go ahead
    gate.observe_decode(rows=1, seconds=0.004)
    gate.observe_verify(seconds=0.050)  # a first run binds its slots: slow
    assert gate.worth(0.0)  # one run of each is not a measure yet
    gate.observe_decode(rows=1, seconds=0.004)
    gate.observe_verify(seconds=0.005)  # the lesser of the first two counts
    assert gate.worth(0.5) and not gate.worth(0.2)  # alone: 1.5 tokens x 4 ms > 5 ms
    gate.observe_decode(rows=8, seconds=0.013)
    assert not gate.worth(2.0) and gate.worth(3.0)  # beside 7 others a row costs 1.6 ms: 3 tokens are enough
    gate.observe_verify(seconds=1.0)  # a run descheduled by another process counts at most 3x
    assert gate.verify_s == pytest.approx(0.015)


def test_each_refusal_in_a_row_doubles_the_pause_before_drafting_again() -> None:
    assert [gate_pause(refusals) for refusals in range(6)] == [16, 32, 64, 128, MAX_GATE_PAUSE, MAX_GATE_PAUSE]
    speculation = Speculation(draft_tokens=4)
    for _ in range(2):  # measured: a decode row costs 2 ms, a verification 7 ms
        speculation.gate.observe_decode(rows=8, seconds=0.016)
        speculation.gate.observe_verify(seconds=0.007)
    free_text = DraftState(accepted_average=0.0)

    def steps_until_it_drafts() -> int:
        return next(step for step in range(1, 1000) if speculation.wants_draft(free_text))

    assert not speculation.wants_draft(free_text)  # 1 token x 2 ms < 7 ms: refused, it pauses and hopes more
    assert free_text.pause == GATE_PAUSE and free_text.accepted_average == 2.0
    # after the pause 3 tokens x 2 ms < 7 ms: refused again, for twice as long; then 4 x 2 ms >= 7 ms: it drafts
    assert steps_until_it_drafts() == GATE_PAUSE + 1 + 2 * GATE_PAUSE + 1
    assert free_text.refusals == 2 and free_text.accepted_average == 3.0
    speculation.verified(free_text, accepted=0)  # it kept nothing: a miss pauses it a step, refusals stay
    assert free_text.pause == 1 and free_text.refusals == 2
    speculation.verified(free_text, accepted=4)  # 5 tokens x 2 ms >= 7 ms: this one paid for its run
    assert free_text.refusals == 0 and free_text.misses == 0 and free_text.pause == 0
