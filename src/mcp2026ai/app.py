"""Composition root: wire registry, runtime, data plane and servers from settings."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from functools import partial
from pathlib import Path
from typing import Any

from mcp2026ai.contract import SLAClass
from mcp2026ai.dataplane import DataPlane
from mcp2026ai.dataplane.pipelines import pipeline_executor
from mcp2026ai.errors import UnavailableError
from mcp2026ai.observability.export import start_trace_export
from mcp2026ai.observability.runtime_settings import TraceSettings
from mcp2026ai.policy.orchestrator import PolicyOrchestrator
from mcp2026ai.registry import ModelRegistry, ModelVersion, audit_trail
from mcp2026ai.registry.leftovers import remove_leftovers
from mcp2026ai.scheduling.cpu_priority import UrgentWindow
from mcp2026ai.scheduling.host import apply_host_tuning, settle_startup_heap
from mcp2026ai.scheduling.load_priority import LoadThreads
from mcp2026ai.server.config import ServerConfig
from mcp2026ai.server.lifecycle import BoundPorts, InferenceServer
from mcp2026ai.serving.artifacts import ArtifactBackends
from mcp2026ai.serving.budget import MemoryBudget
from mcp2026ai.serving.executors import batching_executor
from mcp2026ai.serving.llms import GenerationModels
from mcp2026ai.serving.models import ServedModels
from mcp2026ai.serving.replanning import ReplanSupervisor
from mcp2026ai.serving.repository import RepositoryServing, load_repository
from mcp2026ai.serving.sync import ServingSync

log = logging.getLogger(__name__)


def register_paths(registry: ModelRegistry, paths: list[Path]) -> dict[str, Path]:
    """`mcp serve --model-path`: register each file under its stem (reusing an identical version).

    Returns name -> path; the serving sync re-registers a file when its content changes (hot reload).
    """
    return {registry.register_or_reuse(path.stem, path).name: path.resolve() for path in paths}


def repair_audit_trail(registry: ModelRegistry) -> None:
    """Record the ``model.register`` entries killed registrations owed (their intents), marked
    ``recovered``. Versions registered with no audit log at all are left to ``mcp audit verify``."""
    if registry.audit is None:
        return
    for entry in audit_trail.recover(registry.catalog, registry.audit):
        log.warning("audit log: recorded the missing %s entry of %s", entry["action"], entry["target"])


def build_plane(registry: ModelRegistry, names: list[str], config: ServerConfig) -> DataPlane:
    """The data plane; language models among ``names`` go to generation engines, the rest to ServedModels.
    Versions the server registers (hot reload, ``file:`` loads) are recorded in the configured audit log.

    Every entry point (``mcp serve`` and its workers, Ray replicas, test servers) builds its plane here,
    so this is where the host tuning is applied (scheduling/host.py), before any model runs; the heap is
    settled by :func:`load_models`."""
    apply_host_tuning(config.host_tuning)
    if registry.audit is None:
        registry.audit = config.security.audit()
    planner = PolicyOrchestrator(registry, runtime=config.runtime) if config.plan_with_policy else None
    backends = ArtifactBackends(
        registry, config.security.trusted_keys(), planner, config.runtime, config.host_tuning.lone_session_plan
    )
    # one window for the server: a model's bulk batches run lower while any model serves latency-critical
    executors = partial(batching_executor, bulk_nice=config.host_tuning.bulk_batch_nice, urgent_window=UrgentWindow())
    budget = MemoryBudget(config.memory_budget_mb, registry.catalog) if config.memory_budget_mb is not None else None
    load_threads = LoadThreads(config.host_tuning.best_effort_load_nice)
    models = ServedModels(
        registry,
        executors,
        backends,
        config.drain_timeout_s,
        pipeline_executor=pipeline_executor,
        budget=budget,
        load_threads=load_threads,
    )
    traced = config.traces.sample_ratio if config.traces.exporter != "none" else 0.0
    llms = GenerationModels(
        registry,
        config.generation,
        config.drain_timeout_s,
        budget,
        trusted_keys=config.security.trusted_keys(),
        model_defaults=config.generation_config == "auto",
        load_threads=load_threads,
    )
    tensor_names = [name for name in names if not llms.is_language_model(name)]
    return DataPlane(
        models,
        default_models=tensor_names,
        audit=config.security.audit(),
        trace_settings=TraceSettings(traced),
        llms=llms,
        generation_limits=config.generation_limits,
    )


async def load_models(
    plane: DataPlane, names: list[str], config: ServerConfig, repository: RepositoryServing | None = None
) -> list[ModelVersion]:
    """Load ``names`` (a Triton ``repository``: the versions it selects), then settle the heap as the host
    tuning asks: every entry point loads here. A latency-critical language model named here is pinned:
    the memory budget never evicts it."""
    plane.bind_bls(asyncio.get_running_loop())  # Triton Python models' BLS calls come back in here
    if repository is not None:
        loaded = await load_repository(plane.models, repository)
    else:
        loaded = []
        for name in names:
            if plane.llms.is_language_model(name):
                record = await plane.llms.load(name, reason="start")
            else:
                record = (await plane.models.load(name, reason="start")).record
            budget = plane.models.budget
            if budget is not None and record.contract and record.contract.sla_class is SLAClass.LATENCY_CRITICAL:
                budget.pinned.add(name)
            loaded.append(record)
    settle_startup_heap(config.host_tuning)
    if plane.models.budget is not None:
        plane.models.budget.measure_baseline()
    return loaded


def serving_sync(
    plane: DataPlane,
    config: ServerConfig,
    watched: dict[str, Path] | None = None,
    replanner: ReplanSupervisor | None = None,
    repository: RepositoryServing | None = None,
) -> ServingSync:
    """The background reconciliation of what ``plane`` serves (hot reload, rollouts, canary ticks)."""
    pinned = repository.versions if repository is not None else None
    return ServingSync(
        plane.models,
        plane.traffic,
        plane.repository.tick,
        config.sync_interval_s,
        watched,
        replanner,
        pinned,
        llms=plane.llms,
    )


async def run_server(
    registry: ModelRegistry,
    names: list[str],
    config: ServerConfig,
    on_ready: Callable[[BoundPorts, list[ModelVersion]], None] | None = None,
    watched: dict[str, Path] | None = None,
    repository: RepositoryServing | None = None,
) -> None:
    """Load ``names`` (a Triton ``repository``: the versions it selects), serve until SIGINT/SIGTERM,
    then shut down gracefully."""
    await asyncio.to_thread(remove_leftovers, registry)  # what a killed registration left, if any
    plane = build_plane(registry, names, config)
    await asyncio.to_thread(repair_audit_trail, registry)
    loaded = await load_models(plane, names, config, repository)
    replanner = None
    if config.plan_with_policy:
        replanner = ReplanSupervisor(plane.models, PolicyOrchestrator(registry))
    server = InferenceServer(plane, config, serving_sync(plane, config, watched, replanner, repository))
    ports = await server.start()
    server.install_signal_handlers()
    if on_ready is not None:
        on_ready(ports, loaded)
    await server.wait_stopped()


def serve_blocking(
    registry: ModelRegistry,
    names: list[str],
    config: ServerConfig,
    on_ready: Callable[[BoundPorts, list[ModelVersion]], None] | None = None,
    watched: dict[str, Path] | None = None,
    repository: RepositoryServing | None = None,
) -> None:
    stop_trace_export = start_trace_export(config.traces)
    try:
        run_loop(config)(run_server(registry, names, config, on_ready, watched, repository))
    finally:
        stop_trace_export()


def run_loop(config: ServerConfig) -> Callable[[Coroutine[Any, Any, None]], None]:
    """How the server's coroutine runs: ``asyncio.run``, or ``uvloop.run`` where
    ``config.event_loop`` asks for it (auto: when no gRPC listener is served, as grpc.aio degrades on
    uvloop) and uvloop is installed (not on Windows)."""
    wanted = config.event_loop
    if wanted == "auto":
        wanted = "uvloop" if config.grpc_port is None else "asyncio"
    if wanted == "uvloop":
        try:
            import uvloop
        except ImportError:
            if config.event_loop == "uvloop":
                raise UnavailableError("--loop uvloop: uvloop is not installed (pip install uvloop)") from None
        else:
            return uvloop.run
    return asyncio.run
