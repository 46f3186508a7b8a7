"""The executor a loaded version runs behind: direct, or dynamic batching with SLA-class queues
configured from its contract and measured plan."""

from __future__ import annotations

from mcp2026ai.registry import ModelVersion
from mcp2026ai.runtime.base import Backend, RequestListBackend
from mcp2026ai.runtime.stats import ModelStats
from mcp2026ai.scheduling.base import Executor
from mcp2026ai.scheduling.batcher import BatchingExecutor
from mcp2026ai.scheduling.config import BatchingConfig
from mcp2026ai.scheduling.cpu_priority import UrgentWindow
from mcp2026ai.scheduling.direct import DirectExecutor
from mcp2026ai.serving.overrides import ConfigOverride


def direct_executor(
    record: ModelVersion, backend: Backend, stats: ModelStats, override: ConfigOverride | None = None
) -> Executor:
    return DirectExecutor(backend, stats, model=record.name, version=record.version)


def batching_executor(
    record: ModelVersion,
    backend: Backend,
    stats: ModelStats,
    override: ConfigOverride | None = None,
    *,
    bulk_nice: int | None = None,
    urgent_window: UrgentWindow | None = None,
) -> Executor:
    """Dynamic batching with SLA-class queues.

    The contract bounds the rows a request may carry; a measured plan (``Plan.measured``: not a default)
    sets the batching window, since that is what the policy traded latency against throughput for,
    and a batched plan caps the rows merged into one batch at its max batch (the largest it measured
    within the latency budget). A batch-1 plan leaves merging to the contract's limit: with no queue
    delay, requests already queued together still run together. A plan of several instances runs
    that many batches at once, always on worker threads (as does any plan whose compute is not on
    the calling thread: the placement's measure, the caller's CPU time, would read it as tiny).
    """
    plan = backend.plan
    config = BatchingConfig.from_contract(record.contract, record.signature)
    if config.batch_dim:
        update: dict[str, object] = {"max_concurrent_batches": max(config.max_concurrent_batches, plan.instances)}
        if plan.measured:
            update |= {
                "max_batch_size": max(config.max_batch_size, plan.max_batch_size),
                "max_queue_delay_ms": plan.max_queue_delay_ms,
                "batch_rows": plan.max_batch_size if plan.max_batch_size > 1 else None,
            }
        config = config.model_copy(update=update)
    if not plan.computes_on_caller or isinstance(backend, RequestListBackend):  # never inline on the loop: its
        # batches' CPU is not the caller's, or it runs user code (which may call back into the data plane)
        config = config.model_copy(update={"inline_below_ms": 0.0})
    if override is not None:
        config = override.apply(config)
    config = config.model_copy(update={"bulk_nice": bulk_nice})
    return BatchingExecutor(
        backend, config, model=record.name, version=record.version, stats=stats, urgent_window=urgent_window
    )
