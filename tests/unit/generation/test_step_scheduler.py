"""The step scheduler's decisions, read off its plans, without a model (generation/step_scheduler.py)."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp2026ai.generation.jobs import Job
from mcp2026ai.generation.kv_slots import SlotMove
from mcp2026ai.generation.pressure import PrefillPace
from mcp2026ai.generation.step_plan import DecodeBatch, SlotRelease, StepPlan
from mcp2026ai.generation.step_scheduler import StepScheduler
from tests.unit.generation.step_support import Jobs, scheduler, word_tokenizer


@pytest.fixture
def jobs(tmp_path: Path) -> Iterator[Jobs]:
    loop = asyncio.new_event_loop()
    yield Jobs(word_tokenizer(tmp_path / "tokenizer"), loop)
    loop.close()


def started(scheduler: StepScheduler, *prompts: Job) -> StepPlan:
    """Admit ``prompts`` and schedule until each has its first token (as output processing would set it)."""
    plan = scheduler.schedule([], list(prompts))
    while scheduler.batch.prefilling:
        plan = scheduler.schedule([], [])
    for sequence in scheduler.batch.running.values():
        sequence.last_token, sequence.history = 5, [5]
    return plan


def test_a_plan_is_frozen_data(jobs: Jobs) -> None:
    plan = scheduler(jobs).schedule([], [jobs.job(range(20))])
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.decoding = 3  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.chunks[0].end = 1  # type: ignore[misc]


def test_admitted_prompts_are_chunked_oldest_first_within_the_step_budget(jobs: Jobs) -> None:
    steps = scheduler(jobs, step_tokens=64, chunk=32)
    first, second = jobs.job(range(50)), jobs.job(range(50))
    plan = steps.schedule([], [first, second])
    assert [(c.sequence.job, c.start, c.end, c.completes) for c in plan.chunks] == [
        (first, 0, 32, False),
        (second, 0, 32, False),
    ]
    assert plan.decode is None and plan.prompt_tokens == 64
    assert [a.job for a in plan.admitted] == [first, second]
    plan = steps.schedule([], [])
    assert [(c.start, c.end, c.completes, c.samples) for c in plan.chunks] == [(32, 50, True, True)] * 2
    assert not steps.batch.prefilling and steps.batch.backlog == 0


def test_decoding_sequences_take_a_row_each_and_leave_the_rest_of_the_budget_to_a_prompt(jobs: Jobs) -> None:
    steps = scheduler(jobs, step_tokens=64, chunk=64)
    started(steps, jobs.job(range(10)), jobs.job(range(12)))
    long = jobs.job(range(200))
    plan = steps.schedule([], [long])
    assert plan.decode is not None
    assert (plan.decode.tokens, plan.decode.lengths) == ((5, 5), (11, 13))  # the new slot is past the rows
    assert plan.decoding == 2
    assert [(c.sequence.job, c.size) for c in plan.chunks] == [(long, 48)]  # 62 left, cut at a 16-token boundary
    assert None not in plan.decode.sequences


def test_a_prefilling_slot_below_a_decoding_one_gets_a_throwaway_row(jobs: Jobs) -> None:
    steps = scheduler(jobs, step_tokens=64, chunk=32)
    long, short = jobs.job(range(100)), jobs.job(range(10))
    plan = steps.schedule([], [long, short])
    assert [(c.sequence.job, c.size) for c in plan.chunks] == [(long, 32), (short, 10)]
    short.sequences[0].last_token = 5  # its first token (output processing sets it)
    plan = steps.schedule([], [])
    assert plan.decode is not None and [s is None for s in plan.decode.sequences] == [True, False]
    assert plan.decode.lengths[0] == 32 + 1  # written past its KV; the next chunk overwrites it
    assert [(c.start, c.end) for c in plan.chunks] == [(32, 64)]  # 63 tokens left, cut at a 16-token boundary


def test_an_aborted_request_leaves_at_once_and_the_last_slot_moves_into_its_place(jobs: Jobs) -> None:
    steps = scheduler(jobs)
    started(steps, jobs.job(range(10)), jobs.job(range(12)))
    first = next(iter(steps.batch.running))
    first.job.aborted = True
    plan = steps.schedule([], [jobs.job(range(30))])
    assert plan.aborted == (first.job,)
    assert plan.kv_ops[:2] == (SlotMove(source=1, target=0, length=12), SlotRelease(1))
    assert steps.batch.slots.slot_of(plan.chunks[0].sequence) == 1  # the new prompt took the freed slot


def test_a_drafting_sequence_is_verified_on_its_own_with_a_throwaway_decode_row(jobs: Jobs) -> None:
    steps = scheduler(jobs, draft_tokens=3)
    copier = jobs.job([1, 2, 3, 4, 5, 6, 7, 1, 2, 3], max_tokens=20)
    plain = jobs.job([40, 41, 42, 43], max_tokens=20)
    started(steps, copier, plain)
    plan = steps.schedule([], [])
    check = plan.verify[0]
    assert check.sequence.job is copier
    assert check.fed[0] == 5 and check.draft == (6, 7, 1)  # after "... 5" the prompt went on "6 7 1"
    assert check.total == 10 + 4 and check.slot == 0
    assert plan.decode is not None
    assert [s is None for s in plan.decode.sequences] == [True, False]  # row 0 is verified on its own
    assert plan.decoding == 2


def test_when_blocks_run_dry_the_latest_request_is_preempted_and_recomputed_before_new_ones(jobs: Jobs) -> None:
    steps = scheduler(jobs, blocks=3, step_tokens=64, chunk=64)
    older, newer = jobs.job(range(15)), jobs.job(range(15))
    started(steps, older)
    time.sleep(0.001)
    started(steps, newer)
    for sequence in steps.batch.running.values():  # one decode step each: both fill their block
        steps.batch.grow(sequence, 5)
        sequence.history, sequence.last_token = [5, 6], 6
    waiting = jobs.job(range(4))
    plan = steps.schedule([], [])  # the next tokens need two more blocks; one is free
    assert plan.preempted == (newer,)
    assert plan.decode is not None and [s.job for s in plan.decode.sequences if s] == [older]
    steps.batch.release_job(older)
    plan = steps.schedule([], [waiting])
    assert [c.sequence.job for c in plan.chunks] == [newer, waiting]
    assert not plan.chunks[0].first_token  # recomputed: its next input is known
    assert list(plan.chunks[0].tokens) == list(range(15))  # the prompt; then its tokens so far but the last,
    assert list(plan.chunks[0].sequence.replay) == [5]  # replayed by decode steps as they first ran
    steps.batch.slots.grow(plan.chunks[0].sequence, 15)  # its prompt chunk ran
    plan.chunks[0].sequence.prefilling = False
    plan = steps.schedule([], [])
    assert plan.decode is not None and plan.decode.tokens[0] == 5 and plan.decode.replayed == frozenset({0})


def test_a_prompt_that_cannot_reach_its_first_token_in_time_is_refused(jobs: Jobs) -> None:
    pace = PrefillPace()
    pace.observe(100, 1.0)  # 100 prompt tokens a second
    steps = scheduler(jobs, step_tokens=32, chunk=16, pace=pace)
    first, late = jobs.job(range(100)), jobs.job(range(100))
    for job in (first, late):
        job.deadline = time.monotonic() + 0.5  # 2 s of prefill ahead of the second
    plan = steps.schedule([], [first, late])
    assert plan.refused == (late,) and plan.retry_after_s > 0
    assert [c.sequence.job for c in plan.chunks] == [first]  # the first prompt is never refused
    assert len(steps.batch.running) == 1


def test_choices_of_one_prompt_prefill_once_and_copy_the_kv(jobs: Jobs) -> None:
    steps = scheduler(jobs)
    job = jobs.job(range(20), n=3)
    plan = steps.schedule([], [job])
    chunk = plan.chunks[0]
    assert chunk.completes and chunk.forks == tuple(job.sequences[1:]) and chunk.fork_slots == (1, 2)
    assert [steps.batch.slots.length_of(s) for s in job.sequences] == [20, 20, 20]
    assert not any(s.prefilling for s in job.sequences)


def test_a_scored_prompt_runs_whole_and_its_choices_decode_from_the_next_step(jobs: Jobs) -> None:
    steps = scheduler(jobs, step_tokens=32, chunk=16)
    job = jobs.job(range(100), prompt_logprobs=2, n=2)
    plan = steps.schedule([], [job])
    assert plan.chunks == () and plan.decode is None
    scored = plan.scored[0]
    assert (scored.slot, scored.fork_slots, scored.top, len(scored.tokens)) == (0, (1,), 2, 100)
    assert plan.admitted == ()  # its stream learns of its prompt with the logprobs


def test_abandoned_and_aborted_admissions_end_without_taking_a_slot(jobs: Jobs) -> None:
    steps = scheduler(jobs)
    gone, aborted = jobs.job(range(4)), jobs.job(range(4))
    aborted.aborted = True
    plan = steps.schedule([gone], [aborted])
    assert plan.aborted == (gone, aborted) and not steps.batch.running and plan.runs == 0


def test_decode_rows_feed_the_last_token_and_count_it(jobs: Jobs) -> None:
    steps = scheduler(jobs)
    started(steps, jobs.job(range(7)))
    plan = steps.schedule([], [])
    assert plan.decode is not None
    (sequence,) = plan.decode.sequences
    assert sequence is not None and plan.decode == DecodeBatch((sequence,), (5,), (8,))
    assert steps.batch.slots.length_of(sequence) == 8


def test_admission_leaves_a_watermark_of_blocks_for_the_running_sequences_to_grow(jobs: Jobs) -> None:
    steps = scheduler(jobs, blocks=4)
    fits = steps.batch.block_fit()  # 4 blocks, 1 kept free
    assert fits(jobs.job(range(31)))  # 32 tokens with its first: 2 blocks
    assert not fits(jobs.job(range(20)))  # 2 more would eat the watermark
    assert fits(jobs.job(range(10)))  # 1 still fits


def test_a_scored_prompt_preempted_before_it_ran_runs_whole_when_it_resumes(jobs: Jobs) -> None:
    steps = scheduler(jobs, blocks=2)
    older = jobs.job(range(15))
    started(steps, older)
    (sequence,) = older.sequences
    steps.batch.grow(sequence, 5)  # its block is full: its next token needs the last free one
    scored = jobs.job(range(16), prompt_logprobs=1)
    plan = steps.schedule([], [scored])  # the scored prompt takes that block, and is preempted at once
    assert plan.preempted == (scored,) and plan.scored == ()
    steps.batch.release_job(older)
    plan = steps.schedule([], [])
    assert [prompt.job for prompt in plan.scored] == [scored] and plan.chunks == ()
