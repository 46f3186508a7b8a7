"""A pipeline measured end to end in process: its steps loaded with their stored plans, requests run
at a given concurrency through the same executors a server uses (no sockets), latency and throughput
taken. ``mcp policy plan`` uses it to show the contract kept (or not) at concurrency 4, and, before it
plans, to learn the shapes an example request gives each model step (:func:`step_input_shapes`).

Bounded: at most ``requests`` requests or ``seconds`` seconds, whichever ends first.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping

import numpy as np

from mcp2026ai.contract import SLAClass
from mcp2026ai.dataplane.pipelines import PipelineExecutor, pipeline_executor
from mcp2026ai.policy.orchestrator import PolicyOrchestrator
from mcp2026ai.policy.pipelines import EndToEnd
from mcp2026ai.registry import ModelRegistry, ModelVersion
from mcp2026ai.serving.artifacts import ArtifactBackends
from mcp2026ai.serving.models import ServedModels, batching_executor

WARM_UP_REQUESTS = 3


async def step_input_shapes(
    registry: ModelRegistry, record: ModelVersion, inputs: Mapping[str, np.ndarray]
) -> dict[str, dict[str, tuple[int, ...]]]:
    """Run one request through the pipeline in process (its steps on the default plan: nothing is
    planned yet) and return the shape of every input each model step got."""
    models = ServedModels(registry, batching_executor, ArtifactBackends(registry), 5.0, pipeline_executor)
    seen: dict[str, dict[str, tuple[int, ...]]] = {}

    def note(step: str, given: Mapping[str, np.ndarray]) -> None:
        seen.setdefault(step, {name: tuple(array.shape) for name, array in given.items()})

    sla_class = record.contract.sla_class if record.contract is not None else SLAClass.BEST_EFFORT
    try:
        executor = (await models.load(record.name, record.version)).executor
        if not isinstance(executor, PipelineExecutor):
            raise TypeError(f"{record.ref}: not a pipeline")
        executor.on_model_step = note
        await executor.submit(inputs, None, sla_class=sla_class, deadline=None)
    finally:
        await models.unload_all()
    return seen


async def measure_pipeline(
    registry: ModelRegistry,
    record: ModelVersion,
    inputs: Mapping[str, np.ndarray],
    *,
    concurrency: int = 4,
    requests: int = 200,
    seconds: float = 20.0,
) -> EndToEnd:
    """Serve the pipeline version in process (steps with their stored plans) and run it at ``concurrency``."""
    backends = ArtifactBackends(registry, planner=PolicyOrchestrator(registry))
    models = ServedModels(registry, batching_executor, backends, 5.0, pipeline_executor)
    served = await models.load(record.name, record.version)
    sla_class = record.contract.sla_class if record.contract is not None else SLAClass.BEST_EFFORT

    async def one() -> float:
        started = time.perf_counter()
        await served.executor.submit(inputs, None, sla_class=sla_class, deadline=None)
        return (time.perf_counter() - started) * 1000

    try:
        for _ in range(WARM_UP_REQUESTS):
            await one()
        latencies: list[float] = []
        stop_at = time.perf_counter() + seconds
        started = time.perf_counter()

        async def worker() -> None:
            while len(latencies) < requests and time.perf_counter() < stop_at:
                latencies.append(await one())

        await asyncio.gather(*(worker() for _ in range(concurrency)))
        elapsed = time.perf_counter() - started
    finally:
        await models.unload_all()
    return EndToEnd(
        concurrency=concurrency,
        requests=len(latencies),
        p50_ms=round(float(np.percentile(latencies, 50)), 3),
        p99_ms=round(float(np.percentile(latencies, 99)), 3),
        throughput_rps=round(len(latencies) / elapsed, 2),
    )
