"""Running a pipeline: one request through its steps, in process, under one deadline and one trace.

:class:`PipelineExecutor` is the pipeline's :class:`~mcp2026ai.scheduling.base.Executor`, so the
data plane routes, admits, counts (breaker, canary, statistics) and answers a pipeline as any
model. Per request it runs the steps wave by wave (a wave's steps read only earlier tensors, so a
branch's steps run together): a model step is submitted to that model's own executor (its own
SLA-class queue and dynamic batching; the request's SLA class and deadline), a Python step runs on
its own thread, never on the event loop. Tensors pass between steps as the same arrays (no copy).

A step that fails answers with its name: the client's data (``InvalidInputError``, raised by the
step or by a model's input checks) as a 400, anything else as a 500; a deadline that passes
between steps is a deadline error naming the next step.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from mcp2026ai.contract import SLAClass
from mcp2026ai.errors import (
    DeadlineExceededError,
    InferenceFailedError,
    InvalidInputError,
    MCPError,
    ModelNotReadyError,
    OverloadedError,
)
from mcp2026ai.ir.dtypes import v2_datatype
from mcp2026ai.ir.pipeline_spec import ModelRef, PipelineStep, producers
from mcp2026ai.observability import tracing
from mcp2026ai.registry import ModelVersion
from mcp2026ai.runtime.base import Backend, RequestDetails, Tensors
from mcp2026ai.runtime.pipeline_stats import PipelineStats
from mcp2026ai.runtime.stats import ModelStats
from mcp2026ai.runtime.validation import validate_inputs, validate_output_names
from mcp2026ai.scheduling import timing
from mcp2026ai.scheduling.base import Executor
from mcp2026ai.serving.models import ServedModels
from mcp2026ai.serving.pipelines import LoadedPythonStep, PipelineBackend

Arrays = dict[str, np.ndarray]


class PipelineExecutor:
    """Runs one pipeline's requests through its steps (see the module's docstring)."""

    def __init__(self, backend: PipelineBackend, stats: PipelineStats, models: ServedModels) -> None:
        self.backend = backend
        self.stats = stats
        self.models = models
        self.name = backend.record.name
        self._made_by = producers(backend.stored, backend.record.ref)
        self._declared = {spec.name: spec.datatype for spec in backend.signature.outputs}
        self.on_model_step: Callable[[str, Arrays], None] | None = None
        """Called with each model step's name and inputs before they are submitted (the policy reads the
        shapes an example request gives each step: dataplane/pipeline_measure.py)."""
        self._accepting = False
        self._in_flight = 0
        self._idle = asyncio.Event()
        self._idle.set()

    async def start(self) -> None:
        self._accepting = True

    def check_admission(self, sla_class: SLAClass) -> None:
        """Refused early when the first wave's model steps would refuse it."""
        for step in self.backend.waves[0]:
            if isinstance(step.model, ModelRef):
                try:
                    served = self.models.get(step.model.name, step.model.version)
                except MCPError:
                    continue  # submit() answers it, naming the step
                served.executor.check_admission(sla_class)

    async def submit(
        self,
        inputs: Tensors,
        outputs: Sequence[str] | None,
        *,
        sla_class: SLAClass,
        deadline: float | None,
        details: RequestDetails | None = None,
    ) -> Arrays:
        """One request through the pipeline's steps (``details``, the request's id and parameters, are for
        backends that take them: a pipeline's steps get their tensors only)."""
        if not self._accepting:
            raise ModelNotReadyError(f"pipeline {self.name!r} is not accepting requests")
        validate_inputs(self.backend.signature, inputs)
        if outputs:
            validate_output_names(self.backend.signature, outputs)
        self._in_flight += 1
        self._idle.clear()
        try:
            with timing.measuring() as times:
                tensors = await self._run_waves(inputs, sla_class, deadline)
            self.stats.record_queue(1, times.queue_ns)
            self.stats.record_execution(times.compute_ns)
            wanted = outputs or [spec.name for spec in self.backend.signature.outputs]
            return {name: self._declared_output(name, tensors[name]) for name in wanted}
        finally:
            self._in_flight -= 1
            if self._in_flight == 0:
                self._idle.set()

    def _declared_output(self, name: str, array: np.ndarray) -> np.ndarray:
        """A pipeline output as its metadata declares it: another datatype is the producing step's fault."""
        try:
            given = v2_datatype(array.dtype)
        except MCPError:
            given = str(array.dtype)
        if given != self._declared[name]:
            step = self._made_by.get(name) or "the pipeline's inputs"
            raise InferenceFailedError(
                f"pipeline step {step!r}: output {name!r} is {given}, the pipeline declares {self._declared[name]}"
            )
        return array

    async def _run_waves(self, inputs: Tensors, sla_class: SLAClass, deadline: float | None) -> dict[str, Any]:
        tensors: dict[str, Any] = dict(inputs)
        for wave in self.backend.waves:
            if len(wave) == 1:
                tensors.update(await self._step(wave[0], tensors, sla_class, deadline))
                continue
            results = await asyncio.gather(*(self._step(step, tensors, sla_class, deadline) for step in wave))
            for produced in results:
                tensors.update(produced)
        return tensors

    async def _step(
        self, step: PipelineStep, tensors: dict[str, Any], sla_class: SLAClass, deadline: float | None
    ) -> Arrays:
        """Run one step; its outputs under the pipeline's tensor names."""
        if deadline is not None and time.monotonic() > deadline:
            raise DeadlineExceededError(f"pipeline {self.name!r}: deadline passed before step {step.name!r}")
        started = time.perf_counter_ns()
        given = {own: tensors[tensor] for own, tensor in step.inputs.items()}
        ok = False
        times = timing.RequestTimes()
        token = timing.collect(times)
        try:
            if tracing.recording():
                produced = await self._traced_step(step, given, sla_class, deadline, times)
            else:
                produced = await self._run_step(step, given, sla_class, deadline, times)
            ok = True
        finally:
            timing.stop(token)
            self.stats.record_step(step.name, ok, time.perf_counter_ns() - started, times.queue_ns, times.compute_ns)
            timing.report(times.queue_ns, times.compute_ns)  # into the request's total: every step's
        return {tensor: produced[own] for own, tensor in step.outputs.items()}

    async def _run_step(
        self, step: PipelineStep, given: Arrays, sla_class: SLAClass, deadline: float | None, times: timing.RequestTimes
    ) -> Arrays:
        if isinstance(step.model, ModelRef):
            return await self._model_step(step, step.model, given, sla_class, deadline)
        return await self._python_step(self.backend.python[step.name], given, times, deadline)

    async def _traced_step(
        self, step: PipelineStep, given: Arrays, sla_class: SLAClass, deadline: float | None, times: timing.RequestTimes
    ) -> Arrays:
        """The step inside its own span (``step {name}``), with its queue and compute time."""
        with tracing.step_span(self.name, step.name, self.stats.steps[step.name].kind) as span:
            produced = await self._run_step(step, given, sla_class, deadline, times)
            span.set_attribute("step.queue_ns", times.queue_ns)
            span.set_attribute("step.compute_ns", times.compute_ns)
            return produced

    async def _model_step(
        self, step: PipelineStep, ref: ModelRef, given: Arrays, sla_class: SLAClass, deadline: float | None
    ) -> Arrays:
        started = time.perf_counter_ns()
        if self.on_model_step is not None:
            self.on_model_step(step.name, given)
        try:
            served = self.models.get(ref.name, ref.version)
        except MCPError as exc:
            raise _named(exc, step) from None
        try:
            produced = await served.executor.submit(given, list(step.outputs), sla_class=sla_class, deadline=deadline)
        except MCPError as exc:
            served.stats.record_failure(time.perf_counter_ns() - started)
            raise _named(exc, step) from None
        rows = len(next(iter(given.values()))) if given and served.record.signature.batchable else 1
        served.stats.record_success(rows, time.perf_counter_ns() - started)  # the step's model counts it too
        return produced

    async def _python_step(
        self, loaded: LoadedPythonStep, given: Arrays, times: timing.RequestTimes, deadline: float | None
    ) -> Arrays:
        """``execute()`` on the step's thread; past the request's deadline the request is answered (the
        call itself runs on: a thread cannot be stopped, and the step's next request waits for it)."""
        submitted = time.perf_counter_ns()

        def run() -> Any:
            started = time.perf_counter_ns()
            times.queue_ns += started - submitted
            try:
                return loaded.instance.execute(given)
            finally:
                times.compute_ns += time.perf_counter_ns() - started

        step = loaded.step
        try:
            running = asyncio.get_running_loop().run_in_executor(loaded.thread, run)
            timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
            produced = await asyncio.wait_for(running, timeout)
        except TimeoutError as exc:
            if deadline is None or time.monotonic() < deadline:  # the step's own TimeoutError: its failure
                raise InferenceFailedError(f"pipeline step {step.name!r} failed: TimeoutError: {exc}") from None
            raise DeadlineExceededError(f"pipeline step {step.name!r}: deadline passed while it ran") from None
        except InvalidInputError as exc:
            raise InvalidInputError(f"pipeline step {step.name!r}: {exc}") from None
        except MCPError as exc:
            raise _named(exc, step) from None
        except Exception as exc:  # noqa: BLE001 - the user's step failing is a 500 naming it
            raise InferenceFailedError(f"pipeline step {step.name!r} failed: {type(exc).__name__}: {exc}") from None
        return _checked_outputs(step, produced)

    async def stop(self, drain_timeout_s: float) -> None:
        self._accepting = False
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._idle.wait(), drain_timeout_s)


def _checked_outputs(step: PipelineStep, produced: Any) -> Arrays:
    if not isinstance(produced, dict):
        raise InferenceFailedError(
            f"pipeline step {step.name!r}: execute() returned {type(produced).__name__}, not a dict of arrays"
        )
    for own in step.outputs:
        value = produced.get(own)
        if not isinstance(value, np.ndarray):
            shown = "nothing" if value is None else type(value).__name__
            raise InferenceFailedError(f"pipeline step {step.name!r}: output {own!r} is {shown}, not a numpy array")
    return produced


def _named(error: MCPError, step: PipelineStep) -> MCPError:
    """The same kind of error (so its status is the same), its message naming the step."""
    message = f"pipeline step {step.name!r}: {error}"
    if isinstance(error, OverloadedError):
        named: MCPError = OverloadedError(message, error.retry_after_s)
    else:
        try:
            named = type(error)(message)
        except TypeError:
            return error
    named.sla_class, named.param = error.sla_class, error.param
    return named


def pipeline_executor(record: ModelVersion, backend: Backend, stats: ModelStats, models: ServedModels) -> Executor:
    """``PipelineExecutorFactory`` the servers give :class:`ServedModels`."""
    if not isinstance(backend, PipelineBackend) or not isinstance(stats, PipelineStats):
        raise TypeError(f"{record.ref}: not a pipeline")
    return PipelineExecutor(backend, stats, models)
