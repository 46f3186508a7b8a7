"""Tensor inference as a use case: admission, routing (pinned version, header, canary, breakers),
the run itself (sequences in order), observation for canary analysis, and shadow mirroring."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

from mcp2026ai.classification import classify_outputs
from mcp2026ai.contract import SLAClass, parse_sla_class
from mcp2026ai.dataplane.decoupled import is_decoupled, stream_responses
from mcp2026ai.dataplane.gate import AcceptGate
from mcp2026ai.errors import MCPError, ModelNotReadyError
from mcp2026ai.inference import InferenceRequest, InferenceResponse
from mcp2026ai.routing.diff import Observation
from mcp2026ai.routing.outcome import Outcome
from mcp2026ai.routing.traffic import TrafficController
from mcp2026ai.runtime.base import QueuedRequest, RequestDetails
from mcp2026ai.scheduling.config import DEFAULT_DEADLINES_MS
from mcp2026ai.scheduling.sequences import SequenceTable, sequence_flags
from mcp2026ai.serving.models import ServedModels
from mcp2026ai.serving.served_model import ServedModel

COLD_LOAD_WAIT_S = 30.0
"""How long a best-effort request without a deadline of its own waits for its model's cold load."""


class InferenceHandlers:
    def __init__(self, models: ServedModels, traffic: TrafficController, gate: AcceptGate) -> None:
        self.models = models
        self.traffic = traffic
        self.gate = gate

    def check_admission(self, name: str, version: str | None, requested_class: str | None) -> None:
        """Refuse now, before its body is read and decoded, a request its SLA class queue would refuse
        (full, or too far behind its deadline): under overload, refusals cost a header, not a body.
        Only when the class is known up front (X-SLA-Class, gRPC metadata or parameters); a class
        named only inside an HTTP body is checked when the request is queued."""
        self.gate.check()
        if not requested_class:
            return
        try:
            served = self.models.get(name, version)
            sla_class = parse_sla_class(requested_class)
        except MCPError:
            return  # infer() answers an unknown model or class with the right error
        try:
            served.executor.check_admission(sla_class)
        except MCPError as exc:
            exc.sla_class = sla_class.value  # the edges label the refusal's metrics with it
            raise

    async def infer(self, request: InferenceRequest) -> InferenceResponse:
        """Route (pinned version, header, canary weight, breakers), run, observe, maybe mirror.

        The response carries the SLA class the request was scheduled under (the caller's, or the
        contract's default); a domain error raised after routing carries it as ``sla_class``.
        """
        self.gate.check()
        started = time.perf_counter_ns()
        await self.ensure_loaded(request)
        default = self.models.get(request.model)
        choice = self.traffic.choose(request, default.record.version)
        if choice.target.reason == "fallback" and not self.models.is_loaded(choice.target.model):
            raise ModelNotReadyError(
                f"model {request.model!r}: its circuit is open and its fallback model {choice.target.model!r} "
                "is not served"
            )
        served = self.models.get(choice.target.model, choice.target.version)
        served.last_used = time.monotonic()
        error: MCPError | None = None
        sla_class = _sla_class(served, request)
        try:
            outputs = await self._run(served, request, sla_class)  # no await before submit: swaps stay atomic
        except MCPError as exc:
            error = exc
            exc.sla_class = sla_class.value  # the edges label a failure's metrics and span with it too
            served.stats.record_failure(time.perf_counter_ns() - started)
            raise
        finally:
            elapsed_ms = (time.perf_counter_ns() - started) / 1e6
            self.traffic.observe(choice, request.model, served.record.version, error, elapsed_ms)
        served.stats.record_success(request.batch_rows, time.perf_counter_ns() - started)
        if choice.decision.shadow_version:
            self._mirror(request, served, outputs, elapsed_ms, choice.decision.shadow_version)
        labels = served.record.preprocessing.labels if served.record.preprocessing else []
        return InferenceResponse(
            model=request.model,
            version=served.record.version,
            id=request.id,
            outputs=classify_outputs(outputs, request.outputs, labels),
            sla_class=sla_class,
        )

    def is_decoupled(self, name: str, version: str | None = None) -> bool:
        """Whether the served version answers with a stream (a decoupled Triton Python model)."""
        try:
            return is_decoupled(self.models.get(name, version))
        except MCPError:
            return False

    async def infer_stream(self, request: InferenceRequest) -> AsyncIterator[InferenceResponse]:
        """A decoupled model's responses to one request, as it sends them (dataplane/decoupled.py)."""
        self.gate.check()
        served = self.models.get(request.model, request.version)
        started = time.perf_counter_ns()
        try:
            queued = QueuedRequest(request.inputs, request.output_names, _deadline(request), _details(request))
            async for outputs in stream_responses(served, queued):
                yield InferenceResponse(request.model, served.record.version, request.id, outputs)
        except MCPError:
            served.stats.record_failure(time.perf_counter_ns() - started)
            raise
        served.stats.record_success(request.batch_rows, time.perf_counter_ns() - started)

    async def ensure_loaded(self, request: InferenceRequest) -> None:
        """Under a memory budget, load the request's model if it is registered and not held (never
        loaded, or evicted): ColdLoadError (503 + Retry-After) when its deadline passes first."""
        if self.models.budget is not None and not self.models.is_loaded(request.model):
            await self.models.load_on_request(request.model, await self._cold_load_wait_s(request))

    async def _cold_load_wait_s(self, request: InferenceRequest) -> float:
        """How long a request may wait for its model's load on first request: what is left of its own
        deadline, else its SLA class's deadline (the caller's class, else the contract's), else
        :data:`COLD_LOAD_WAIT_S` (best-effort has none)."""
        deadline = _deadline(request)
        if deadline is not None:
            return deadline - time.monotonic()
        raw = request.headers.get("x-sla-class") or request.parameters.get("sla_class")
        sla_class = request.sla_class or (parse_sla_class(str(raw)) if raw else None)
        if sla_class is None:
            try:
                record = await asyncio.to_thread(self.models.registry.resolve, request.model)
            except MCPError:
                return 0.0
            sla_class = record.contract.sla_class if record.contract else SLAClass.BEST_EFFORT
        class_ms = DEFAULT_DEADLINES_MS[sla_class]
        return class_ms / 1000 if class_ms is not None else COLD_LOAD_WAIT_S

    def _mirror(
        self, request: InferenceRequest, served: ServedModel, outputs: dict[str, Any], ms: float, version: str
    ) -> None:
        async def run_shadow() -> dict[str, Any]:
            shadow = self.models.get(request.model, version)
            return await self._run(shadow, request, SLAClass.BEST_EFFORT)

        primary = Observation(Outcome.OK, ms, outputs)
        self.traffic.shadow(request.model, served.record.version, primary, version, run_shadow)

    async def _run(self, served: ServedModel, request: InferenceRequest, sla_class: SLAClass) -> dict[str, Any]:
        if served.sequences is not None:
            return await _run_sequence(served, served.sequences, request, sla_class)
        return await served.executor.submit(  # the executor checks the tensors against its backend's signature
            request.inputs,
            request.output_names,
            sla_class=sla_class,
            deadline=_deadline(request),
            details=_details(request),
        )


async def _run_sequence(
    served: ServedModel, sequences: SequenceTable, request: InferenceRequest, sla_class: SLAClass
) -> dict[str, Any]:
    """A stateful model's request: in order within its sequence, controls and state filled in."""

    async def submit(inputs: dict[str, Any], outputs: list[str] | None) -> dict[str, Any]:
        return await served.executor.submit(
            inputs, outputs, sla_class=sla_class, deadline=_deadline(request), details=_details(request)
        )

    flags = sequence_flags(request.parameters)
    return await sequences.run(flags, request.inputs, request.output_names, submit)


def _sla_class(served: ServedModel, request: InferenceRequest) -> SLAClass:
    if request.sla_class is not None:
        return request.sla_class
    raw = request.headers.get("x-sla-class") or request.parameters.get("sla_class")
    if raw:
        return parse_sla_class(str(raw))
    level = request.parameters.get("priority")  # Triton's priority levels, when the model declares them
    if isinstance(level, int) and level in served.priority_classes:
        return served.priority_classes[level]
    contract = served.record.contract
    return contract.sla_class if contract else SLAClass.BEST_EFFORT


def _deadline(request: InferenceRequest) -> float | None:
    timeout_s = request.timeout_s
    micros = request.parameters.get("timeout")
    if isinstance(micros, int | float) and not isinstance(micros, bool) and micros > 0:
        timeout_s = min(timeout_s or float("inf"), micros / 1e6)
    return request.received_at + timeout_s if timeout_s else None


def _details(request: InferenceRequest) -> RequestDetails:
    return RequestDetails(request.id, request.parameters)
