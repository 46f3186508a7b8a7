"""Best-effort work gives way to latency-critical prompts inside a step (generation/class_precedence.py),
read off the step scheduler's plans without a model; and, on SmolLM2, a paused sequence's tokens are the
ones it gives alone."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcp2026ai.contract import SLAClass
from mcp2026ai.generation.config import BatchInvariance, EngineConfig
from mcp2026ai.generation.engine import Engine, build_engine
from mcp2026ai.generation.jobs import Job
from mcp2026ai.generation.step_plan import StepPlan
from mcp2026ai.generation.step_scheduler import StepScheduler
from mcp2026ai.generation.types import GenerationRequest, SamplingParams
from tests.unit.generation.step_support import Jobs, scheduler, word_tokenizer

LC, TG, BE = SLAClass.LATENCY_CRITICAL, SLAClass.THROUGHPUT_GUARANTEED, SLAClass.BEST_EFFORT


@pytest.fixture
def jobs(tmp_path: Path) -> Iterator[Jobs]:
    loop = asyncio.new_event_loop()
    yield Jobs(word_tokenizer(tmp_path / "tokenizer"), loop)
    loop.close()


def job(jobs: Jobs, sla_class: SLAClass, length: int, max_tokens: int = 8) -> Job:
    made = jobs.job(range(length), max_tokens=max_tokens)
    made.request.sla_class = sla_class
    return made


def decoding(steps: StepScheduler, *admitted: Job) -> None:
    """Admit ``admitted`` and fill their prompts; each then has a first token (as output processing sets it)."""
    steps.schedule([], list(admitted))
    while steps.batch.prefilling:
        steps.schedule([], [])
    for sequence in steps.batch.running.values():
        sequence.last_token, sequence.history = 5, [5]


def rows(plan: StepPlan) -> list[Job | None]:
    assert plan.decode is not None
    return [sequence.job if sequence else None for sequence in plan.decode.sequences]


def test_a_latency_critical_prompt_is_filled_before_best_effort_ones_admitted_earlier(jobs: Jobs) -> None:
    steps = scheduler(jobs, step_tokens=64, chunk=32)
    batch_line, chat = job(jobs, BE, 100), job(jobs, LC, 40)
    plan = steps.schedule([], [batch_line])
    assert [c.sequence.job for c in plan.chunks] == [batch_line] and plan.precedence is None
    plan = steps.schedule([], [chat])
    assert [(c.sequence.job, c.size) for c in plan.chunks] == [(chat, 32)]  # the batch line's chunk waits
    assert plan.precedence is not None and plan.precedence.deferred == (batch_line.sequences[0],)
    plan = steps.schedule([], [])
    assert [(c.sequence.job, c.size, c.samples) for c in plan.chunks] == [(chat, 8, True)]
    plan = steps.schedule([], [])  # the chat's prompt is done: the batch line goes on where it stopped
    assert [(c.sequence.job, c.start) for c in plan.chunks] == [(batch_line, 32)] and plan.precedence is None


def test_best_effort_rows_sit_out_the_steps_that_fill_a_latency_critical_prompt(jobs: Jobs) -> None:
    steps = scheduler(jobs, step_tokens=64, chunk=32)
    first_line, steady, second_line = job(jobs, BE, 10), job(jobs, TG, 12), job(jobs, BE, 14)
    decoding(steps, first_line, steady, second_line)
    chat = job(jobs, LC, 20)
    plan = steps.schedule([], [chat])
    assert rows(plan) == [None, steady]  # the second line's slot is past the last row: no row at all
    assert plan.decode is not None and plan.decode.lengths[0] == 10 + 1  # written past its KV, as a prefilling slot's
    assert plan.decoding == 1
    assert plan.precedence is not None
    assert plan.precedence.paused == (first_line.sequences[0], second_line.sequences[0])
    assert plan.precedence.urgent == (chat.sequences[0],)
    assert [(c.sequence.job, c.samples) for c in plan.chunks] == [(chat, True)]
    chat.sequences[0].last_token = 5  # its first token
    plan = steps.schedule([], [])
    assert rows(plan) == [first_line, steady, second_line, chat] and plan.precedence is None
    assert plan.decode is not None and plan.decode.tokens[0] == 5 and plan.decode.lengths[0] == 11  # as if never paused


def test_only_latency_critical_prompts_take_precedence_over_best_effort_only(jobs: Jobs) -> None:
    steps = scheduler(jobs)
    line = job(jobs, BE, 10)
    decoding(steps, line)
    steady = job(jobs, TG, 20)
    plan = steps.schedule([], [steady])
    assert rows(plan) == [line] and plan.precedence is None
    decoding(steps)  # the throughput-guaranteed prompt is filled
    chat = job(jobs, LC, 20)
    plan = steps.schedule([], [chat])
    assert rows(plan) == [None, steady] and plan.precedence is not None
    decoding(steps)  # the chat decodes: its row does not pause anything
    plan = steps.schedule([], [])
    assert rows(plan) == [line, steady, chat] and plan.precedence is None


def test_with_only_best_effort_decoding_a_latency_critical_prompt_runs_alone(jobs: Jobs) -> None:
    steps = scheduler(jobs)
    decoding(steps, job(jobs, BE, 10), job(jobs, BE, 11))
    plan = steps.schedule([], [job(jobs, LC, 20)])
    assert plan.decode is None and plan.runs == 1 and plan.precedence is not None


def test_prompts_are_filled_in_class_order_oldest_first_within_a_class(jobs: Jobs) -> None:
    steps = scheduler(jobs, slots=8, step_tokens=256, chunk=32)
    admitted = [job(jobs, BE, 20), job(jobs, TG, 20), job(jobs, LC, 20), job(jobs, TG, 21), job(jobs, LC, 21)]
    plan = steps.schedule([], admitted)
    assert [c.sequence.job for c in plan.chunks] == [admitted[2], admitted[4], admitted[1], admitted[3]]


def test_switched_off_every_class_shares_the_step_alike(jobs: Jobs) -> None:
    steps = scheduler(jobs, step_tokens=64, chunk=32)
    steps.class_precedence = False
    line = job(jobs, BE, 10)
    decoding(steps, line)
    queued, chat = job(jobs, BE, 40), job(jobs, LC, 40)
    plan = steps.schedule([], [queued, chat])
    assert rows(plan) == [line] and plan.precedence is None
    assert [c.sequence.job for c in plan.chunks] == [queued, chat]


def test_a_paused_best_effort_sequence_gives_the_tokens_it_gives_alone(
    engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SmolLM2 with batch invariance: a best-effort greedy sequence sits out the steps of four
    latency-critical prompts that arrive while it decodes, and its tokens are those it gives alone."""
    plans: list[StepPlan] = []
    schedule = engine.scheduler.schedule

    def recorded(*args: Any, **kwargs: Any) -> StepPlan:
        plans.append(schedule(*args, **kwargs))
        return plans[-1]

    def request(prompt: list[int], sla_class: SLAClass, max_tokens: int) -> GenerationRequest:
        params = SamplingParams(temperature=0.0, max_tokens=max_tokens, ignore_eos=True)
        return GenerationRequest(f"{sla_class}-{len(prompt)}", prompt, params, sla_class=sla_class)

    async def tokens(line: GenerationRequest, chats_at: list[int]) -> list[int]:
        chats = []
        answer: list[int] = []
        async for delta in engine.submit(line):
            answer += delta.token_ids
            while chats_at and len(answer) >= chats_at[0]:  # a chat arrives while the line decodes
                chats_at.pop(0)
                chats.append(engine.submit(request(list(range(100, 170)), LC, 2)).collect(1))
        await asyncio.gather(*chats)
        return answer

    prompt = engine.tokenizer.encode("Write a long story about a lighthouse keeper.")
    alone = asyncio.run(tokens(request(prompt, BE, 32), []))
    monkeypatch.setattr(engine.scheduler, "schedule", recorded)
    beside = asyncio.run(tokens(request(prompt, BE, 32), [3, 9, 15, 21]))
    assert beside == alone and len(alone) == 32
    assert sum(1 for plan in plans if plan.precedence and plan.precedence.paused) >= 4  # it did sit steps out


def test_best_effort_requests_give_their_slots_to_latency_critical_ones_and_are_recomputed(jobs: Jobs) -> None:
    steps = scheduler(jobs, slots=2)
    older, newer = job(jobs, BE, 10, max_tokens=30), job(jobs, BE, 12, max_tokens=30)
    decoding(steps, older)
    decoding(steps, newer)
    chat = job(jobs, LC, 20)
    steps.yield_slots(1)  # the chat waits for a slot: the latest best-effort request gives its own
    assert list(steps.batch.preempted) == [newer] and steps.batch.slots.active == 1
    plan = steps.schedule([], [chat])
    assert plan.preempted == (newer,) and [a.job for a in plan.admitted] == [chat]
    assert [c.sequence.job for c in plan.chunks] == [chat] and plan.decode is None  # older sits the prompt out
    chat.sequences[0].last_token = 5
    plan = steps.schedule([], [])
    assert rows(plan) == [older, chat] and list(steps.batch.preempted) == [newer]  # no slot for it yet
    steps.batch.release_job(chat)  # the chat is done
    plan = steps.schedule([], [])
    assert [(c.sequence.job, c.first_token) for c in plan.chunks] == [(newer, False)]  # recomputed
    assert list(newer.sequences[0].replay) == []  # its one token so far is fed by its next decode row


def test_throughput_guaranteed_requests_keep_their_slots(jobs: Jobs) -> None:
    steps = scheduler(jobs, slots=2)
    decoding(steps, job(jobs, TG, 10), job(jobs, TG, 11))
    steps.yield_slots(1)
    assert not steps.batch.preempted and steps.batch.slots.active == 2
    off = scheduler(jobs, slots=1)
    off.class_precedence = False
    decoding(off, job(jobs, BE, 10))
    off.yield_slots(1)
    assert not off.batch.preempted


def test_a_latency_critical_request_takes_a_best_effort_slot_at_once_and_the_line_resumes_exactly(
    smollm2_int4: Path,
) -> None:
    """SmolLM2, two slots both held by best-effort sequences: a latency-critical request does not wait for
    one to finish; the preempted one is recomputed afterwards and gives the tokens it gives alone."""
    config = EngineConfig(max_num_seqs=2, max_model_len=256, batch_invariance=BatchInvariance.AUTO)
    engine = build_engine("smollm2", smollm2_int4, config)
    params = SamplingParams(temperature=0.0, max_tokens=40, ignore_eos=True)
    prompts = [engine.tokenizer.encode(text) for text in ("A story about the sea.", "A poem about a tree.")]

    async def lines(chat_after: int | None) -> tuple[list[list[int]], int]:
        """Both lines' tokens, and how many the second had left when the chat's first token came."""
        streams = [engine.submit(GenerationRequest(f"be{i}", p, params, sla_class=BE)) for i, p in enumerate(prompts)]
        answers: list[list[int]] = [[], []]
        left = -1

        async def read(index: int) -> None:
            nonlocal left
            async for delta in streams[index]:
                answers[index] += delta.token_ids
                if index == 0 and chat_after is not None and len(answers[0]) >= chat_after and left < 0:
                    left = 0
                    chat = GenerationRequest("lc", prompts[0], SamplingParams(max_tokens=1), sla_class=LC)
                    await engine.submit(chat).collect(1)
                    left = 40 - len(answers[1])

        await asyncio.gather(read(0), read(1))
        return answers, left

    try:
        alone, _ = asyncio.run(lines(None))
        beside, left = asyncio.run(lines(4))
    finally:
        engine.close()
    assert beside == alone and all(len(tokens) == 40 for tokens in alone)
    assert left > 20  # the chat was answered while the lines had most of their tokens to go
