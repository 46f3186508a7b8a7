"""The step executor runs a plan exactly as written, in the step's fixed order, without a model."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from mcp2026ai.generation.kv_slots import SlotMove
from mcp2026ai.generation.prefix_cache import PrefixCache
from mcp2026ai.generation.step_executor import StepExecutor
from mcp2026ai.generation.step_plan import (
    DecodeBatch,
    DraftCheck,
    PrefixRestore,
    PromptChunk,
    ScoredPrompt,
    SlotRelease,
    StepPlan,
)
from tests.unit.generation.step_support import VOCAB, Jobs, ScriptedDecoder, word_tokenizer


@pytest.fixture
def jobs(tmp_path: Path) -> Iterator[Jobs]:
    loop = asyncio.new_event_loop()
    yield Jobs(word_tokenizer(tmp_path / "tokenizer"), loop)
    loop.close()


def full_plan(jobs: Jobs) -> StepPlan:
    job = jobs.job(range(40), n=2)
    first, fork = jobs.sequence(job, 0), jobs.sequence(job, 1)
    scored = jobs.job(range(6), prompt_logprobs=1)
    return StepPlan(
        kv_ops=(SlotMove(3, 1, 9), SlotRelease(3), PrefixRestore(2, (np.zeros((2, 1, 16, 4), np.float32),))),
        decode=DecodeBatch((first, None), (7, 0), (12, 30)),
        verify=(DraftCheck(first, 0, (7, 8, 9), 15),),
        scored=(ScoredPrompt(scored, 4, scored.request.prompt_ids, (5,), 1),),
        chunks=(
            PromptChunk(first, 1, list(range(40)), 16, 32, first_token=True),
            PromptChunk(first, 2, list(range(40)), 32, 40, (fork,), (6,), completes=True, remember=True),
        ),
    )


def test_housekeeping_then_decode_verifications_scored_prompts_and_chunks_in_that_order(jobs: Jobs) -> None:
    decoder = ScriptedDecoder()
    cache = PrefixCache(1 << 20)
    outputs = StepExecutor(decoder, cache).run(full_plan(jobs))
    assert decoder.calls == [
        ("move", 3, 1, 9),
        ("release", 3),
        ("write_blocks", 2, 1),
        ("decode", [7, 0], [12, 30]),
        ("verify", 0, [7, 8, 9], 15),
        ("prompt_logits", 4, 6),
        ("move", 4, 5, 6),
        ("prefill", 1, 16, 32),  # tokens 16..31 after the 16 in the slot
        ("prefill", 2, 32, 40),
        ("read_block", 2, 0, 16),  # the completed prompt's two full blocks go to the prefix cache
        ("read_block", 2, 16, 16),
        ("move", 2, 6, 40),  # then its other choice copies its KV
    ]
    assert cache.used_bytes > 0
    assert outputs.decode is not None and outputs.decode.logits.shape == (2, VOCAB)
    assert [output.logits.shape for output in outputs.verify] == [(3, VOCAB)]
    assert outputs.chunks[0] is None  # a chunk that samples nothing gives nothing to read
    last = outputs.chunks[1]
    assert last is not None and int(np.argmax(last.logits)) == 40  # after token 39
    assert all(output.seconds >= 0 for output in (outputs.decode, *outputs.verify, *outputs.scored))


def test_rows_are_copied_only_when_a_later_run_of_the_step_reuses_the_buffer(jobs: Jobs) -> None:
    decoder = ScriptedDecoder()
    plan = full_plan(jobs)
    outputs = StepExecutor(decoder).run(plan)
    assert outputs.decode is not None
    assert [int(i) for i in np.argmax(outputs.decode.logits, axis=1)] == [8, 1]  # not overwritten by the prefills
    assert not np.shares_memory(outputs.decode.logits, decoder._rows)
    alone = StepExecutor(decoder).run(StepPlan(decode=plan.decode))
    assert alone.decode is not None and np.shares_memory(alone.decode.logits, decoder._rows)  # the last run: as is


def test_an_empty_plan_runs_nothing(jobs: Jobs) -> None:
    decoder = ScriptedDecoder()
    outputs = StepExecutor(decoder).run(StepPlan())
    assert decoder.calls == [] and outputs.decode is None and outputs.chunks == ()


def test_kv_housekeeping_alone_follows_the_slot_bookkeeping() -> None:
    decoder = ScriptedDecoder()
    StepExecutor(decoder).apply((SlotMove(2, 0, 5), SlotRelease(2)))
    assert decoder.kinds() == ["move", "release"]
