"""Triton's perf_analyzer drives the real server over both protocols and must see zero errors.

Bounded: each measurement is three 0.5 s windows, and one `mcp serve --workers 2` serves both
protocols' runs of the workers test (module-scoped: it was started once per protocol)."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator

import httpx
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


@pytest.fixture(scope="module")
def two_workers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """`mcp serve --workers 2` of the MLP: (http, grpc) host:port."""
    home = tmp_path_factory.mktemp("workers")
    with mcp_serve_workers(home / "home", mlp_model(home / "mlp.onnx"), workers=2) as addresses:
        yield addresses


def run_perf_analyzer(tool: str, *args: str) -> str:
    """One bounded perf_analyzer measurement: three 0.5 s windows, no stability loop (this machine is
    too noisy for one). Time windows, not --request-count: perf_analyzer 2.48 sometimes never exits
    in that mode after every answer has arrived (see docs/notebook/benchmarks.md)."""
    command = [tool, *args, "--measurement-interval", "500", "--stability-percentage", "999"]
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
    stats = server.plane.models.get("ocr-cls").stats
    assert stats.fail.count == 0
    assert stats.success.count > 0


def test_perf_analyzer_batched_requests(perf_analyzer: str, server: BackgroundServer) -> None:
    output = run_perf_analyzer(perf_analyzer, "-m", "mlp", "-u", server.http_url, "-b", "1")
    assert "throughput" in output and "error" not in output.lower(), output


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_perf_analyzer_drives_several_workers(perf_analyzer: str, two_workers: tuple[str, str], protocol: str) -> None:
    """perf_analyzer's before/after statistics may come from different workers: they must add up
    (it used to fail with "failed to find the requested model version")."""
    http, grpc = two_workers
    url = http if protocol == "http" else grpc
    output = run_perf_analyzer(perf_analyzer, "-m", "mlp", "-i", protocol, "-u", url, "--concurrency-range", "8")
    totals = set()
    for _ in range(4):  # fresh connections: either worker may answer, the sum is the same
        with httpx.Client() as fresh:
            (stats,) = fresh.get(f"http://{http}/v2/models/mlp/stats").json()["model_stats"]
        totals.add(stats["inference_stats"]["success"]["count"])
    assert "error" not in output.lower(), output
    served = re.search(r"Server:\s+Inference count: (\d+)", output)
    assert served and int(served.group(1)) > 0, output
    (total,) = totals
    assert total > 0
