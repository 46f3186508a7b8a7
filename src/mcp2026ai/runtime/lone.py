"""A lone batch on every core, concurrent batches on the instances: the load-adaptive half of a plan.

A multi-instance plan (single-threaded instances, run side by side) serves concurrent requests without
the synchronisation of one multi-threaded run, but a lone request then runs on one core of several.
With ``Plan.lone_threads`` the backend also holds a session of that many threads, and :class:`LoneGate`
decides call by call: a call that finds no other running runs alone on that session; a call that
arrives meanwhile waits for it (running beside it would put more threads than cores on the CPU) and
then runs as an instance, as does any call that finds instances running. Having had to wait is the
sign of concurrent load, so under load the backend settles on its instances: once calls met each
other, none runs alone until ``hold_s`` after the last such call started or ended (a hysteresis).
Without it, a batch dispatched in the gap between two instance batches (both just ended, the next
not yet queued) runs alone, makes the next one wait (a core idle), and spins both threads at every
barrier while the machine's other processes hold a core. Under the co-located overload of
benchmarks/overload/overload.py, three runs without the hold gave 0.75 / 0.83 / 0.64 x capacity (the
last with a latency-critical p50 of 42 ms against 31-34); with it, fifteen gave 0.71-0.85.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

HOLD_S = 0.1
"""How long after the last call that met another (its start or its end) calls still run as instances.
Long enough to span the gap between two batches under load (a dispatch by the event loop, a few ms
when it waits for a CPU); short enough that a lone request after a burst, or the policy's lone
timings after its busy ones (policy/profiler.py), run alone again."""


class LoneGate:
    """Which session the next ``infer`` call runs on: alone (True) or as one of the instances (False)."""

    def __init__(self, hold_s: float = HOLD_S, clock: Callable[[], float] = time.monotonic) -> None:
        self._changed = threading.Condition()
        self._instances = 0
        self._alone = False
        self._hold_s = hold_s
        self._clock = clock
        self._concurrent_until = float("-inf")
        """Until when calls run as instances: ``hold_s`` after the last call that met another started or ended."""
        self.lone_runs = 0
        """Calls that ran alone so far."""
        self.waiting = 0
        """Calls now waiting for a lone run to end."""

    @contextmanager
    def enter(self) -> Iterator[bool]:
        with self._changed:
            concurrent = self._alone or self._instances > 0
            alone = not concurrent and self._clock() >= self._concurrent_until
            if alone:
                self._alone = True
                self.lone_runs += 1
            else:
                self.waiting += 1
                self._changed.wait_for(lambda: not self._alone)
                self.waiting -= 1
                self._instances += 1
                if concurrent:  # a call held back only by the hysteresis does not extend it
                    self._concurrent_until = self._clock() + self._hold_s
        try:
            yield alone
        finally:
            with self._changed:
                if alone:
                    self._alone = False
                else:
                    self._instances -= 1
                    if concurrent:
                        self._concurrent_until = self._clock() + self._hold_s
                self._changed.notify_all()
