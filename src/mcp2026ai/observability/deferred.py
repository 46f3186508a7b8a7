"""Observations counted on the hot path and added to their Prometheus series later, in one step.

A batcher records a few figures per request and per batch (queue wait, batch rows, fill ratio, compute
time) and keeps its queue-depth gauges current. Through ``prometheus_client`` each observation takes a
lock per value touched, a walk over the buckets and, for a native histogram, a logarithm and another
lock: about a sixth of a tiny model's time in its executor (benchmarks/pipelines/overhead.py, the
hop). Here an observation is one bisect and two additions under one uncontended lock
(:class:`PendingHistogram`), and a gauge is only marked stale (:class:`StaleGauges`); both reach their
series in :func:`flush_all`, whenever :data:`~mcp2026ai.observability.metrics.REGISTRY` is collected
(a scrape, the console, a test reading a sample: :data:`FLUSH_ON_COLLECT` is the registry's first
collector), so what a reader sees is never behind what was recorded. Series, labels, buckets and
values are the same as observing each value directly.

Under ``mcp serve --workers N`` the series live in files that any worker's scrape reads, and one
worker's scrape cannot flush another's: there every observation goes to its series at once
(:func:`defer`, set by observability/metrics.py).
"""

from __future__ import annotations

import bisect
import threading
from collections.abc import Callable, Iterator
from typing import Any, Protocol

from prometheus_client import Histogram
from prometheus_client.registry import Collector

from mcp2026ai.observability.native import ZERO_THRESHOLD, NativeBuckets, bucket_index


class Flushable(Protocol):
    def flush(self) -> None: ...


_PENDING: set[Flushable] = set()
_PENDING_LOCK = threading.Lock()
_deferring = True


def defer(enabled: bool) -> None:
    """Whether observations wait for a collect (False: each goes to its series at once)."""
    global _deferring
    _deferring = enabled


def flush_all() -> None:
    """Add every pending observation to its series."""
    with _PENDING_LOCK:
        pending = list(_PENDING)
        _PENDING.clear()
    for item in pending:
        item.flush()


def _mark_pending(item: Flushable) -> None:
    if not _deferring:
        item.flush()
        return
    with _PENDING_LOCK:
        _PENDING.add(item)


class _FlushOnCollect(Collector):
    """A collector with no series of its own: collecting it flushes what is pending."""

    def describe(self) -> list[Any]:
        return []

    def collect(self) -> Iterator[Any]:
        flush_all()
        return iter(())


FLUSH_ON_COLLECT = _FlushOnCollect()


class PendingHistogram:
    """One histogram series (a ``labels()`` child, classic or native) whose observations are counted
    here until flushed."""

    __slots__ = ("_bounds", "_count", "_counts", "_lock", "_native", "_pending", "_series", "_sum", "_zero")

    def __init__(self, series: Histogram) -> None:
        self._series = series
        self._bounds: list[float] = list(series._upper_bounds)  # the series' buckets, +Inf last
        self._lock = threading.Lock()
        self._native: dict[int, int] | None = (
            {} if isinstance(getattr(series, "_native", None), NativeBuckets) else None
        )
        self._reset()

    def _reset(self) -> None:
        self._counts = [0] * len(self._bounds)
        self._sum = 0.0
        self._count = 0
        self._zero = 0
        self._pending = False
        if self._native is not None:
            self._native = {}

    def observe(self, value: float) -> None:
        index = bisect.bisect_left(self._bounds, value)  # the first bucket whose bound is >= value
        with self._lock:
            self._counts[index] += 1
            self._sum += value
            self._count += 1
            if self._native is not None:
                if value > ZERO_THRESHOLD:
                    native = bucket_index(value)
                    self._native[native] = self._native.get(native, 0) + 1
                else:
                    self._zero += 1
            first = not self._pending
            self._pending = True
        if first:
            _mark_pending(self)

    def flush(self) -> None:
        with self._lock:
            counts, total, count, zero, native = self._counts, self._sum, self._count, self._zero, self._native
            self._reset()
        if not count:
            return
        series: Any = self._series
        series._sum.inc(total)  # prometheus_client's own values (their files under workers)
        for bucket, hits in zip(series._buckets, counts, strict=True):
            if hits:
                bucket.inc(hits)
        if native is not None:
            series._native.add(count, total, zero, native)


class StaleGauges:
    """Gauges whose values are read from live state when flushed, not set at every change: ``mark()``
    costs a flag; each flush sets every gauge to ``read()`` of its key."""

    __slots__ = ("_gauges", "_lock", "_pending", "_read")

    def __init__(self, gauges: dict[Any, Any], read: Callable[[Any], float]) -> None:
        self._gauges = gauges
        self._read = read
        self._lock = threading.Lock()
        self._pending = False

    def mark(self) -> None:
        if self._pending:
            return
        with self._lock:
            first, self._pending = not self._pending, True
        if first:
            _mark_pending(self)

    def flush(self) -> None:
        with self._lock:
            self._pending = False
        for key, gauge in self._gauges.items():
            gauge.set(self._read(key))
