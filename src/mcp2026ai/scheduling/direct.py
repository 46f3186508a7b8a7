"""Run each request on its own worker thread, no batching (the simplest Executor)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

import numpy as np

from mcp2026ai.contract import SLAClass
from mcp2026ai.errors import DeadlineExceededError, ModelNotReadyError
from mcp2026ai.runtime.base import Backend, Tensors


class DirectExecutor:
    def __init__(self, backend: Backend, max_concurrency: int = 4) -> None:
        self.backend = backend
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
            async with self._slots:
                if deadline is not None and time.monotonic() > deadline:
                    raise DeadlineExceededError("request timeout expired")
                return await asyncio.to_thread(self.backend.infer, inputs, outputs)
        finally:
            self._in_flight -= 1
            if self._in_flight == 0:
                self._idle.set()

    async def stop(self, drain_timeout_s: float) -> None:
        self._accepting = False
        try:
            await asyncio.wait_for(self._idle.wait(), drain_timeout_s)
        except TimeoutError:
            pass
