"""Which LoRA adapter each row of a step uses is the scheduler's decision, read off its plan without a
model: rows of different adapters share one decode run, and every prompt chunk, verification and scored
prompt names its sequence's adapter (generation/step_scheduler.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp2026ai.generation.jobs import Job
from mcp2026ai.generation.step_scheduler import StepScheduler
from mcp2026ai.ir.lora_graph import NO_ADAPTER
from tests.unit.generation.step_support import Jobs, scheduler, word_tokenizer


@pytest.fixture
def jobs(tmp_path: Path) -> Iterator[Jobs]:
    loop = asyncio.new_event_loop()
    yield Jobs(word_tokenizer(tmp_path / "tokenizer"), loop)
    loop.close()


def with_adapter(job: Job, slot: int) -> Job:
    job.adapter_slot = slot
    return job


def run_prompts(steps: StepScheduler) -> None:
    while steps.batch.prefilling:
        steps.schedule([], [])
    for sequence in steps.batch.running.values():
        sequence.last_token, sequence.history = 5, [5]


def test_rows_of_different_adapters_share_one_decode_run(jobs: Jobs) -> None:
    steps = scheduler(jobs, slots=4)
    admitted = [with_adapter(jobs.job(range(10)), 0), jobs.job(range(11)), with_adapter(jobs.job(range(12)), 1)]
    plan = steps.schedule([], admitted)
    assert [chunk.adapter for chunk in plan.chunks] == [0, NO_ADAPTER, 1]  # each prompt runs with its own
    run_prompts(steps)
    plan = steps.schedule([], [])
    assert plan.decode is not None and plan.runs == 1
    assert plan.decode.adapters == (0, NO_ADAPTER, 1)


def test_a_batch_without_adapters_names_none(jobs: Jobs) -> None:
    steps = scheduler(jobs, slots=4)
    steps.schedule([], [jobs.job(range(10)), jobs.job(range(11))])
    run_prompts(steps)
    plan = steps.schedule([], [])
    assert plan.decode is not None and plan.decode.adapters == ()  # the decoder's plain call


def test_a_throwaway_row_uses_no_adapter(jobs: Jobs) -> None:
    steps = scheduler(jobs, slots=4, step_tokens=64, chunk=32)
    steps.pad_lone_rows = True
    steps.schedule([], [with_adapter(jobs.job(range(10)), 1)])
    run_prompts(steps)
    plan = steps.schedule([], [])
    assert plan.decode is not None and plan.decode.adapters == (1, NO_ADAPTER)


def test_a_draft_verification_and_a_scored_prompt_name_their_adapter(jobs: Jobs) -> None:
    steps = scheduler(jobs, slots=4, draft_tokens=3)
    repeating = [7, 8, 9, 7, 8, 9, 7, 8, 9, 7, 8]
    steps.schedule([], [with_adapter(jobs.job(repeating), 1)])
    run_prompts(steps)
    for sequence in steps.batch.running.values():
        sequence.last_token, sequence.history = 9, [9]
    plan = steps.schedule([], [with_adapter(jobs.job(range(12), prompt_logprobs=1), 0)])
    assert [check.adapter for check in plan.verify] == [1]
    assert [prompt.adapter for prompt in plan.scored] == [0]
