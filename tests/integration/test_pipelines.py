"""A pipeline served as a model by a real server: tritonclient over HTTP and gRPC, branch and join,
a failing step named (400 for the client's data, 500 for the step's fault), statistics per step,
and `mcp model register` + `mcp serve` from the command line."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from mcp2026ai.registry import ModelRegistry
from mcp2026ai.registry.pipelines import register_pipeline
from mcp2026ai.runtime.python_code import check_python_source
from mcp2026ai.testing import BackgroundServer
from support.pipelines import ENSEMBLE_CONFIG, write_ensemble_repository, write_pipeline
from tests.integration.conftest import listening_line, mcp_command

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BackgroundServer]:
    root = tmp_path_factory.mktemp("pipelines")
    registry = ModelRegistry(root / "home")
    register_pipeline(registry, write_pipeline(root / "calc"), check_python_source)
    with BackgroundServer(registry, ["calc"]) as running:
        yield running


def http_inputs(text: str) -> list[httpclient.InferInput]:
    tensor = httpclient.InferInput("text", [1], "BYTES")
    tensor.set_data_from_numpy(np.array([text.encode()], dtype=np.object_))
    return [tensor]


def test_tritonclient_http_runs_the_branch_and_the_join(server: BackgroundServer) -> None:
    client = httpclient.InferenceServerClient(server.http_url)
    result = client.infer("calc", http_inputs("1,2,3,4"))
    np.testing.assert_allclose(result.as_numpy("doubled"), [[2, 4, 6, 8]])
    np.testing.assert_allclose(result.as_numpy("total"), [[4, 7, 10, 13]])  # 2x + (x + 1)
    metadata = client.get_model_metadata("calc")
    assert metadata["platform"] == "ensemble"
    assert [tensor["name"] for tensor in metadata["inputs"]] == ["text"]
    assert [(t["name"], t["datatype"], t["shape"]) for t in metadata["outputs"]] == [
        ("total", "FP32", [-1, 4]),
        ("doubled", "FP32", [-1, 4]),
    ]
    assert client.is_model_ready("calc") and client.is_model_ready("calc.double")


def test_tritonclient_grpc_runs_it_too(server: BackgroundServer) -> None:
    client = grpcclient.InferenceServerClient(server.grpc_url)
    tensor = grpcclient.InferInput("text", [1], "BYTES")
    tensor.set_data_from_numpy(np.array([b"0,1,0,1"], dtype=np.object_))
    result = client.infer("calc", [tensor], outputs=[grpcclient.InferRequestedOutput("total")])
    np.testing.assert_allclose(result.as_numpy("total"), [[1, 4, 1, 4]])
    assert result.as_numpy("doubled") is None  # only what was asked for
    assert client.get_model_metadata("calc").platform == "ensemble"


def test_concurrent_requests_each_get_their_own_answer(server: BackgroundServer) -> None:
    client = httpclient.InferenceServerClient(server.http_url, concurrency=8)
    pending = [client.async_infer("calc", http_inputs(f"{i},0,0,{-i}")) for i in range(16)]
    for i, request in enumerate(pending):
        np.testing.assert_allclose(request.get_result().as_numpy("total"), [[3 * i + 1, 1, 1, -3 * i + 1]])


def test_the_clients_bad_data_is_a_400_naming_the_step(server: BackgroundServer) -> None:
    body = {"inputs": [{"name": "text", "shape": [1], "datatype": "BYTES", "data": ["one,two"]}]}
    answer = httpx.post(f"http://{server.http_url}/v2/models/calc/infer", json=body, timeout=30)
    assert answer.status_code == 400
    assert answer.json() == {"error": "pipeline step 'parse': not numbers: 'one,two'"}
    client = grpcclient.InferenceServerClient(server.grpc_url)
    tensor = grpcclient.InferInput("text", [1], "BYTES")
    tensor.set_data_from_numpy(np.array([b"1,2"], dtype=np.object_))
    with pytest.raises(InferenceServerException, match="pipeline step 'parse': expected 4 numbers") as caught:
        client.infer("calc", [tensor])
    assert caught.value.status() == "StatusCode.INVALID_ARGUMENT"


def test_a_failing_step_is_a_500_naming_it(server: BackgroundServer) -> None:
    body = {"inputs": [{"name": "text", "shape": [1], "datatype": "BYTES", "data": ["crash"]}]}
    answer = httpx.post(f"http://{server.http_url}/v2/models/calc/infer", json=body, timeout=30)
    assert answer.status_code == 500
    assert answer.json() == {"error": "pipeline step 'parse' failed: RuntimeError: the parser crashed"}


def test_a_wrong_input_is_refused_before_any_step(server: BackgroundServer) -> None:
    body = {"inputs": [{"name": "text", "shape": [1], "datatype": "FP32", "data": [1.0]}]}
    answer = httpx.post(f"http://{server.http_url}/v2/models/calc/infer", json=body, timeout=30)
    assert answer.status_code == 400 and "datatype FP32 does not match the model's BYTES" in answer.text


def test_statistics_show_queue_and_compute_per_step(server: BackgroundServer) -> None:
    client = httpclient.InferenceServerClient(server.http_url)
    before = client.get_inference_statistics("calc")["model_stats"][0]
    client.infer("calc", http_inputs("1,1,1,1"))
    after = client.get_inference_statistics("calc")["model_stats"][0]
    assert after["inference_stats"]["success"]["count"] == before["inference_stats"]["success"]["count"] + 1
    steps = {step["name"]: step for step in after["steps"]}
    assert list(steps) == ["parse", "double", "shift", "join"]
    assert steps["double"]["runs"] == "model calc.double:1.0.0" and steps["join"]["runs"] == "python Join"
    previous = {step["name"]: step for step in before["steps"]}
    for name, step in steps.items():
        assert step["success"]["count"] == previous[name]["success"]["count"] + 1, name
        assert step["compute"]["ns"] > previous[name]["compute"]["ns"], name
        assert step["queue"]["count"] > previous[name]["queue"]["count"], name
    model_step = client.get_inference_statistics("calc.double")["model_stats"][0]
    assert model_step["inference_stats"]["success"]["count"] >= 1  # the step's own model counts it too


@pytest.mark.slow
def test_register_and_serve_from_the_command_line(tmp_path: Path) -> None:
    spec = write_pipeline(tmp_path / "calc")
    env = {**os.environ, "MCP_HOME": str(tmp_path / "home")}
    done = subprocess.run(
        [*mcp_command(), "model", "register", "--path", str(spec)], env=env, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "registered calc:1.0.0" in done.stdout and "step double: model calc.double:1.0.0" in done.stdout
    broken = tmp_path / "broken"
    bad = write_pipeline(broken, steps="def oops(:\n")
    refused = subprocess.run(
        [*mcp_command(), "model", "register", "--name", "bad", "--path", str(bad)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert refused.returncode != 0 and "Traceback" not in refused.stderr
    assert re.search(r"calc_steps.py:1: syntax error", refused.stdout + refused.stderr)
    serve = [*mcp_command(), "serve", "--name", "calc", "--port", "0", "--grpc-port", "0", "--no-policy"]
    process = subprocess.Popen(serve, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = listening_line(process)
        match = re.search(r"http=(\d+)", line)
        assert match, line
        client = httpclient.InferenceServerClient(f"127.0.0.1:{match.group(1)}")
        np.testing.assert_allclose(client.infer("calc", http_inputs("1,2,3,4")).as_numpy("total"), [[4, 7, 10, 13]])
    finally:
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=30)
    assert process.returncode == 0 and "Traceback" not in err, err


@pytest.mark.slow
def test_a_triton_ensemble_is_served_from_its_repository(tmp_path: Path) -> None:
    repository = write_ensemble_repository(tmp_path / "repo")
    broken = ENSEMBLE_CONFIG.replace('"calc_ensemble"', '"broken_ensemble"').replace('"shift"', '"nowhere"')
    (repository / "broken_ensemble" / "1").mkdir(parents=True)
    (repository / "broken_ensemble" / "config.pbtxt").write_text(broken)
    command = [*mcp_command(), "serve", "--model-repository", str(repository), "--port", "0", "--grpc-port", "0"]
    env = {**os.environ, "MCP_HOME": str(tmp_path / "home")}
    process = subprocess.Popen(
        [*command, "--no-policy"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        match = re.search(r"http=(\d+) grpc=(\d+)", listening_line(process))
        assert match
        http = httpclient.InferenceServerClient(f"127.0.0.1:{match.group(1)}")
        values = np.arange(8, dtype=np.float32).reshape(2, 4)
        tensor = httpclient.InferInput("IN", [2, 4], "FP32")
        tensor.set_data_from_numpy(values)
        result = http.infer("calc_ensemble", [tensor])
        np.testing.assert_allclose(result.as_numpy("OUT"), values * 2 + 1)
        np.testing.assert_allclose(result.as_numpy("MID"), values * 2)
        config = http.get_model_config("calc_ensemble")
        assert (config["platform"], config["max_batch_size"]) == ("ensemble", 8)
        grpc = grpcclient.InferenceServerClient(f"127.0.0.1:{match.group(2)}")
        tensor = grpcclient.InferInput("IN", [1, 4], "FP32")
        tensor.set_data_from_numpy(values[:1])
        np.testing.assert_allclose(grpc.infer("calc_ensemble", [tensor]).as_numpy("OUT"), values[:1] * 2 + 1)
        index = {entry["name"]: entry for entry in http.get_model_repository_index()}
        assert index["broken_ensemble"]["state"] == "UNAVAILABLE"
        assert "model_name 'nowhere' is not a model of this repository" in index["broken_ensemble"]["reason"]
    finally:
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=30)
    assert process.returncode == 0 and "Traceback" not in err, err


@pytest.mark.slow
def test_policy_plans_each_step_and_explains_the_contract_at_c4(tmp_path: Path) -> None:
    env = {**os.environ, "MCP_HOME": str(tmp_path / "home"), "COLUMNS": "200"}
    spec = write_pipeline(tmp_path / "calc")
    subprocess.run([*mcp_command(), "model", "register", "--path", str(spec)], env=env, check=True, capture_output=True)
    example = tmp_path / "text.txt"
    example.write_bytes(b"1,2,3,4")
    plan = [*mcp_command(), "policy", "plan", "--model", "calc", "--input", f"text={example}"]
    plan += ["--seconds-per-plan", "0.1", "--total-seconds", "2"]
    done = subprocess.run(plan, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "plan per step" in done.stdout and "calc.double:1.0.0" in done.stdout
    explained = subprocess.run(
        [*mcp_command(), "policy", "explain", "--model", "calc", "--json"], env=env, capture_output=True, text=True
    )
    assert explained.returncode == 0, explained.stderr
    document = json.loads(explained.stdout)
    assert [step["step"] for step in document["steps"]] == ["double", "shift"]
    assert all(step["plan"].startswith("cpu/") and step["cores"] >= 1 for step in document["steps"])
    assert document["end_to_end"]["concurrency"] == 4 and document["end_to_end"]["requests"] > 0
    latency = document["contract_rows"][0]
    assert latency["constraint"] == "latency.p99_ms" and latency["ok"] == "yes", latency


def test_the_breaker_counts_a_failing_step_as_the_pipelines_failure(tmp_path: Path) -> None:
    from mcp2026ai.routing.breaker import BreakerState

    registry = ModelRegistry(tmp_path / "home")
    register_pipeline(registry, write_pipeline(tmp_path / "calc"), check_python_source)
    with BackgroundServer(registry, ["calc"]) as running:
        url = f"http://{running.http_url}/v2/models/calc/infer"
        bad_data = {"inputs": [{"name": "text", "shape": [1], "datatype": "BYTES", "data": ["x"]}]}
        crash = {"inputs": [{"name": "text", "shape": [1], "datatype": "BYTES", "data": ["crash"]}]}
        with httpx.Client(timeout=30) as client:
            for _ in range(25):  # the client's mistakes (400) are not the version's failures
                assert client.post(url, json=bad_data).status_code == 400
            assert running.plane.traffic.breakers.states().get(("calc", "1.0.0")) in (None, BreakerState.CLOSED)
            for _ in range(25):  # a step failing (500) is, as any model's failure would be
                client.post(url, json=crash)
        assert running.plane.traffic.breakers.states()[("calc", "1.0.0")] is BreakerState.OPEN
