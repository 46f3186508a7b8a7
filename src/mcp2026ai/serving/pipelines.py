"""A served pipeline: its stored spec, its Python steps loaded, and what its executor needs.

:class:`PipelineBackend` stands where a model's runtime backend stands in :class:`ServedModel`
(signature, plan, platform ``ensemble``, loaded), so that metadata, readiness, routing, breakers
and statistics treat a pipeline as any model. Its model steps are other served models (loaded
first, each with its own queue); its Python steps are loaded here, each from the bytes read and
checked against its digest out of the artifact store (never from the user's file), with
:func:`mcp2026ai.runtime.python_code.load_class`; ``initialize(config)`` runs at load and
``finalize()`` at unload. Each Python step runs one request at a time on its own thread.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from mcp2026ai.errors import InvalidArgumentError, ModelImportError
from mcp2026ai.ir.pipeline_spec import ModelRef, PipelineStep, StoredPipeline, step_order
from mcp2026ai.ir.signature import Signature
from mcp2026ai.registry import ModelRegistry, ModelVersion
from mcp2026ai.registry.pipelines import python_step_source, read_pipeline
from mcp2026ai.registry.signing import read_verified_artifact
from mcp2026ai.runtime.base import Tensors
from mcp2026ai.runtime.pipeline_stats import PipelineStats
from mcp2026ai.runtime.plan import DEFAULT_PLAN, Plan
from mcp2026ai.runtime.python_code import load_class
from mcp2026ai.security.trust import TrustedKeys

log = logging.getLogger(__name__)

PIPELINE_PLATFORM = "ensemble"
"""What model metadata and configuration report for a pipeline (Triton's name for one)."""


class PythonStepObject(Protocol):
    def initialize(self, config: dict[str, Any]) -> None: ...

    def execute(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]: ...

    def finalize(self) -> None: ...


@dataclass
class LoadedPythonStep:
    step: PipelineStep
    instance: Any
    thread: ThreadPoolExecutor
    """One thread: the step's instance runs one request at a time, as a Triton Python model instance does."""


class PipelineBackend:
    """The ``Backend`` face of a pipeline: its signature and steps; it runs through its executor only."""

    def __init__(self, record: ModelVersion, stored: StoredPipeline, sources: dict[str, bytes]) -> None:
        self.record = record
        self.stored = stored
        self.waves = step_order(stored, record.ref)
        self._sources = sources
        self.python: dict[str, LoadedPythonStep] = {}
        self._loaded = False

    @property
    def signature(self) -> Signature:
        return self.record.signature

    @property
    def plan(self) -> Plan:
        """Not a runtime's plan (each model step has its own): the contract's batch limit, which the
        model configuration reports as ``max_batch_size``."""
        contract = self.record.contract
        limit = contract.batching.max_batch_size if contract is not None else DEFAULT_PLAN.max_batch_size
        return DEFAULT_PLAN.model_copy(update={"max_batch_size": limit})

    @property
    def platform(self) -> str:
        return PIPELINE_PLATFORM

    @property
    def loaded(self) -> bool:
        return self._loaded

    def model_steps(self) -> list[tuple[PipelineStep, ModelRef]]:
        return [(step, step.model) for step in self.stored.steps if isinstance(step.model, ModelRef)]

    def load(self) -> None:
        try:
            for step in self.stored.steps:
                if step.python is not None:
                    self.python[step.name] = self._load_python(step)
        except BaseException:
            self.unload()
            raise
        self._loaded = True

    def _load_python(self, step: PipelineStep) -> LoadedPythonStep:
        label = f"{self.record.ref}/{step.name} ({step.python and step.python[:12]}.py)"
        cls = load_class(
            self._sources[step.name],
            label=label,
            class_name=str(step.class_name),
            module_name=f"mcp_pipeline_{self.record.name}_{step.name}".replace(".", "_").replace("-", "_"),
        )
        try:
            instance = cls()
            initialize = getattr(instance, "initialize", None)
            if callable(initialize):
                initialize(dict(step.config))
        except Exception as error:  # noqa: BLE001 - the user's initialize() failing is the step's fault
            raise ModelImportError(f"{label}: initialize() failed: {type(error).__name__}: {error}") from None
        if not callable(getattr(instance, "execute", None)):
            raise ModelImportError(f"{label}: class {step.class_name!r} has no execute(batch) method")
        return LoadedPythonStep(step, instance, ThreadPoolExecutor(1, thread_name_prefix=f"step-{step.name}"))

    def infer(self, inputs: Tensors, outputs: Sequence[str] | None = None) -> dict[str, np.ndarray]:
        raise InvalidArgumentError(f"{self.record.ref} is a pipeline: it runs through its executor")

    def unload(self) -> None:
        for loaded in self.python.values():
            finalize = getattr(loaded.instance, "finalize", None)
            try:
                if callable(finalize):
                    finalize()
            except Exception:
                log.exception("%s: step %s: finalize() failed", self.record.ref, loaded.step.name)
            loaded.thread.shutdown(wait=False)
        self.python = {}
        self._loaded = False


def pipeline_backend(
    registry: ModelRegistry, record: ModelVersion, trusted_keys: TrustedKeys | None = None
) -> PipelineBackend:
    """Read a pipeline version's spec and its Python steps' sources, each checked against its digest;
    with ``trusted_keys`` (``--require-signed``) the spec is verified against the version's signature
    first (it names every Python step's digest, so the steps' code is covered too)."""
    verified = read_verified_artifact(registry, record, trusted_keys) if trusted_keys is not None else None
    stored = read_pipeline(registry, record, verified)
    sources = {step.name: python_step_source(registry, step.python) for step in stored.steps if step.python is not None}
    return PipelineBackend(record, stored, sources)


def pipeline_stats(record: ModelVersion, backend: PipelineBackend) -> PipelineStats:
    stats = PipelineStats(record.name, str(record.number))
    for step in backend.stored.steps:
        if isinstance(step.model, ModelRef):
            runs = f"model {step.model.name}" + (f":{step.model.version}" if step.model.version else "")
        else:
            runs = f"python {step.class_name}"
        stats.add_step(step.name, runs)
    return stats
