"""The language models a server generates with: one engine per model, loaded from the registry."""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from pathlib import Path

from mcp2026ai.errors import (
    ContractError,
    InvalidArgumentError,
    MCPError,
    NotFoundError,
    SignatureError,
)
from mcp2026ai.generation.config import EngineConfig
from mcp2026ai.generation.engine import Engine, build_engine
from mcp2026ai.generation.speculative import DEFAULT_DRAFT_TOKENS
from mcp2026ai.inference import ModelDescription
from mcp2026ai.ir.llm_sampling import read_sampling
from mcp2026ai.observability import metrics
from mcp2026ai.policy.generation import PROCESS_OVERHEAD_MB, GenerationPlan, chosen_plan, weights_mb
from mcp2026ai.policy.memory import footprint_baseline, release_freed_memory, release_when_freed, resident_bytes
from mcp2026ai.registry import ModelRegistry, ModelVersion
from mcp2026ai.registry.llm_bundle import is_llm_format
from mcp2026ai.registry.signing import read_verified_artifact, verified_llm_folder
from mcp2026ai.runtime.onnx_decoder import PLATFORM
from mcp2026ai.scheduling.load_priority import LoadThreads, sla_class_of
from mcp2026ai.security.trust import TrustedKeys
from mcp2026ai.serving.budget import ColdLoads, MemoryBudget
from mcp2026ai.serving.llm_adapters import base_name, is_adapter, open_adapter, served_adapter
from mcp2026ai.serving.llm_config import GenerationDefaults, ServingConfig, stored_config
from mcp2026ai.serving.llm_versions import ServedLLM, resident_of, retire
from mcp2026ai.serving.load_peak import PeakRss
from mcp2026ai.serving.memory_budget import Resident

log = logging.getLogger(__name__)


def engine_config(config: EngineConfig, record: ModelVersion, folder: Path) -> EngineConfig:
    """``config``, with the KV pool sized from the contract's memory budget when it sets one (and the
    server was not given ``kv_cache_mb``): budget - weights - process overhead."""
    budget = record.contract.resources.memory_mb if record.contract else None
    if config.kv_cache_mb is not None or budget is None:
        return config
    weights = weights_mb(folder)
    kv_mb = budget - weights - PROCESS_OVERHEAD_MB
    if kv_mb <= 0:
        raise ContractError(
            f"{record.ref}: resources.memory_mb {budget:g} leaves no KV cache: the weights take {weights:.0f} MiB "
            f"and the process about {PROCESS_OVERHEAD_MB:.0f}"
        )
    return config.model_copy(update={"kv_cache_mb": kv_mb})


def contract_config(config: EngineConfig, record: ModelVersion) -> EngineConfig:
    """``config`` with the limits the contract's ``generation`` section states (max_model_len,
    max_num_seqs): the model's promise wins over the server's defaults."""
    spec = record.contract.generation if record.contract else None
    if spec is None:
        return config
    update = {key: value for key in ("max_model_len", "max_num_seqs") if (value := getattr(spec, key)) is not None}
    return config.model_copy(update=update)


def planned_config(config: EngineConfig, plan: GenerationPlan | None) -> EngineConfig:
    """The server's engine settings with a stored generation plan's threads, sequences, speculation and
    prompt chunks."""
    if plan is None:
        return config
    update = {
        "threads": plan.threads,
        "max_num_seqs": plan.max_num_seqs,
        "speculative_tokens": plan.speculative_tokens,
        "prefill_chunk_tokens": plan.prefill_chunk_tokens,
        "max_num_batched_tokens": plan.max_num_batched_tokens,
    }
    return config.model_copy(update=update)


@dataclass(frozen=True)
class _Entry:
    versions: dict[str, ServedLLM]
    default: str


class GenerationModels:
    """Engines by model name and version; the edges reach them through the data plane.

    Like the tensor models' table (serving/models.py) it is copy-on-write: a load builds the engine
    first and installs it in one assignment; a version swapped out or unloaded is retired by
    :func:`retire`: it takes no new work, finishes what it accepted (queued requests included, up to
    ``drain_timeout_s``), then its engine is closed and its memory returned."""

    def __init__(
        self,
        registry: ModelRegistry,
        config: EngineConfig | None = None,
        drain_timeout_s: float = 30.0,
        budget: MemoryBudget | None = None,
        trusted_keys: TrustedKeys | None = None,
        model_defaults: bool = True,
        load_threads: LoadThreads | None = None,
    ) -> None:
        self.registry = registry
        self.load_threads = load_threads or LoadThreads()
        """Where an engine is built, so where its sessions' workers and step thread start (a best-effort
        one on a lowered thread with host tuning's ``best_effort_load_nice``: scheduling/load_priority.py)."""
        self.config = config or EngineConfig()
        self.trusted_keys = trusted_keys
        """``--require-signed``: every version an engine opens is verified as it is opened."""
        self.model_defaults = model_defaults
        """``--generation-config auto``: a model's own sampling defaults (ir/llm_sampling.py) apply."""
        self._own: dict[str, GenerationDefaults] = {}
        self.drain_timeout_s = drain_timeout_s
        self.budget = budget
        """The one memory budget of everything served (serving/budget.py); None: none."""
        if budget is not None:
            budget.attach(self)
        self._cold_loads = ColdLoads()
        self._served: dict[str, _Entry] = {}
        self._defaults: dict[str, GenerationDefaults] = {}
        self._lock = asyncio.Lock()
        self._failures: dict[tuple[str, str], str] = {}
        """Why a version could not be loaded (a rollout routing to it gets 503 naming it)."""
        self._retiring: set[ServedLLM] = set()
        """Versions no longer routed to whose accepted generations are still finishing."""
        self._background: set[asyncio.Task[None]] = set()

    def is_language_model(self, name: str) -> bool:
        """Whether ``name``'s default version in the registry is a language model."""
        try:
            return is_llm_format(self.registry.resolve(name).format)
        except NotFoundError:
            return False

    async def load(
        self, name: str, version: str | None = None, make_default: bool = True, reason: str = "sync"
    ) -> ModelVersion:
        """Build an engine for ``name``'s registry default (or ``version``) and install it; a version
        already loaded is replaced, the old engine retired after its streams end. Under a memory
        budget, models are evicted first to make room (or the load is refused, naming the budget)."""
        record = await asyncio.to_thread(self.registry.resolve, name, version)
        if not is_llm_format(record.format):
            raise InvalidArgumentError(f"{record.ref} is not a language model ({record.format})")
        if is_adapter(record):
            return await self._load_adapter(record, make_default)
        if self.budget is None:
            retired = await self._load(record, make_default, reason)
        else:
            need_mb = await asyncio.to_thread(self._estimate_mb, record)
            async with self.budget.admit(name, need_mb):
                retired = await self._load(record, make_default, reason)
        await self._retire(retired)
        return record

    @property
    def budget_mb(self) -> float | None:
        return self.budget.budget_mb if self.budget is not None else None

    async def _load(self, record: ModelVersion, make_default: bool, reason: str) -> list[ServedLLM]:
        """Build and install ``record``'s engine; the version it replaced, to retire."""
        name = record.name
        async with self._lock:
            before = await asyncio.to_thread(footprint_baseline, self.budget is not None)
            started = time.perf_counter()
            try:
                with PeakRss() as peak:
                    engine = await self._build(record)
            except MCPError as exc:
                self._failures[(name, record.version)] = f"{record.ref} failed to load: {exc}"
                raise
            self._failures.pop((name, record.version), None)
            after = resident_bytes()
            metrics.observe_load("language-model", record.name, record.version, reason, time.perf_counter() - started)
            footprint = max(0, after - before) if after is not None and before is not None else 0
            if self.budget is not None:
                await self.budget.loaded(name, record.version, footprint, peak.transient_bytes(after))
            served = ServedLLM(record, engine, time.time(), footprint_bytes=footprint)
            metrics.MODEL_RESIDENT_BYTES.labels(record.name, record.version).set(footprint)
            old = self._served.get(name)
            versions = {**(old.versions if old else {}), record.version: served}
            default = record.version if make_default or old is None else old.default
            replaced = old.versions.get(record.version) if old else None
            self._served = {**self._served, name: _Entry(versions, default)}
            if name not in self._defaults or make_default:
                stored = stored_config(self.registry, record)
                if stored is not None:
                    self.configure(stored)
                else:
                    self._defaults.setdefault(name, GenerationDefaults())
        retired = [replaced] if replaced is not None else []
        del old, replaced
        return retired

    async def _load_adapter(self, record: ModelVersion, make_default: bool) -> ModelVersion:
        """An adapter version on its base's engine (the base loaded first when it is not served)."""
        base_model = base_name(record)
        if not self.serves(base_model):
            await self.load(base_model, reason="adapter")
        base = self.get(base_model)
        held = self._served.get(record.name)
        if held is not None and record.version in held.versions:  # loaded already: at most made the default
            if make_default:
                self.set_default(record.name, record.version)
            return record
        adapter = await asyncio.to_thread(open_adapter, self.registry, record, base, self.trusted_keys)
        async with self._lock:
            base.engine.load_adapter(record.ref, adapter)
            served = served_adapter(record, base)
            old = self._served.get(record.name)
            versions = {**(old.versions if old else {}), record.version: served}
            default = record.version if make_default or old is None else old.default
            self._served = {**self._served, record.name: _Entry(versions, default)}
            self._own[record.name] = self._own.get(base_model, GenerationDefaults())
            self._defaults.setdefault(record.name, self._defaults.get(base_model, GenerationDefaults()))
        return record

    async def _build(self, record: ModelVersion) -> Engine:
        plan, _artifact, folder = await asyncio.to_thread(self.open_planned, record)  # the plan's precision
        config = planned_config(engine_config(contract_config(self.config, record), record, folder), plan)
        sla_class = sla_class_of(record.contract)
        engine = await self.load_threads.run(sla_class, build_engine, record.name, folder, config)
        if self.load_threads.lowers(sla_class):  # built on a thread (and heap arena) of its own: its arena
            await asyncio.to_thread(release_freed_memory)  # kept ~170 MiB of Gemma 3's load untrimmed
        own = GenerationDefaults(**read_sampling(folder)) if self.model_defaults else GenerationDefaults()
        self._own[record.name] = own
        return engine

    def _estimate_mb(self, record: ModelVersion) -> float:
        """What its load needs: its footprint and its load's transient when measured before, else its
        weights on disk and the configured KV pool."""
        measured = self.budget.measured_mb(record.name, record.version) if self.budget is not None else None
        if measured and self.budget is not None:
            return measured + self.budget.transient_mb(record.name, record.version)
        _, artifact = self.planned_artifact(record)
        return weights_mb(self.registry.llm_folder(artifact)) + (self.config.kv_cache_mb or 0.0)

    def residents(self, pinned: set[str]) -> list[Resident]:
        """The loaded language models as the memory budget sees them."""
        return [
            resident_of(name, list(entry.versions.values()), entry.versions[entry.default], name in pinned)
            for name, entry in self._served.items()
        ]

    async def evict(self, name: str) -> None:
        await self.unload(name)

    async def load_on_request(self, name: str, wait_s: float) -> None:
        """Under a memory budget, a registered language model not held is loaded by its first request
        (one load per model however many ask). ColdLoadError (503 + Retry-After) when it will not be
        ready within ``wait_s`` (the request's deadline); the load goes on for the next request."""
        if self.budget is None or self.serves(name):
            return
        if not await asyncio.to_thread(self.is_language_model, name):
            return  # not a language model: the lookup answers 404
        await self._cold_loads.ensure(name, lambda: self.load(name, reason="request"), wait_s)

    def loading(self, name: str) -> bool:
        """Whether ``name`` is being loaded by a request (under the memory budget)."""
        return self._cold_loads.running(name)

    def eviction_reason(self, name: str) -> str | None:
        """Why ``name`` is not loaded when the memory budget evicted it."""
        return self.budget.eviction_reason(name) if self.budget is not None else None

    def load_failure(self, name: str, version: str) -> str | None:
        """Why ``name:version`` could not be loaded, if its last load failed."""
        return self._failures.get((name, version))

    def last_failure(self, name: str) -> str | None:
        """Why the last failed load of any version of ``name`` failed, if one did."""
        failures = [reason for (model, _), reason in self._failures.items() if model == name]
        return failures[-1] if failures else None

    def set_default(self, name: str, version: str) -> None:
        """Point unpinned generations at another loaded version (one atomic swap)."""
        entry = self._served.get(name)
        if entry is None or version not in entry.versions:
            raise NotFoundError(f"language model {name!r} has no loaded version {version}")
        self._served = {**self._served, name: _Entry(entry.versions, version)}

    def serves_version(self, name: str, version: str) -> bool:
        """Whether ``name:version`` is loaded."""
        entry = self._served.get(name)
        return entry is not None and version in entry.versions

    def default_version(self, name: str) -> str | None:
        entry = self._served.get(name)
        return entry.default if entry else None

    def served_versions(self, name: str) -> list[ServedLLM]:
        entry = self._served.get(name)
        return list(entry.versions.values()) if entry else []

    def retire_version_later(self, name: str, version: str) -> None:
        """:meth:`unload_version` on a task of its own (the serving sync does not wait for streams)."""
        task = asyncio.create_task(self.unload_version(name, version), name=f"mcp-retire-{name}:{version}")
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def unload_version(self, name: str, version: str) -> None:
        """Retire one non-default version: its running and queued generations finish first."""
        async with self._lock:
            entry = self._served.get(name)
            if entry is None or version not in entry.versions:
                return
            if entry.default == version:
                raise InvalidArgumentError(f"{name}:{version} is the default version; set another default first")
            versions = {key: served for key, served in entry.versions.items() if key != version}
            self._served = {**self._served, name: _Entry(versions, entry.default)}
            retired = [entry.versions[version]]
        del entry
        await self._retire(retired)

    async def unload(self, name: str) -> None:
        """Stop serving ``name`` (new requests: 404); what it accepted finishes, then its memory is freed."""
        async with self._lock:
            entry = self._served.get(name)
            if entry is None:
                raise NotFoundError(f"language model {name!r} is not loaded")
            self._served = {key: value for key, value in self._served.items() if key != name}
            retired = list(entry.versions.values())
        del entry
        await self._retire(retired)

    async def _retire(self, retired: list[ServedLLM], drain_timeout_s: float | None = None) -> None:
        """Retire ``retired`` (the caller holds no other reference), then return their memory: the
        engines are freed once the list is emptied."""
        timeout_s = self.drain_timeout_s if drain_timeout_s is None else drain_timeout_s
        self._retiring.update(retired)
        try:
            await asyncio.gather(*(retire(served, timeout_s) for served in retired))
        finally:
            self._retiring.difference_update(retired)
        if retired:
            engines = [served.engine for served in retired if served.adapter is None]
            retired.clear()
            await asyncio.to_thread(release_when_freed, engines)

    def open_planned(self, record: ModelVersion) -> tuple[GenerationPlan | None, ModelVersion, Path]:
        """The plan, the import it runs and that import's files, opened through the one verification
        function under --require-signed: ``record`` (its contract and config drive the engine) and the
        plan's import both verify; a plan whose import does not is not used (logged), ``record`` runs."""
        plan, artifact = self.planned_artifact(record)
        if self.trusted_keys is None:
            return plan, artifact, self.registry.llm_folder(artifact)
        if artifact.digest == record.digest and artifact.version == record.version:
            return plan, record, verified_llm_folder(self.registry, record, self.trusted_keys)
        read_verified_artifact(self.registry, record, self.trusted_keys)
        try:
            return plan, artifact, verified_llm_folder(self.registry, artifact, self.trusted_keys)
        except SignatureError as exc:
            log.warning("%s: not running its generation plan's import (%s); running %s", record.ref, exc, record.ref)
            return None, record, verified_llm_folder(self.registry, record, self.trusted_keys)

    def planned_artifact(self, record: ModelVersion) -> tuple[GenerationPlan | None, ModelVersion]:
        """The stored plan and the import it runs (another precision's version of the same source, or
        ``record`` itself); a plan whose import was deleted since is not used."""
        plan = chosen_plan(self.registry, record)
        if plan is None or not plan.version or plan.version == record.version:
            return plan, record
        try:
            return plan, self.registry.resolve(record.name, plan.version)
        except NotFoundError:
            return None, record

    def defaults(self, name: str) -> GenerationDefaults:
        """The model's generation defaults: its stored ``mcp-config.yaml`` (or the latest applied) over
        the model's own sampling defaults (unless ``--generation-config none``)."""
        configured = self._defaults.get(name) or GenerationDefaults()
        own = self._own.get(name)
        return configured.over(own) if own is not None else configured

    def configure(self, config: ServingConfig) -> None:
        """Apply a config's defaults to the served model it names: requests admitted from now on use
        them; running generations keep the parameters they started with."""
        engines = [served.engine for served in self.served_versions(config.model)]
        if not engines:
            self.get(config.model)  # a model not served is refused, never another substituted
        self._defaults[config.model] = config.inference.parameters
        if "strategy" in config.inference.model_fields_set:  # unset: the server's or the plan's choice stays
            speculative = config.inference.strategy == "speculative_decoding"
            tokens = (self.config.speculative_tokens or DEFAULT_DRAFT_TOKENS) if speculative else 0
            for engine in engines:
                engine.speculative_tokens = tokens

    def get(self, name: str, version: str | None = None) -> ServedLLM:
        """The served version (the default when ``version`` is None), else NotFoundError naming what is served."""
        entry = self._served.get(name)
        if entry is None:
            known = ", ".join(sorted(self._served)) or "none"
            raise NotFoundError(f"model {name!r} is not a served language model (served: {known})")
        served = entry.versions.get(version or entry.default)
        if served is None:
            loaded = ", ".join(sorted(entry.versions))
            raise NotFoundError(f"language model {name!r} has no loaded version {version} (loaded: {loaded})")
        return served

    def describe(self, name: str) -> ModelDescription:
        """A language model as Triton's metadata and config endpoints show it (text in, text out)."""
        served = self.get(name)
        engine = served.engine
        return ModelDescription(
            name=name,
            versions=tuple(sorted(self._served[name].versions)),
            platform=PLATFORM,
            signature=served.record.signature,
            max_batch_size=0,
            plan=f"continuous batching: {engine.slots.num_slots} sequences x {engine.max_len} tokens, "
            f"{engine.info.precision.value}",
            instance_count=engine.slots.num_slots,
        )

    def serves(self, name: str) -> bool:
        return name in self._served

    def names(self) -> list[str]:
        return sorted(self._served)

    def engines(self) -> list[Engine]:
        """Every engine running: the served versions', and those of versions still retiring."""
        served = [served for entry in self._served.values() for served in entry.versions.values()]
        engines = {id(model.engine): model.engine for model in [*served, *self._retiring] if model.adapter is None}
        return list(engines.values())

    async def close(self) -> None:
        served = [model for entry in self._served.values() for model in entry.versions.values()]
        self._served = {}
        await self._retire(served, 0.0)
