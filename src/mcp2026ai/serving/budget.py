"""One memory budget for everything a server holds: tensor sessions, sentence encoders and language
model engines (``mcp serve --memory-budget-mb``).

Each table of served models (serving/models.py, serving/llms.py) is a :class:`Tenant`: it lists its
loaded models as :class:`Resident` (footprint measured at load, SLA class, last use, pinned) and
evicts one on request (a drain, like any retirement). Before a load, :meth:`MemoryBudget.admit`
plans over every tenant's residents (serving/memory_budget.py: the least recently used model of the
lowest SLA class first, never a pinned one) and evicts; loads under a budget run one at a time (the
footprint is the process RSS around the build, which two loads at once would mix up; it is read from
policy/memory.py's ``footprint_baseline``, taken once earlier garbage is collected and the heap
trimmed, so that memory given back during the build does not hide what the build holds).

:class:`ColdLoads` is the load on first request: one load per model however many requests ask, each
request waiting only as long as its deadline allows (ColdLoadError: 503 + Retry-After), the load
going on for the next request.

Footprints are kept in the catalog too (a ``memory.footprint`` annotation per version), so that a
server started later estimates a model's first load by what it took before; a load the estimate got
wrong (a model never measured: its file says little of what its session holds) is made good right
after it: models are evicted until the budget holds again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from typing import Protocol

from mcp2026ai.errors import ColdLoadError, MCPError, NotFoundError, UnavailableError
from mcp2026ai.observability import metrics
from mcp2026ai.policy.memory import resident_bytes
from mcp2026ai.registry.catalog import Catalog
from mcp2026ai.serving.memory_budget import EVICTED_REASON, Resident, plan_room

log = logging.getLogger(__name__)

FOOTPRINT_KIND = "memory.footprint"
COLD_LOAD_RETRY_S = 5.0
"""Retry-After of a request refused because its model is still loading."""


class Tenant(Protocol):
    """A table of served models under the budget."""

    def residents(self, pinned: set[str]) -> list[Resident]: ...

    async def evict(self, name: str) -> None: ...


class MemoryBudget:
    """The budget, its pinned models, what it evicted and the footprints measured at load."""

    def __init__(self, budget_mb: float, catalog: Catalog | None = None) -> None:
        self.budget_mb = budget_mb
        self.catalog = catalog
        self.pinned: set[str] = set()
        """Models never evicted (latency-critical models named at start)."""
        self._tenants: list[Tenant] = []
        self._evicted: dict[str, str] = {}
        self._measured: dict[tuple[str, str], dict[str, float]] = {}
        self._lock = asyncio.Lock()
        self.baseline_mb: float | None = None

    def attach(self, tenant: Tenant) -> None:
        self._tenants.append(tenant)

    def measured_mb(self, name: str, version: str) -> float | None:
        """Its footprint at its last load, here or (from the catalog) in an earlier server; blocking."""
        return self._kept(name, version, "mib")

    def transient_mb(self, name: str, version: str) -> float:
        """How far its last load's RSS rose above the footprint that stayed (serving/load_peak.py)."""
        return self._kept(name, version, "transient_mib") or 0.0

    def _kept(self, name: str, version: str, key: str) -> float | None:
        kept = self._measured.get((name, version))
        if kept is None and self.catalog is not None:
            rows = self.catalog.annotations(name, FOOTPRINT_KIND, version)
            kept = {k: float(v) for k, v in rows[-1][2].items() if isinstance(v, int | float)} if rows else None
            if kept is not None:
                self._measured[(name, version)] = kept
        return kept.get(key) if kept is not None else None

    async def loaded(self, name: str, version: str, footprint_bytes: int, transient_bytes: int = 0) -> None:
        """``name:version`` was loaded and measured: no longer evicted; its footprint (and how far its
        load rose above it) kept."""
        mib = footprint_bytes / (1 << 20)
        kept = {"mib": round(mib, 1), "transient_mib": round(transient_bytes / (1 << 20), 1)}
        self._measured[(name, version)] = kept
        self._evicted.pop(name, None)
        if self.catalog is not None and footprint_bytes:
            catalog = self.catalog
            payload: dict[str, object] = dict(kept)
            try:
                await asyncio.to_thread(catalog.annotate, name, version, FOOTPRINT_KIND, payload, datetime.now(UTC))
            except MCPError as exc:  # a read-only catalog: the estimate is only lost for later servers
                log.warning("could not keep the footprint of %s:%s: %s", name, version, exc)

    def eviction_reason(self, name: str) -> str | None:
        return self._evicted.get(name)

    def held_mb(self) -> float:
        return sum(resident.footprint_mb for resident in self._residents())

    def measure_baseline(self) -> None:
        """The process's own memory, once the models named at start are loaded: its RSS less what
        they hold. Memory the process holds beyond that and the models' footprints (what the
        allocator kept of evicted models, the requests' own buffers) counts against the budget too."""
        rss = resident_bytes()
        if rss is not None:
            self.baseline_mb = rss / (1 << 20) - self.held_mb()

    def unaccounted_mb(self) -> float:
        """The RSS above the baseline and the models' footprints (0 before the baseline is measured)."""
        rss = resident_bytes()
        if rss is None or self.baseline_mb is None:
            return 0.0
        return max(0.0, rss / (1 << 20) - self.baseline_mb - self.held_mb())

    @contextlib.asynccontextmanager
    async def admit(self, name: str, need_mb: float) -> AsyncIterator[None]:
        """Make room for ``need_mb`` more for ``name`` (evicting, or UnavailableError naming the budget),
        then hold the budget while the caller loads it. The process's memory beyond its baseline and
        the footprints is made room for as well, where evicting can."""
        async with self._lock:
            residents = [resident for resident in self._residents() if resident.name != name]
            try:
                victims = plan_room(self.budget_mb, need_mb + self.unaccounted_mb(), name, residents)
            except UnavailableError:
                victims = plan_room(self.budget_mb, need_mb, name, residents)  # the budget's own refusal
            for victim in victims:
                await self._evict(victim, name)
            yield
            await self._settle(name)

    async def _settle(self, loaded: str) -> None:
        """After ``loaded``'s load: evict until what is held fits again (its estimate was too low)."""
        residents = self._residents()
        held = sum(resident.footprint_mb for resident in residents)
        if held <= self.budget_mb:
            return
        others = [resident for resident in residents if resident.name != loaded]
        own = held - sum(resident.footprint_mb for resident in others)
        try:
            victims = plan_room(self.budget_mb, own, loaded, others)
        except MCPError as exc:
            log.warning("%s is loaded over the memory budget: %s", loaded, exc)
            victims = [resident.name for resident in others if not resident.pinned]
        for victim in victims:
            await self._evict(victim, loaded)

    def _residents(self) -> list[Resident]:
        return [resident for tenant in self._tenants for resident in tenant.residents(self.pinned)]

    async def _evict(self, victim: str, loading: str) -> None:
        log.warning("evicting %s to load %s (memory budget %g MiB)", victim, loading, self.budget_mb)
        self._evicted[victim] = EVICTED_REASON
        metrics.MODEL_EVICTIONS.labels(victim).inc()
        for tenant in self._tenants:
            if any(resident.name == victim for resident in tenant.residents(self.pinned)):
                with contextlib.suppress(NotFoundError):  # unloaded meanwhile
                    await tenant.evict(victim)


class ColdLoads:
    """Loads on first request: one task per model, awaited by each request up to its deadline."""

    def __init__(self) -> None:
        self._tasks: dict[str, asyncio.Task[object]] = {}

    def running(self, name: str) -> bool:
        """Whether a load on request of ``name`` is under way."""
        return name in self._tasks

    async def ensure(self, name: str, load: Callable[[], Awaitable[object]], wait_s: float) -> None:
        """Start ``load`` unless it runs already; ColdLoadError when it is not done within ``wait_s``;
        its own error (the budget's refusal, a broken import) when it failed."""
        task = self._tasks.get(name)
        if task is None:
            task = asyncio.ensure_future(load())
            self._tasks[name] = task
            task.add_done_callback(lambda done: self._ended(name, done))
        done, _ = await asyncio.wait({task}, timeout=max(wait_s, 0.0))
        if not done:
            raise ColdLoadError(
                f"model {name!r} is being loaded (cold start) and is not ready within {wait_s:g} s; retry later",
                COLD_LOAD_RETRY_S,
            )
        task.result()

    def _ended(self, name: str, task: asyncio.Task[object]) -> None:
        self._tasks.pop(name, None)
        if not task.cancelled() and task.exception() is not None:
            log.warning("cold load of %s failed: %s", name, task.exception())
