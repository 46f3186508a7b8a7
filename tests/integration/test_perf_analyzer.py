"""Triton's perf_analyzer drives the real server over both protocols and must see zero errors."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp2026ai.registry import ModelRegistry
from mcp2026ai.testing import BackgroundServer
from support.models import mlp_model

from .conftest import mcp_serve_workers, venv_tool

pytestmark = pytest.mark.timeout(240)


@pytest.fixture(scope="module")
def perf_analyzer() -> str:
    tool = venv_tool("perf_analyzer")
    if tool is None:
        pytest.fail("perf_analyzer is not installed: run `make test` (scripts/install-perf-analyzer.sh)")
    return tool


@pytest.fixture()
def server(registry: ModelRegistry) -> Iterator[BackgroundServer]:
    with BackgroundServer(registry, ["ocr-cls", "mlp"]) as running:
        yield running


def run_perf_analyzer(tool: str, *args: str) -> str:
    command = [
        tool,
        *args,
        "--request-count",
        "150",  # one bounded measurement: this shared machine is too noisy for stability
    ]
    if "--concurrency-range" not in args:
        command += ["--concurrency-range", "2"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=180)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    return output


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_perf_analyzer_zero_errors(perf_analyzer: str, server: BackgroundServer, protocol: str) -> None:
    url = server.http_url if protocol == "http" else server.grpc_url
    output = run_perf_analyzer(perf_analyzer, "-m", "ocr-cls", "-i", protocol, "-u", url, "--shape", "x:3,48,192")
    throughput = re.search(r"Concurrency: 2, throughput: ([\d.]+) infer/sec", output)
    assert throughput and float(throughput.group(1)) > 0, output
    assert "error" not in output.lower(), output
    stats = server.plane.repository.get("ocr-cls").stats
    assert stats.fail.count == 0
    assert stats.success.count > 0


def test_perf_analyzer_batched_requests(perf_analyzer: str, server: BackgroundServer) -> None:
    output = run_perf_analyzer(perf_analyzer, "-m", "mlp", "-u", server.http_url, "-b", "1")
    assert "throughput" in output and "error" not in output.lower(), output


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_perf_analyzer_drives_several_workers(perf_analyzer: str, tmp_path: Path, protocol: str) -> None:
    """perf_analyzer's before/after statistics may come from different workers: they must add up."""
    with mcp_serve_workers(tmp_path / "home", mlp_model(tmp_path / "mlp.onnx"), workers=2) as (http, grpc):
        output = run_perf_analyzer(
            perf_analyzer,
            "-m",
            "mlp",
            "-i",
            protocol,
            "-u",
            http if protocol == "http" else grpc,
            "--concurrency-range",
            "8",
        )
    assert "error" not in output.lower(), output
    served = re.search(r"Server:\s+Inference count: (\d+)", output)
    assert served and int(served.group(1)) >= 150, output
