"""Batches without latency-critical requests run at a lower CPU priority while such requests are served."""

from __future__ import annotations

import os
import threading

import numpy as np
import pytest

from mcp2026ai.contract import SLAClass
from mcp2026ai.runtime.onnx import OnnxRuntimeBackend
from mcp2026ai.scheduling import AdaptiveConfig, BatchingConfig, BatchingExecutor
from mcp2026ai.scheduling.cpu_priority import THREAD_PRIORITIES, URGENT_HOLD_S, BatchThreads, lower_thread_priority
from tests.support.clock import FakeClock

from .conftest import MLP_IN
from .support import RecordingBackend, no_deadlines, run

pytestmark = pytest.mark.skipif(not THREAD_PRIORITIES, reason="threads have no nice value of their own here")


def own_nice() -> int:
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


def serve(backend: RecordingBackend, classes: list[SLAClass], bulk_nice: int | None) -> list[dict[str, np.ndarray]]:
    """One request of each class in ``classes``, one after another, through a batcher of two slots."""
    settings = BatchingConfig(
        classes=no_deadlines(),
        max_queue_delay_ms=0,
        adaptive=AdaptiveConfig(enabled=False),
        max_concurrent_batches=2,
        bulk_nice=bulk_nice,
    )

    async def scenario() -> list[dict[str, np.ndarray]]:
        executor = BatchingExecutor(backend, settings)  # type: ignore[arg-type]
        await executor.start()
        try:
            inputs = {"x": np.ones((1, MLP_IN), np.float32)}
            return [await executor.submit(inputs, None, sla_class=cls, deadline=None) for cls in classes]
        finally:
            await executor.stop(drain_timeout_s=5)

    return run(scenario())


def test_bulk_batches_run_lower_while_latency_critical_is_served(mlp_backend: OnnxRuntimeBackend) -> None:
    backend = RecordingBackend(mlp_backend)
    base = own_nice()
    classes = [SLAClass.BEST_EFFORT, SLAClass.LATENCY_CRITICAL, SLAClass.THROUGHPUT_GUARANTEED, SLAClass.BEST_EFFORT]
    results = serve(backend, classes, bulk_nice=10)
    # before any latency-critical request: normal; after one: the others 10 lower (nice +10), it normal
    assert backend.nice == [base, base, min(19, base + 10), min(19, base + 10)]
    assert backend.threads[2].startswith("mcp-batch-bulk") and not backend.threads[1].startswith("mcp-batch-bulk")
    assert own_nice() == base, "the event loop's thread keeps its priority"
    expected = mlp_backend.infer({"x": np.ones((1, MLP_IN), np.float32)})["logits"]
    for result in results:
        np.testing.assert_allclose(result["logits"], expected, rtol=1e-6)


def test_without_latency_critical_traffic_or_with_none_every_batch_runs_at_normal_priority(
    mlp_backend: OnnxRuntimeBackend,
) -> None:
    base = own_nice()
    bulk_only = RecordingBackend(mlp_backend)
    serve(bulk_only, [SLAClass.THROUGHPUT_GUARANTEED, SLAClass.BEST_EFFORT] * 2, bulk_nice=10)
    assert bulk_only.nice == [base] * 4
    disabled = RecordingBackend(mlp_backend)
    serve(disabled, [SLAClass.LATENCY_CRITICAL, SLAClass.BEST_EFFORT, SLAClass.THROUGHPUT_GUARANTEED], bulk_nice=None)
    assert disabled.nice == [base] * 3


def test_bulk_batches_return_to_normal_priority_once_latency_critical_traffic_stops() -> None:
    clock = FakeClock()
    threads = BatchThreads(workers=2, bulk_nice=10, clock=clock)
    try:
        normal = threads.for_batch(urgent=False)
        assert threads.for_batch(urgent=True) is normal
        clock.advance(URGENT_HOLD_S / 2)
        bulk = threads.for_batch(urgent=False)
        assert bulk is not normal
        clock.advance(URGENT_HOLD_S)
        assert threads.for_batch(urgent=False) is normal
    finally:
        threads.shutdown()


def test_lowering_a_threads_priority_leaves_the_others_alone_and_stops_at_19() -> None:
    seen: list[int] = []

    def lowered(by: int) -> None:
        lower_thread_priority(by)
        seen.append(own_nice())

    base = own_nice()
    for by in (3, 40):
        worker = threading.Thread(target=lowered, args=(by,))
        worker.start()
        worker.join(10)
    assert seen == [min(19, base + 3), 19]
    assert own_nice() == base
