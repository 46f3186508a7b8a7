"""One memory budget for every model a server holds: what to evict for a load (issue 51, item 4).

Before a language model is loaded, :func:`plan_room` decides which resident models must go so that
its estimated footprint fits the budget: the least recently used model of the lowest SLA class first
(best-effort, then throughput-guaranteed, then latency-critical), never a pinned one (a
latency-critical model named at start). When even evicting every unpinned model leaves too little,
the load is refused (503), naming the budget, what it needs and what the pinned models hold.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from mcp2026ai.contract import SLAClass
from mcp2026ai.errors import UnavailableError

EVICTED_REASON = "evicted (memory budget)"
"""What the repository index says of a model the budget evicted."""

CLASS_RANK = {SLAClass.BEST_EFFORT: 0, SLAClass.THROUGHPUT_GUARANTEED: 1, SLAClass.LATENCY_CRITICAL: 2}
"""Eviction order by class: the lowest rank goes first."""


@dataclass(frozen=True)
class Resident:
    """A loaded model as the budget sees it."""

    name: str
    footprint_mb: float
    sla_class: SLAClass
    last_used: float
    """Monotonic time of its last request (its load time if none)."""
    pinned: bool = False


def eviction_order(residents: Iterable[Resident]) -> list[Resident]:
    """The unpinned residents, the first to evict first: lowest class, then least recently used."""
    unpinned = [resident for resident in residents if not resident.pinned]
    return sorted(unpinned, key=lambda resident: (CLASS_RANK[resident.sla_class], resident.last_used))


def plan_room(budget_mb: float, need_mb: float, loading: str, residents: list[Resident]) -> list[str]:
    """The models to evict (in order) so that ``need_mb`` more fits ``budget_mb``; UnavailableError
    when it cannot fit even with every unpinned model evicted."""
    held = sum(resident.footprint_mb for resident in residents)
    evicted: list[str] = []
    for resident in eviction_order(residents):
        if held + need_mb <= budget_mb:
            break
        held -= resident.footprint_mb
        evicted.append(resident.name)
    if held + need_mb > budget_mb:
        pinned = [resident for resident in residents if resident.pinned]
        pinned_mb = sum(resident.footprint_mb for resident in pinned)
        names = ", ".join(sorted(resident.name for resident in pinned)) or "none"
        raise UnavailableError(
            f"load of {loading!r} needs about {need_mb:.0f} MiB: the memory budget is {budget_mb:g} MiB "
            f"(--memory-budget-mb) and pinned models hold {pinned_mb:.0f} MiB ({names})"
        )
    return evicted
