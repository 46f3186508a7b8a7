"""How a batch runs here: the one object that decides where, on which thread, at what priority, and
under which GIL window a backend's run happens.

- **Placement** (:mod:`.placement`): inline on the event loop when recent batches took microseconds,
  else on a worker thread.
- **Pools and priority** (:mod:`.cpu_priority`): a worker thread of normal priority for a batch that
  holds a latency-critical request, a nicer one for the others while that class is served (host
  tuning's ``bulk_batch_nice``; off: one pool).
- **The GIL window** (:mod:`.gil`): the process's switch interval held short while a long run is on a
  worker thread (host tuning's ``gil_switch_interval_ms``; off: Python's own).

Each run's timestamps come back with its outputs (:class:`RunTimes`), for the scheduler's telemetry.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from mcp2026ai.clock import Clock
from mcp2026ai.runtime.base import Tensors
from mcp2026ai.scheduling.cpu_priority import BatchThreads, UrgentWindow
from mcp2026ai.scheduling.gil import SWITCH_INTERVAL, SwitchInterval
from mcp2026ai.scheduling.placement import ExecutionPlacement

Infer = Callable[[Tensors, Sequence[str] | None], dict[str, np.ndarray]]


@dataclass(frozen=True)
class RunTimes:
    """One backend run, on ``time.monotonic()`` (one clock for every process of the machine)."""

    inline: bool
    """Ran on the event loop's thread (no hop)."""
    began: float
    ended: float
    cpu_s: float
    """The running thread's CPU time for it: its compute, without waits for a core or the GIL."""


class BatchRuns:
    """Runs one executor's batches (the batcher's; the direct executor's single requests, never inline):
    ``slots`` at once, placed, pooled and windowed as above."""

    def __init__(
        self,
        slots: int,
        inline_below_ms: float,
        bulk_nice: int | None,
        clock: Clock,
        switch: SwitchInterval = SWITCH_INTERVAL,
        urgent_window: UrgentWindow | None = None,
    ) -> None:
        # Inline batches run one at a time on the loop: with several slots they all go to threads.
        self._placement = ExecutionPlacement(inline_below_ms if slots == 1 else 0.0)
        self._slots = slots
        self._bulk_nice = bulk_nice
        self._clock = clock
        self._switch = switch
        self._threads: BatchThreads | None = None
        self._urgent_window = urgent_window

    def start(self) -> None:
        if self._threads is None:
            self._threads = BatchThreads(self._slots, self._bulk_nice, self._clock, self._urgent_window)

    def shutdown(self) -> None:
        """Stop the threads once their batches are done (without waiting here)."""
        if self._threads is not None:
            self._threads.shutdown()

    @property
    def inline(self) -> bool:
        """The next run goes inline, on the event loop's thread."""
        return self._placement.inline

    @property
    def average_s(self) -> float | None:
        """Smoothed compute time of recent batches (None before the first)."""
        return self._placement.average_s

    async def run(
        self, infer: Infer, inputs: Tensors, outputs: Sequence[str] | None, urgent: bool
    ) -> tuple[dict[str, np.ndarray], RunTimes]:
        """``infer(inputs, outputs)`` where and how this batch should run; ``urgent``: it holds a
        latency-critical request."""
        if self._placement.inline:
            results, times = timed(infer, inputs, outputs, inline=True)
        else:
            loop = asyncio.get_running_loop()
            pool = self._threads.for_batch(urgent) if self._threads is not None else None
            with self._switch.run(self._placement.average_s):
                results, times = await loop.run_in_executor(pool, timed, infer, inputs, outputs, False)
        self._placement.observe(times.cpu_s)
        return results, times


def timed(
    infer: Infer, inputs: Tensors, outputs: Sequence[str] | None, inline: bool
) -> tuple[dict[str, np.ndarray], RunTimes]:
    """The backend's outputs, and when and for how much of the calling thread's CPU it ran (the CPU
    time leaves out the hop and any wait for the GIL, which a busy server's wall clock includes)."""
    began, cpu = time.monotonic(), time.thread_time()
    results = infer(inputs, outputs)
    return results, RunTimes(inline, began, time.monotonic(), time.thread_time() - cpu)
