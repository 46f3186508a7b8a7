"""Run each request on its own worker thread, no batching (the simplest Executor)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Sequence
from functools import partial

import numpy as np

from mcp2026ai.contract import SLAClass
from mcp2026ai.errors import DeadlineExceededError, MCPError, ModelNotReadyError
from mcp2026ai.observability import tracing
from mcp2026ai.runtime.base import Backend, QueuedRequest, RequestDetails, RequestListBackend, Tensors
from mcp2026ai.runtime.stats import ModelStats
from mcp2026ai.runtime.validation import validate_inputs, validate_output_names
from mcp2026ai.scheduling import timing
from mcp2026ai.scheduling.assemble import request_rows
from mcp2026ai.scheduling.batch_runs import BatchRuns
from mcp2026ai.scheduling.telemetry import SchedulerTelemetry, next_batch_id


class DirectExecutor:
    def __init__(
        self,
        backend: Backend,
        stats: ModelStats | None = None,
        max_concurrency: int = 4,
        *,
        model: str = "",
        version: str = "",
    ) -> None:
        self.backend = backend
        self._request_list = backend if isinstance(backend, RequestListBackend) else None
        """The backend when it takes requests as lists (checked once: a runtime protocol check is slow)."""
        self.stats = stats
        self._telemetry = SchedulerTelemetry(model or "-", version or "-")
        self._slots = asyncio.Semaphore(max_concurrency)
        self._runs = BatchRuns(max_concurrency, inline_below_ms=0.0, bulk_nice=None, clock=time.monotonic)
        """Always on a worker thread, each at normal priority, under the process's GIL window."""
        self._accepting = False
        self._in_flight = 0
        self._idle = asyncio.Event()
        self._idle.set()

    def check_admission(self, sla_class: SLAClass) -> None:
        """Nothing to refuse: no queue to be full."""

    async def start(self) -> None:
        self._runs.start()
        self._accepting = True

    async def submit(
        self,
        inputs: Tensors,
        outputs: Sequence[str] | None,
        *,
        sla_class: SLAClass,
        deadline: float | None,
        details: RequestDetails | None = None,
    ) -> dict[str, np.ndarray]:
        if not self._accepting:
            raise ModelNotReadyError("model is not accepting requests")
        validate_inputs(self.backend.signature, inputs)
        if outputs:
            validate_output_names(self.backend.signature, outputs)
        self._in_flight += 1
        self._idle.clear()
        try:
            queued = time.perf_counter_ns()
            async with self._slots:
                started = time.perf_counter_ns()
                self._telemetry.waited(sla_class, (started - queued) / 1e9)
                if self.stats is not None:
                    self.stats.record_queue(1, started - queued)
                if deadline is not None and time.monotonic() > deadline:
                    self._telemetry.rejected(sla_class, "deadline")
                    raise DeadlineExceededError("request timeout expired")
                tracing.annotate_batch(next_batch_id(), 1)
                infer = self.backend.infer
                if self._request_list is not None:
                    infer = partial(_one_request, self._request_list, deadline=deadline, details=details)
                result, _ = await self._runs.run(infer, inputs, outputs, urgent=True)
                ran_ns = time.perf_counter_ns() - started
                timing.report(started - queued, ran_ns)
                self._telemetry.executed(ran_ns / 1e9)
                if self.stats is not None:
                    self.stats.record_execution(ran_ns, rows=self._rows(inputs))
                return result
        finally:
            self._in_flight -= 1
            if self._in_flight == 0:
                self._idle.set()

    async def stop(self, drain_timeout_s: float) -> None:
        self._accepting = False
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._idle.wait(), drain_timeout_s)
        self._runs.shutdown()

    def _rows(self, inputs: Tensors) -> int:
        """The request's rows when the model has a batch dimension (its batch size), else 1."""
        return request_rows(inputs) if self.backend.signature.batchable else 1


def _one_request(
    backend: RequestListBackend,
    inputs: Tensors,
    outputs: Sequence[str] | None,
    *,
    deadline: float | None,
    details: RequestDetails | None,
) -> dict[str, np.ndarray]:
    """A request-list backend's answer to one request, its details and deadline handed on."""
    (answer,) = backend.infer_requests([QueuedRequest(inputs, outputs, deadline, details)])
    if isinstance(answer, MCPError):
        raise answer
    return answer
