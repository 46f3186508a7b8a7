"""`mcp bench` / `mcp-bench` against the real server on loopback, over HTTP and gRPC."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcp2026ai.bundled import bundled_model_path
from mcp2026ai.registry import ModelRegistry
from mcp2026ai.testing import BackgroundServer
from tests.support import REPO_ROOT
from tests.support.cli import run_main
from tests.support.models import mlp_model

pytestmark = pytest.mark.timeout(180)


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> ModelRegistry:
    registry = ModelRegistry(tmp_path_factory.mktemp("bench-home"))
    registry.register("ocr-cls", bundled_model_path("ocr-cls"))
    registry.register("mlp", mlp_model(tmp_path_factory.mktemp("bench-models") / "mlp.onnx"))
    return registry


@pytest.fixture(scope="module")
def server(models: ModelRegistry) -> Iterator[BackgroundServer]:
    with BackgroundServer(models, ["ocr-cls", "mlp"]) as running:
        yield running


def _url(server: BackgroundServer, protocol: str) -> str:
    return f"http://{server.http_url}" if protocol == "http" else server.grpc_url


def _bench(args: list[str], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> str:
    outcome = run_main(["bench", *args], capsys, monkeypatch)
    assert outcome.code == 0, outcome.err
    return outcome.out


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_closed_loop_csv_zero_errors(
    server: BackgroundServer, protocol: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    stats = server.plane.models.get("mlp").stats
    before = stats.success.count
    out = _bench(
        ["-m", "mlp", "-u", _url(server, protocol), "-i", protocol, "-c", "4", "-n", "200", "--output-format", "csv"],
        capsys,
        monkeypatch,
    )
    (row,) = list(csv.DictReader(io.StringIO(out)))
    assert (row["model"], row["protocol"], row["mode"], row["concurrency"]) == ("mlp", protocol, "closed", "4")
    assert (row["sent"], row["ok"], row["errors"], row["errors_by_code"]) == ("200", "200", "0", "")
    assert float(row["throughput_rps"]) > 0
    assert 0 < float(row["p50_ms"]) <= float(row["p99_ms"]) <= float(row["max_ms"])
    assert float(row["client_cpu_ms_per_request"]) > 0  # measured with the server in this process: not its own cost
    assert stats.success.count - before == 201  # every request, plus the check request sent before the load


def test_json_tensors_open_loop_over_grpc_to_a_json_file(
    server: BackgroundServer, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "report.json"
    args = ["-m", "mlp", "-u", server.grpc_url, "-i", "grpc", "--json", "--rate", "300", "-n", "60",
            "--output-format", "json", "-o", str(target)]  # fmt: skip
    before = time.time()
    assert _bench(args, capsys, monkeypatch) == ""
    report = json.loads(target.read_text())
    assert (report["mode"], report["rate"], report["ok"], report["errors"]) == ("open", 300.0, 60, {})
    # when the load started (after connecting), so that several clients' windows can be lined up
    assert before < report["started_unix"] < time.time() and report["connect_s"] > 0


def test_json_tensors_over_http_and_batched_ocr_requests(
    server: BackgroundServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    out = _bench(["-m", "mlp", "-u", server.http_url, "--json", "-c", "2", "-n", "40", "--output-format", "json"],
                 capsys, monkeypatch)  # fmt: skip
    assert json.loads(out)["ok"] == 40
    args = ["-m", "ocr-cls", "-u", server.http_url, "--shape", "x:3,48,192", "-b", "2", "-n", "10",
            "--output-format", "json"]  # fmt: skip
    report = json.loads(_bench(args, capsys, monkeypatch))
    assert report["ok"] == 10 and report["batch_size"] == 2
    assert report["throughput_infer_s"] == pytest.approx(2 * report["throughput_rps"])


def test_table_output(
    server: BackgroundServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    out = _bench(["-m", "mlp", "-u", server.http_url, "-n", "5"], capsys, monkeypatch)
    assert "mlp over http, concurrency 1" in out


def test_a_refused_request_stops_the_bench_before_the_load(
    server: BackgroundServer, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    stats = server.plane.models.get("mlp").stats
    before = stats.success.count + stats.fail.count
    outcome = run_main(
        ["bench", "-m", "mlp", "-u", server.http_url, "-n", "50", "-H", "x-sla-class:gold"], capsys, monkeypatch
    )
    assert outcome.code == 2
    assert "the server refused the bench's request" in outcome.err and "unknown SLA class 'gold'" in outcome.err
    assert stats.success.count + stats.fail.count - before <= 1  # the check request only, not 50 refusals


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-m", "ocr-cls"], "input 'x' has dynamic dimensions"),
        ([], "--model is required: the server has 2 ready models (mlp, ocr-cls)"),
        (["-m", "nope"], "--model 'nope'"),
        (["-m", "mlp", "-c", "0"], "-c/--concurrency"),
        (["-m", "mlp", "-i", "udp"], "-i 'udp'"),
    ],
)
def test_usage_errors_are_one_line(
    server: BackgroundServer,
    args: list[str],
    message: str,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    outcome = run_main(["bench", "-u", server.http_url, *args], capsys, monkeypatch)
    assert outcome.code == 2
    assert message in outcome.err and len(outcome.err.strip().splitlines()) == 1, outcome.err


def test_unreachable_server(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    outcome = run_main(["bench", "-u", "127.0.0.1:1", "-m", "mlp"], capsys, monkeypatch)
    assert outcome.code == 2 and "cannot reach" in outcome.err


def test_mcp_bench_console_script_short_form(tmp_path: Path, models: ModelRegistry) -> None:
    """The issue's short form: no --model (the only one served), an infer URL, CSV on stdout."""
    scripts = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["mcp-bench"] == "mcp2026ai.cli.bench:main"
    with BackgroundServer(models, ["mlp"]) as single:
        entry = "import sys; from mcp2026ai.cli.bench import main; sys.exit(main())"  # what the script runs
        short_form = ["-c", "8", "-n", "100", "-u", f"http://{single.http_url}/infer", "--output-format", "csv"]
        command = [sys.executable, "-c", entry, *short_form]
        env = {**os.environ, "PYTHONPATH": str(REPO_ROOT / "src")}
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env, check=False)
    assert done.returncode == 0, done.stderr
    (row,) = list(csv.DictReader(io.StringIO(done.stdout)))
    assert (row["model"], row["concurrency"], row["ok"], row["errors"]) == ("mlp", "8", "100", "0")
