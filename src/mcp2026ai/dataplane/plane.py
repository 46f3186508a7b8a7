"""The data plane: health and metadata here, and the composition of the use cases the HTTP and gRPC
servers expose, transport-neutral (MLServer's split of ``DataPlane`` and ``ModelRepositoryHandlers``).

- :attr:`DataPlane.inference`: tensor inference (admission, routing, sequences, mirroring);
- :attr:`DataPlane.generation`: text generation (model lookup, defaults, prompt, class, admission);
- :attr:`DataPlane.embeddings`: sentence embeddings on the tensor path (tokenize, infer, pool);
- :attr:`DataPlane.repository`: index, load, unload, audit records, the rollout tick;
- :attr:`DataPlane.extensions`: Triton's trace, logging and shared-memory extensions.

Servers decode wire formats, call these and encode what they return; domain errors propagate and are
mapped to status codes at the edge.
"""

from __future__ import annotations

import asyncio
from typing import Any

from mcp2026ai.dataplane.bls import bind_bls
from mcp2026ai.dataplane.decoupled import is_decoupled
from mcp2026ai.dataplane.embeddings import EmbeddingHandlers
from mcp2026ai.dataplane.extensions import Extensions
from mcp2026ai.dataplane.gate import AcceptGate
from mcp2026ai.dataplane.generation import GenerationHandlers
from mcp2026ai.dataplane.inference import InferenceHandlers
from mcp2026ai.dataplane.repository import RepositoryHandlers
from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.inference import DynamicBatching, ModelDescription
from mcp2026ai.observability.runtime_settings import TraceSettings
from mcp2026ai.registry import ModelVersion
from mcp2026ai.registry.package import ModelPackage, model_package
from mcp2026ai.registry.pipelines import is_pipeline
from mcp2026ai.routing.traffic import TrafficController
from mcp2026ai.security.audit import AuditLog
from mcp2026ai.serving.limits import GenerationLimits
from mcp2026ai.serving.llms import GenerationModels
from mcp2026ai.serving.models import ServedModels


class DataPlane:
    def __init__(
        self,
        models: ServedModels,
        default_models: list[str] | None = None,
        traffic: TrafficController | None = None,
        audit: AuditLog | None = None,
        trace_settings: TraceSettings | None = None,
        llms: GenerationModels | None = None,
        generation_limits: GenerationLimits | None = None,
    ) -> None:
        self.models = models
        trusted = getattr(models.backend_factory, "trusted_keys", None)  # --require-signed covers both kinds
        self.llms = llms or GenerationModels(models.registry, trusted_keys=trusted)
        """Language models (text generation engines), served beside the tensor models."""
        self.default_models = default_models or []
        self.traffic = traffic or TrafficController(models.registry)
        self.gate = AcceptGate()
        self.inference = InferenceHandlers(models, self.traffic, self.gate)
        self.generation = GenerationHandlers(self.llms, self.gate, generation_limits, self.traffic)
        self.embeddings = EmbeddingHandlers(models, self.inference, self.llms)
        self.repository = RepositoryHandlers(models, self.traffic, audit, self.llms)
        self.extensions = Extensions(models, trace_settings)

    def bind_bls(self, loop: asyncio.AbstractEventLoop) -> None:
        """Let Triton Python models' BLS calls run here, on ``loop`` (the server's event loop)."""
        bind_bls(getattr(self.models.backend_factory, "bls", None), self.inference, loop)

    # health ---------------------------------------------------------------------------------
    def live(self) -> bool:
        return True

    def ready(self) -> bool:
        return self.gate.open and all(self.models.is_ready(name) for name in self.default_models)

    def stop_accepting(self) -> None:
        self.gate.close()

    async def shutdown(self, drain_timeout_s: float) -> None:
        """After the transports have stopped: let shadow calls finish (bounded), unload every model."""
        await self.traffic.drain(timeout_s=min(5.0, drain_timeout_s))
        await self.models.unload_all()
        await self.llms.close()
        self.extensions.close()

    # metadata -------------------------------------------------------------------------------
    def model_ready(self, name: str, version: str | None = None) -> bool:
        """Whether the version is loaded and ready: False for a known model that is not loaded (as Triton's
        model-control clients expect); an unknown model or version raises NotFoundError."""
        if self.models.is_ready(name, version):
            return True
        if self.llms.serves(name):
            loaded = {served.record.version for served in self.llms.served_versions(name)}
            return version is None or version in loaded
        if not self.models.is_loaded(name) and self.models.knows(name):
            return False
        self.models.get(name, version)  # raises the right not-found error
        return False

    def is_served(self, name: str) -> bool:
        """Cheap per-request check (the edges keep unknown names out of metric labels with it)."""
        return self.models.is_loaded(name)

    def serves_version(self, name: str, version: str) -> bool:
        """Whether ``version`` (a version or its Triton number) of ``name`` is served (a metric label may
        name it: clients choose versions, the label set must stay bounded)."""
        if self.models.is_ready(name, version):
            return True
        return self.llms.serves(name) and version == self.llms.get(name).record.version

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
        if is_pipeline(record):
            raise InvalidArgumentError(f"{record.ref} is a pipeline: it runs on the server only (no model file)")
        return record, await asyncio.to_thread(self.models.registry.artifact_bytes, record)

    def describe(self, name: str, version: str | None = None) -> ModelDescription:
        """A served version as the protocols report it (metadata, configuration)."""
        if not self.models.is_loaded(name) and self.llms.serves(name):
            return self.llms.describe(name)
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
            decoupled=is_decoupled(served),
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
