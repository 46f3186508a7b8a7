"""Native histograms: sparse exponential buckets next to the classic ones, for OpenMetrics 2.0 scrapers.

A :class:`NativeHistogram` is a classic ``prometheus_client`` Histogram (its explicit buckets are
what the Prometheus text format and OpenMetrics 1.0 carry) that also counts every observation in
Prometheus's native-histogram buckets: schema :data:`SCHEMA`, i.e. bucket ``i`` holds
``(2**((i-1)/8), 2**(i/8)]`` and neighbouring boundaries are 9 % apart, with no boundaries to
choose. Only the buckets that were hit are kept (a few dozen for latencies spanning 0.1 ms-10 s).

``prometheus_client`` writes native histograms only in the OpenMetrics 2.0 text format (experimental),
from samples that carry them; :func:`with_native_samples` adds those samples to a scrape for a
client that asked for that version, before each series' classic lines as the format requires.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from prometheus_client import Histogram
from prometheus_client.registry import Collector
from prometheus_client.samples import BucketSpan, Sample
from prometheus_client.samples import NativeHistogram as NativeValue

SCHEMA = 3
"""Resolution: 2**SCHEMA buckets per power of two (Prometheus allows -4..8; 3 is client_golang's 1.1 factor)."""
ZERO_THRESHOLD = 2.0**-128
"""Observations at or below this count in the zero bucket (Prometheus's default threshold)."""


def bucket_index(value: float, schema: int = SCHEMA) -> int:
    """The native bucket of a positive ``value``: the ``i`` with 2**((i-1)/2**schema) < value <= 2**(i/2**schema)."""
    fraction, exponent = math.frexp(value)  # value = fraction * 2**exponent, 0.5 <= fraction < 1
    if fraction == 0.5:  # an exact power of two is the upper bound of its bucket
        return (exponent - 1) << schema
    return math.ceil(math.log2(fraction) * (1 << schema)) + (exponent << schema)


class NativeBuckets:
    """Count, sum, zero bucket and the sparse positive buckets of one series; thread-safe."""

    __slots__ = ("_lock", "count", "positive", "sum", "zero")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.count = 0
        self.sum = 0.0
        self.zero = 0
        self.positive: dict[int, int] = {}

    def observe(self, value: float) -> None:
        index = bucket_index(value) if value > ZERO_THRESHOLD else None
        with self._lock:
            self.count += 1
            self.sum += value
            if index is None:
                self.zero += 1
            else:
                self.positive[index] = self.positive.get(index, 0) + 1

    def add(self, count: int, total: float, zero: int, buckets: dict[int, int]) -> None:
        """``count`` observations at once (``zero`` of them in the zero bucket), counted elsewhere."""
        with self._lock:
            self.count += count
            self.sum += total
            self.zero += zero
            for index, hits in buckets.items():
                self.positive[index] = self.positive.get(index, 0) + hits

    def value(self) -> NativeValue:
        """The series as OpenMetrics carries it: spans of consecutive buckets and delta-encoded counts."""
        with self._lock:
            count, total, zero, buckets = self.count, self.sum, self.zero, sorted(self.positive.items())
        spans: list[BucketSpan] = []
        deltas: list[int] = []
        previous_index, previous_count = None, 0
        for index, hits in buckets:
            if previous_index is not None and index == previous_index + 1:
                spans[-1] = BucketSpan(spans[-1].offset, spans[-1].length + 1)
            else:
                offset = index if previous_index is None else index - previous_index - 1
                spans.append(BucketSpan(offset, 1))
            deltas.append(hits - previous_count)
            previous_index, previous_count = index, hits
        return NativeValue(
            count_value=count,
            sum_value=total,
            schema=SCHEMA,
            zero_threshold=ZERO_THRESHOLD,
            zero_count=zero,
            pos_spans=spans or None,
            pos_deltas=deltas or None,
        )


class NativeHistogram(Histogram):
    """A classic Histogram that also keeps native buckets for each of its series."""

    def _metric_init(self) -> None:
        super()._metric_init()
        self._native = NativeBuckets()

    def observe(self, amount: float, exemplar: dict[str, str] | None = None) -> None:
        super().observe(amount, exemplar)
        self._native.observe(amount)

    def native_samples(self) -> Iterator[Sample]:
        """One sample per series, carrying its native histogram."""
        series: Iterable[tuple[Sequence[str], Any]] = [((), self)]
        if self._labelnames:
            with self._lock:
                series = list(self._metrics.items())
        for values, child in series:
            labels = dict(zip(self._labelnames, values, strict=True))
            yield Sample(self._name, labels, 0.0, None, None, child._native.value())


def with_native_samples(registry: Collector, histograms: Iterable[NativeHistogram]) -> Collector:
    """``registry`` as an OpenMetrics 2.0 scrape sees it: each native histogram's series gets its
    native sample right before its classic ``_bucket``/``_count``/``_sum`` lines."""
    return _WithNativeSamples(registry, {histogram._name: histogram for histogram in histograms})


class _WithNativeSamples:
    def __init__(self, registry: Collector, by_name: dict[str, NativeHistogram]) -> None:
        self.registry, self.by_name = registry, by_name

    def collect(self) -> Iterator[Any]:
        for family in self.registry.collect():
            histogram = self.by_name.get(family.name)
            if histogram is not None:
                family.samples = _native_first(list(histogram.native_samples()), family.samples)
            yield family


def _native_first(native: list[Sample], classic: list[Sample]) -> list[Sample]:
    def series(sample: Sample) -> tuple[tuple[str, str], ...]:
        return tuple(sorted((k, v) for k, v in sample.labels.items() if k != "le"))

    pending = {series(sample): sample for sample in native}
    ordered: list[Sample] = []
    for sample in classic:
        head = pending.pop(series(sample), None)
        if head is not None:
            ordered.append(head)
        ordered.append(sample)
    return ordered
