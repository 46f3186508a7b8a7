"""The scheduler's metrics, bound to one model version's labels."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from mcp2026ai.contract import SLAClass
from mcp2026ai.observability import metrics
from mcp2026ai.observability.deferred import PendingHistogram, StaleGauges
from mcp2026ai.scheduling.batch_runs import RunTimes
from mcp2026ai.scheduling.queues import ClassQueues, Pending

_BATCH_IDS = itertools.count(1)


@dataclass(frozen=True)
class BatchTimes:
    """One batch's requests and timestamps, on the executor's clock (``time.monotonic()`` unless a test
    injects another): what a benchmark reads to see where each request's time went."""

    model: str
    version: str
    requests: tuple[tuple[SLAClass, float], ...]
    """Each request's class and when it was queued."""
    started: float
    """When the batch's task began on the event loop."""
    run: RunTimes | None
    """The backend's run (None: the batch failed before it ran)."""
    ended: float
    """When the batch's task saw the run end."""


BatchObserver = Callable[[BatchTimes], None]
ShedObserver = Callable[[float, int], None]
"""``(when, how many)`` queued best-effort requests were shed at once."""
_BATCH_OBSERVERS: list[BatchObserver] = []
_SHED_OBSERVERS: list[ShedObserver] = []


def observe_batches(observer: BatchObserver) -> Callable[[], None]:
    """Call ``observer`` on the event loop after every batch of every batching executor of this process;
    returns the function that stops it. For benchmarks and probes: nothing is kept when none observes."""
    _BATCH_OBSERVERS.append(observer)
    return lambda: _BATCH_OBSERVERS.remove(observer)


def observe_sheds(observer: ShedObserver) -> Callable[[], None]:
    """Call ``observer`` at every shed of queued best-effort requests; returns the function that stops it."""
    _SHED_OBSERVERS.append(observer)
    return lambda: _SHED_OBSERVERS.remove(observer)


def next_batch_id() -> int:
    """A process-unique batch id (trace spans carry it as ``batch.id``)."""
    return next(_BATCH_IDS)


class SchedulerTelemetry:
    """Records queue depth, waits, rejections and batch shapes for ``model``/``version``.

    The figures recorded per request or per batch (waits, batch rows and fill, compute time, queue
    depths) reach their series when the metrics are read (observability/deferred.py): recording one
    costs a bisect, not ``prometheus_client``'s locks; rejections and the window are set at once.
    """

    def __init__(self, model: str, version: str, max_batch_size: int = 1) -> None:
        self._labels = (model, version)
        self._max_batch_size = max_batch_size
        # Series touched per request or per batch, looked up once (``labels()`` is not free).
        self._depth_gauges = {cls: metrics.SCHEDULER_QUEUE_DEPTH.labels(model, version, cls.value) for cls in SLAClass}
        self._queues: ClassQueues | None = None
        self._depths = StaleGauges(self._depth_gauges, self._depth_of)
        self._wait = {
            cls: PendingHistogram(metrics.SCHEDULER_QUEUE_WAIT.labels(model, version, cls.value)) for cls in SLAClass
        }
        self._rows = PendingHistogram(metrics.SCHEDULER_BATCH_ROWS.labels(model, version))
        self._fill = PendingHistogram(metrics.SCHEDULER_BATCH_FILL.labels(model, version))
        self._compute = PendingHistogram(metrics.COMPUTE_DURATION.labels(model, version))

    def _depth_of(self, cls: SLAClass) -> float:
        return self._queues.depth(cls) if self._queues is not None else 0

    def queue_depths(self, queues: ClassQueues) -> None:
        """The queues changed: the depth gauges read them at the next flush."""
        self._queues = queues
        self._depths.mark()

    def queue_depth(self, queues: ClassQueues, cls: SLAClass) -> None:
        """Only ``cls`` changed (a request was queued)."""
        self.queue_depths(queues)

    def rejected(self, cls: SLAClass, reason: str, count: int = 1) -> None:
        if count:
            metrics.child(metrics.SCHEDULER_REJECTIONS, *self._labels, cls.value, reason).inc(count)

    def rejected_all(self, pendings: Iterable[Pending], reason: str) -> None:
        for pending in pendings:
            self.rejected(pending.sla_class, reason)

    def dispatched(self, batch: list[Pending], now: float) -> None:
        rows = sum(pending.rows for pending in batch)
        self._rows.observe(rows)
        self._fill.observe(rows / self._max_batch_size)
        for pending in batch:
            self.waited(pending.sla_class, now - pending.enqueued_at)

    def waited(self, cls: SLAClass, seconds: float) -> None:
        self._wait[cls].observe(max(0.0, seconds))

    def executed(self, seconds: float) -> None:
        """One backend run (a whole batch) took ``seconds``."""
        self._compute.observe(seconds)

    def batch_done(self, batch: Sequence[Pending], started: float, run: RunTimes | None, ended: float) -> None:
        """A batch's task ended (answered or failed): its times, to whoever observes batches."""
        if _BATCH_OBSERVERS:
            requests = tuple((pending.sla_class, pending.enqueued_at) for pending in batch)
            record = BatchTimes(*self._labels, requests, started, run, ended)
            for observer in list(_BATCH_OBSERVERS):
                observer(record)

    def shed(self, victims: Sequence[Pending], now: float) -> None:
        if victims:
            for observer in list(_SHED_OBSERVERS):
                observer(now, len(victims))

    def window(self, delay_ms: float) -> None:
        metrics.SCHEDULER_QUEUE_DELAY.labels(*self._labels).set(delay_ms / 1000.0)
