"""A pipeline measured end to end in process: its steps loaded with their stored plans, requests run
at a given concurrency through the same executors a server uses (no sockets), latency and throughput
taken. ``mcp policy plan`` uses it to show the contract kept (or not) at concurrency 4.

Bounded: at most ``requests`` requests or ``seconds`` seconds, whichever ends first.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping

import numpy as np

from mcp2026ai.dataplane.pipeline_local import served_pipeline, sla_class_of
from mcp2026ai.policy.orchestrator import PolicyOrchestrator
from mcp2026ai.policy.pipelines import EndToEnd
from mcp2026ai.registry import ModelRegistry, ModelVersion

WARM_UP_REQUESTS = 3


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
    sla_class = sla_class_of(record)
    async with served_pipeline(registry, record, planner=PolicyOrchestrator(registry)) as executor:

        async def one() -> float:
            started = time.perf_counter()
            await executor.submit(dict(inputs), None, sla_class=sla_class, deadline=None)
            return (time.perf_counter() - started) * 1000

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
    return EndToEnd(
        concurrency=concurrency,
        requests=len(latencies),
        p50_ms=round(float(np.percentile(latencies, 50)), 3),
        p99_ms=round(float(np.percentile(latencies, 99)), 3),
        throughput_rps=round(len(latencies) / elapsed, 2),
    )
