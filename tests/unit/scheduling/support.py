"""Test helpers for the scheduler: a bounded event-loop runner, a fake clock, a gated and a recording backend."""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import time
from collections.abc import Coroutine, Sequence
from typing import Any, TypeVar

import numpy as np

from mcp2026ai.contract import SLAClass
from mcp2026ai.ir.signature import Signature
from mcp2026ai.observability.metrics import REGISTRY
from mcp2026ai.runtime.base import Tensors
from mcp2026ai.runtime.onnx import OnnxRuntimeBackend
from mcp2026ai.scheduling import BatchingExecutor
from mcp2026ai.scheduling.admission import SPREAD_MIN_SAMPLES
from mcp2026ai.scheduling.config import AdaptiveConfig, BatchingConfig, ClassPolicy, default_classes

T = TypeVar("T")


def run(coro: Coroutine[Any, Any, T], timeout_s: float = 60.0) -> T:
    """Run a test coroutine on a fresh event loop, bounded so a bug cannot hang the suite."""

    async def bounded() -> T:
        return await asyncio.wait_for(coro, timeout_s)

    return asyncio.run(bounded())


class GatedBackend:
    """A real backend whose ``infer`` waits for ``gate`` and records the rows of every call."""

    def __init__(self, inner: OnnxRuntimeBackend) -> None:
        self.inner = inner
        self.gate = threading.Event()
        self.entered = threading.Event()
        self.calls: list[Tensors] = []

    @property
    def signature(self) -> Signature:
        return self.inner.signature

    @property
    def loaded(self) -> bool:
        return self.inner.loaded

    def load(self) -> None:
        self.inner.load()

    def unload(self) -> None:
        self.inner.unload()

    def infer(self, inputs: Tensors, outputs: Sequence[str] | None = None) -> dict[str, np.ndarray]:
        self.calls.append(dict(inputs))
        self.entered.set()
        if not self.gate.wait(timeout=30):
            raise TimeoutError("test gate was never opened")
        return self.inner.infer(inputs, outputs)

    @property
    def rows(self) -> list[int]:
        return [int(next(iter(call.values())).shape[0]) for call in self.calls]

    async def wait_entered(self) -> None:
        assert await asyncio.to_thread(self.entered.wait, 30), "backend was never called"


def metric(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def no_deadlines() -> dict[SLAClass, ClassPolicy]:
    """The default class weights and capacities without deadlines (for tests on the real clock)."""
    return {cls: policy.model_copy(update={"deadline_ms": None}) for cls, policy in default_classes().items()}


def batching_config(**overrides: object) -> BatchingConfig:
    """A test batcher config: max batch 16, no window, no adaptation, and class deadlines off so
    that a loaded test machine cannot expire requests; ``overrides`` replace any of it."""
    base: dict[str, object] = {
        "classes": no_deadlines(),
        "max_batch_size": 16,
        "max_queue_delay_ms": 0,
        "adaptive": AdaptiveConfig(enabled=False),
    }
    return BatchingConfig.model_validate({**base, **overrides})


def measured(executor: BatchingExecutor, cls: SLAClass, rows_per_s: float, late_s: float | None = 0.0) -> None:
    """What admission would have learned from earlier batches: one-row batches at ``rows_per_s``, and
    answers ``late_s`` later than expected (enough of them for the spread to be known; None: none yet)."""
    executor._rate.observe(rows=1, seconds=1.0 / rows_per_s)
    if late_s is None:
        return
    now = time.monotonic()
    for _ in range(SPREAD_MIN_SAMPLES):
        executor._spread.observe(cls, now, late_s)


class RecordingBackend:
    """A real backend that records, for each call, the thread that ran it, that thread's nice value
    and the interpreter's switch interval it saw, after burning ``burn_ms`` of that thread's CPU."""

    def __init__(self, inner: OnnxRuntimeBackend, burn_ms: float = 0.0) -> None:
        self.inner = inner
        self.burn_s = burn_ms / 1000
        self.threads: list[str] = []
        self.nice: list[int] = []
        self.intervals: list[float] = []

    @property
    def signature(self) -> Signature:
        return self.inner.signature

    def infer(self, inputs: Tensors, outputs: Sequence[str] | None = None) -> dict[str, np.ndarray]:
        self.threads.append(threading.current_thread().name)
        self.nice.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))
        self.intervals.append(sys.getswitchinterval())
        started = time.thread_time()
        while time.thread_time() - started < self.burn_s:
            pass
        return self.inner.infer(inputs, outputs)
