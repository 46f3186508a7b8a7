"""Graceful shutdown and the `mcp serve` command as a real process."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

import httpx
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from prometheus_client.openmetrics.parser import text_string_to_metric_families as openmetrics_families
from prometheus_client.parser import text_string_to_metric_families

from mcp2026ai.registry import ModelRegistry
from mcp2026ai.server.config import ServerConfig
from mcp2026ai.testing import BackgroundServer
from support.models import mlp_model, slow_matmul_model

from .conftest import listening_line, mcp_command, mcp_serve_workers

pytestmark = pytest.mark.timeout(180)


def test_shutdown_drains_in_flight_requests(tmp_path: Path) -> None:
    registry = ModelRegistry(tmp_path / "home")
    registry.register("slow", slow_matmul_model(tmp_path / "slow.onnx"))
    server = BackgroundServer(registry, ["slow"], ServerConfig(http_port=0, grpc_port=0, drain_timeout_s=30))
    server.__enter__()
    x = np.ones((16, 384), np.float32)
    results: list[int] = []

    def call() -> None:
        client = httpclient.InferenceServerClient(server.http_url, network_timeout=60)
        tensor = httpclient.InferInput("x", list(x.shape), "FP32")
        tensor.set_data_from_numpy(x)
        results.append(client.infer("slow", [tensor]).as_numpy("y").shape[0])

    workers = [threading.Thread(target=call) for _ in range(4)]
    for worker in workers:
        worker.start()
    deadline = time.monotonic() + 30
    served = server.plane.models.get("slow")
    accepted = lambda: served.stats.queue.count + served.executor.backlog  # noqa: E731 - dispatched + queued
    while accepted() < 4 and time.monotonic() < deadline:
        time.sleep(0.002)
    port = server.http_port
    server.stop()
    for worker in workers:
        worker.join(60)
    assert results == [16, 16, 16, 16], "every accepted request completes during the drain"
    with pytest.raises(httpx.TransportError):
        httpx.get(f"http://127.0.0.1:{port}/v2/health/live", timeout=2)


def test_requests_during_drain_get_503(tmp_path: Path) -> None:
    registry = ModelRegistry(tmp_path / "home")
    registry.register("mlp", mlp_model(tmp_path / "mlp.onnx"))
    with BackgroundServer(registry, ["mlp"]) as server:
        server.plane.stop_accepting()
        response = httpx.post(
            f"http://{server.http_url}/v2/models/mlp/infer",
            json={"inputs": [{"name": "x", "shape": [1, 16], "datatype": "FP32", "data": [0] * 16}]},
        )
        assert response.status_code == 503
        assert response.json() == {"error": "server is shutting down"}
        assert httpx.get(f"http://{server.http_url}/v2/health/ready").status_code == 503


class ShutdownOutcomes:
    """What each request sent around a SIGTERM got: an answer, a refusal, or neither (a reset, a
    connection closed without a response, a cancelled call)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.counts: dict[str, int] = {}
        self.neither: list[str] = []

    def add(self, kind: str, detail: str = "") -> None:
        with self.lock:
            self.counts[kind] = self.counts.get(kind, 0) + 1
            if kind == "neither":
                self.neither.append(detail)


def _http_client_loop(port: int, outcomes: ShutdownOutcomes, done: threading.Event) -> None:
    body = {"inputs": [{"name": "x", "shape": [1, 16], "datatype": "FP32", "data": [0.5] * 16}]}
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10) as client:  # keep-alive pool
        while not done.is_set():
            try:
                status = client.post("/v2/models/mlp/infer", json=body).status_code
                outcomes.add("answered" if status == 200 else "refused")
            except httpx.ConnectError:
                outcomes.add("refused")
                time.sleep(0.01)
            except httpx.HTTPError as exc:
                outcomes.add("neither", f"http {type(exc).__name__}: {exc}")


def _grpc_client_loop(port: int, outcomes: ShutdownOutcomes, done: threading.Event) -> None:
    client = grpcclient.InferenceServerClient(f"127.0.0.1:{port}")
    tensor = grpcclient.InferInput("x", [1, 16], "FP32")
    tensor.set_data_from_numpy(np.full((1, 16), 0.5, np.float32))
    while not done.is_set():
        try:
            client.infer("mlp", [tensor])
            outcomes.add("answered")
        except Exception as exc:  # tritonclient raises InferenceServerException with the status text  # noqa: BLE001
            if "UNAVAILABLE" in str(exc):
                outcomes.add("refused")
                time.sleep(0.01)
            elif "CANCELLED" in str(exc):
                outcomes.add("cancelled")  # see the test's docstring
            else:
                outcomes.add("neither", f"grpc: {exc}")


def test_shutdown_under_load_answers_or_refuses_every_request(tmp_path: Path) -> None:
    """Keep-alive HTTP clients and gRPC clients keep sending through a SIGTERM: each request gets an
    answer or a refusal (503, UNAVAILABLE, connection refused), never a reset (uvicorn cut idle
    keep-alive connections that a request was already on its way to: 2-6 per run before).

    Known residue, gRPC only: a call whose stream reaches gRPC core after its shutdown began but before
    the client has read the server's GOAWAY is cancelled by gRPC core itself (CANCELLED; 0-1 per
    shutdown under this load, in about a third of the runs). Bounded here, not hidden."""
    http_port, grpc_port = free_port(), free_port()
    env = {**os.environ, "MCP_HOME": str(tmp_path / "home")}
    model = mlp_model(tmp_path / "mlp.onnx")
    command = [*mcp_command(), "serve", "--model-path", str(model), "--port", str(http_port)]
    command += ["--grpc-port", str(grpc_port), "--no-policy", "--drain-timeout", "5"]
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert listening_line(process).startswith("listening")
    outcomes, done = ShutdownOutcomes(), threading.Event()
    loops = [(_http_client_loop, http_port)] * 6 + [(_grpc_client_loop, grpc_port)] * 3
    threads = [threading.Thread(target=loop, args=(port, outcomes, done)) for loop, port in loops]
    for thread in threads:
        thread.start()
    try:
        time.sleep(1.0)
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)
        time.sleep(0.3)  # clients meet the closed ports
    finally:
        done.set()
        for thread in threads:
            thread.join(timeout=30)
    assert process.returncode == 0
    assert outcomes.counts.get("answered", 0) > 100 and outcomes.counts.get("refused", 0) > 0
    assert outcomes.neither == [], (outcomes.counts, outcomes.neither)
    assert outcomes.counts.get("cancelled", 0) <= 2, outcomes.counts


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_mcp_serve_registers_model_path_and_serves(tmp_path: Path) -> None:
    env = {**os.environ, "MCP_HOME": str(tmp_path / "home")}
    model = mlp_model(tmp_path / "tiny-mlp.onnx")
    process = subprocess.Popen(
        [*mcp_command(), "serve", "--model-path", str(model), "--port", "0", "--grpc-port", "0"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = listening_line(process)
        match = re.search(r"http=(\d+) grpc=(\d+) models=tiny-mlp:1\.0\.0", line)
        assert match, line + (process.stderr.read() if process.poll() is not None else "")
        http_port, grpc_port = match.groups()
        x = np.random.default_rng(0).random((3, 16), dtype=np.float32)
        client = grpcclient.InferenceServerClient(f"127.0.0.1:{grpc_port}")
        tensor = grpcclient.InferInput("x", [3, 16], "FP32")
        tensor.set_data_from_numpy(x)
        probs = client.infer("tiny-mlp", [tensor]).as_numpy("probs")
        np.testing.assert_allclose(probs.sum(axis=1), 1.0, rtol=1e-5)
        assert httpx.get(f"http://127.0.0.1:{http_port}/v2/health/ready").status_code == 200
    finally:
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert "server stopped" in out
    assert "Traceback" not in err
    listed = subprocess.run([*mcp_command(), "model", "list", "--json"], env=env, capture_output=True, text=True)
    assert '"name": "tiny-mlp"' in listed.stdout
    trace = subprocess.run(
        [*mcp_command(), "policy", "trace", "--model", "tiny-mlp", "--last", "1h", "--json"],
        env=env,
        capture_output=True,
        text=True,
    )
    assert trace.returncode == 0, trace.stderr
    assert '"trigger": "serve"' in trace.stdout  # serve measured and stored the plan it runs


def test_mcp_serve_unknown_model_is_one_line_error(tmp_path: Path) -> None:
    env = {**os.environ, "MCP_HOME": str(tmp_path / "home")}
    done = subprocess.run(
        [*mcp_command(), "serve", "--name", "ghost", "--port", "0", "--grpc-port", "0"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "unknown model 'ghost'" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("option", "extra"),
    [
        ("--port", []),
        ("--grpc-port", []),
        ("--grpc-port", ["--grpc-acceptors", "1"]),
        ("--grpc-port", ["--workers", "2"]),
    ],
)
def test_mcp_serve_refuses_a_port_in_use_in_one_line(tmp_path: Path, option: str, extra: list[str]) -> None:
    """Also when the holder set SO_REUSEPORT (as another `mcp serve --workers N` does): workers share
    their ports that way, and would otherwise take half of its connections silently."""
    with socket.socket() as holder:
        holder.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        taken = str(holder.getsockname()[1])
        ports = {"--port": "0", "--grpc-port": "0", option: taken}
        done = subprocess.run(
            [*mcp_command(), "serve", "--model-path", str(mlp_model(tmp_path / "mlp.onnx"))]
            + [item for pair in ports.items() for item in pair]
            + extra,
            env={**os.environ, "MCP_HOME": str(tmp_path / "home")},
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 2, done.stderr
    assert f"cannot listen on 127.0.0.1:{taken} ({option}): Address already in use" in done.stderr
    assert "Traceback" not in done.stderr


def test_mcp_serve_with_two_workers(tmp_path: Path) -> None:
    body = {"inputs": [{"name": "x", "shape": [1, 16], "datatype": "FP32", "data": [0.5] * 16}]}
    with mcp_serve_workers(tmp_path / "home", mlp_model(tmp_path / "mlp.onnx"), workers=2) as (http, grpc_url):
        for _ in range(8):
            with httpx.Client() as fresh:  # new connections let the kernel pick either worker
                assert fresh.post(f"http://{http}/v2/models/mlp/infer", json=body).status_code == 200
        grpc = grpcclient.InferenceServerClient(grpc_url)
        assert grpc.is_model_ready("mlp")
        x = grpcclient.InferInput("x", [1, 16], "FP32")
        x.set_data_from_numpy(np.full((1, 16), 0.5, np.float32))
        for _ in range(4):
            grpc.infer("mlp", [x])
        # Statistics are the sum over both workers, whichever one answers.
        for _ in range(6):
            with httpx.Client() as fresh:
                stats = fresh.get(f"http://{http}/v2/models/mlp/stats").json()["model_stats"]
            assert [(s["name"], s["version"], s["inference_stats"]["success"]["count"]) for s in stats] == [
                ("mlp", "1", 12)
            ]
            assert stats[0]["inference_count"] == 12
        by_grpc = grpc.get_inference_statistics("mlp", as_json=True)["model_stats"][0]
        assert int(by_grpc["inference_stats"]["success"]["count"]) == 12
        # So are the Prometheus series, whichever worker is scraped.
        for _ in range(6):
            with httpx.Client() as fresh:
                scraped = fresh.get(f"http://{http}/metrics")
            assert scraped.status_code == 200
            samples = scraped_samples(scraped.text)
            assert samples.total("mcp_requests_total", model="mlp") == 12
            assert samples.total("mcp_request_duration_seconds_count", model="mlp") == 12
            assert samples.total("mcp_scheduler_batch_rows_sum", model="mlp") == 12  # rows: one per request
            assert samples.total("mcp_models_loaded") == 1  # each worker serves the one version
            assert samples.total("mcp_requests_in_flight") == 0
            assert len(samples.labelled("mcp_scheduler_queue_delay_seconds", "pid")) == 2  # one window per worker
        with httpx.Client() as fresh:
            openmetrics = fresh.get(f"http://{http}/metrics", headers={"Accept": OPENMETRICS})
        assert openmetrics.headers["content-type"].startswith("application/openmetrics-text")
        assert scraped_samples(openmetrics.text, openmetrics_format=True).total("mcp_requests_total", model="mlp") == 12


def _children(pid: int) -> list[int]:
    children = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(child) for child in children.read_text().split()] if children.exists() else []


def _alive(pid: int) -> bool:
    status = Path(f"/proc/{pid}/status")
    return status.exists() and "\nState:\tZ" not in status.read_text()


def test_sigterm_while_the_workers_start_orphans_none(tmp_path: Path) -> None:
    """The parent forwards SIGTERM from its first worker on (it used to install its handler only once
    every worker served: a signal during start-up killed it and left the workers it had started serving,
    orphaned). It exits 2 with one line, and the worker it had started ends too."""
    command = [*mcp_command(), "serve", "--model-path", str(mlp_model(tmp_path / "mlp.onnx")), "--port", "0"]
    process = subprocess.Popen(
        [*command, "--grpc-port", "-1", "--workers", "2", "--no-policy"],
        env={**os.environ, "MCP_HOME": str(tmp_path / "home")},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not _children(process.pid) and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.02)
        workers = _children(process.pid)
        assert workers, "no worker was started"
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 2, (out, err)
    assert "stopped by SIGTERM while the workers were starting" in err, err
    assert "Traceback" not in err, err
    deadline = time.monotonic() + 30
    while any(_alive(worker) for worker in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(_alive(worker) for worker in workers), "a worker outlived its parent"


OPENMETRICS = "application/openmetrics-text; version=1.0.0"


class ScrapedSamples:
    """The samples of one Prometheus text scrape, queried by name and labels."""

    def __init__(self, samples: list[tuple[str, dict[str, str], float]]) -> None:
        self.samples = samples

    def total(self, name: str, **labels: str) -> float:
        return sum(
            value
            for sample_name, sample_labels, value in self.samples
            if sample_name == name and labels.items() <= sample_labels.items()
        )

    def labelled(self, name: str, label: str) -> set[str]:
        return {labels[label] for sample_name, labels, _ in self.samples if sample_name == name and label in labels}


def scraped_samples(text: str, openmetrics_format: bool = False) -> ScrapedSamples:
    parse = openmetrics_families if openmetrics_format else text_string_to_metric_families
    return ScrapedSamples(
        [(sample.name, sample.labels, sample.value) for family in parse(text) for sample in family.samples]
    )


@pytest.mark.parametrize("round_", range(3))
def test_sigterm_with_24_requests_in_flight_answers_or_refuses_each(tmp_path: Path, round_: int) -> None:
    """Issue 38, finding 5 (issue 51, item 5: three rounds): 12 HTTP and 12 gRPC requests on a slow
    model, SIGTERM while they arrive.
    Each is answered or refused (503 / UNAVAILABLE): gRPC keeps taking calls for a moment after the gate
    closes (server/lifecycle.py ``grpc_refusal_s``), so gRPC core's shutdown finds none of them waiting
    for an acceptor to cancel (2 of 24 were CANCELLED before)."""
    http_port, grpc_port = free_port(), free_port()
    env = {**os.environ, "MCP_HOME": str(tmp_path / "home")}
    model = slow_matmul_model(tmp_path / "slow.onnx")
    command = [*mcp_command(), "serve", "--model-path", str(model), "--port", str(http_port)]
    command += ["--grpc-port", str(grpc_port), "--no-policy", "--drain-timeout", "10"]
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert listening_line(process).startswith("listening")
    x = np.ones((16, 384), np.float32)
    outcomes = ShutdownOutcomes()
    grpc_client = grpcclient.InferenceServerClient(f"127.0.0.1:{grpc_port}")
    sent = threading.Barrier(25)

    def over_http() -> None:
        client = httpclient.InferenceServerClient(f"127.0.0.1:{http_port}", network_timeout=60)
        tensor = httpclient.InferInput("x", list(x.shape), "FP32")
        tensor.set_data_from_numpy(x)
        sent.wait()
        try:
            client.infer("slow", [tensor])
            outcomes.add("answered")
        except Exception as exc:  # noqa: BLE001 - tritonclient's InferenceServerException carries the status
            refusal = "shutting down" in str(exc) or "Connection refused" in str(exc)  # 503, or a closed port
            outcomes.add("refused" if refusal else "neither", f"http: {exc}")

    def over_grpc() -> None:
        tensor = grpcclient.InferInput("x", list(x.shape), "FP32")
        tensor.set_data_from_numpy(x)
        sent.wait()
        try:
            grpc_client.infer("slow", [tensor])
            outcomes.add("answered")
        except Exception as exc:  # noqa: BLE001
            outcomes.add("refused" if "UNAVAILABLE" in str(exc) else "neither", f"grpc: {exc}")

    threads = [threading.Thread(target=over_http) for _ in range(12)]
    threads += [threading.Thread(target=over_grpc) for _ in range(12)]
    for thread in threads:
        thread.start()
    sent.wait()
    # at once: some read, some still in the sockets and in gRPC core (without the refusal window 3 of
    # the 12 gRPC calls were CANCELLED in half of the runs)
    process.send_signal(signal.SIGTERM)
    for thread in threads:
        thread.join(60)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert outcomes.neither == [], (outcomes.counts, outcomes.neither)
    assert sum(outcomes.counts.values()) == 24, outcomes.counts
    print(f"24 in flight at SIGTERM: {outcomes.counts}")
