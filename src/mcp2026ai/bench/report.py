"""The figures of a bench run: throughput, latency percentiles, errors by code; table, CSV, JSON.

Percentiles use the nearest-rank definition over successful requests: the p-th percentile of n
sorted latencies is the value at rank ceil(p/100 * n). Throughput counts successful requests (and
inferences, i.e. rows: requests x batch size) per second of the run's wall time.
"""

from __future__ import annotations

import csv
import io
import json
import math
import time
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel
from rich.table import Table

from mcp2026ai.bench.load import OK_CODES, Samples

PERCENTILES = (50, 90, 95, 99)


def percentile(sorted_values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile of already sorted values (0 for none)."""
    if not sorted_values:
        return 0.0
    if not 0 < p <= 100:
        raise ValueError(f"percentile {p} is outside (0, 100]")
    rank = math.ceil(p / 100 * len(sorted_values))
    return float(sorted_values[max(rank, 1) - 1])


class BenchReport(BaseModel):
    model: str
    protocol: str
    mode: str
    concurrency: int | None
    rate: float | None
    batch_size: int
    sent: int
    completed: int
    ok: int
    errors: dict[str, int]
    duration_s: float
    throughput_rps: float
    throughput_infer_s: float
    latency_ms: dict[str, float]
    """mean, p50, p90, p95, p99, max of successful requests, in milliseconds."""
    client_cpu_ms_per_request: float = 0.0
    """CPU time (user + system, all threads) this client spent during the load, per request sent."""
    connect_s: float = 0.0
    """Seconds opening the connections took, before the load (and its clock) started."""
    started_unix: float = 0.0
    """When the load started (Unix time, seconds): lets several clients' load windows be lined up."""
    send_lag_ms: dict[str, float] = {}
    """Open loop: p50, p99 and max of how late requests left against their scheduled arrival (the
    client's own share of the latency figures, which count from the schedule); empty closed loop."""

    @property
    def error_count(self) -> int:
        return sum(self.errors.values())


def summarize(
    samples: Samples,
    *,
    model: str,
    protocol: str,
    concurrency: int | None,
    rate: float | None,
    batch_size: int,
    client_cpu_s: float = 0.0,
) -> BenchReport:
    latencies_ms = sorted(ns / 1e6 for ns in samples.latencies_ns)
    ok = len(latencies_ms)
    figures = {"mean": sum(latencies_ms) / ok if ok else 0.0}
    figures |= {f"p{p}": percentile(latencies_ms, p) for p in PERCENTILES}
    figures["max"] = latencies_ms[-1] if latencies_ms else 0.0
    seconds = samples.elapsed_s
    lags_ms = sorted(ns / 1e6 for ns in samples.send_lags_ns)
    lag_figures = (
        {"p50": percentile(lags_ms, 50), "p99": percentile(lags_ms, 99), "max": lags_ms[-1]} if lags_ms else {}
    )
    send_lag = {name: round(value, 4) for name, value in lag_figures.items()}
    return BenchReport(
        model=model,
        protocol=protocol,
        mode="open" if rate is not None else "closed",
        concurrency=None if rate is not None else concurrency,
        rate=rate,
        batch_size=batch_size,
        sent=samples.sent,
        completed=samples.completed,
        ok=ok,
        errors={code: count for code, count in sorted(samples.codes.items()) if code not in OK_CODES},
        duration_s=round(seconds, 6),
        throughput_rps=ok / seconds,
        throughput_infer_s=ok * batch_size / seconds,
        latency_ms={name: round(value, 4) for name, value in figures.items()},
        client_cpu_ms_per_request=round(client_cpu_s * 1000 / max(samples.sent, 1), 4),
        connect_s=round(samples.connecting_ns / 1e9, 6),
        started_unix=time.time() - samples.elapsed_now_s if samples.started_ns else 0.0,
        send_lag_ms=send_lag,
    )


CSV_FIELDS = (
    "model",
    "protocol",
    "mode",
    "concurrency",
    "rate",
    "batch_size",
    "sent",
    "ok",
    "errors",
    "duration_s",
    "throughput_rps",
    "throughput_infer_s",
    "mean_ms",
    "p50_ms",
    "p90_ms",
    "p95_ms",
    "p99_ms",
    "max_ms",
    "errors_by_code",
    "client_cpu_ms_per_request",
)


def csv_row(report: BenchReport) -> dict[str, Any]:
    row: dict[str, Any] = report.model_dump(include=set(CSV_FIELDS) & set(BenchReport.model_fields))
    row["errors"] = report.error_count
    row["throughput_rps"] = round(report.throughput_rps, 3)
    row["throughput_infer_s"] = round(report.throughput_infer_s, 3)
    row |= {f"{name}_ms": value for name, value in report.latency_ms.items()}
    row["errors_by_code"] = ";".join(f"{code}:{count}" for code, count in report.errors.items())
    return row


def to_csv(reports: Sequence[BenchReport]) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=CSV_FIELDS, lineterminator="\n")
    writer.writeheader()
    for report in reports:
        writer.writerow(csv_row(report))
    return out.getvalue()


def to_json(report: BenchReport) -> str:
    return json.dumps(report.model_dump(), indent=2) + "\n"


def table(report: BenchReport) -> Table:
    load = f"concurrency {report.concurrency}" if report.mode == "closed" else f"rate {report.rate:g}/s"
    title = f"{report.model} over {report.protocol}, {load}, batch {report.batch_size}"
    result = Table(title=title, caption="latencies in ms", show_header=True, header_style="bold")
    for column in ("ok", "errors", "req/s", "infer/s", "p50", "p90", "p95", "p99", "max"):
        result.add_column(column, justify="right")
    figures = report.latency_ms
    result.add_row(
        str(report.ok),
        str(report.error_count),
        f"{report.throughput_rps:.1f}",
        f"{report.throughput_infer_s:.1f}",
        *(f"{figures[name]:.2f}" for name in ("p50", "p90", "p95", "p99", "max")),
    )
    return result


def errors_table(report: BenchReport) -> Table | None:
    if not report.errors:
        return None
    result = Table(title="errors by code", show_header=True, header_style="bold")
    result.add_column("code")
    result.add_column("count", justify="right")
    for code, count in report.errors.items():
        result.add_row(code, str(count))
    return result
