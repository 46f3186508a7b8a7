"""Mirror a request to a shadow version without touching the primary response.

The data plane serves the primary first, then calls :meth:`ShadowMirror.mirror` with the primary's
:class:`Observation` and a zero-argument coroutine function that runs the same inputs on the
shadow version. ``mirror`` only schedules an asyncio task and returns at once: the response is
never delayed, and whatever the shadow does (fail, hang, be slow) ends in the statistics. At most
``max_in_flight`` shadow calls run at a time; beyond that, mirrored requests are dropped and counted.
The shadow must treat the inputs as read-only (executors and backends do).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from mcp2026ai.clock import Clock
from mcp2026ai.routing.diff import Observation, ShadowDiff, compare
from mcp2026ai.routing.outcome import classify
from mcp2026ai.routing.report import ShadowKey

log = logging.getLogger(__name__)

ShadowCall = Callable[[], Awaitable[Mapping[str, np.ndarray]]]


class ShadowSink(Protocol):
    """Where diffs go (a :class:`~mcp2026ai.routing.report.ShadowReporter` satisfies this)."""

    def add(self, key: ShadowKey, diff: ShadowDiff) -> None: ...

    def dropped(self, key: ShadowKey) -> None: ...


@dataclass
class MirrorStats:
    scheduled: int = 0
    completed: int = 0
    shadow_failures: int = 0
    dropped: int = 0
    sink_failures: int = 0


class ShadowMirror:
    def __init__(
        self,
        sink: ShadowSink,
        max_in_flight: int = 8,
        clock: Clock = time.monotonic,
    ) -> None:
        self.sink = sink
        self.max_in_flight = max_in_flight
        self.stats = MirrorStats()
        self._clock = clock
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def in_flight(self) -> int:
        return len(self._tasks)

    def mirror(self, key: ShadowKey, primary: Observation, run_shadow: ShadowCall) -> bool:
        """Schedule the shadow call (needs a running loop); False when dropped for capacity."""
        if len(self._tasks) >= self.max_in_flight:
            self.stats.dropped += 1
            self._deliver(lambda: self.sink.dropped(key))
            return False
        task = asyncio.get_running_loop().create_task(self._run(key, primary, run_shadow))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        self.stats.scheduled += 1
        return True

    async def drain(self, timeout_s: float) -> None:
        """Wait up to ``timeout_s`` for in-flight shadow calls, then cancel the rest."""
        tasks = list(self._tasks)
        if not tasks:
            return
        _, pending = await asyncio.wait(tasks, timeout=timeout_s)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)

    async def _run(self, key: ShadowKey, primary: Observation, run_shadow: ShadowCall) -> None:
        started = self._clock()
        try:
            outputs = await run_shadow()
            shadow = Observation(classify(None), _ms(self._clock() - started), outputs)
        except Exception as exc:  # noqa: BLE001 - a shadow failure is data, never an error upstream
            self.stats.shadow_failures += 1
            shadow = Observation(classify(exc), _ms(self._clock() - started), None)
        self.stats.completed += 1
        self._deliver(lambda: self.sink.add(key, compare(primary, shadow)))

    def _deliver(self, send: Callable[[], None]) -> None:
        try:
            send()
        except Exception:
            self.stats.sink_failures += 1
            log.exception("shadow statistics sink failed")


def _ms(seconds: float) -> float:
    return seconds * 1000.0
