"""`mcp serve --replicas N` on a real local Ray cluster: v2 over Ray Serve's proxy with tritonclient and
perf_analyzer, a killed replica replaced while clients keep their answers, contract autoscaling, and
Ray's own `serve status` showing the replicas.

The models are registered in the test's process (a console script's start costs seconds of CPU on two
shared cores); what each test checks is `mcp serve` on Ray."""

from __future__ import annotations

import collections
import json
import os
import re
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
import tritonclient.http as httpclient

from mcp2026ai.contract import load_contract
from mcp2026ai.deploy.ray_replica import REPLICA_HEADER
from mcp2026ai.registry import ModelRegistry
from support.models import mlp_model
from tests.support.llm import register_smollm2

from .conftest import listening_line, mcp_command, venv_tool

pytest.importorskip("ray.serve", reason="the [ray] extra")
pytestmark = pytest.mark.timeout(300)

BODY = {"inputs": [{"name": "x", "shape": [1, 16], "datatype": "FP32", "data": [0.5] * 16}]}
REPLICA_PROCESS = "ray::ServeReplica:mcp2026ai:DataPlaneReplica"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def replica_pids() -> list[int]:
    done = subprocess.run(["pgrep", "-f", REPLICA_PROCESS], capture_output=True, text=True, check=False)
    return [int(pid) for pid in done.stdout.split()]


def wait_until(condition: object, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if callable(condition) and condition():
            return
        time.sleep(0.5)
    raise AssertionError(f"timed out after {timeout_s:g} s waiting for {what}")


@contextmanager
def mcp_serve_on_ray(tmp_path: Path, *args: str, contract: str | None = None) -> Iterator[str]:
    """Register an MLP (with ``contract``), run `mcp serve --name mlp ARGS` on a fresh local Ray,
    yield its HTTP address; on leaving, SIGTERM must stop Ray Serve cleanly and leave no replica."""
    env = {**os.environ, "MCP_HOME": str(tmp_path / "home"), "RAY_USAGE_STATS_ENABLED": "0"}
    if contract is not None:
        (tmp_path / "contract.yaml").write_text(contract)
    parsed = load_contract(tmp_path / "contract.yaml") if contract is not None else None
    ModelRegistry(tmp_path / "home").register("mlp", mlp_model(tmp_path / "mlp.onnx"), contract=parsed)
    port = free_port()
    command = [*mcp_command(), "serve", "--name", "mlp", "--port", str(port), "--no-policy", *args]
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = listening_line(process)
        assert line.startswith(f"listening http={port} grpc=off models=mlp:1.0.0"), line + _stderr(process)
        yield f"127.0.0.1:{port}"
    finally:
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=90)
    assert process.returncode == 0, err
    assert "server stopped" in out and "Traceback" not in err
    wait_for_ray_to_exit()


def _stderr(process: subprocess.Popen[str]) -> str:
    if process.poll() is None:
        return ""
    return process.stderr.read() if process.stderr else ""


DASHBOARD_PORT = 8265
"""Ray's default dashboard port, where `serve status` asks: a cluster whose dashboard found it taken (a
previous test's cluster still exiting) listens elsewhere, so each test waits for it to be free again."""


def dashboard_listening() -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", DASHBOARD_PORT)) == 0


def wait_for_ray_to_exit() -> None:
    wait_until(lambda: not replica_pids(), 30, "the replicas to exit")
    wait_until(lambda: not dashboard_listening(), 30, "Ray's dashboard to exit")


def serve_status() -> str:
    """Ray's own CLI (`serve status`), authenticated with the local cluster's token; asked again for up
    to 30 s while the dashboard is still starting (it answers after the proxy does)."""
    serve = venv_tool("serve")
    assert serve is not None, "Ray's `serve` CLI is not installed"
    env = {**os.environ, "RAY_AUTH_MODE": "token"}
    deadline = time.monotonic() + 30
    while True:
        done = subprocess.run([serve, "status"], env=env, capture_output=True, text=True, timeout=60, check=False)
        if done.returncode == 0 or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert done.returncode == 0, done.stderr
    return done.stdout


def running_replicas(status: str) -> int:
    match = re.search(r"DataPlaneReplica:.*?RUNNING: (\d+)", status, re.S)
    return int(match.group(1)) if match else 0


def test_replicas_serve_v2_perf_analyzer_and_survive_a_killed_replica(tmp_path: Path) -> None:
    """One Ray cluster (starting one costs more than the checks): tritonclient, the deployment's
    statistics, perf_analyzer, Ray's own `serve status`, then a replica killed under load.

    Statistics through Ray's proxy are the sums over every replica (deploy/ray_statistics.py), whichever
    replica answers: with one replica's own counts, perf_analyzer's reads before and after a window
    could reach different replicas, and it failed ("failed to find the requested model version") when
    the second had served fewer requests. Bounded: perf_analyzer's windows are 0.5 s (three, stable at
    once), the load runs 1.5 s before the kill and 4 s after it, and Ray's `serve status` (a CLI start
    each) is asked about the replacement only once its process exists."""
    perf_analyzer = venv_tool("perf_analyzer")
    assert perf_analyzer is not None, "perf_analyzer is not installed: run `make test`"
    with mcp_serve_on_ray(tmp_path, "--replicas", "2") as address:
        wait_until(lambda: len(replica_pids()) == 2, 60, "two replica processes")
        status = serve_status()
        assert "mcp2026ai" in status and running_replicas(status) == 2, status

        client = httpclient.InferenceServerClient(address)
        assert client.is_model_ready("mlp")
        assert client.get_model_config("mlp")["max_batch_size"] >= 1
        x = httpclient.InferInput("x", [2, 16], "FP32")
        x.set_data_from_numpy(np.full((2, 16), 0.5, np.float32))
        probs = client.infer("mlp", [x]).as_numpy("probs")
        np.testing.assert_allclose(probs.sum(axis=1), 1.0, rtol=1e-5)
        sent = 1 + _requests_answered_by_both_replicas(address)
        wait_until(lambda: successes(client) == sent, 10, f"statistics to count all {sent} requests")
        assert [successes(client) for _ in range(6)] == [sent] * 6  # the sum, whichever replica answers

        _perf_analyzer_through(perf_analyzer, address)
        outcomes = _load_while_killing_a_replica(address)
        assert set(outcomes) == {200} and outcomes[200] > 50, outcomes
        wait_until(lambda: len(replica_pids()) == 2, 60, "Ray Serve to start a replacement replica")
        wait_until(lambda: running_replicas(serve_status()) == 2, 60, "Ray Serve to replace the killed replica")


def _requests_answered_by_both_replicas(address: str) -> int:
    """Requests sent one after the other until each replica has answered at least 5: how many."""
    answered: collections.Counter[str] = collections.Counter()
    with httpx.Client(base_url=f"http://{address}", timeout=20) as http:
        while len(answered) < 2 or min(answered.values()) < 5:
            response = http.post("/v2/models/mlp/infer", json=BODY)
            assert response.status_code == 200, response.text
            answered[response.headers[REPLICA_HEADER]] += 1
            assert answered.total() < 400, answered
    return answered.total()


def successes(client: httpclient.InferenceServerClient) -> int:
    """The model's successful requests, as its statistics report them."""
    (stats,) = client.get_inference_statistics("mlp")["model_stats"]
    return int(stats["inference_stats"]["success"]["count"])


def _perf_analyzer_through(tool: str, address: str) -> None:
    command = [tool, "-m", "mlp", "-i", "http", "-u", address, "--concurrency-range", "4"]
    command += ["--measurement-interval", "500", "--stability-percentage", "999"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=180, check=False)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    throughput = re.search(r"Concurrency: 4, throughput: ([\d.]+) infer/sec", output)
    assert throughput and float(throughput.group(1)) > 0, output


def _load_while_killing_a_replica(address: str) -> collections.Counter[object]:
    """Four clients post for ~5.5 s (no retries) while one replica process is killed with SIGKILL. A
    request caught on the dying replica is sent again by the front (deploy/ray_front.py) to the other
    replica: every request gets its answer. Outcomes: status codes, or the transport error's name."""
    outcomes: collections.Counter[object] = collections.Counter()
    stop = threading.Event()

    def client() -> None:
        with httpx.Client(base_url=f"http://{address}", timeout=20) as http:
            while not stop.is_set():
                try:
                    outcomes[http.post("/v2/models/mlp/infer", json=BODY).status_code] += 1
                except httpx.TransportError as error:
                    outcomes[type(error).__name__] += 1

    threads = [threading.Thread(target=client) for _ in range(4)]
    for thread in threads:
        thread.start()
    time.sleep(1.5)
    os.kill(replica_pids()[0], signal.SIGKILL)
    time.sleep(4)
    stop.set()
    for thread in threads:
        thread.join(timeout=60)
    return outcomes


AUTOSCALING_CONTRACT = """\
resources:
  replicas: {min: 1, max: 2}
  autoscale: {target_ongoing_requests: 0.5, upscale_delay_s: 0, downscale_delay_s: 600}
"""


FAST_AUTOSCALING_METRICS = {
    "RAY_SERVE_HANDLE_AUTOSCALING_METRIC_PUSH_INTERVAL_S": "0.5",
    "RAY_SERVE_REPLICA_AUTOSCALING_METRIC_PUSH_INTERVAL_S": "0.5",
}
"""Ray Serve's own settings (default 10 s): how often the load reaches its autoscaler."""


def test_contract_autoscaling_adds_a_replica_under_load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The contract's range (1-2 replicas, target 0.5 ongoing requests) under eight clients: Ray Serve
    adds the second replica. Bounded: Ray's autoscaling metrics are pushed every 0.5 s instead of 10 s
    (Ray's default, which only delays the decision), and the target is 0.5 (was 1): Ray averages the
    ongoing requests over its 30 s look-back, so the average crosses a lower target sooner after the
    load starts."""
    for name, value in FAST_AUTOSCALING_METRICS.items():
        monkeypatch.setenv(name, value)
    with mcp_serve_on_ray(tmp_path, "--ray", contract=AUTOSCALING_CONTRACT) as address:
        wait_until(lambda: len(replica_pids()) == 1, 60, "the one initial replica")
        stop = threading.Event()

        def client() -> None:
            with httpx.Client(base_url=f"http://{address}", timeout=20) as http:
                while not stop.is_set():
                    http.post("/v2/models/mlp/infer", json=BODY)

        threads = [threading.Thread(target=client) for _ in range(8)]
        for thread in threads:
            thread.start()
        try:
            wait_until(lambda: len(replica_pids()) == 2, 60, "autoscaling to the contract's max of 2 replicas")
        finally:
            stop.set()
            for thread in threads:
                thread.join(timeout=60)


def _stream_cut_by_killing_the_replicas(port: int) -> list[Any]:
    """A long streamed chat whose replicas are SIGKILLed after its first event: every event the client
    got, decoded (``[DONE]`` as the string)."""
    body = {"model": "smollm2", "messages": [{"role": "user", "content": "Count to 500."}], "stream": True}
    body |= {"max_tokens": 400, "temperature": 0}
    events: list[Any] = []
    with httpx.stream("POST", f"http://127.0.0.1:{port}/v1/chat/completions", json=body, timeout=60) as response:
        assert response.status_code == 200
        for line in response.iter_lines():
            if not line.startswith("data: "):
                continue
            data = line.removeprefix("data: ")
            events.append(data if data == "[DONE]" else json.loads(data))
            if len(events) == 1:
                for pid in replica_pids():
                    os.kill(pid, signal.SIGKILL)
    return events


def test_openai_routes_through_ray_serve(tmp_path: Path, llm_cache: Path, smollm2_gguf: Path) -> None:
    """A language model on 2 replicas: /v1/models and streamed chat through Ray's proxy, with the
    official openai client unchanged; a stream whose replica dies mid-way ends with OpenAI's error
    document and ``data: [DONE]`` (the front's last event), never cut short silently."""
    openai = pytest.importorskip("openai")
    env = {**os.environ, "MCP_HOME": str(tmp_path / "home"), "RAY_USAGE_STATS_ENABLED": "0"}
    register_smollm2(tmp_path / "home", smollm2_gguf)
    port = free_port()
    command = [*mcp_command(), "serve", "--name", "smollm2", "--port", str(port), "--no-policy", "--replicas", "2"]
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = listening_line(process)
        assert line.startswith(f"listening http={port}") and "smollm2" in line, line + _stderr(process)
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="unused", max_retries=0)
        assert [model.id for model in client.models.list()] == ["smollm2"]
        stream = client.chat.completions.create(
            model="smollm2",
            messages=[{"role": "user", "content": "Name a colour."}],
            max_tokens=8,
            temperature=0,
            stream=True,
            stream_options={"include_usage": True},
        )
        chunks = list(stream)
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        usage = chunks[-1].usage
        assert text.strip() and usage is not None and usage.completion_tokens == 8
        assert running_replicas(serve_status()) == 2
        events = _stream_cut_by_killing_the_replicas(port)
        assert events[0]["object"] == "chat.completion.chunk", events  # the first event arrived whole
        assert events[-2]["error"]["type"] == "server_error" and "lost" in events[-2]["error"]["message"], events
        assert events[-1] == "[DONE]"
    finally:
        process.send_signal(signal.SIGTERM)
        _out, err = process.communicate(timeout=90)
    assert process.returncode == 0, err
    assert "Traceback" not in err
    wait_for_ray_to_exit()
