"""Is this machine's CPU contended? A cheap, rate-limited reading of the 1-minute load average.

onnxruntime's intra-op workers spin between parallel sections: on an otherwise idle machine that
is the fastest way to hand them work, but when other processes want the cores a spinning worker
holds the core its descheduled peer needs (see ``runtime/onnx_decoder.py``). The decoder asks
:meth:`LoadProbe.contended` before each run and uses a blocking thread pool while it says so.

Hysteresis: contended once the load average exceeds ``cores + enter_above``, idle again once it
falls below ``cores + leave_below``; the load average is read at most once per ``period_s``.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable

from mcp2026ai.runtime.cpu_affinity import usable_cores


def load_average() -> float:
    """The 1-minute load average (0.0 where the platform has none)."""
    try:
        return os.getloadavg()[0]
    except OSError:
        return 0.0


class LoadProbe:
    """Says whether the CPUs are contended, from the load average, with hysteresis."""

    def __init__(
        self,
        cores: int | None = None,
        enter_above: float = 1.0,
        leave_below: float = 0.5,
        period_s: float = 1.0,
        read: Callable[[], float] = load_average,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if leave_below > enter_above:
            raise ValueError(f"leave_below ({leave_below}) must not exceed enter_above ({enter_above})")
        self.cores = cores or usable_cores()
        self.enter = self.cores + enter_above
        self.leave = self.cores + leave_below
        self.period_s = period_s
        self._read = read
        self._clock = clock
        self._checked = float("-inf")
        self._contended = False

    def contended(self) -> bool:
        now = self._clock()
        if now - self._checked >= self.period_s:
            self._checked = now
            load = self._read()
            self._contended = load > self.enter if not self._contended else load >= self.leave
        return self._contended
