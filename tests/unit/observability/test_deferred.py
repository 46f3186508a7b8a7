"""Deferred observations reach their series with the same buckets and values as direct ones."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from prometheus_client import CollectorRegistry, Gauge, Histogram

from mcp2026ai.observability import deferred
from mcp2026ai.observability.deferred import PendingHistogram, StaleGauges
from mcp2026ai.observability.native import NativeHistogram

VALUES = [0.0, 0.0004, 0.0005, 0.003, 0.003, 0.7, 2.0, 50.0]
BUCKETS = (0.0005, 0.001, 0.01, 1.0, 5.0)


@pytest.fixture
def registry() -> Iterator[CollectorRegistry]:
    registry = CollectorRegistry(auto_describe=True)
    registry.register(deferred.FLUSH_ON_COLLECT)
    yield registry
    deferred.flush_all()


def samples(registry: CollectorRegistry, name: str) -> dict[tuple[str, str], float]:
    return {
        (sample.name, sample.labels.get("le", "")): sample.value
        for family in registry.collect()
        if family.name == name
        for sample in family.samples
        if sample.labels.get("series") == "s" and not sample.name.endswith("_created")
    }


def test_pending_histogram_equals_direct_observations(registry: CollectorRegistry) -> None:
    direct = Histogram("direct", "", ["series"], buckets=BUCKETS, registry=registry)
    later = Histogram("later", "", ["series"], buckets=BUCKETS, registry=registry)
    pending = PendingHistogram(later.labels("s"))
    for value in VALUES:
        direct.labels("s").observe(value)
        pending.observe(value)
    assert registry.get_sample_value("later_count", {"series": "s"}) == len(VALUES)  # a collect flushes
    expected = {(name.replace("direct", "later"), le): v for (name, le), v in samples(registry, "direct").items()}
    assert samples(registry, "later") == expected


def test_native_buckets_are_counted_too(registry: CollectorRegistry) -> None:
    direct = NativeHistogram("ndirect", "", ["series"], buckets=BUCKETS, registry=registry)
    later = NativeHistogram("nlater", "", ["series"], buckets=BUCKETS, registry=registry)
    pending = PendingHistogram(later.labels("s"))
    for value in VALUES:
        direct.labels("s").observe(value)
        pending.observe(value)
    deferred.flush_all()
    assert later.labels("s")._native.value() == direct.labels("s")._native.value()


def test_nothing_reaches_the_series_before_a_flush_and_a_flush_empties_the_pending() -> None:
    registry = CollectorRegistry()  # no flushing collector: read the value itself
    histogram = Histogram("quiet", "", buckets=BUCKETS, registry=registry)
    pending = PendingHistogram(histogram)
    pending.observe(0.3)
    assert histogram._sum.get() == 0
    deferred.flush_all()
    deferred.flush_all()  # twice: nothing is added twice
    assert histogram._sum.get() == pytest.approx(0.3)


def test_stale_gauges_read_live_state_at_the_flush(registry: CollectorRegistry) -> None:
    gauge = Gauge("depth", "", ["series"], registry=registry)
    state = {"s": 0}
    gauges = StaleGauges({"s": gauge.labels("s")}, lambda key: state[key])
    state["s"] = 3
    gauges.mark()
    state["s"] = 5  # changed again before anyone looked: the flush reads what is true then
    assert registry.get_sample_value("depth", {"series": "s"}) == 5


def test_without_deferring_each_observation_lands_at_once() -> None:
    registry = CollectorRegistry()
    histogram = Histogram("direct_mode", "", buckets=BUCKETS, registry=registry)
    pending = PendingHistogram(histogram)
    deferred.defer(False)
    try:
        pending.observe(0.002)
        pending.observe(0.004)
        assert histogram._sum.get() == pytest.approx(0.006)
    finally:
        deferred.defer(True)
