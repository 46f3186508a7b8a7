"""The data plane: every use case the HTTP and gRPC servers expose, transport-neutral.

Servers decode wire formats into :class:`InferenceRequest`, call these methods and encode what
they return; domain errors propagate and are mapped to status codes at the edge.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import tempfile
import time
from pathlib import Path
from typing import Any

from mcp2026ai.classification import classify_outputs
from mcp2026ai.contract import SLAClass
from mcp2026ai.errors import (
    InvalidArgumentError,
    InvalidInputError,
    MCPError,
    NotFoundError,
    PermissionDeniedError,
    UnavailableError,
)
from mcp2026ai.generation.service import GenerationModels
from mcp2026ai.inference import DynamicBatching, InferenceRequest, InferenceResponse, ModelDescription
from mcp2026ai.observability.runtime_settings import LogSettings, TraceSettings
from mcp2026ai.registry import ModelVersion
from mcp2026ai.registry.package import ModelPackage, model_package
from mcp2026ai.routing.diff import Observation
from mcp2026ai.routing.outcome import Outcome
from mcp2026ai.routing.traffic import TrafficController
from mcp2026ai.scheduling.sequences import SequenceTable, sequence_flags
from mcp2026ai.security.audit import AuditLog
from mcp2026ai.serving.models import ServedModel, ServedModels
from mcp2026ai.serving.overrides import ConfigOverride, parse_config_override
from mcp2026ai.shared_memory import SharedMemoryRegions

SYSTEM_ACTOR = "system"
ROLLBACK_ACTOR = "system:canary-analysis"


class DataPlane:
    def __init__(
        self,
        models: ServedModels,
        default_models: list[str] | None = None,
        traffic: TrafficController | None = None,
        audit: AuditLog | None = None,
        trace_settings: TraceSettings | None = None,
        generation: GenerationModels | None = None,
    ) -> None:
        self.models = models
        self.generation = generation or GenerationModels(models.registry)
        """Language models (text generation engines), served beside the tensor models."""
        self.shared_memory = SharedMemoryRegions()
        self.trace = trace_settings or TraceSettings()
        self.logging = LogSettings()
        self.default_models = default_models or []
        self.traffic = traffic or TrafficController(models.registry)
        self.audit = audit
        self._accepting = True

    # health ---------------------------------------------------------------------------------
    def live(self) -> bool:
        return True

    def ready(self) -> bool:
        return self._accepting and all(self.models.is_ready(name) for name in self.default_models)

    def stop_accepting(self) -> None:
        self._accepting = False

    async def shutdown(self, drain_timeout_s: float) -> None:
        """After the transports have stopped: let shadow calls finish (bounded), unload every model."""
        await self.traffic.drain(timeout_s=min(5.0, drain_timeout_s))
        await self.models.unload_all()
        await self.generation.close()
        self.shared_memory.close()

    # metadata -------------------------------------------------------------------------------
    def model_ready(self, name: str, version: str | None = None) -> bool:
        """Whether the version is loaded and ready: False for a known model that is not loaded (as Triton's
        model-control clients expect); an unknown model or version raises NotFoundError."""
        if self.models.is_ready(name, version):
            return True
        if not self.models.is_loaded(name) and self.models.knows(name):
            return False
        if self.generation.serves(name):
            return version in (None, self.generation.get(name).record.version)
        self.models.get(name, version)  # raises the right not-found error
        return False

    def is_served(self, name: str) -> bool:
        """Cheap per-request check (the edges keep unknown names out of metric labels with it)."""
        return self.models.is_loaded(name)

    def served_names(self) -> list[str]:
        return self.models.loaded_names()

    def model_record(self, name: str, version: str | None = None) -> ModelVersion:
        """The registry record of a served version (its preprocessing, labels, signature)."""
        return self.models.get(name, version).record

    def model_package(self, name: str, version: str | None = None) -> ModelPackage:
        """A served version's record and signatures, for an edge device to pull."""
        return model_package(self.models.registry, self.model_record(name, version))

    async def model_artifact(self, name: str, version: str | None = None) -> tuple[ModelVersion, bytes]:
        """A served version's artifact bytes (decrypted, checked against its digest)."""
        record = self.model_record(name, version)
        return record, await asyncio.to_thread(self.models.registry.artifact_bytes, record)

    def describe(self, name: str, version: str | None = None) -> ModelDescription:
        """A served version as the protocols report it (metadata, configuration)."""
        if not self.models.is_loaded(name) and self.generation.serves(name):
            return self.generation.describe(name)
        served = self.models.get(name, version)
        signature = served.record.signature
        batching = served.batching
        max_batch = served.max_batch_size if signature.batchable and (batching is None or batching.batch_dim) else 0
        dynamic = None
        if max_batch > 0 and batching is not None and batching.batching:
            dynamic = DynamicBatching(batching.max_queue_delay_ms, tuple(batching.preferred_batch_sizes))
        return ModelDescription(
            name=name,
            versions=tuple(model.record.version for model in self.models.served_versions(name)),
            platform=served.backend.platform,
            signature=signature,
            max_batch_size=max_batch,
            plan=served.plan.describe(),
            dynamic_batching=dynamic,
            instance_count=batching.max_concurrent_batches if batching else 1,
            sequence=served.record.contract.sequence if served.record.contract is not None else None,
            image_layout=served.record.preprocessing.layout if served.record.preprocessing else None,
            labels=tuple(served.record.preprocessing.labels) if served.record.preprocessing else (),
        )

    def model_statistics(self, name: str | None = None, version: str | None = None) -> list[dict[str, Any]]:
        names = [name] if name else self.models.loaded_names()
        stats = []
        for model_name in names:
            if version:
                stats.append(self.models.get(model_name, version).stats.as_dict())
                continue
            served = self.models.served_versions(model_name)
            if not served and name:
                self.models.get(model_name)  # raises the right not-found error
            stats += [model.stats.as_dict() for model in served]
        return stats

    # trace and logging settings (Triton's extensions) ---------------------------------------
    def trace_settings(self, model: str | None = None) -> dict[str, Any]:
        if model:
            self.models.get(model)  # an unknown model is NotFoundError
        return self.trace.get(model)

    def update_trace_settings(self, changes: dict[str, Any], model: str | None = None) -> dict[str, Any]:
        if model:
            self.models.get(model)
        return self.trace.update(changes, model)

    def log_settings(self) -> dict[str, Any]:
        return self.logging.get()

    def update_log_settings(self, changes: dict[str, Any]) -> dict[str, Any]:
        return self.logging.update(changes)

    # shared memory (Triton's extensions; no GPU here, so CUDA regions are never registered) --
    def register_system_shm(self, name: str, key: str, offset: int, byte_size: int) -> None:
        self.shared_memory.register(name, key, offset, byte_size)

    def system_shm_status(self, name: str | None = None) -> list[dict[str, Any]]:
        return self.shared_memory.status(name)

    def unregister_system_shm(self, name: str | None = None) -> None:
        self.shared_memory.unregister(name)

    def register_cuda_shm(self, name: str) -> None:
        raise InvalidArgumentError(f"cannot register CUDA shared memory region '{name[:100]}': this server has no GPU")

    def cuda_shm_status(self, name: str | None = None) -> list[dict[str, Any]]:
        if name:
            raise NotFoundError(f"Unable to find cuda shared memory region: '{name[:100]}'")
        return []

    def unregister_cuda_shm(self, name: str | None = None) -> None:
        """Nothing to unregister (as on a Triton without GPUs): succeeds."""

    # repository -----------------------------------------------------------------------------
    def repository_index(self) -> list[dict[str, str]]:
        return self.models.index()

    async def load(
        self,
        name: str,
        actor: str = SYSTEM_ACTOR,
        details: dict[str, Any] | None = None,
        parameters: dict[str, Any] | None = None,
    ) -> None:
        """Load a model's default version, with Triton's ``config`` override among ``parameters`` if
        given; recorded in the audit log, refusals and failures included."""
        try:
            override = _load_override(name, parameters or {})
            version = await self._register_files(name, parameters or {}, actor)
            served = await self.models.load(name, version, override=override)
        except MCPError as exc:
            await self._record("model.load", actor, name, {**(details or {}), **_refusal(exc)})
            raise
        outcome = {"result": "ok", "digest": served.record.digest}
        await self._record("model.load", actor, served.record.ref, {**(details or {}), **outcome})

    async def _register_files(self, name: str, parameters: dict[str, Any], actor: str) -> str | None:
        """A model file sent with ``load`` (Triton's ``file:<version>/model.onnx`` parameter, base64 over
        HTTP, bytes over gRPC) is registered like any model file (the same content is the same version)
        and that version is loaded; None when the load names no file."""
        files = {key: value for key, value in parameters.items() if key.startswith("file:")}
        if not files:
            return None
        if "config" not in parameters:
            raise InvalidArgumentError(f"load {name!r}: file: parameters need a 'config' parameter too, as in Triton")
        if len(files) != 1 or not next(iter(files)).endswith(".onnx"):
            listed = ", ".join(sorted(files))[:200]
            raise InvalidArgumentError(
                f"load {name!r}: expected one 'file:<version>/<name>.onnx' parameter, got {listed}"
            )
        data = _file_bytes(next(iter(files.values())))
        folder = self.models.registry.home / "tmp"
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".load-", suffix=".onnx") as handle:
            handle.write(data)
            handle.flush()
            register = self.models.registry.register_or_reuse
            source = {"source": "load request file: parameter"}
            record = await asyncio.to_thread(register, name, Path(handle.name), actor, source)
        return record.version

    async def unload(self, name: str, actor: str = SYSTEM_ACTOR, details: dict[str, Any] | None = None) -> None:
        try:
            await self.models.unload(name)
        except MCPError as exc:
            await self._record("model.unload", actor, name, {**(details or {}), **_refusal(exc)})
            raise
        await self._record("model.unload", actor, name, {**(details or {}), "result": "ok"})

    def tick(self) -> None:
        """Let canary analysis run; automatic rollbacks are recorded in the audit log."""
        rollouts = {name: self.traffic.rollout(name) for name in self.models.loaded_names()}
        for model, verdict in self.traffic.tick().items():
            canary = getattr(rollouts.get(model), "canary", None)
            if verdict.rollback and self.audit is not None:
                target = f"{model}:{canary}" if canary else model
                self.audit.record("rollout.rollback", ROLLBACK_ACTOR, target, {"reason": verdict.reason})

    async def _record(self, action: str, actor: str, target: str, details: dict[str, Any]) -> None:
        if self.audit is not None:
            await asyncio.to_thread(self.audit.record, action, actor, target, details)

    # inference ------------------------------------------------------------------------------
    def check_admission(self, name: str, version: str | None, requested_class: str | None) -> None:
        """Refuse now, before its body is read and decoded, a request its SLA class queue would refuse
        (full, or too far behind its deadline): under overload, refusals cost a header, not a body.
        Only when the class is known up front (X-SLA-Class, gRPC metadata or parameters); a class
        named only inside an HTTP body is checked when the request is queued."""
        if not self._accepting:
            raise UnavailableError("server is shutting down")
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
        if not self._accepting:
            raise UnavailableError("server is shutting down")
        started = time.perf_counter_ns()
        default = self.models.get(request.model)
        choice = self.traffic.choose(request, default.record.version)
        served = self.models.get(choice.target.model, choice.target.version)
        error: MCPError | None = None
        sla_class = self._sla_class(served, request)
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
            return await self._run_sequence(served, served.sequences, request, sla_class)
        return await served.executor.submit(  # the executor checks the tensors against its backend's signature
            request.inputs, request.output_names, sla_class=sla_class, deadline=_deadline(request)
        )

    async def _run_sequence(
        self, served: ServedModel, sequences: SequenceTable, request: InferenceRequest, sla_class: SLAClass
    ) -> dict[str, Any]:
        """A stateful model's request: in order within its sequence, controls and state filled in."""

        async def submit(inputs: dict[str, Any], outputs: list[str] | None) -> dict[str, Any]:
            return await served.executor.submit(inputs, outputs, sla_class=sla_class, deadline=_deadline(request))

        flags = sequence_flags(request.parameters)
        return await sequences.run(flags, request.inputs, request.output_names, submit)

    @staticmethod
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


def _load_override(name: str, parameters: dict[str, Any]) -> ConfigOverride | None:
    """Triton's ``config`` load parameter (a JSON model configuration), as the override it means."""
    config = parameters.get("config")
    if config is None:
        return None
    if not isinstance(config, str):
        raise InvalidArgumentError(f"load {name!r}: the 'config' parameter must be a JSON string")
    return parse_config_override(config, name)


def _file_bytes(value: Any) -> bytes:
    if isinstance(value, bytes):
        return value
    if not isinstance(value, str):
        raise InvalidArgumentError("a file: load parameter must be base64 text (HTTP) or bytes (gRPC)")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidArgumentError("a file: load parameter is not valid base64") from None


def _refusal(error: MCPError) -> dict[str, str]:
    return {"result": "denied" if isinstance(error, PermissionDeniedError) else "failed", "error": str(error)}


def parse_sla_class(raw: str) -> SLAClass:
    try:
        return SLAClass(raw.strip().lower())
    except ValueError:
        known = ", ".join(cls.value for cls in SLAClass)
        raise InvalidInputError(f"unknown SLA class {raw!r} (known: {known})") from None


def _deadline(request: InferenceRequest) -> float | None:
    timeout_s = request.timeout_s
    micros = request.parameters.get("timeout")
    if isinstance(micros, int | float) and not isinstance(micros, bool) and micros > 0:
        timeout_s = min(timeout_s or float("inf"), micros / 1e6)
    return request.received_at + timeout_s if timeout_s else None
