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
not merely started: when its expected answer plus the estimate's recent spread (how much later than
expected the class's admitted requests were answered, :class:`EstimateSpread`) takes at most
``ClassPolicy.admit_within`` of the deadline (0.8 by default; the rest is the time the scheduler
does not see: reading, decoding, encoding and writing the request, event-loop lag). The spread is
measured because it is a property of the model and the machine (a batch more or less, a core
shared with the transport), not of the deadline: a share of the deadline large enough to cover it
for a 50 ms class would turn away most of a 2 s class's work. The client's latency is what the
deadline promises (a request admitted that then waits past its deadline before starting is still
refused then, 503). A request that would start at once (a batch slot free, nothing queued) is never
refused for its deadline: with nothing ahead of it, refusing it makes nothing faster, and an idle
model whose batches were measured slow (cold first runs) would refuse every request of the class.
"""

from __future__ import annotations

import math
from collections import deque

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


SPREAD_QUANTILE = 0.99
SPREAD_WINDOW = 256
"""Latest admitted requests per class the spread is taken over."""
SPREAD_MAX_AGE_S = 10.0
"""Older observations no longer count: a spread measured in a bad minute does not turn a class away
for ever (a class refused everything leaves no new observations)."""
MAX_SPREAD_SHARE = 0.5
"""The spread takes at most this share of a class's admission budget: a burst of late answers (the
start of an overload, thousands of connections opening) then narrows admission instead of closing
it, and the requests still admitted keep measuring the spread as it recovers. Until the spread is
known (a class's first answers, or after it aged out) it is taken to be this much."""
SPREAD_MIN_SAMPLES = 20
SPREAD_REFRESH = 16
"""Observations between two recomputations of the quantile (a sort of at most SPREAD_WINDOW floats)."""


class EstimateSpread:
    """How much later than expected at admission a class's requests were answered: the
    :data:`SPREAD_QUANTILE` of (answered - expected) over its latest :data:`SPREAD_WINDOW`
    observations of the last :data:`SPREAD_MAX_AGE_S` seconds (0 when answers came earlier than
    expected); None, not known, while fewer than :data:`SPREAD_MIN_SAMPLES` count."""

    def __init__(self) -> None:
        self._observed: dict[SLAClass, deque[tuple[float, float]]] = {}
        self._late_s: dict[SLAClass, float] = {}
        self._fresh: dict[SLAClass, int] = {}

    def observe(self, cls: SLAClass, now: float, late_s: float) -> None:
        """A request of ``cls`` was answered at ``now``, ``late_s`` after its expected answer (negative: earlier)."""
        observed = self._observed.get(cls)
        if observed is None:
            observed = self._observed[cls] = deque(maxlen=SPREAD_WINDOW)
        observed.append((now, late_s))
        self._fresh[cls] = self._fresh.get(cls, 0) + 1
        first_known = cls not in self._late_s and len(observed) >= SPREAD_MIN_SAMPLES
        if first_known or self._fresh[cls] >= SPREAD_REFRESH:
            self._refresh(cls, now)

    def late_s(self, cls: SLAClass, now: float) -> float | None:
        """The class's spread now (seconds, >= 0), or None while too little is known."""
        observed = self._observed.get(cls)
        if observed and now - observed[-1][0] > SPREAD_MAX_AGE_S:
            self._refresh(cls, now)  # nothing answered lately: what was measured has aged out
        return self._late_s.get(cls)

    def _refresh(self, cls: SLAClass, now: float) -> None:
        self._fresh[cls] = 0
        observed = self._observed[cls]
        while observed and now - observed[0][0] > SPREAD_MAX_AGE_S:
            observed.popleft()
        if len(observed) < SPREAD_MIN_SAMPLES:
            self._late_s.pop(cls, None)
            return
        late = sorted(late_s for _, late_s in observed)
        self._late_s[cls] = max(0.0, late[min(len(late) - 1, int(SPREAD_QUANTILE * len(late)))])
