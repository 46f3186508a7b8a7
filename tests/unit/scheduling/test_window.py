"""The batching window: when a partial batch stops waiting, and which arrivals wake the batcher early."""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable, Iterator

import numpy as np
import pytest

from mcp2026ai.contract import SLAClass
from mcp2026ai.runtime.onnx import OnnxRuntimeBackend
from mcp2026ai.scheduling import BatchingConfig, BatchingExecutor
from mcp2026ai.scheduling.queues import Pending
from mcp2026ai.scheduling.window import FillingBatch, dispatch_due, patience_limit

from .conftest import MLP_IN
from .support import GatedBackend, batching_config, run

BE = SLAClass.BEST_EFFORT
MakePending = Callable[..., Pending]


@pytest.fixture
def make_pending() -> Iterator[MakePending]:
    loop = asyncio.new_event_loop()

    def make(rows: int = 1, key: object = "k", at: float = 0.0, deadline: float | None = None) -> Pending:
        inputs = {"x": np.zeros((rows, 2), dtype=np.float32)}
        return Pending(inputs, None, BE, rows, key, at, deadline, loop.create_future())

    yield make
    loop.close()


def test_the_window_runs_from_the_oldest_member(make_pending: MakePending) -> None:
    run_ = [make_pending(at=10.0), make_pending(at=10.5)]
    assert dispatch_due(run_, 0.002) == pytest.approx(10.002)


def test_no_member_waits_more_than_half_its_deadline_budget(make_pending: MakePending) -> None:
    patient, hurried = make_pending(at=10.0), make_pending(at=10.001, deadline=10.005)
    assert patience_limit(patient) == math.inf
    assert patience_limit(hurried) == pytest.approx(10.003)
    assert dispatch_due([patient, hurried], 1.0) == pytest.approx(10.003)


def test_arrivals_that_only_add_rows_below_the_next_target_do_not_wake(make_pending: MakePending) -> None:
    filling = FillingBatch.of([make_pending(rows=2)], due=11.0, targets={8, 16})
    assert filling.next_target == 8
    assert not filling.changed_by(make_pending(rows=3, at=10.5))
    assert not filling.changed_by(make_pending(rows=2, at=10.6))
    assert filling.changed_by(make_pending(rows=1, at=10.7)), "8 rows: a preferred size, dispatched at once"


def test_an_arrival_that_cannot_join_or_cannot_wait_wakes(make_pending: MakePending) -> None:
    filling = FillingBatch.of([make_pending(rows=1)], due=11.0, targets={32})
    assert filling.changed_by(make_pending(key="other shape", at=10.5))
    assert filling.changed_by(make_pending(at=10.5, deadline=11.2)), "half its budget ends at 10.85, before 11.0"
    assert not filling.changed_by(make_pending(at=10.5, deadline=12.0))


def test_rows_overflowing_max_batch_size_wake(make_pending: MakePending) -> None:
    filling = FillingBatch.of([make_pending(rows=5)], due=11.0, targets={16})
    assert filling.changed_by(make_pending(rows=12, at=10.5)), "17 rows do not fit: the 5 go now"


def _x(rows: int) -> dict[str, np.ndarray]:
    return {"x": np.ones((rows, MLP_IN), dtype=np.float32)}


def _long_window(**overrides: object) -> BatchingConfig:
    return batching_config(**{"max_batch_size": 4, "max_queue_delay_ms": 10_000, **overrides})


def test_a_batch_that_fills_goes_without_waiting_out_its_window(mlp_backend: OnnxRuntimeBackend) -> None:
    backend = GatedBackend(mlp_backend)
    backend.gate.set()

    async def scenario() -> float:
        executor = BatchingExecutor(backend, _long_window())
        await executor.start()
        started = time.monotonic()
        submits = []
        for _ in range(4):  # one per loop iteration: each arrival is seen while the batch waits
            submits.append(asyncio.ensure_future(executor.submit(_x(1), None, sla_class=BE, deadline=None)))
            await asyncio.sleep(0.01)
        await asyncio.gather(*submits)
        elapsed = time.monotonic() - started
        await executor.stop(drain_timeout_s=5)
        return elapsed

    elapsed = run(scenario())
    assert backend.rows == [4]
    assert elapsed < 5, "the 10 s window was waited out"


def test_a_request_with_a_short_deadline_cuts_the_wait(mlp_backend: OnnxRuntimeBackend) -> None:
    backend = GatedBackend(mlp_backend)
    backend.gate.set()

    async def scenario() -> float:
        executor = BatchingExecutor(backend, _long_window(max_batch_size=16))
        await executor.start()
        started = time.monotonic()
        patient = asyncio.ensure_future(executor.submit(_x(1), None, sla_class=BE, deadline=None))
        await asyncio.sleep(0.01)
        hurried = executor.submit(_x(2), None, sla_class=BE, deadline=time.monotonic() + 0.4)
        await asyncio.gather(patient, hurried)
        elapsed = time.monotonic() - started
        await executor.stop(drain_timeout_s=5)
        return elapsed

    elapsed = run(scenario())
    assert backend.rows == [3], "both ran together, once the hurried one had waited half its budget"
    assert elapsed < 5
