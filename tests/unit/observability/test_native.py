"""Native histogram buckets: Prometheus's index rule, span/delta encoding, exposition order."""

from __future__ import annotations

import math

import pytest
from prometheus_client import CollectorRegistry
from prometheus_client.openmetrics.exposition import generate_latest

from mcp2026ai.observability.native import (
    SCHEMA,
    NativeBuckets,
    NativeHistogram,
    bucket_index,
    with_native_samples,
)


@pytest.mark.parametrize(
    ("value", "index"),
    [(1.0, 0), (2.0, 8), (0.5, -8), (1.5, 5), (math.nextafter(1.0, 2.0), 1), (0.0123, -50), (0.0124, -50)],
)
def test_bucket_index_follows_prometheus(value: float, index: int) -> None:
    assert bucket_index(value) == index
    base = 2 ** (2.0**-SCHEMA)
    assert base ** (index - 1) < value <= base**index * (1 + 1e-12)  # bucket i holds (base**(i-1), base**i]


def test_spans_and_deltas_encode_the_sparse_buckets() -> None:
    buckets = NativeBuckets()
    for value in (0.0123, 0.0124, 0.5, 1.0, 1.05, 0.0):  # buckets -50 -50 -8 0 1, and the zero bucket
        buckets.observe(value)
    native = buckets.value()
    assert (native.count_value, native.zero_count, native.schema) == (6, 1, SCHEMA)
    assert native.sum_value == pytest.approx(2.5747)
    assert native.pos_spans == [(-50, 1), (41, 1), (7, 2)]  # -50; -8 = -50 + 1 + 41; 0 = -8 + 1 + 7, then 1
    assert native.pos_deltas == [2, -1, 0, 0]  # counts 2, 1, 1, 1


def test_an_empty_series_has_no_spans() -> None:
    native = NativeBuckets().value()
    assert (native.count_value, native.pos_spans, native.pos_deltas) == (0, None, None)


def test_openmetrics_2_puts_each_native_line_before_its_classic_lines() -> None:
    registry = CollectorRegistry()
    latency = NativeHistogram("lat_seconds", "Latency.", ["model"], buckets=(0.01, 0.1), registry=registry)
    latency.labels(model="a").observe(0.05)
    latency.labels(model="b").observe(0.5)
    text = generate_latest(with_native_samples(registry, [latency]), version="2.0.0").decode()
    lines = [line for line in text.splitlines() if line.startswith("lat_seconds")]
    assert lines[0].startswith('lat_seconds{model="a"} {count:1,sum:0.05,schema:3')
    assert lines[1].startswith('lat_seconds_bucket{le="0.01",model="a"}')
    native_b = next(i for i, line in enumerate(lines) if line.startswith('lat_seconds{model="b"}'))
    assert lines[native_b + 1].startswith('lat_seconds_bucket{le="0.01",model="b"}')
    assert "{count:" not in generate_latest(registry, version="1.0.0").decode()  # classic scrapes stay classic
