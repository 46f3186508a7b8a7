"""Overload admission: best-effort is shed first, a deadline class is refused early only when shedding
cannot save it, and early checks refuse before a body is read."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from mcp2026ai.contract import SLAClass
from mcp2026ai.errors import OverloadedError
from mcp2026ai.runtime.onnx import OnnxRuntimeBackend
from mcp2026ai.scheduling import BatchingExecutor, ClassPolicy
from mcp2026ai.scheduling.admission import (
    SPREAD_MAX_AGE_S,
    SPREAD_MIN_SAMPLES,
    SPREAD_REFRESH,
    SPREAD_WINDOW,
    DrainRate,
    EstimateSpread,
)
from mcp2026ai.scheduling.batcher import ANSWERS_PER_TURN

from .conftest import MLP_IN
from .support import GatedBackend, batching_config, measured, metric, no_deadlines, run

LC, BE = SLAClass.LATENCY_CRITICAL, SLAClass.BEST_EFFORT


def x(seed: int) -> dict[str, np.ndarray]:
    return {"x": np.random.default_rng(seed).standard_normal((1, MLP_IN)).astype(np.float32)}


def test_drain_rate_smooths_and_estimates_waits() -> None:
    rate = DrainRate()
    assert rate.seconds_for(100) == 0.0  # nothing measured yet: admit
    rate.observe(rows=10, seconds=0.01)  # 1000 rows/s
    assert rate.seconds_for(100) == pytest.approx(0.1)
    rate.observe(rows=10, seconds=0.02)  # 500 rows/s, smoothed
    assert 500 < (rate.rows_per_s or 0) < 1000
    assert DrainRate(concurrent_batches=2).seconds_for(1) == 0.0


def test_the_time_to_an_answer_counts_whole_batches_and_the_running_one() -> None:
    rate = DrainRate()
    assert rate.seconds_to_answer(10, merge_rows=4, slot_free_in_s=1.0) == 0.0  # nothing measured yet: admit
    rate.observe(rows=4, seconds=0.02)  # full batches of 4 rows in 20 ms: 200 rows/s
    # one row alone still takes a whole batch, after what is left of the running one
    assert rate.seconds_to_answer(1, merge_rows=4) == pytest.approx(0.02)
    assert rate.seconds_to_answer(1, merge_rows=4, slot_free_in_s=0.015) == pytest.approx(0.035)
    assert rate.seconds_to_answer(9, merge_rows=4, slot_free_in_s=0.02) == pytest.approx(0.08)  # 1 + 3 batches
    light = DrainRate()
    light.observe(rows=1, seconds=0.02)  # light load: 1-row batches, 50 rows/s
    assert light.seconds_to_answer(4, merge_rows=4) == pytest.approx(0.08)  # the rows' rate
    two_slots = DrainRate(concurrent_batches=2)
    two_slots.observe(rows=4, seconds=0.02)
    assert two_slots.seconds_to_answer(8, merge_rows=4) == pytest.approx(0.02)


def test_latency_critical_sheds_queued_best_effort_before_anything_else(
    mlp_backend: OnnxRuntimeBackend, model_name: str
) -> None:
    gated = GatedBackend(mlp_backend)
    classes = no_deadlines()
    classes[LC] = ClassPolicy(weight=5.0, capacity=16, deadline_ms=4500, admit_within=1.0)

    async def scenario() -> tuple[list[object], list[object]]:
        executor = BatchingExecutor(gated, batching_config(max_batch_size=1, classes=classes), model=model_name)
        await executor.start()
        measured(executor, LC, rows_per_s=1.0)  # 1 row/s, answers as expected
        running = asyncio.ensure_future(executor.submit(x(0), None, sla_class=BE, deadline=None))
        await gated.wait_entered()
        queued = [asyncio.ensure_future(executor.submit(x(i), None, sla_class=BE, deadline=None)) for i in range(8)]
        await asyncio.sleep(0)
        # fair queueing puts each latency-critical request ahead of most best-effort ones: the first two
        # are answered within 4.5 s (1.2 and 2.4 rows ahead: 2 and 3 one-row batches, after the running
        # one); the third would not (3.6 rows: 4 batches + 1 = 5 s) unless best-effort gives way
        critical = [asyncio.ensure_future(executor.submit(x(i), None, sla_class=LC, deadline=None)) for i in range(3)]
        await asyncio.sleep(0)
        with pytest.raises(OverloadedError, match="refused while higher SLA classes are at risk"):
            await executor.submit(x(99), None, sla_class=BE, deadline=None)
        with pytest.raises(OverloadedError, match="refused while higher SLA classes are at risk"):
            executor.check_admission(BE)
        gated.gate.set()
        best_effort = await asyncio.gather(running, *queued, return_exceptions=True)
        answers = await asyncio.gather(*critical, return_exceptions=True)
        await executor.stop(5)
        return best_effort, answers

    best_effort, critical = run(scenario())
    assert not any(isinstance(answer, BaseException) for answer in critical), critical
    shed = [answer for answer in best_effort if isinstance(answer, OverloadedError)]
    assert shed and all("shed for higher SLA classes" in str(error) for error in shed)
    assert len(shed) == 8, "every queued best-effort request; the running one finished"
    labels = {"model": model_name, "version": "-", "sla_class": BE.value}
    assert metric("mcp_scheduler_rejections_total", reason="overloaded", **labels) == len(shed) + 2


def test_a_large_shed_is_answered_a_slice_per_event_loop_turn(mlp_backend: OnnxRuntimeBackend, model_name: str) -> None:
    """Shedding takes every queued best-effort request out of the queue at once, but answers them
    ANSWERS_PER_TURN per turn of the event loop, so that what else the loop has ready (a finished batch's
    answers) is not held up behind all of their error responses; every one is answered 429."""
    gated = GatedBackend(mlp_backend)
    classes = no_deadlines()
    classes[BE] = classes[BE].model_copy(update={"capacity": 256})
    classes[LC] = ClassPolicy(weight=5.0, capacity=16, deadline_ms=2500, admit_within=1.0)
    queued_count = 2 * ANSWERS_PER_TURN + 5

    async def scenario() -> tuple[list[int], list[object], object]:
        executor = BatchingExecutor(gated, batching_config(max_batch_size=1, classes=classes), model=model_name)
        await executor.start()
        measured(executor, LC, rows_per_s=1.0)
        running = asyncio.ensure_future(executor.submit(x(0), None, sla_class=BE, deadline=None))
        await gated.wait_entered()
        queued = [
            asyncio.ensure_future(executor.submit(x(i), None, sla_class=BE, deadline=None)) for i in range(queued_count)
        ]
        await asyncio.sleep(0)
        critical = asyncio.ensure_future(executor.submit(x(1), None, sla_class=LC, deadline=None))
        answered_by_turn = []
        for _ in range(5):
            await asyncio.sleep(0)
            answered_by_turn.append(sum(future.done() for future in queued))
        assert executor.backlog == 1, "the shed requests left the queue at once: only the critical one is left"
        gated.gate.set()
        best_effort = await asyncio.gather(*queued, return_exceptions=True)
        answer = await critical
        await running
        await executor.stop(5)
        return answered_by_turn, best_effort, answer

    answered_by_turn, best_effort, answer = run(scenario())
    assert isinstance(answer, dict)
    shed_turns = [count for count in answered_by_turn if count]  # from the turn the critical request arrived
    assert shed_turns[:3] == [ANSWERS_PER_TURN, 2 * ANSWERS_PER_TURN, queued_count], answered_by_turn
    assert all(isinstance(error, OverloadedError) and "shed" in str(error) for error in best_effort)


@pytest.mark.parametrize(
    ("policy", "late_s", "admitted", "refusal"),
    [
        # the k-th admitted is answered after k one-row batches and the running one: 2..5 s; a fifth, 6 s
        # (less the time since the running batch began: up to 100 ms on a loaded host)
        (
            ClassPolicy(weight=5.0, capacity=64, deadline_ms=5500, admit_within=1.0),
            0.0,
            4,
            r"(59\d\d|6000) ms, past the (549\d|5500)",
        ),
        # by default the expected answer may take ADMIT_WITHIN (0.8) of the deadline, the rest being
        # headroom for what the scheduler does not see: 2, 3 and 4 s are within 4.4 s, 5 s is not
        (ClassPolicy(weight=5.0, capacity=64, deadline_ms=5500), 0.0, 3, r"(49\d\d|5000) ms, past the (439\d|4400)"),
        # answers lately came 1 s later than expected: 4.4 s less 1 s is left (2 and 3 s admitted, 4 s not)
        (ClassPolicy(weight=5.0, capacity=64, deadline_ms=5500), 1.0, 2, r"(39\d\d|4000) ms, past the (339\d|3400)"),
        # nothing answered yet (a class's first requests, the start of an overload): the spread is taken
        # to be the most it may be, half of 4.4 s, and 2.2 s is left (2 s admitted, 3 s not)
        (ClassPolicy(weight=5.0, capacity=64, deadline_ms=5500), None, 1, r"(29\d\d|3000) ms, past the (219\d|2200)"),
    ],
)
def test_a_deadline_class_is_refused_at_once_when_nothing_can_be_shed(
    mlp_backend: OnnxRuntimeBackend,
    model_name: str,
    policy: ClassPolicy,
    late_s: float | None,
    admitted: int,
    refusal: str,
) -> None:
    gated = GatedBackend(mlp_backend)
    classes = no_deadlines()
    classes[LC] = policy

    async def scenario() -> None:
        executor = BatchingExecutor(gated, batching_config(max_batch_size=1, classes=classes), model=model_name)
        await executor.start()
        measured(executor, LC, rows_per_s=1.0, late_s=late_s)
        first = asyncio.ensure_future(executor.submit(x(0), None, sla_class=LC, deadline=None))
        await gated.wait_entered()
        queued = [
            asyncio.ensure_future(executor.submit(x(i), None, sla_class=LC, deadline=None)) for i in range(admitted)
        ]
        await asyncio.sleep(0)
        with pytest.raises(OverloadedError, match=rf"would be answered in about {refusal} ms it is admitted within"):
            await executor.submit(x(9), None, sla_class=LC, deadline=None)
        with pytest.raises(OverloadedError, match="latency-critical queue is full"):
            executor.check_admission(LC)  # the early check refuses it too, before any body is read
        gated.gate.set()
        await asyncio.gather(first, *queued)
        await executor.stop(5)

    run(scenario())


def test_the_early_check_refuses_best_effort_when_its_queue_is_full(
    mlp_backend: OnnxRuntimeBackend, model_name: str
) -> None:
    gated = GatedBackend(mlp_backend)
    classes = no_deadlines()
    classes[BE] = ClassPolicy(weight=1.0, capacity=2)

    async def scenario() -> None:
        executor = BatchingExecutor(gated, batching_config(max_batch_size=1, classes=classes), model=model_name)
        await executor.start()
        executor.check_admission(BE)  # room: nothing raised
        first = asyncio.ensure_future(executor.submit(x(0), None, sla_class=BE, deadline=None))
        await gated.wait_entered()
        queued = [asyncio.ensure_future(executor.submit(x(i), None, sla_class=BE, deadline=None)) for i in (1, 2)]
        await asyncio.sleep(0)
        with pytest.raises(OverloadedError, match="best-effort queue is full"):
            executor.check_admission(BE)
        executor.check_admission(LC)  # another class is not affected
        gated.gate.set()
        await asyncio.gather(first, *queued)
        await executor.stop(5)

    run(scenario())


def test_the_estimate_spread_is_a_recent_high_quantile_of_how_late_answers_came() -> None:
    spread = EstimateSpread()
    for i in range(SPREAD_MIN_SAMPLES - 1):
        spread.observe(LC, now=i / 100, late_s=0.5)
    assert spread.late_s(LC, now=0.2) is None  # too few to tell (admission then assumes the most it allows)
    start = SPREAD_MAX_AGE_S + 1.0  # those have aged out by then
    for i in range(200):  # 99 % early or on time, 1 % (2 of 200) 30 ms late
        spread.observe(LC, now=start + i / 100, late_s=0.03 if i in (50, 150) else -0.002 * (i % 5))
    assert spread.late_s(LC, now=start + 2) == pytest.approx(0.03)
    assert spread.late_s(SLAClass.THROUGHPUT_GUARANTEED, now=start + 2) is None  # per class
    for i in range(SPREAD_WINDOW):  # the window holds the latest: answers now come early
        spread.observe(LC, now=start + 2 + i / 1000, late_s=-0.01)
    assert spread.late_s(LC, now=start + 2.5) == 0.0  # early answers never widen the budget
    for _ in range(SPREAD_REFRESH + 1):
        spread.observe(LC, now=start + 3, late_s=1.0)
    assert spread.late_s(LC, now=start + 3) == pytest.approx(1.0)  # 17 of 256 late by 1 s: past the 99th percentile
    # a class refused everything is answered no more: what was measured ages out
    assert spread.late_s(LC, now=start + 3 + SPREAD_MAX_AGE_S + 0.1) is None


def test_answered_requests_feed_the_spread_of_their_class(mlp_backend: OnnxRuntimeBackend, model_name: str) -> None:
    """Each answered request with a deadline is compared with what was expected when it was admitted."""
    classes = no_deadlines()
    classes[LC] = ClassPolicy(weight=5.0, capacity=64, deadline_ms=5000)

    async def scenario() -> list[float]:
        executor = BatchingExecutor(mlp_backend, batching_config(max_batch_size=4, classes=classes), model=model_name)
        await executor.start()
        for i in range(SPREAD_MIN_SAMPLES + SPREAD_REFRESH):
            await executor.submit(x(i), None, sla_class=LC, deadline=None)
            await executor.submit(x(i), None, sla_class=BE, deadline=None)  # no deadline: not observed
        observed = [late for _, late in executor._spread._observed[LC]]
        assert BE not in executor._spread._observed
        await executor.stop(5)
        return observed

    observed = run(scenario())
    assert len(observed) == SPREAD_MIN_SAMPLES + SPREAD_REFRESH
    assert all(-5.0 < late < 5.0 for late in observed)


def test_a_request_that_would_run_at_once_is_never_refused_for_its_deadline(
    mlp_backend: OnnxRuntimeBackend, model_name: str
) -> None:
    """Batches measured at 10 s a row (a cold first run, a slow machine) against a 5.5 s deadline: an
    idle model still takes the request (nothing is ahead of it to wait for or to shed), without shedding
    best-effort for it; one arriving while it runs is refused, before and after its body."""
    gated = GatedBackend(mlp_backend)
    classes = no_deadlines()
    classes[LC] = ClassPolicy(weight=5.0, capacity=64, deadline_ms=5500)

    async def scenario() -> None:
        executor = BatchingExecutor(gated, batching_config(max_batch_size=1, classes=classes), model=model_name)
        await executor.start()
        measured(executor, LC, rows_per_s=0.1)
        executor.check_admission(LC)  # idle: the early check lets it through
        first = asyncio.ensure_future(executor.submit(x(0), None, sla_class=LC, deadline=None))
        await gated.wait_entered()
        executor.check_admission(BE)  # taking it did not put the class at risk: best-effort is not shed
        with pytest.raises(OverloadedError, match="would be answered in about"):
            await executor.submit(x(1), None, sla_class=LC, deadline=None)
        with pytest.raises(OverloadedError, match="latency-critical queue is full"):
            executor.check_admission(LC)
        gated.gate.set()
        assert (await first)["logits"].shape == (1, 4)
        await executor.stop(5)

    run(scenario())
