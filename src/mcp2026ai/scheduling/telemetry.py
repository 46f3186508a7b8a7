"""The scheduler's metrics, bound to one model version's labels."""

from __future__ import annotations

from collections.abc import Iterable

from mcp2026ai.contract import SLAClass
from mcp2026ai.observability import metrics
from mcp2026ai.scheduling.queues import ClassQueues, Pending


class SchedulerTelemetry:
    """Records queue depth, waits, rejections and batch shapes for ``model``/``version``."""

    def __init__(self, model: str, version: str, max_batch_size: int) -> None:
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
            wait = max(0.0, now - pending.enqueued_at)
            metrics.SCHEDULER_QUEUE_WAIT.labels(*self._labels, pending.sla_class.value).observe(wait)

    def window(self, delay_ms: float) -> None:
        metrics.SCHEDULER_QUEUE_DELAY.labels(*self._labels).set(delay_ms / 1000.0)
