"""A time-bounded window of request outcomes, with an injected clock instant on every call."""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

from mcp2026ai.routing.outcome import Outcome


@dataclass(frozen=True)
class WindowFigures:
    requests: int
    server_errors: int
    errors: int
    p95_ms: float
    """Nearest-rank 95th percentile of the latencies; 0.0 for an empty window."""

    @property
    def server_error_rate(self) -> float:
        return self.server_errors / self.requests if self.requests else 0.0

    @property
    def error_rate(self) -> float:
        return self.errors / self.requests if self.requests else 0.0


class SlidingWindow:
    """Outcomes of the last ``span_s`` seconds, both ends included.

    At most ``max_samples`` are kept (the oldest dropped first).

    Counts are kept up to date on every call, so :meth:`counts` is cheap enough for every request;
    :meth:`figures` also sorts the latencies for the p95.
    """

    def __init__(self, span_s: float, max_samples: int = 100_000) -> None:
        self.span_s = span_s
        self.max_samples = max_samples
        self._events: deque[tuple[float, Outcome, float]] = deque()
        self._counts = {outcome: 0 for outcome in Outcome}

    def add(self, now: float, outcome: Outcome, latency_ms: float = 0.0) -> None:
        self._events.append((now, outcome, latency_ms))
        self._counts[outcome] += 1
        if len(self._events) > self.max_samples:
            self._pop()
        self._expire(now)

    def clear(self) -> None:
        self._events.clear()
        self._counts = {outcome: 0 for outcome in Outcome}

    def counts(self, now: float) -> WindowFigures:
        """Request and error counts (p95 left at 0.0)."""
        self._expire(now)
        return WindowFigures(
            requests=len(self._events),
            server_errors=self._counts[Outcome.SERVER_ERROR],
            errors=sum(count for outcome, count in self._counts.items() if outcome.failed),
            p95_ms=0.0,
        )

    def figures(self, now: float) -> WindowFigures:
        counts = self.counts(now)
        latencies = sorted(event[2] for event in self._events)
        return WindowFigures(counts.requests, counts.server_errors, counts.errors, percentile(latencies, 95.0))

    def _expire(self, now: float) -> None:
        horizon = now - self.span_s
        while self._events and self._events[0][0] < horizon:
            self._pop()

    def _pop(self) -> None:
        self._counts[self._events.popleft()[1]] -= 1


def percentile(ordered: list[float], q: float) -> float:
    """Nearest-rank percentile of an ascending list (the smallest value with >= q% at or below it)."""
    if not ordered:
        return 0.0
    rank = max(1, math.ceil(q / 100.0 * len(ordered)))
    return ordered[rank - 1]
