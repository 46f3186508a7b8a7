"""How a batch runs here (scheduling/batch_runs.py), and the per-batch times the telemetry hands observers."""

from __future__ import annotations

import time

import numpy as np

from mcp2026ai.contract import SLAClass
from mcp2026ai.runtime.onnx import OnnxRuntimeBackend
from mcp2026ai.scheduling import AdaptiveConfig, BatchingConfig, BatchingExecutor
from mcp2026ai.scheduling.batch_runs import BatchRuns
from mcp2026ai.scheduling.telemetry import BatchTimes, observe_batches

from .conftest import MLP_IN
from .support import RecordingBackend, no_deadlines, run

X = {"x": np.ones((1, MLP_IN), np.float32)}


def test_tiny_batches_move_inline_once_measured_and_slow_ones_stay_on_a_thread(
    mlp_backend: OnnxRuntimeBackend,
) -> None:
    async def scenario(backend: RecordingBackend) -> list[bool]:
        runs = BatchRuns(slots=1, inline_below_ms=0.5, bulk_nice=None, clock=time.monotonic)
        runs.start()
        try:
            return [(await runs.run(backend.infer, X, None, urgent=False))[1].inline for _ in range(6)]
        finally:
            runs.shutdown()

    tiny = run(scenario(RecordingBackend(mlp_backend)))
    assert not tiny[0] and tiny[-1], "the first is not measured yet; microsecond runs then go inline"
    slow = RecordingBackend(mlp_backend, burn_ms=2.0)
    assert run(scenario(slow)) == [False] * 6
    assert all(name.startswith("mcp-batch") for name in slow.threads)


def test_observers_get_every_batchs_requests_and_times_until_they_stop(mlp_backend: OnnxRuntimeBackend) -> None:
    seen: list[BatchTimes] = []
    settings = BatchingConfig(classes=no_deadlines(), max_queue_delay_ms=0, adaptive=AdaptiveConfig(enabled=False))
    backend = RecordingBackend(mlp_backend, burn_ms=2.0)

    async def scenario(requests: int) -> None:
        executor = BatchingExecutor(backend, settings, model="mlp", version="1")  # type: ignore[arg-type]
        await executor.start()
        for sla_class in [SLAClass.LATENCY_CRITICAL, SLAClass.BEST_EFFORT][:requests]:
            await executor.submit(X, None, sla_class=sla_class, deadline=None)
        await executor.stop(drain_timeout_s=5)

    stop = observe_batches(seen.append)
    run(scenario(2))
    stop()
    run(scenario(1))
    assert [batch.requests[0][0] for batch in seen] == [SLAClass.LATENCY_CRITICAL, SLAClass.BEST_EFFORT]
    for batch in seen:
        (_, queued), ran = batch.requests[0], batch.run
        assert (batch.model, batch.version) == ("mlp", "1") and ran is not None and not ran.inline
        assert queued <= batch.started <= ran.began <= ran.ended <= batch.ended
        assert ran.cpu_s >= 0.0015, "each run burns 2 ms of its thread's CPU"
