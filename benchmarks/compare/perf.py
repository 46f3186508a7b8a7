"""Run Triton's perf_analyzer once (bounded request count) and measure from its per-request export.

perf_analyzer's own "Throughput" in ``--request-count`` mode divides by a measurement window that
is rounded up to whole seconds (300 requests done in 0.31 s read as 299 infer/s), so the figures
here come from ``--profile-export-file``: every request's send and response timestamps.
Throughput = requests / (last response - first send); latency percentiles over all requests.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass(frozen=True)
class PerfResult:
    throughput: float
    p50_ms: float
    p90_ms: float
    p99_ms: float
    requests: int


class PerfError(RuntimeError):
    """perf_analyzer failed or printed errors; the message carries its last lines."""


class PerfHang(PerfError):
    """perf_analyzer did not exit within its time limit."""


def find_perf_analyzer() -> str:
    candidate = Path(sys.executable).parent / "perf_analyzer"
    found = str(candidate) if candidate.exists() else shutil.which("perf_analyzer")
    if found is None:
        raise PerfError("perf_analyzer is not installed: run scripts/install-perf-analyzer.sh")
    return found


def perf_command(
    tool: str,
    model: str,
    url: str,
    protocol: str,
    concurrency: int,
    requests: int,
    shape: str,
    http_format: str = "json",
) -> list[str]:
    """The same command for every server; over HTTP, tensors go as ``http_format`` (json or binary)."""
    command = [
        tool,
        "-m",
        model,
        "-u",
        url,
        "-i",
        protocol,
        "--concurrency-range",
        str(concurrency),
        "--request-count",
        str(requests),  # one bounded measurement, no stability loop (noisy shared host)
        "--shape",
        shape,
        "--input-data",
        "zero",  # random FP32 bytes include NaN/inf, which are not JSON: every server would refuse them
    ]
    if protocol == "http":
        command += ["--input-tensor-format", http_format, "--output-tensor-format", http_format]
    return command


def run_perf(command: list[str], timeout_s: float) -> PerfResult:
    with tempfile.TemporaryDirectory(prefix="perf-") as tmp:
        export = Path(tmp) / "export.json"
        try:
            done = subprocess.run(
                [*command, "--profile-export-file", str(export)], capture_output=True, text=True, timeout=timeout_s
            )
        except subprocess.TimeoutExpired:
            raise PerfHang(f"perf_analyzer ran past {timeout_s:.0f} s") from None
        output = done.stdout + done.stderr
        if done.returncode != 0 or "error" in output.lower() or not export.exists():
            tail = " | ".join(line.strip() for line in output.strip().splitlines()[-4:])
            raise PerfError(f"perf_analyzer exit {done.returncode}: {tail}")
        return parse_export(export.read_bytes())


def parse_export(raw: bytes) -> PerfResult:
    """Figures from a perf_analyzer profile export (its outputs may hold raw bytes: decoded leniently)."""
    document = json.loads(raw.decode("utf-8", "replace"))
    requests = [r for experiment in document["experiments"] for r in experiment["requests"] if r["response_timestamps"]]
    if not requests:
        raise PerfError("perf_analyzer exported no completed request")
    sent = np.array([r["timestamp"] for r in requests], dtype=np.int64)
    done = np.array([r["response_timestamps"][-1] for r in requests], dtype=np.int64)
    latency_ms = (done - sent) / 1e6
    span_s = (done.max() - sent.min()) / 1e9
    p50, p90, p99 = np.percentile(latency_ms, [50, 90, 99])
    return PerfResult(
        throughput=float(len(requests) / span_s),
        p50_ms=float(p50),
        p90_ms=float(p90),
        p99_ms=float(p99),
        requests=len(requests),
    )
