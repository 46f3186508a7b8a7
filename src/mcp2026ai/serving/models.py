"""Which model versions are loaded and serving: load, unload, swap, look up.

The table of served models is copy-on-write: a load builds the new backend and executor first and
then replaces the whole mapping in one assignment, so a request sees either the old or the new
version, never a half-loaded one.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Protocol

from mcp2026ai.errors import (
    IntegrityError,
    InvalidArgumentError,
    MCPError,
    ModelNotReadyError,
    NotFoundError,
    SignatureError,
)
from mcp2026ai.ir.pipeline_spec import ModelRef
from mcp2026ai.observability import metrics
from mcp2026ai.policy.memory import footprint_baseline, release_freed_memory, resident_bytes
from mcp2026ai.registry import ModelRegistry, ModelVersion
from mcp2026ai.registry.llm_bundle import is_llm_format
from mcp2026ai.registry.pipelines import is_pipeline, read_pipeline
from mcp2026ai.registry.triton_config import priority_classes
from mcp2026ai.registry.triton_import import stored_config
from mcp2026ai.runtime.base import Backend, RequestListBackend
from mcp2026ai.runtime.stats import ModelStats
from mcp2026ai.scheduling.base import Executor
from mcp2026ai.scheduling.load_priority import LoadThreads, sla_class_of
from mcp2026ai.scheduling.sequences import SequenceTable
from mcp2026ai.serving.artifacts import ArtifactBackends
from mcp2026ai.serving.budget import ColdLoads, MemoryBudget
from mcp2026ai.serving.executors import batching_executor
from mcp2026ai.serving.load_peak import PeakRss
from mcp2026ai.serving.memory_budget import Resident
from mcp2026ai.serving.overrides import ConfigOverride, with_stored_config
from mcp2026ai.serving.pipelines import PipelineBackend, pipeline_backend, pipeline_stats
from mcp2026ai.serving.served_model import ModelEntry, ServedModel, version_by_number

log = logging.getLogger(__name__)


class ExecutorFactory(Protocol):
    """Builds the executor of a loaded version; ``override`` is what a ``load`` with a config set."""

    def __call__(
        self, record: ModelVersion, backend: Backend, stats: ModelStats, override: ConfigOverride | None = None
    ) -> Executor: ...


BackendFactory = Callable[[ModelVersion], Backend]
"""Builds an unloaded backend for a version (blocking: may measure plans); runs off the event loop."""


class PipelineExecutorFactory(Protocol):
    """Builds a pipeline's executor (dataplane/pipelines.py), which looks its steps up in ``models``."""

    def __call__(self, record: ModelVersion, backend: Backend, stats: ModelStats, models: ServedModels) -> Executor: ...


class ServedModels:
    """The model versions this process serves: loads registry versions into backends + executors,
    swaps and retires them, and answers lookups."""

    def __init__(
        self,
        registry: ModelRegistry,
        executor_factory: ExecutorFactory = batching_executor,
        backend_factory: BackendFactory | None = None,
        drain_timeout_s: float = 30.0,
        pipeline_executor: PipelineExecutorFactory | None = None,
        budget: MemoryBudget | None = None,
        load_threads: LoadThreads | None = None,
    ) -> None:
        self.registry = registry
        self.load_threads = load_threads or LoadThreads()
        """Where a model's session is built (a best-effort one on a lowered thread with host tuning's
        ``best_effort_load_nice``: scheduling/load_priority.py)."""
        self.pipeline_executor = pipeline_executor
        """Runs pipelines (the servers give dataplane's); None: a pipeline is refused at load."""
        self.budget = budget
        """The one memory budget of everything served (serving/budget.py); None: none."""
        if budget is not None:
            budget.attach(self)
        self._cold_loads = ColdLoads()
        self.executor_factory = executor_factory
        self.backend_factory = backend_factory or ArtifactBackends(registry)
        self.drain_timeout_s = drain_timeout_s
        self._models: dict[str, ModelEntry] = {}
        self._overrides: dict[str, ConfigOverride] = {}
        self._uploads: set[str] = set()
        """Models serving a ``file:`` upload (serving/uploads.py): the registry sync leaves them alone."""
        self._lock = asyncio.Lock()

    async def load(
        self,
        name: str,
        version: str | None = None,
        make_default: bool = True,
        override: ConfigOverride | None = None,
        reason: str = "sync",
    ) -> ServedModel:
        """Load (or reload) a version; it becomes the model's default unless ``make_default`` is False.
        A config ``override`` stays in force for the model (later loads and reloads) until it is unloaded.
        A pipeline's model steps are loaded first (each as its own model, its default if it has none).
        Under a memory budget, models are evicted first to make room (or the load is refused, naming
        the budget); ``reason`` labels ``mcp_model_loads_total``."""
        await self._load_steps(name, version)
        if self.budget is None:
            served, retired = await self._load(name, version, make_default, override, reason)
        else:
            record = self._resolve(name, version)
            need_mb = await asyncio.to_thread(self._estimate_mb, record)
            async with self.budget.admit(name, need_mb):
                served, retired = await self._load(name, version, make_default, override, reason)
        await self._retire(retired)
        return served

    async def _load(
        self, name: str, version: str | None, make_default: bool, override: ConfigOverride | None, reason: str
    ) -> tuple[ServedModel, list[ServedModel]]:
        async with self._lock:
            record = self._resolve(name, version)
            try:
                config = await asyncio.to_thread(stored_config, self.registry, record)
                given = override or self._overrides.get(name)
                served = await self._build(record, with_stored_config(config, record.name, given))
                served.priority_classes = priority_classes(config) if config is not None else {}
            except (SignatureError, IntegrityError) as exc:  # refused: the index shows why
                self.record_failure(name, str(exc))
                raise
            except MCPError:
                raise
            except Exception as exc:  # a broken artifact must not take the server down  # noqa: BLE001
                self.record_failure(name, f"failed to load {record.ref}: {exc}")
                raise ModelNotReadyError(f"failed to load {record.ref}: {exc}") from None
            replaced = name in self._uploads  # a registry version replaces an upload entirely
            retired = self._install(served, make_default or replaced, replace=replaced)
            self._uploads.discard(name)
            if override is not None:
                self._overrides[name] = override
        metrics.observe_load(served.kind, name, record.version, reason, served.load_seconds)
        if self.budget is not None:
            await self.budget.loaded(name, record.version, served.footprint_bytes, served.transient_bytes)
        return served, retired

    async def load_on_request(self, name: str, wait_s: float) -> None:
        """Under a memory budget, a registered tensor model not loaded (never, or evicted) is loaded by
        its first request (one load however many ask); ColdLoadError (503 + Retry-After) when it will
        not be ready within ``wait_s``; the load goes on for the next request."""
        if self.budget is None or self.is_loaded(name) or name in self._uploads:
            return
        if not await asyncio.to_thread(self._tensor_model, name):
            return  # the lookup answers 404 (or the generation routes serve it)
        await self._cold_loads.ensure(name, lambda: self.load(name, reason="request"), wait_s)

    def loading(self, name: str) -> bool:
        """Whether ``name`` is being loaded by a request (under the memory budget)."""
        return self._cold_loads.running(name)

    def _estimate_mb(self, record: ModelVersion) -> float:
        """What its load needs: its footprint and its load's transient when measured before, else half
        as much again as its file (a first guess: the session holds the weights and its arena)."""
        measured = self.budget.measured_mb(record.name, record.version) if self.budget is not None else None
        if measured and self.budget is not None:
            return measured + self.budget.transient_mb(record.name, record.version)
        try:
            return self.registry.artifact_path(record).stat().st_size * 1.5 / (1 << 20)
        except (OSError, MCPError):
            return 0.0

    def residents(self, pinned: set[str]) -> list[Resident]:
        """The loaded models as the memory budget sees them (uploads are not the budget's)."""
        residents = []
        for name, entry in self._models.items():
            if not entry.versions or name in self._uploads:
                continue
            versions = list(entry.versions.values())
            default = entry.versions.get(entry.default or "") or versions[0]
            footprint_mb = sum(served.footprint_bytes for served in versions) / (1 << 20)
            last_used = max(served.last_used for served in versions)
            residents.append(Resident(name, footprint_mb, default.sla_class, last_used, name in pinned))
        return residents

    async def evict(self, name: str) -> None:
        """Unload ``name`` for the budget (a drain); a config override set by a load stays in force
        for its next load on request."""
        override = self._overrides.get(name)
        await self.unload(name)
        if override is not None:
            self._overrides[name] = override

    async def load_upload(
        self, record: ModelVersion, backend: Callable[[], Backend], override: ConfigOverride | None
    ) -> ServedModel:
        """Serve an uploaded model (not in the registry) as the model's only version, until it is
        loaded again or unloaded; the registry sync leaves it alone meanwhile."""
        name = record.name
        async with self._lock:
            try:
                served = await self._build(record, override or self._overrides.get(name), lambda _: backend())
            except MCPError:
                raise
            except Exception as exc:  # noqa: BLE001  (a broken upload must not take the server down)
                raise ModelNotReadyError(f"failed to load {record.ref}: {type(exc).__name__}") from None
            retired = self._install(served, make_default=True, replace=True)
            self._uploads.add(name)
            if override is not None:
                self._overrides[name] = override
        await self._retire(retired)
        return served

    async def _load_steps(self, name: str, version: str | None) -> None:
        try:
            record = self.registry.resolve(name, version)
        except MCPError:
            return  # load() answers it
        if not is_pipeline(record):
            return
        stored = await asyncio.to_thread(read_pipeline, self.registry, record)
        for step in stored.steps:
            if not isinstance(step.model, ModelRef):
                continue
            try:
                self.get(step.model.name, step.model.version)
            except NotFoundError:
                first = self.default_version(step.model.name) is None
                try:
                    await self.load(step.model.name, step.model.version, make_default=first)
                except MCPError as exc:
                    reason = f"failed to load {record.ref}: step {step.name!r} ({step.model.name}): {exc}"
                    self.record_failure(name, reason)
                    raise ModelNotReadyError(reason) from None

    def serves_upload(self, name: str) -> bool:
        return name in self._uploads

    @property
    def requires_signatures(self) -> bool:
        """``--require-signed``: the backend factory verifies every version against trusted keys."""
        return getattr(self.backend_factory, "trusted_keys", None) is not None

    def _resolve(self, name: str, version: str | None) -> ModelVersion:
        """The registry version to load; an unknown or refused model in Triton's words ("failed to load")."""
        try:
            return self.registry.resolve(name, version)
        except NotFoundError as exc:
            entry = self._models.get(name)
            if entry is not None and entry.failure:
                raise ModelNotReadyError(entry.failure) from None
            raise NotFoundError(f"failed to load '{name[:100]}': {exc}") from None

    def set_default(self, name: str, version: str) -> None:
        """Point unpinned traffic at another loaded version (one atomic swap)."""
        entry = self._models.get(name)
        if entry is None or version not in entry.versions:
            raise NotFoundError(f"model {name!r} has no loaded version {version}")
        models = dict(self._models)
        models[name] = ModelEntry(versions=entry.versions, default=version)
        self._swap(models)

    def default_version(self, name: str) -> str | None:
        entry = self._models.get(name)
        return entry.default if entry else None

    async def unload_version(self, name: str, version: str) -> None:
        """Retire one non-default version after its in-flight requests finish."""
        async with self._lock:
            entry = self._models.get(name)
            if entry is None or version not in entry.versions:
                return
            if entry.default == version:
                raise InvalidArgumentError(f"{name}:{version} is the default version; set another default first")
            versions = {v: m for v, m in entry.versions.items() if v != version}
            models = dict(self._models)
            models[name] = ModelEntry(versions=versions, default=entry.default)
            self._swap(models)
        await self._retire([entry.versions[version]])

    async def unload(self, name: str) -> None:
        async with self._lock:
            entry = self._models.get(name)
            if entry is None:
                raise NotFoundError(f"model {name!r} is not loaded")
            models = dict(self._models)
            del models[name]
            self._overrides.pop(name, None)
            self._uploads.discard(name)
            self._swap(models)
        await self._retire(list(entry.versions.values()))

    async def unload_all(self) -> None:
        for name in list(self._models):
            await self.unload(name)

    def get(self, name: str, version: str | None = None) -> ServedModel:
        """The served version (the default when ``version`` is None); NotFoundError in Triton's words,
        which clients written for Triton match ("Request for unknown model")."""
        entry = self._models.get(name)
        if entry is None:
            detail = " (registered, not loaded)" if self._known(name) else ""
            raise NotFoundError(f"Request for unknown model: '{name}' is not found{detail}")
        key = version or entry.default or ""
        served = entry.versions.get(key) or version_by_number(entry, key)
        if served is None:
            raise NotFoundError(f"Request for unknown model: '{name}' version {version} is not found")
        return served

    def is_ready(self, name: str, version: str | None = None) -> bool:
        try:
            return self.get(name, version).backend.loaded
        except MCPError:
            return False

    def is_loaded(self, name: str) -> bool:
        """Cheap per-request check (no sorting, no copies)."""
        entry = self._models.get(name)
        return entry is not None and bool(entry.versions)

    def knows(self, name: str) -> bool:
        """Registered, or refused at load (in the repository index either way)."""
        entry = self._models.get(name)
        return (entry is not None and entry.failure is not None) or self._known(name)

    def step_versions(self, name: str) -> set[str]:
        """The versions of ``name`` a loaded pipeline runs as a step (the registry sync keeps them loaded)."""
        pinned: set[str] = set()
        for entry in self._models.values():
            for served in entry.versions.values():
                if isinstance(served.backend, PipelineBackend):
                    steps = served.backend.model_steps()
                    pinned |= {ref.version for _, ref in steps if ref.name == name and ref.version is not None}
        return pinned

    def loaded_names(self) -> list[str]:
        return sorted(name for name, entry in self._models.items() if entry.versions)

    def served_versions(self, name: str) -> list[ServedModel]:
        entry = self._models.get(name)
        return list(entry.versions.values()) if entry else []

    def index(self) -> list[dict[str, str]]:
        """Every registered model with its state, as in Triton's repository index."""
        rows = []
        failed = {name for name, entry in self._models.items() if entry.failure and not entry.versions}
        for name in sorted(set(self.registry.model_names()) | failed | (self._uploads & set(self._models))):
            entry = self._models.get(name)
            if entry and entry.versions:
                rows += [{"name": name, "version": v, "state": "READY", "reason": ""} for v in entry.versions]
            else:
                reason = entry.failure if entry and entry.failure else ""
                rows.append({"name": name, "version": "", "state": "UNAVAILABLE", "reason": reason})
        return rows

    async def _build(
        self, record: ModelVersion, override: ConfigOverride | None, factory: BackendFactory | None = None
    ) -> ServedModel:
        started = time.perf_counter()
        if is_pipeline(record):
            return await self._build_pipeline(record, started)
        before = await asyncio.to_thread(footprint_baseline, self.budget is not None)
        with PeakRss() as peak:
            sla_class = sla_class_of(record.contract)
            backend = await self.load_threads.run(sla_class, factory or self.backend_factory, record)
            await self.load_threads.run(sla_class, backend.load)
            if self.load_threads.lowers(sla_class):  # built on a thread (and heap arena) of its own
                await asyncio.to_thread(release_freed_memory)
            stats = ModelStats(record.name, str(record.number))  # Triton keys statistics by integer version
            executor = (
                self.executor_factory(record, backend, stats)
                if override is None
                else self.executor_factory(record, backend, stats, override)
            )
            await executor.start()
        seconds = time.perf_counter() - started
        log.info("loaded %s with plan %s in %.3f s", record.ref, backend.plan.describe(), seconds)
        after = resident_bytes()
        footprint = max(0, after - before) if after is not None and before is not None else 0
        metrics.MODEL_RESIDENT_BYTES.labels(record.name, record.version).set(footprint)
        spec = record.contract.sequence if record.contract is not None else None
        sequences = SequenceTable(record.name, spec, backend.signature) if spec is not None else None
        served = ServedModel(record, backend, executor, stats, seconds, sequences)
        served.footprint_bytes, served.transient_bytes = footprint, peak.transient_bytes(after)
        return served

    async def _build_pipeline(self, record: ModelVersion, started: float) -> ServedModel:
        if self.pipeline_executor is None:
            raise ModelNotReadyError(f"{record.ref} is a pipeline; this server does not run pipelines")
        keys = getattr(self.backend_factory, "trusted_keys", None)  # --require-signed: the spec verified first
        backend = await asyncio.to_thread(pipeline_backend, self.registry, record, keys)
        await asyncio.to_thread(backend.load)
        stats = pipeline_stats(record, backend)
        executor = self.pipeline_executor(record, backend, stats, self)
        await executor.start()
        seconds = time.perf_counter() - started
        log.info("loaded pipeline %s (%d steps) in %.3f s", record.ref, len(backend.stored.steps), seconds)
        return ServedModel(record, backend, executor, stats, seconds)

    def _install(self, served: ServedModel, make_default: bool, replace: bool = False) -> list[ServedModel]:
        """Add ``served`` (``replace``: as the model's only version, retiring the others)."""
        name, version = served.record.name, served.record.version
        old = self._models.get(name, ModelEntry())
        if replace:
            retired, versions = list(old.versions.values()), {version: served}
        else:
            retired = [old.versions[version]] if version in old.versions else []
            versions = {**old.versions, version: served}
        models = dict(self._models)
        default = version if make_default or old.default is None else old.default
        models[name] = ModelEntry(versions=versions, default=default)
        self._swap(models)
        return retired

    def record_failure(self, name: str, reason: str) -> None:
        """Show ``name`` as UNAVAILABLE with ``reason`` in the repository index (registered or not)."""
        models = dict(self._models)
        entry = models.get(name, ModelEntry())
        models[name] = ModelEntry(versions=entry.versions, default=entry.default, failure=reason)
        self._swap(models)

    async def _retire(self, served_models: list[ServedModel]) -> None:
        for served in served_models:
            await served.executor.stop(self.drain_timeout_s)
            if isinstance(served.backend, RequestListBackend):  # user code's finalize() may block: off the loop
                await asyncio.to_thread(served.backend.unload)
            else:
                served.backend.unload()
            metrics.MODEL_RESIDENT_BYTES.labels(served.record.name, served.record.version).set(0)
        if served_models and self.budget is not None:
            served_models.clear()
            await asyncio.to_thread(release_freed_memory)

    def _swap(self, models: dict[str, ModelEntry]) -> None:
        """Replace the served table in one assignment and publish how many versions it holds."""
        self._models = models
        metrics.MODELS_LOADED.set(sum(len(entry.versions) for entry in models.values()))

    def _tensor_model(self, name: str) -> bool:
        """Registered, and not a language model (those are GenerationModels')."""
        try:
            return not is_llm_format(self.registry.resolve(name).format)
        except MCPError:
            return False

    def _known(self, name: str) -> bool:
        return name in self.registry.model_names()
