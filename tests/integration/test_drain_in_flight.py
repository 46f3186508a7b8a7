"""Drains keep what they accepted (issue 51, item 5), tensor traffic over HTTP and gRPC: three rounds
of `mcp serve` on a slow model; 12 HTTP and 12 gRPC requests are sent and SIGTERM comes once the
server has taken every one of them (``mcp_requests_in_flight`` plus those already answered is 24).
Every one of them is answered (200 / OK), none fails; a request sent after the signal is refused
(503) or meets a closed port.

(Calls that reach gRPC core in the instant its listener closes, before the client has read the
GOAWAY, are not in flight: under continuous load gRPC core may cancel one of those itself;
``test_lifecycle.py::test_shutdown_under_load_answers_or_refuses_every_request`` bounds that.)
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
import time
from pathlib import Path

import httpx
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

from support.models import chained_matmul_model

from .conftest import listening_line, mcp_command
from .test_lifecycle import free_port

pytestmark = [pytest.mark.slow, pytest.mark.timeout(180)]
PER_TRANSPORT = 12


def in_flight(http_port: int) -> float:
    text = httpx.get(f"http://127.0.0.1:{http_port}/metrics", timeout=10).text
    return sum(float(value) for value in re.findall(r"^mcp_requests_in_flight\{[^}]*\} (\S+)", text, re.M))


@pytest.mark.parametrize("round_", [1, 2, 3])
def test_every_request_in_flight_at_sigterm_is_answered(tmp_path: Path, round_: int) -> None:
    http_port, grpc_port = free_port(), free_port()
    env = {**os.environ, "MCP_HOME": str(tmp_path / "home")}
    model = chained_matmul_model(tmp_path / "slow.onnx", depth=300)
    command = [*mcp_command(), "serve", "--model-path", str(model), "--port", str(http_port)]
    command += ["--grpc-port", str(grpc_port), "--no-policy", "--drain-timeout", "60"]
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert listening_line(process).startswith("listening")
    x = np.ones((1, 1024), np.float32)
    results: list[str] = []
    lock = threading.Lock()

    def record(outcome: str) -> None:
        with lock:
            results.append(outcome)

    def over_http() -> None:
        client = httpclient.InferenceServerClient(f"127.0.0.1:{http_port}", network_timeout=120)
        tensor = httpclient.InferInput("x", list(x.shape), "FP32")
        tensor.set_data_from_numpy(x)
        try:
            client.infer("slow", [tensor])
            record("answered")
        except Exception as exc:  # noqa: BLE001 - tritonclient's exception carries the status text
            record(f"http failed: {exc}")

    grpc_client = grpcclient.InferenceServerClient(f"127.0.0.1:{grpc_port}")

    def over_grpc() -> None:
        tensor = grpcclient.InferInput("x", list(x.shape), "FP32")
        tensor.set_data_from_numpy(x)
        try:
            grpc_client.infer("slow", [tensor], client_timeout=120)
            record("answered")
        except Exception as exc:  # noqa: BLE001
            record(f"grpc failed: {exc}")

    threads = [threading.Thread(target=over_http) for _ in range(PER_TRANSPORT)]
    threads += [threading.Thread(target=over_grpc) for _ in range(PER_TRANSPORT)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 60
    while in_flight(http_port) + results.count("answered") < 2 * PER_TRANSPORT:  # each one read or done
        assert time.monotonic() < deadline, results
        assert all(result == "answered" for result in results), results
        time.sleep(0.01)
    answered_before = results.count("answered")
    assert answered_before < PER_TRANSPORT, results  # most of them are still running
    process.send_signal(signal.SIGTERM)
    time.sleep(0.2)
    late = httpclient.InferenceServerClient(f"127.0.0.1:{http_port}")
    tensor = httpclient.InferInput("x", list(x.shape), "FP32")
    tensor.set_data_from_numpy(x)
    with pytest.raises(Exception, match=r"shutting down|Connection refused|Connect"):
        late.infer("slow", [tensor])
    for thread in threads:
        thread.join(150)
    _, err = process.communicate(timeout=90)
    assert process.returncode == 0, err
    assert results == ["answered"] * (2 * PER_TRANSPORT), results
    running = 2 * PER_TRANSPORT - answered_before
    print(f"round {round_}: {running} in flight at SIGTERM ({answered_before} done before), all answered")
