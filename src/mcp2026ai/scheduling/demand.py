"""How many rows each SLA class has been queueing lately: its demand on the drain rate.

Admission needs to know what share of the rate a class will get while the others keep arriving
(:meth:`.queues.ClassQueues.guaranteed_share`). Weighted fair queueing guarantees it its weight's
share against every class that competes; a class that competes with a trickle takes no more than
it brings, so the rest of the rate is left to the others. :class:`RecentArrivals` keeps the rows
queued per class over the last :data:`WINDOW_S` for that estimate.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable

from mcp2026ai.contract import SLAClass

WINDOW_S = 1.0
"""Arrivals older than this no longer count as a class's demand."""


class RecentArrivals:
    """Rows queued per class within the last :data:`WINDOW_S` (timestamps on the executor's clock)."""

    def __init__(self, classes: Iterable[SLAClass]) -> None:
        self._arrivals: dict[SLAClass, deque[tuple[float, int]]] = {cls: deque() for cls in classes}
        self._rows: dict[SLAClass, int] = dict.fromkeys(self._arrivals, 0)

    def record(self, cls: SLAClass, at: float, rows: int) -> None:
        self._arrivals[cls].append((at, rows))
        self._rows[cls] += rows
        self._expire(cls, at)  # bounded even for a class nobody asks about

    def forget(self, cls: SLAClass) -> None:
        """Drop ``cls``'s history (it was shed: it competes again once it queues again)."""
        self._arrivals[cls].clear()
        self._rows[cls] = 0

    def rows_per_s(self, cls: SLAClass, now: float) -> float:
        """Rows ``cls`` queued per second over the window ending at ``now``."""
        self._expire(cls, now)
        return self._rows[cls] / WINDOW_S

    def _expire(self, cls: SLAClass, now: float) -> None:
        arrivals = self._arrivals[cls]
        while arrivals and arrivals[0][0] < now - WINDOW_S:
            self._rows[cls] -= arrivals.popleft()[1]
