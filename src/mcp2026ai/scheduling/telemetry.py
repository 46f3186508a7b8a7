"""The scheduler's metrics, bound to one model version's labels."""

from __future__ import annotations

import itertools
from collections.abc import Iterable

from mcp2026ai.contract import SLAClass
from mcp2026ai.observability import metrics
from mcp2026ai.scheduling.queues import ClassQueues, Pending

_BATCH_IDS = itertools.count(1)


def next_batch_id() -> int:
    """A process-unique batch id (trace spans carry it as ``batch.id``)."""
    return next(_BATCH_IDS)


class SchedulerTelemetry:
    """Records queue depth, waits, rejections and batch shapes for ``model``/``version``."""

    def __init__(self, model: str, version: str, max_batch_size: int = 1) -> None:
        self._labels = (model, version)
        self._max_batch_size = max_batch_size

    def queue_depths(self, queues: ClassQueues) -> None:
        for cls in SLAClass:
            metrics.SCHEDULER_QUEUE_DEPTH.labels(*self._labels, cls.value).set(queues.depth(cls))

    def rejected(self, cls: SLAClass, reason: str, count: int = 1) -> None:
        if count:
            metrics.SCHEDULER_REJECTIONS.labels(*self._labels, cls.value, reason).inc(count)

    def rejected_all(self, pendings: Iterable[Pending], reason: str) -> None:
        for pending in pendings:
            self.rejected(pending.sla_class, reason)

    def dispatched(self, batch: list[Pending], now: float) -> None:
        rows = sum(pending.rows for pending in batch)
        metrics.SCHEDULER_BATCH_ROWS.labels(*self._labels).observe(rows)
        metrics.SCHEDULER_BATCH_FILL.labels(*self._labels).observe(rows / self._max_batch_size)
        for pending in batch:
            self.waited(pending.sla_class, now - pending.enqueued_at)

    def waited(self, cls: SLAClass, seconds: float) -> None:
        metrics.SCHEDULER_QUEUE_WAIT.labels(*self._labels, cls.value).observe(max(0.0, seconds))

    def executed(self, seconds: float) -> None:
        """One backend run (a whole batch) took ``seconds``."""
        metrics.COMPUTE_DURATION.labels(*self._labels).observe(seconds)

    def window(self, delay_ms: float) -> None:
        metrics.SCHEDULER_QUEUE_DELAY.labels(*self._labels).set(delay_ms / 1000.0)
