"""Admission under overload: refuse early, and refuse best-effort first.

A request that would wait past its deadline is refused when it arrives (429 + Retry-After), instead
of queueing, expiring and costing memory on the way. A request of a class with a deadline
(latency-critical, throughput-guaranteed) that would wait too long first makes room by shedding the
queued best-effort requests, which are answered 429 at once: under overload the rejections
land on best-effort traffic, and the deadline classes are refused only when no best-effort request
is left to shed, and for a moment after (``SHED_HOLD_S``) new best-effort requests are refused on
arrival, so that the deadline classes take the capacity best-effort had.

The expected time to an answer is the backlog ahead (queued rows, the request's own included) at
the rate the backend has been draining rows, in whole batches (a batch of one row costs about as
much as a full one), after what is left of the running batch when every slot is busy (its start
plus the measured batch time); rate and batch time are measured over recent batches
(:class:`DrainRate`). The rows ahead are counted by the fair queueing's fluid view, with a floor:
while other classes keep arriving, a class drains only at the share of the rate its weight
guarantees (``ClassQueues.guaranteed_share``), so its own backlog divided by that share is at least
what lies ahead. A deadline class is admitted only when it would be *answered* within its deadline,
not merely started, and within ``ClassPolicy.admit_within`` of it (0.65 by default): the rest is
headroom for the estimate's spread and for the time the scheduler does not see (reading, decoding,
encoding and writing the request, event-loop lag). The client's latency is what the deadline
promises (a request admitted that then waits past its deadline before starting is still refused
then, 503).
"""

from __future__ import annotations

import math

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
        self.batch_s: float | None = None
        """Seconds one batch takes, smoothed."""

    def observe(self, rows: int, seconds: float) -> None:
        if rows <= 0 or seconds <= 0:
            return
        rate = rows / seconds * self.concurrent_batches
        self.rows_per_s = rate if self.rows_per_s is None else self.rows_per_s + _SMOOTHING * (rate - self.rows_per_s)
        self.batch_s = seconds if self.batch_s is None else self.batch_s + _SMOOTHING * (seconds - self.batch_s)

    def seconds_to_answer(self, rows_ahead: float, merge_rows: int, slot_free_in_s: float = 0.0) -> float:
        """How long until a request is answered when ``rows_ahead`` rows (its own included) are dispatched
        before or with it, starting once a batch slot is free (in ``slot_free_in_s``): they drain at
        the measured rate, but in whole batches of at most ``merge_rows``, each taking at least a
        measured batch time. 0 before the first batch (nothing known: admit)."""
        if not self.rows_per_s or self.batch_s is None:
            return 0.0
        batches = math.ceil(rows_ahead / merge_rows - 1e-9)
        return slot_free_in_s + max(rows_ahead / self.rows_per_s, batches * self.batch_s / self.concurrent_batches)

    def seconds_for(self, rows: int) -> float:
        """How long ``rows`` queued rows take to drain; 0 before the first batch (nothing known: admit)."""
        return rows / self.rows_per_s if self.rows_per_s else 0.0
