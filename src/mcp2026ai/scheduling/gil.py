"""A short GIL switch interval while long model runs are on worker threads.

A batch's worker thread needs the interpreter lock (GIL) to start the backend's run and again, after
the run, to hand back its outputs. The event loop, busy with requests, holds the lock most of the
time, and a thread waiting for it asks the holder to let go only after ``sys.getswitchinterval()``
(5 ms by default): up to 5 ms per hand-over during which the worker's core runs nothing of the model.
Under the co-located overload (benchmarks/overload/overload.py: 8,000 connections, the load generator
on the server's two cores) a batch of 16 ms of single-threaded compute took 21 ms of wall time at the
median and 37 ms at p99; at 0.5 ms, 19 and 30 ms. Ten interleaved pairs: goodput 0.80 -> 0.82 x
capacity and latency-critical client p99 57.8 -> 54.6 ms at the median (docs/notebook/benchmarks.md, "The GIL
switch interval").

Short only while a *long* run is in progress (its measured compute, :data:`LONG_RUN_S` or more): where
batches take microseconds (a small MLP), the event loop is what limits the server, and handing the
lock over ten times as often cost it 5 % of its HTTP throughput (the same A/B); between overloads the
interval is Python's again.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

SHORT_INTERVAL_S = 0.0005
"""The switch interval the latency preset holds while a long run is in progress (scheduling/host.py)."""
LONG_RUN_S = 0.001
"""Runs measured to take at least this much compute count as long."""


class SwitchInterval:
    """Holds the interpreter's switch interval at ``short_s`` while any long run is in progress."""

    def __init__(self, short_s: float | None = None) -> None:
        self.short_s = short_s
        """None: never change the interval."""
        self._lock = threading.Lock()
        self._long_runs = 0
        self._saved_s = sys.getswitchinterval()

    @contextmanager
    def run(self, compute_s: float | None) -> Iterator[None]:
        """Around one run on a worker thread, expected to take ``compute_s`` (None: not known yet)."""
        short_s = self.short_s
        if short_s is None or compute_s is None or compute_s < LONG_RUN_S:
            yield
            return
        self._enter(short_s)
        try:
            yield
        finally:
            self._exit()

    @property
    def long_runs(self) -> int:
        """Long runs in progress now."""
        return self._long_runs

    def _enter(self, short_s: float) -> None:
        with self._lock:
            if self._long_runs == 0:
                self._saved_s = sys.getswitchinterval()
                sys.setswitchinterval(min(self._saved_s, short_s))
            self._long_runs += 1

    def _exit(self) -> None:
        with self._lock:
            self._long_runs -= 1
            if self._long_runs == 0:
                sys.setswitchinterval(self._saved_s)


SWITCH_INTERVAL = SwitchInterval()
"""The process's one instance: every executor's worker-thread runs go through it. Off (never changes the
interval) until host tuning (scheduling/host.py) sets ``short_s``."""
