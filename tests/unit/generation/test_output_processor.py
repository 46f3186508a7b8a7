"""Output processing applies a step's outputs to its plan, without a model: scheduler, executor and
output processing run together on a scripted decoder (after token t comes t + 1; 63 ends a sequence)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp2026ai.errors import OverloadedError
from mcp2026ai.generation.jobs import Job
from mcp2026ai.generation.output_processor import OutputProcessor
from mcp2026ai.generation.speculative import Speculation
from mcp2026ai.generation.step_executor import StepExecutor
from mcp2026ai.generation.step_plan import DraftCheck, StepPlan
from mcp2026ai.generation.step_scheduler import StepScheduler
from mcp2026ai.generation.types import Choice, FinishReason
from tests.unit.generation.step_support import Jobs, ScriptedDecoder, scheduler, word_tokenizer


class Steps:
    """The engine's step without its thread: schedule, run, apply, compact."""

    def __init__(self, jobs: Jobs) -> None:
        self.jobs = jobs
        self.scheduler: StepScheduler = scheduler(jobs)
        self.decoder = ScriptedDecoder()
        self.executor = StepExecutor(self.decoder)
        self.telemetry = jobs.telemetry
        self.outputs = OutputProcessor(self.scheduler.batch, Speculation(0), self.telemetry)

    def step(self, admitted: list[Job] | None = None, plan: StepPlan | None = None) -> StepPlan:
        plan = plan or self.scheduler.schedule([], admitted or [])
        self.executor.apply(self.outputs.apply(plan, self.executor.run(plan)))
        self.outputs.hand_over()
        return plan

    def run(self, *jobs: Job, steps: int = 20) -> list[list[Choice]]:
        self.step(list(jobs))
        for _ in range(steps):
            if not self.scheduler.batch.running:
                break
            self.step()
        loop = self.jobs.loop
        return [loop.run_until_complete(job.stream.collect(job.request.params.n)) for job in jobs]


@pytest.fixture
def steps(tmp_path: Path) -> Iterator[Steps]:
    loop = asyncio.new_event_loop()
    yield Steps(Jobs(word_tokenizer(tmp_path / "tokenizer"), loop))
    loop.close()


def test_greedy_tokens_come_from_the_rows_until_the_length_limit(steps: Steps) -> None:
    job = steps.jobs.job(range(10), max_tokens=3, temperature=0)
    (choices,) = steps.run(job)
    assert choices[0].token_ids == [10, 11, 12] and choices[0].text == "w10 w11 w12"
    assert choices[0].finish_reason == FinishReason.LENGTH
    assert not steps.scheduler.batch.running and steps.scheduler.batch.slots.active == 0
    assert ("release", 0) in steps.decoder.calls  # the finished sequence's slot was given back
    assert job.stream.usage.completion_tokens == 3


def test_a_stop_token_ends_the_choice_and_is_not_returned(steps: Steps) -> None:
    job = steps.jobs.job([1, 2, 61], max_tokens=10, temperature=0)
    (choices,) = steps.run(job)
    assert choices[0].token_ids == [62] and choices[0].finish_reason == FinishReason.STOP


def test_every_choice_of_a_prompt_samples_its_first_token_from_the_completing_chunk(steps: Steps) -> None:
    job = steps.jobs.job(range(20), max_tokens=2, temperature=0, n=3)
    (choices,) = steps.run(job)
    assert [choice.token_ids for choice in choices] == [[20, 21]] * 3


def test_a_verification_keeps_the_drafts_the_sequence_itself_chooses(steps: Steps) -> None:
    job = steps.jobs.job(range(10), max_tokens=10, temperature=0)
    steps.step([job])  # prefilled: first token 10, the slot holds the 10 prompt tokens
    sequence = job.sequences[0]
    batch = steps.scheduler.batch
    check = DraftCheck(sequence, 0, (10, 11, 12, 40), batch.slots.length_of(sequence) + 4)
    steps.step(plan=StepPlan(verify=(check,), decoding=1))
    assert sequence.history == [10, 11, 12, 13]  # drafts 11 and 12 kept, then its own 13 instead of 40
    assert batch.slots.length_of(sequence) == 13  # KV of the last token and the two kept drafts
    assert steps.telemetry.accepted_tokens == 2 and steps.telemetry.drafted_tokens == 3


def test_a_request_whose_caller_left_before_it_ran_ends_every_choice_with_abort(steps: Steps) -> None:
    job = steps.jobs.job(range(4), n=2)
    steps.step(plan=StepPlan(aborted=(job,)))
    choices = steps.jobs.loop.run_until_complete(job.stream.collect(2))
    assert [choice.finish_reason for choice in choices] == [FinishReason.ABORT] * 2


def test_a_refused_prompt_fails_with_its_retry_after(steps: Steps) -> None:
    job = steps.jobs.job(range(4))
    steps.step(plan=StepPlan(refused=(job,), retry_after_s=2.5))
    with pytest.raises(OverloadedError) as refused:
        steps.jobs.loop.run_until_complete(job.stream.collect(1))
    assert refused.value.retry_after_s == 2.5


def test_a_scored_prompt_gives_its_prompt_logprobs_and_the_first_token(steps: Steps) -> None:
    job = steps.jobs.job(range(6), max_tokens=2, temperature=0, prompt_logprobs=1)
    (choices,) = steps.run(job)
    assert choices[0].token_ids == [6, 7]
    logprobs = job.stream.prompt_logprobs
    assert logprobs is not None and len(logprobs) == 6 and logprobs[0] is None  # the first token has none
    assert [entry.token_id for entry in logprobs[1:] if entry] == [1, 2, 3, 4, 5]


def test_finished_sequences_leave_and_the_last_slot_moves_into_the_gap(steps: Steps) -> None:
    short = steps.jobs.job(range(10), max_tokens=1, temperature=0)
    long = steps.jobs.job(range(20), max_tokens=5, temperature=0)
    steps.step([short, long])  # both prefilled; the short one's first token is its last
    assert [s.job for s in steps.scheduler.batch.running] == [long]
    assert steps.decoder.calls[-2:] == [("move", 1, 0, 20), ("release", 1)]
    assert steps.scheduler.batch.take_ops() == ()  # the housekeeping ran in this step, none left behind
