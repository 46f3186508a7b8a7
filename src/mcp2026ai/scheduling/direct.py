"""Run each request on its own worker thread, no batching (the simplest Executor)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Sequence

import numpy as np

from mcp2026ai.contract import SLAClass
from mcp2026ai.errors import DeadlineExceededError, ModelNotReadyError
from mcp2026ai.runtime.base import Backend, Tensors
from mcp2026ai.runtime.stats import ModelStats


class DirectExecutor:
    def __init__(self, backend: Backend, stats: ModelStats | None = None, max_concurrency: int = 4) -> None:
        self.backend = backend
        self.stats = stats
        self._slots = asyncio.Semaphore(max_concurrency)
        self._accepting = False
        self._in_flight = 0
        self._idle = asyncio.Event()
        self._idle.set()

    async def start(self) -> None:
        self._accepting = True

    async def submit(
        self,
        inputs: Tensors,
        outputs: Sequence[str] | None,
        *,
        sla_class: SLAClass,
        deadline: float | None,
    ) -> dict[str, np.ndarray]:
        if not self._accepting:
            raise ModelNotReadyError("model is not accepting requests")
        self._in_flight += 1
        self._idle.clear()
        try:
            queued = time.perf_counter_ns()
            async with self._slots:
                started = time.perf_counter_ns()
                if self.stats is not None:
                    self.stats.record_queue(1, started - queued)
                if deadline is not None and time.monotonic() > deadline:
                    raise DeadlineExceededError("request timeout expired")
                result = await asyncio.to_thread(self.backend.infer, inputs, outputs)
                if self.stats is not None:
                    self.stats.record_execution(time.perf_counter_ns() - started)
                return result
        finally:
            self._in_flight -= 1
            if self._in_flight == 0:
                self._idle.set()

    async def stop(self, drain_timeout_s: float) -> None:
        self._accepting = False
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._idle.wait(), drain_timeout_s)
