"""Admission under overload: refuse early, and refuse best-effort first.

A request that would wait past its deadline is refused when it arrives (429 + Retry-After), instead
of queueing, expiring and costing memory on the way. A request of a class with a deadline
(latency-critical, throughput-guaranteed) that would wait too long first makes room by shedding the
queued best-effort requests, which are answered 429 at once: under overload the rejections
land on best-effort traffic, and the deadline classes are refused only when no best-effort request
is left to shed, and for a moment after (``SHED_HOLD_S``) new best-effort requests are refused on
arrival, so that the deadline classes take the capacity best-effort had.

The expected wait is the backlog ahead (queued rows) at the rate the backend has been draining
rows, measured over recent batches (:class:`DrainRate`).
"""

from __future__ import annotations

from mcp2026ai.contract import SLAClass

SHEDDABLE = SLAClass.BEST_EFFORT
SHED_HOLD_S = 1.0
"""Once a deadline class was at risk, best-effort requests are refused on arrival for this long."""
SHED_MESSAGE = "best-effort requests are refused while higher SLA classes are at risk (queue is full); retry later"
_SMOOTHING = 0.2


class DrainRate:
    """Rows per second the backend has been running, smoothed over recent batches."""

    def __init__(self, concurrent_batches: int = 1) -> None:
        self.concurrent_batches = concurrent_batches
        self.rows_per_s: float | None = None

    def observe(self, rows: int, seconds: float) -> None:
        if rows <= 0 or seconds <= 0:
            return
        rate = rows / seconds * self.concurrent_batches
        self.rows_per_s = rate if self.rows_per_s is None else self.rows_per_s + _SMOOTHING * (rate - self.rows_per_s)

    def seconds_for(self, rows: int) -> float:
        """How long ``rows`` queued rows take to drain; 0 before the first batch (nothing known: admit)."""
        return rows / self.rows_per_s if self.rows_per_s else 0.0
