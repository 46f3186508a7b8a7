"""How long a new request would wait for a KV slot, from the queue's depth and measured service times.

Each finished request reports how long it held its slots (admission to last token: its steps times
the measured step time); an exponentially weighted mean of these is the time a slot turns over. A
request that finds ``ahead`` sequences waiting and every slot busy waits about
``(ahead + 1) / slots`` turnovers. The engine refuses a request whose estimate already exceeds its
time-to-first-token budget (the contract's ``ttft_p99_ms``) with 429 and that estimate as Retry-After,
instead of queueing it to miss its deadline.
"""

from __future__ import annotations

import math
import threading

SMOOTHING = 0.2
"""Weight of the newest service time in the running mean."""


class QueueWait:
    """The running estimate of a slot's turnover; thread-safe (the engine thread reports, callers ask)."""

    def __init__(self) -> None:
        self._service_s: float | None = None
        self._lock = threading.Lock()

    def finished(self, held_s: float) -> None:
        """A request held its slots ``held_s`` seconds (admission to its last token)."""
        if held_s < 0 or not math.isfinite(held_s):
            return
        with self._lock:
            previous = self._service_s
            self._service_s = held_s if previous is None else previous + SMOOTHING * (held_s - previous)

    @property
    def service_s(self) -> float | None:
        return self._service_s

    def estimate(self, ahead: int, free_slots: int, slots: int) -> float:
        """Seconds until a new request is admitted: 0 while a slot is free and nobody waits; 0 before
        anything was measured (nothing to go on: admit)."""
        service = self._service_s
        if service is None or (ahead == 0 and free_slots > 0):
            return 0.0
        return (ahead + 1) / max(1, slots) * service
