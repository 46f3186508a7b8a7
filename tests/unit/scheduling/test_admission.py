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
from mcp2026ai.scheduling.admission import DrainRate

from .conftest import MLP_IN
from .support import GatedBackend, batching_config, metric, no_deadlines, run

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


def test_latency_critical_sheds_queued_best_effort_before_anything_else(
    mlp_backend: OnnxRuntimeBackend, model_name: str
) -> None:
    gated = GatedBackend(mlp_backend)
    classes = no_deadlines()
    classes[LC] = ClassPolicy(weight=5.0, capacity=16, deadline_ms=3500)

    async def scenario() -> tuple[list[object], list[object]]:
        executor = BatchingExecutor(gated, batching_config(max_batch_size=1, classes=classes), model=model_name)
        await executor.start()
        executor._rate.observe(rows=1, seconds=1.0)  # measured: 1 row/s
        running = asyncio.ensure_future(executor.submit(x(0), None, sla_class=BE, deadline=None))
        await gated.wait_entered()
        queued = [asyncio.ensure_future(executor.submit(x(i), None, sla_class=BE, deadline=None)) for i in range(8)]
        await asyncio.sleep(0)
        # fair queueing puts each latency-critical request ahead of most best-effort ones: the first two
        # fit in 3.5 s (1.2 and 2.4 rows ahead); the third would not (3.6) unless best-effort gives way
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


def test_a_deadline_class_is_refused_at_once_when_nothing_can_be_shed(
    mlp_backend: OnnxRuntimeBackend, model_name: str
) -> None:
    gated = GatedBackend(mlp_backend)
    classes = no_deadlines()
    classes[LC] = ClassPolicy(weight=5.0, capacity=64, deadline_ms=4500)

    async def scenario() -> None:
        executor = BatchingExecutor(gated, batching_config(max_batch_size=1, classes=classes), model=model_name)
        await executor.start()
        executor._rate.observe(rows=1, seconds=1.0)
        first = asyncio.ensure_future(executor.submit(x(0), None, sla_class=LC, deadline=None))
        await gated.wait_entered()
        admitted = [asyncio.ensure_future(executor.submit(x(i), None, sla_class=LC, deadline=None)) for i in range(4)]
        await asyncio.sleep(0)
        with pytest.raises(OverloadedError, match="would wait about 5000 ms, past its deadline"):
            await executor.submit(x(9), None, sla_class=LC, deadline=None)
        with pytest.raises(OverloadedError, match="latency-critical queue is full"):
            executor.check_admission(LC)  # the early check refuses it too, before any body is read
        gated.gate.set()
        await asyncio.gather(first, *admitted)
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
