"""Adaptive batching window: widen it under a large backlog with a high p99, narrow it when idle.

Pure given the injected clock: latencies go in with :meth:`AdaptiveDelay.observe`, the backlog with
:meth:`AdaptiveDelay.update`, which applies the rule of :class:`AdaptiveConfig` at most once per
``interval_s`` and returns the window in milliseconds.
"""

from __future__ import annotations

import math
from collections import deque

from mcp2026ai.clock import Clock
from mcp2026ai.scheduling.config import AdaptiveConfig


def percentile(samples: list[float], fraction: float) -> float:
    """Nearest-rank percentile of a non-empty list (``fraction`` in (0, 1])."""
    ordered = sorted(samples)
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[rank - 1]


def next_delay(config: AdaptiveConfig, delay_ms: float, p99_ms: float, backlog: int) -> float:
    """One step of the rule; a window outside [min_delay_ms, max_delay_ms] is not pulled into it."""
    if p99_ms > config.high_p99_ms and backlog > config.high_backlog:
        return min(delay_ms * config.grow_factor, max(delay_ms, config.max_delay_ms))
    if p99_ms < config.low_p99_ms and backlog < config.low_backlog:
        return max(delay_ms * config.shrink_factor, min(delay_ms, config.min_delay_ms))
    return delay_ms


class AdaptiveDelay:
    """The current batching window of one executor."""

    def __init__(self, config: AdaptiveConfig, initial_delay_ms: float, clock: Clock) -> None:
        self.config = config
        self._delay_ms = initial_delay_ms
        self._clock = clock
        self._latencies: deque[float] = deque(maxlen=config.window)
        self._last_update = clock()

    @property
    def delay_ms(self) -> float:
        return self._delay_ms

    def observe(self, latency_ms: float) -> None:
        """Record one request's latency from accept to result."""
        self._latencies.append(latency_ms)

    def p99_ms(self) -> float | None:
        if len(self._latencies) < self.config.min_samples:
            return None
        return percentile(list(self._latencies), 0.99)

    def update(self, backlog: int) -> float:
        """Apply the rule if ``interval_s`` has passed since the last time; return the window (ms)."""
        now = self._clock()
        if not self.config.enabled or now - self._last_update < self.config.interval_s:
            return self._delay_ms
        self._last_update = now
        p99 = self.p99_ms()
        if p99 is not None:
            self._delay_ms = next_delay(self.config, self._delay_ms, p99, backlog)
        return self._delay_ms
