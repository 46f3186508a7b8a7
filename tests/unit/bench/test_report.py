"""Report math: nearest-rank percentiles, throughput, errors by code, CSV and JSON round trips."""

from __future__ import annotations

import csv
import io
import json

import pytest

from mcp2026ai.bench.load import Samples
from mcp2026ai.bench.report import BenchReport, percentile, summarize, table, to_csv, to_json


@pytest.mark.parametrize(
    ("p", "expected"), [(50, 50.0), (90, 90.0), (95, 95.0), (99, 99.0), (100, 100.0), (0.5, 1.0), (99.5, 100.0)]
)
def test_nearest_rank_percentiles_of_1_to_100(p: float, expected: float) -> None:
    assert percentile([float(v) for v in range(1, 101)], p) == expected


def test_percentile_edges() -> None:
    assert percentile([], 99) == 0.0
    assert percentile([7.0], 50) == 7.0
    assert percentile([1.0, 2.0], 50) == 1.0  # rank ceil(0.5 * 2) = 1
    assert percentile([1.0, 2.0], 51) == 2.0
    with pytest.raises(ValueError, match="outside"):
        percentile([1.0], 0)


def _samples() -> Samples:
    samples = Samples(started_ns=1_000_000_000, finished_ns=3_000_000_000, sent=13)
    for ms in range(1, 11):  # 10 successes of 1..10 ms
        samples.record("200", ms * 1_000_000)
    samples.record("503", 5_000_000)
    samples.record("503", 6_000_000)
    samples.record("TIMEOUT", 30_000_000_000)
    return samples


def test_summarize_counts_only_successes_in_latency_and_throughput() -> None:
    report = summarize(_samples(), model="m", protocol="http", concurrency=4, rate=None, batch_size=2)
    assert (report.sent, report.completed, report.ok, report.error_count) == (13, 13, 10, 3)
    assert report.errors == {"503": 2, "TIMEOUT": 1}
    assert report.duration_s == 2.0
    assert report.throughput_rps == 5.0
    assert report.throughput_infer_s == 10.0
    assert report.latency_ms == {"mean": 5.5, "p50": 5.0, "p90": 9.0, "p95": 10.0, "p99": 10.0, "max": 10.0}
    assert report.mode == "closed" and report.concurrency == 4


def test_client_cpu_is_reported_per_request_sent() -> None:
    common = {"model": "m", "protocol": "http", "concurrency": 4, "rate": None, "batch_size": 1}
    report = summarize(_samples(), **common, client_cpu_s=0.026)  # type: ignore[arg-type]
    assert report.client_cpu_ms_per_request == 2.0  # 26 ms over 13 requests sent
    assert summarize(Samples(), **common).client_cpu_ms_per_request == 0  # type: ignore[arg-type]


def test_open_loop_report_has_a_rate_and_no_concurrency() -> None:
    report = summarize(_samples(), model="m", protocol="grpc", concurrency=4, rate=50.0, batch_size=1)
    assert (report.mode, report.concurrency, report.rate) == ("open", None, 50.0)


def test_csv_and_json_round_trip() -> None:
    report = summarize(_samples(), model="m", protocol="http", concurrency=4, rate=None, batch_size=1)
    (row,) = list(csv.DictReader(io.StringIO(to_csv([report]))))
    assert row["model"] == "m" and row["ok"] == "10" and row["errors"] == "3"
    assert float(row["throughput_rps"]) == 5.0 and float(row["p99_ms"]) == 10.0
    assert row["errors_by_code"] == "503:2;TIMEOUT:1"
    assert BenchReport.model_validate(json.loads(to_json(report))) == report


def test_table_shows_the_figures() -> None:
    from rich.console import Console

    console = Console(width=200, record=True)
    console.print(table(summarize(_samples(), model="m", protocol="http", concurrency=4, rate=None, batch_size=1)))
    text = console.export_text()
    assert "m over http, concurrency 4" in text and "5.0" in text and "10.00" in text
