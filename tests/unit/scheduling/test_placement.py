"""Tiny batches run inline on the event loop; slow ones, and every first batch, on the worker thread."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence

import numpy as np
import pytest

from mcp2026ai.contract import SLAClass
from mcp2026ai.runtime.base import Tensors
from mcp2026ai.runtime.onnx import OnnxRuntimeBackend
from mcp2026ai.scheduling import AdaptiveConfig, BatchingConfig, BatchingExecutor
from mcp2026ai.scheduling.placement import ExecutionPlacement

from .conftest import MLP_IN
from .support import RecordingBackend, no_deadlines, run


def test_placement_goes_inline_only_once_batches_are_measured_fast() -> None:
    placement = ExecutionPlacement(inline_below_ms=0.5)
    assert not placement.inline and placement.average_s is None  # nothing known: the thread
    placement.observe(0.0001)
    assert placement.inline and placement.average_s == pytest.approx(0.0001)
    placement.observe(0.005)  # one batch 10x over the limit
    assert not placement.inline
    for _ in range(10):
        placement.observe(0.0001)
    assert placement.inline, "fast again: back inline"


def test_a_zero_limit_never_runs_inline() -> None:
    placement = ExecutionPlacement(inline_below_ms=0)
    placement.observe(0.0)
    assert not placement.inline


def _serve_one_by_one(backend: RecordingBackend, requests: int, **config: object) -> list[dict[str, np.ndarray]]:
    settings = BatchingConfig.model_validate(
        {"classes": no_deadlines(), "max_queue_delay_ms": 0, "adaptive": AdaptiveConfig(enabled=False), **config}
    )
    inputs = np.ones((2, MLP_IN), np.float32)

    async def scenario() -> list[dict[str, np.ndarray]]:
        executor = BatchingExecutor(backend, settings)  # type: ignore[arg-type]
        await executor.start()
        try:
            submit = executor.submit
            return [
                await submit({"x": inputs}, None, sla_class=SLAClass.BEST_EFFORT, deadline=None)
                for _ in range(requests)
            ]
        finally:
            await executor.stop(drain_timeout_s=5)

    return run(scenario())


def test_a_tiny_model_moves_onto_the_event_loop_after_its_first_batch(mlp_backend: OnnxRuntimeBackend) -> None:
    backend = RecordingBackend(mlp_backend)
    results = _serve_one_by_one(backend, 20)
    loop_thread = threading.main_thread().name
    assert backend.threads[0].startswith("mcp-batch"), "the first batch is measured on the worker thread"
    moved = backend.threads.index(loop_thread)  # a cold first run can take a few batches to average out
    assert backend.threads[moved:] == [loop_thread] * (20 - moved), "and once fast, it stays on the loop thread"
    assert moved <= 10, backend.threads
    expected = mlp_backend.infer({"x": np.ones((2, MLP_IN), np.float32)})["logits"]
    for result in results:
        np.testing.assert_array_equal(result["logits"], expected)


@pytest.mark.parametrize(("burn_ms", "limit_ms"), [(3.0, 0.5), (0.0, 0.0)])
def test_slow_batches_or_a_zero_limit_stay_on_the_worker_thread(
    mlp_backend: OnnxRuntimeBackend, burn_ms: float, limit_ms: float
) -> None:
    backend = RecordingBackend(mlp_backend, burn_ms=burn_ms)
    _serve_one_by_one(backend, 4, inline_below_ms=limit_ms)
    assert all(name.startswith("mcp-batch") for name in backend.threads), backend.threads


def test_several_batch_slots_never_run_inline(mlp_backend: OnnxRuntimeBackend) -> None:
    """Inline batches run one at a time on the loop: a multi-instance plan's batches all go to threads,
    however fast they are (a tiny model would otherwise move inline after its first batch)."""
    backend = RecordingBackend(mlp_backend)
    _serve_one_by_one(backend, 20, max_concurrent_batches=2)
    assert all(name.startswith("mcp-batch") for name in backend.threads), backend.threads


class TaskRecordingBackend(RecordingBackend):
    """Also records the asyncio task each call ran in (None: a worker thread) and its rows."""

    def __init__(self, inner: OnnxRuntimeBackend) -> None:
        super().__init__(inner)
        self.tasks: list[str | None] = []
        self.rows: list[int] = []

    def infer(self, inputs: Tensors, outputs: Sequence[str] | None = None) -> dict[str, np.ndarray]:
        on_loop = threading.current_thread() is threading.main_thread()
        task = asyncio.current_task() if on_loop else None
        self.tasks.append(task.get_name() if task is not None else None)
        self.rows.append(int(inputs["x"].shape[0]))
        return super().infer(inputs, outputs)


def _inline_executor(backend: TaskRecordingBackend) -> BatchingExecutor:
    settings = BatchingConfig.model_validate(
        {"classes": no_deadlines(), "max_queue_delay_ms": 0, "adaptive": AdaptiveConfig(enabled=False)}
    )
    return BatchingExecutor(backend, settings)  # type: ignore[arg-type]


async def _until_inline(executor: BatchingExecutor, inputs: np.ndarray) -> None:
    for _ in range(40):
        await executor.submit({"x": inputs}, None, sla_class=SLAClass.BEST_EFFORT, deadline=None)
        if executor._runs.inline:
            return
    raise AssertionError("a tiny model never moved inline")


def test_a_lone_request_to_an_idle_inline_executor_runs_in_its_callers_task(mlp_backend: OnnxRuntimeBackend) -> None:
    backend = TaskRecordingBackend(mlp_backend)
    inputs = np.ones((2, MLP_IN), np.float32)

    async def scenario() -> tuple[list[str | None], str]:
        executor = _inline_executor(backend)
        await executor.start()
        try:
            await _until_inline(executor, inputs)
            backend.tasks.clear()
            for _ in range(5):
                result = await executor.submit({"x": inputs}, None, sla_class=SLAClass.BEST_EFFORT, deadline=None)
                np.testing.assert_array_equal(result["logits"], mlp_backend.infer({"x": inputs})["logits"])
            caller = asyncio.current_task()
            assert caller is not None
            return backend.tasks, caller.get_name()
        finally:
            await executor.stop(drain_timeout_s=5)

    tasks, caller = run(scenario())
    assert tasks == [caller] * 5, "one caller's requests one after another never wait for the batcher's loop"


def test_requests_arriving_together_at_an_inline_executor_are_still_batched(mlp_backend: OnnxRuntimeBackend) -> None:
    backend = TaskRecordingBackend(mlp_backend)
    inputs = np.ones((2, MLP_IN), np.float32)

    async def scenario() -> None:
        executor = _inline_executor(backend)
        await executor.start()
        try:
            await _until_inline(executor, inputs)
            backend.rows.clear()
            submit = executor.submit
            await asyncio.gather(
                *(submit({"x": inputs}, None, sla_class=SLAClass.BEST_EFFORT, deadline=None) for _ in range(4))
            )
        finally:
            await executor.stop(drain_timeout_s=5)

    run(scenario())
    assert backend.rows == [2, 6], "the first ran at once; the three that arrived in the same turn, as one batch"
