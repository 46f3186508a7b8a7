"""One loaded version of a language model (its engine, leases, footprint) and its retirement: a
version no longer routed to finishes what it accepted before its engine is closed."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from dataclasses import dataclass, field

from mcp2026ai.contract import SLAClass
from mcp2026ai.errors import MCPError
from mcp2026ai.generation.engine import Engine
from mcp2026ai.observability import metrics
from mcp2026ai.registry import ModelVersion
from mcp2026ai.serving.memory_budget import Resident

log = logging.getLogger(__name__)


@dataclass(eq=False)
class ServedLLM:
    """One loaded version of a language model: its engine, and the generations that hold it (leases),
    so that a retiring version is closed only after its last stream ends."""

    record: ModelVersion
    engine: Engine
    loaded_at: float
    leases: int = 0
    footprint_bytes: int = 0
    """Resident memory its load added to the process (weights, KV pool, sessions), measured."""
    last_used: float = field(default_factory=time.monotonic)
    adapter: str | None = None
    """A LoRA adapter version: its key in the base model's engine (``engine`` is the base's, shared)."""
    base: str | None = None
    """A LoRA adapter version: the base model's name (``/v1/models``' ``parent``)."""

    def acquire(self) -> None:
        self.leases += 1
        self.last_used = time.monotonic()

    @property
    def sla_class(self) -> SLAClass:
        contract = self.record.contract
        return contract.sla_class if contract else SLAClass.BEST_EFFORT

    def release(self) -> None:
        self.leases = max(0, self.leases - 1)

    @property
    def idle(self) -> bool:
        """No generation holds it and its engine has nothing running, preempted or waiting."""
        return self.leases == 0 and (self.adapter is not None or not self.engine.busy)


def resident_of(name: str, versions: list[ServedLLM], default: ServedLLM, pinned: bool) -> Resident:
    """A model's loaded versions as the memory budget sees them (their footprints summed)."""
    footprint_mb = sum(served.footprint_bytes for served in versions) / (1 << 20)
    return Resident(name, footprint_mb, default.sla_class, max(served.last_used for served in versions), pinned)


RETIRE_POLL_S = 0.05


async def retire(served: ServedLLM, drain_timeout_s: float) -> None:
    """A version no longer routed to: wait (up to ``drain_timeout_s``) until every generation it
    accepted has ended, then close its engine (what still runs ends with an error, never cut off)."""
    if served.adapter is not None:  # the base's engine goes on; the adapter's slot is freed after its requests
        with contextlib.suppress(MCPError):
            served.engine.unload_adapter(served.adapter)
        log.info("unloaded adapter %s", served.record.ref)
        return
    deadline = time.monotonic() + drain_timeout_s
    while not served.idle and time.monotonic() < deadline:
        await asyncio.sleep(RETIRE_POLL_S)
    if not served.idle:
        log.warning("%s: drain timeout reached with generations running; ending them", served.record.ref)
    await asyncio.to_thread(served.engine.close)
    metrics.MODEL_RESIDENT_BYTES.labels(served.record.name, served.record.version).set(0)
    log.info("retired %s", served.record.ref)
