"""Triton ``backend: "python"`` models under ``mcp serve --model-repository``, with real clients.

The models are Triton's own examples, unchanged (python_backend ``examples/``: add_sub, bls sync and
async, decoupled repeat_int32), beside an ONNX model named ``pytorch`` that the BLS examples call and
broken models that must be refused at load with the file and line named while the rest serve.
tritonclient's ``simple_grpc_custom_repeat.py`` and ``ensemble_image_client.py`` run unchanged, with
only ``-u`` (and the ensemble's ``-i``, ``-m``, ``-c`` and image) given.
"""

from __future__ import annotations

import io
import json
import os
import queue
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import httpx
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from PIL import Image
from tritonclient.utils import InferenceServerException

from tests.integration.conftest import listening_line, mcp_command
from tests.support.triton_python_repository import (
    FP32_PAIR_CONFIG,
    build_ensemble_repository,
    build_python_repository,
    write_python_model,
)
from tests.support.triton_repository import DENSENET_LABELS

EXAMPLES = Path(__file__).parents[1] / "support" / "triton_examples"
BROKEN = {
    "broken_syntax": "broken_syntax/1/model.py:4: syntax error",
    "broken_import": "broken_import/1/model.py: imports modules not installed here: no_such_module_here (line 2)",
    "broken_unsupported": "triton_python_backend_utils.MetricFamily (line 6)",
}


@contextmanager
def serve(repository: Path, home: Path) -> Iterator[tuple[str, str, list[str]]]:
    """``mcp serve --model-repository`` on ephemeral ports: (http, grpc, stderr lines once stopped)."""
    command = [*mcp_command(), "serve", "--model-repository", str(repository), "--port", "0", "--grpc-port", "0"]
    process = subprocess.Popen(
        [*command, "--no-policy"],
        env={**os.environ, "MCP_HOME": str(home)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    errors: list[str] = []
    try:
        line = listening_line(process)
        match = re.search(r"http=(\d+) grpc=(\d+)", line)
        assert match, line + (process.stderr.read() if process.stderr else "")
        yield f"127.0.0.1:{match.group(1)}", f"127.0.0.1:{match.group(2)}", errors
    finally:
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=60)
        errors += err.splitlines()
    assert process.returncode == 0, err
    assert "Traceback" not in err


@pytest.fixture(scope="module")
def python_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    root = tmp_path_factory.mktemp("python")
    with serve(build_python_repository(root / "repository"), root / "home") as (http, grpc, errors):
        yield http, grpc
    for name, reason in BROKEN.items():  # each refusal logged once, in Triton's words
        assert any(f"failed to load '{name}'" in line and reason in line for line in errors), (name, errors)


def pair(module: object) -> tuple[list[object], np.ndarray, np.ndarray]:
    first = np.array([1.5, 2.0, 3.0, 4.0], dtype=np.float32)
    second = np.array([0.5, 1.0, -1.0, 2.0], dtype=np.float32)
    inputs = [module.InferInput("INPUT0", [4], "FP32"), module.InferInput("INPUT1", [4], "FP32")]  # type: ignore[attr-defined]
    inputs[0].set_data_from_numpy(first)
    inputs[1].set_data_from_numpy(second)
    return inputs, first, second


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_add_sub_python_model(python_server: tuple[str, str], protocol: str) -> None:
    """Triton's add_sub example (FP32 [4], its config's output types read through pb_utils)."""
    module = httpclient if protocol == "http" else grpcclient
    url = python_server[0] if protocol == "http" else python_server[1]
    client = module.InferenceServerClient(url)
    inputs, first, second = pair(module)
    result = client.infer("add_sub", inputs)
    np.testing.assert_allclose(result.as_numpy("OUTPUT0"), first + second)
    np.testing.assert_allclose(result.as_numpy("OUTPUT1"), first - second)
    metadata = client.get_model_metadata("add_sub")
    names = (
        [tensor.name for tensor in metadata.inputs] if protocol == "grpc" else [t["name"] for t in metadata["inputs"]]
    )
    assert names == ["INPUT0", "INPUT1"]


def bls_inputs(target: str) -> tuple[list[httpclient.InferInput], np.ndarray, np.ndarray]:
    inputs, first, second = pair(httpclient)
    name = httpclient.InferInput("MODEL_NAME", [1], "BYTES")
    name.set_data_from_numpy(np.array([target], dtype=np.object_))
    return [*inputs, name], first, second  # type: ignore[list-item]


@pytest.mark.parametrize("target", ["add_sub", "pytorch"])
def test_bls_sync_calls_a_python_and_an_onnx_model(python_server: tuple[str, str], target: str) -> None:
    """Triton's bls sync example: exec() on the python add_sub, then on the ONNX model named pytorch."""
    client = httpclient.InferenceServerClient(python_server[0])
    inputs, first, second = bls_inputs(target)
    result = client.infer("bls_sync", inputs)
    np.testing.assert_allclose(result.as_numpy("OUTPUT0"), first + second)
    np.testing.assert_allclose(result.as_numpy("OUTPUT1"), first - second)


def test_bls_to_an_unknown_model_fails_that_request_only(python_server: tuple[str, str]) -> None:
    client = httpclient.InferenceServerClient(python_server[0])
    with pytest.raises(InferenceServerException, match="undefined_model") as raised:
        client.infer("bls_sync", bls_inputs("undefined_model")[0])
    assert raised.value.status() == "500"
    assert client.infer("bls_sync", bls_inputs("add_sub")[0]).as_numpy("OUTPUT0") is not None


def test_bls_calls_keep_the_callers_deadline(python_server: tuple[str, str]) -> None:
    """A BLS call inherits what is left of its caller's timeout: a 2 s target behind a 300 ms request
    fails that request in well under 2 s, naming the deadline."""
    client = httpclient.InferenceServerClient(python_server[0])
    inputs, _, _ = bls_inputs("sleepy")
    inputs[0].set_data_from_numpy(np.array([2.0, 0, 0, 0], dtype=np.float32))
    started = time.monotonic()
    with pytest.raises(InferenceServerException, match="BLS request timeout expired"):
        client.infer("bls_sync", inputs, timeout=300_000)  # Triton's timeout parameter, in microseconds
    assert time.monotonic() - started < 1.5


def test_bls_async_exec_gathers_two_models(python_server: tuple[str, str]) -> None:
    """Triton's bls async example: an async execute awaiting async_exec() on pytorch and add_sub at once."""
    client = grpcclient.InferenceServerClient(python_server[1])
    inputs, first, second = pair(grpcclient)
    result = client.infer("bls_async", inputs)
    np.testing.assert_allclose(result.as_numpy("OUTPUT0"), first + second)
    np.testing.assert_allclose(result.as_numpy("OUTPUT1"), first - second)


def test_load_failures_are_named_and_the_rest_serves(python_server: tuple[str, str]) -> None:
    """A syntax error, a missing import and an unsupported pb_utils call: each model UNAVAILABLE with the
    file and line in its reason; the others READY."""
    index = {row["name"]: row for row in httpx.post(f"http://{python_server[0]}/v2/repository/index").json()}
    for name, reason in BROKEN.items():
        assert index[name]["state"] == "UNAVAILABLE" and reason in index[name]["reason"], index[name]
    ready = {name for name, row in index.items() if row["state"] == "READY"}
    assert {"add_sub", "bls_sync", "bls_async", "repeat_int32", "pytorch", "failing", "doubler", "describe"} <= ready


def failing_body(first: float) -> dict[str, object]:
    tensor = {"shape": [4], "datatype": "FP32"}
    return {
        "inputs": [
            {"name": "INPUT0", **tensor, "data": [first, 1, 2, 3]},
            {"name": "INPUT1", **tensor, "data": [1, 1, 1, 1]},
        ]
    }


def test_execute_errors_answer_in_the_protocols_error_json(python_server: tuple[str, str]) -> None:
    """execute() raising: 500 with its message; a response with TritonError(INVALID_ARG): 400 with it;
    the server (and that model) go on."""
    url = f"http://{python_server[0]}/v2/models/failing/infer"
    raised = httpx.post(url, json=failing_body(0))
    assert raised.status_code == 500
    assert raised.json() == {
        "error": "model 'failing': execute() failed: INPUT0 starts with zero: refused by the model"
    }
    refused = httpx.post(url, json=failing_body(-1))
    assert refused.status_code == 400 and refused.json() == {"error": "INPUT0 must be positive"}
    fine = httpx.post(url, json=failing_body(5))
    assert fine.status_code == 200
    assert fine.json()["outputs"][0]["data"] == [6, 2, 3, 4]
    grpc_client = grpcclient.InferenceServerClient(python_server[1])
    inputs, _, _ = pair(grpcclient)
    inputs[0].set_data_from_numpy(np.array([-1, 0, 0, 0], dtype=np.float32))
    with pytest.raises(InferenceServerException, match="INPUT0 must be positive") as grpc_error:
        grpc_client.infer("failing", inputs)
    assert grpc_error.value.status() == "StatusCode.INVALID_ARGUMENT"


def test_dynamic_batching_hands_execute_a_list(python_server: tuple[str, str]) -> None:
    """doubler (max_batch_size 8, a 50 ms queue delay): concurrent requests reach one execute() call as a
    list, each answered with its own rows."""
    client = httpclient.InferenceServerClient(python_server[0], concurrency=8)

    def call(index: int) -> tuple[int, np.ndarray, int]:
        data = np.full((1, 4), index, dtype=np.float32)
        tensor = httpclient.InferInput("INPUT0", [1, 4], "FP32")
        tensor.set_data_from_numpy(data)
        result = client.infer("doubler", [tensor])
        return index, result.as_numpy("OUTPUT0"), int(result.as_numpy("OUTPUT1")[0, 0])

    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(call, range(8)))
    for index, doubled, _ in answers:
        np.testing.assert_array_equal(doubled, np.full((1, 4), 2 * index, dtype=np.float32))
    assert max(count for _, _, count in answers) > 1, answers


@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_requests_carry_their_id_parameters_and_outputs(python_server: tuple[str, str], protocol: str) -> None:
    """request.request_id(), parameters() (JSON), requested_output_names() and model_name() inside execute."""
    module = httpclient if protocol == "http" else grpcclient
    client = module.InferenceServerClient(python_server[0] if protocol == "http" else python_server[1])
    tensor = module.InferInput("INPUT0", [4], "FP32")
    tensor.set_data_from_numpy(np.zeros(4, dtype=np.float32))
    result = client.infer(
        "describe",
        [tensor],
        request_id="request-7",
        outputs=[module.InferRequestedOutput("REQUEST")],
        parameters={"mode": "fast", "level": 3},
    )
    described = json.loads(result.as_numpy("REQUEST")[0])
    assert described["id"] == "request-7" and described["model"] == "describe"
    assert described["outputs"] == ["REQUEST"]
    assert {"mode": "fast", "level": 3}.items() <= described["parameters"].items()


@pytest.mark.slow
def test_decoupled_repeat_with_tritons_own_client(python_server: tuple[str, str]) -> None:
    """simple_grpc_custom_repeat.py unchanged against Triton's repeat_int32: ten responses to one request
    over ModelStreamInfer (its model sends them from a thread of its own, a second apart)."""
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / "simple_grpc_custom_repeat.py"), "-u", python_server[1]],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "PASS: Decoupled API" in done.stdout and "109 : 109" in done.stdout


def repeat_inputs(values: list[int], delays_ms: list[int]) -> list[grpcclient.InferInput]:
    arrays = [np.array(values, np.int32), np.array(delays_ms, np.uint32), np.array([0], np.uint32)]
    inputs = []
    for name, array in zip(("IN", "DELAY", "WAIT"), arrays, strict=True):
        inputs.append(grpcclient.InferInput(name, list(array.shape), "INT32" if array.dtype == np.int32 else "UINT32"))
        inputs[-1].set_data_from_numpy(array)
    return inputs


def test_decoupled_requests_interleave_on_one_stream(python_server: tuple[str, str]) -> None:
    """Two requests in flight on one stream: the second one's responses go out between the first one's,
    as the model sends them; each comes with its request's id."""
    received: queue.Queue[tuple[str, int] | Exception] = queue.Queue()

    def callback(result: grpcclient.InferResult | None, error: Exception | None) -> None:
        if error is not None or result is None:
            received.put(error or RuntimeError("no result"))
            return
        received.put((result.get_response().id, int(result.as_numpy("OUT")[0])))

    client = grpcclient.InferenceServerClient(python_server[1])
    client.start_stream(callback=callback)
    try:
        client.async_stream_infer("repeat_int32", repeat_inputs([10, 11], [100, 1500]), request_id="slow")
        client.async_stream_infer("repeat_int32", repeat_inputs([20, 21], [200, 200]), request_id="quick")
        answers = [received.get(timeout=20) for _ in range(4)]
    finally:
        client.stop_stream()
    assert answers == [("slow", 10), ("quick", 20), ("quick", 21), ("slow", 11)], answers


def test_decoupled_model_refuses_non_streaming_calls(python_server: tuple[str, str]) -> None:
    body = {
        "inputs": [
            {"name": "IN", "shape": [2], "datatype": "INT32", "data": [1, 2]},
            {"name": "DELAY", "shape": [2], "datatype": "UINT32", "data": [1, 1]},
            {"name": "WAIT", "shape": [1], "datatype": "UINT32", "data": [1]},
        ]
    }
    answer = httpx.post(f"http://{python_server[0]}/v2/models/repeat_int32/infer", json=body)
    assert answer.status_code == 501  # Triton's UNSUPPORTED
    assert "doesn't support models with decoupled transaction policy" in answer.json()["error"]
    client = grpcclient.InferenceServerClient(python_server[1])
    inputs = [grpcclient.InferInput(item["name"], item["shape"], item["datatype"]) for item in body["inputs"]]
    for tensor, item, dtype in zip(inputs, body["inputs"], (np.int32, np.uint32, np.uint32), strict=True):
        tensor.set_data_from_numpy(np.array(item["data"], dtype=dtype))
    with pytest.raises(InferenceServerException, match="doesn't support models with decoupled") as raised:
        client.infer("repeat_int32", inputs)
    assert raised.value.status() == "StatusCode.UNIMPLEMENTED"
    config = client.get_model_config("repeat_int32").config
    assert config.model_transaction_policy.decoupled and not httpx.get(
        f"http://{python_server[0]}/v2/models/add_sub/config"
    ).json().get("model_transaction_policy")


def test_import_triton_checks_python_models_before_registering(tmp_path: Path) -> None:
    """``mcp model import-triton``: a repository with a broken python model is refused naming the file and
    line, and nothing is registered; without it, the python models register."""
    repository = build_python_repository(tmp_path / "repository")
    env = {**os.environ, "MCP_HOME": str(tmp_path / "home")}
    command = [*mcp_command(), "model", "import-triton", str(repository)]
    refused = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120, check=False)
    assert refused.returncode != 0
    assert "broken_import/1/model.py: imports modules not installed here: no_such_module_here (line 2)" in (
        refused.stdout + refused.stderr
    )
    assert "Traceback" not in refused.stderr
    listed = subprocess.run([*mcp_command(), "model", "list"], capture_output=True, text=True, env=env, timeout=60)
    assert "add_sub" not in listed.stdout
    for name in ("broken_syntax", "broken_import", "broken_unsupported"):
        (repository / name / "config.pbtxt").unlink()
        (repository / name / "1" / "model.py").unlink()
        (repository / name / "1").rmdir()
        (repository / name).rmdir()
    imported = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120, check=False)
    assert imported.returncode == 0, imported.stdout + imported.stderr
    assert "imported add_sub: 1.0.0 (Triton 1)" in imported.stdout
    assert "imported repeat_int32: 1.0.0 (Triton 1)" in imported.stdout


@pytest.fixture(scope="module")
def ensemble_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    root = tmp_path_factory.mktemp("ensemble")
    with serve(build_ensemble_repository(root / "repository"), root / "home") as (http, grpc, _):
        yield http, grpc


def jpeg(path: Path) -> Path:
    pixels = (np.random.default_rng(0).random((240, 320, 3)) * 255).astype(np.uint8)
    Image.fromarray(pixels).save(path, format="JPEG")
    return path


@pytest.mark.slow
def test_preprocessing_python_model_decodes_and_resizes_jpeg(ensemble_server: tuple[str, str], tmp_path: Path) -> None:
    """The ensemble's python step alone: JPEG bytes in, densenet's normalised [3, 224, 224] out; bytes that
    do not decode answer 400 naming the input."""
    image = jpeg(tmp_path / "picture.jpg")
    client = grpcclient.InferenceServerClient(ensemble_server[1])
    tensor = grpcclient.InferInput("INPUT_0", [1, 1], "BYTES")
    tensor.set_data_from_numpy(np.array([[image.read_bytes()]], dtype=np.object_))
    result = client.infer("preprocess", [tensor]).as_numpy("OUTPUT_0")
    decoded = Image.open(io.BytesIO(image.read_bytes())).convert("RGB").resize((224, 224), Image.BILINEAR)
    mean, std = np.array([0.485, 0.456, 0.406]), np.array([0.229, 0.224, 0.225])
    expected = ((np.asarray(decoded, dtype=np.float32) / 255.0 - mean) / std).transpose(2, 0, 1)
    assert result.shape == (1, 3, 224, 224)
    np.testing.assert_allclose(result[0], expected, atol=1e-5)
    tensor.set_data_from_numpy(np.array([[b"not an image"]], dtype=np.object_))
    with pytest.raises(InferenceServerException, match="INPUT_0: not an image") as raised:
        client.infer("preprocess", [tensor])
    assert raised.value.status() == "StatusCode.INVALID_ARGUMENT"


@pytest.mark.slow
@pytest.mark.parametrize("protocol", ["http", "grpc"])
def test_ensemble_image_client_unchanged(ensemble_server: tuple[str, str], protocol: str, tmp_path: Path) -> None:
    """tritonclient's ensemble_image_client.py: JPEG bytes -> python preprocess -> densenet, by an ensemble."""
    image = jpeg(tmp_path / "picture.jpg")
    url = ensemble_server[0] if protocol == "http" else ensemble_server[1]
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / "ensemble_image_client.py"), "-i", protocol, "-u", url, "-c", "3", str(image)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "PASS" in done.stdout and DENSENET_LABELS[0].split()[0] in done.stdout


STUCK_SOURCE = """import threading
import uuid
from pathlib import Path

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    \"\"\"Marks that it runs (a file of its own in the folder given), then never returns.\"\"\"

    def execute(self, requests):
        (Path({folder!r}) / uuid.uuid4().hex).touch()
        threading.Event().wait()
"""
STUCK_CONFIG = (
    FP32_PAIR_CONFIG.format(name="stuck", backend="python") + "instance_group [ { count: 2 kind: KIND_CPU } ]\n"
)
SHUTTING_DOWN = "the server is shutting down: this request did not finish within the drain timeout"


def _grpc_stuck_call(address: str) -> InferenceServerException | None:
    client = grpcclient.InferenceServerClient(address)
    inputs = []
    for name in ("INPUT0", "INPUT1"):
        tensor = grpcclient.InferInput(name, [4], "FP32")
        tensor.set_data_from_numpy(np.arange(4, dtype=np.float32))
        inputs.append(tensor)
    try:
        client.infer("stuck", inputs, client_timeout=60)
    except InferenceServerException as error:
        return error
    return None


def test_an_execute_that_never_returns_does_not_hold_the_process_at_sigterm(tmp_path: Path) -> None:
    """The drain times out: the requests the stuck instances hold are answered (HTTP 503 in the error
    JSON, gRPC UNAVAILABLE, which clients retry elsewhere), the server stops, and the
    process exits (status 1, naming the busy threads) within the exit grace instead of waiting for them
    forever, as tritonserver does past its exit timeout (server/process_exit.py)."""
    running = tmp_path / "running"
    running.mkdir()
    repository = write_python_model(
        tmp_path / "repository", "stuck", STUCK_CONFIG, STUCK_SOURCE.format(folder=str(running))
    )
    command = [*mcp_command(), "serve", "--model-repository", str(repository.parent), "--port", "0"]
    process = subprocess.Popen(
        [*command, "--grpc-port", "0", "--no-policy", "--drain-timeout", "1"],
        env={**os.environ, "MCP_HOME": str(tmp_path / "home")},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        match = re.search(r"http=(\d+) grpc=(\d+)", listening_line(process))
        assert match
        body = {
            "inputs": [
                {"name": n, "datatype": "FP32", "shape": [4], "data": [1, 2, 3, 4]} for n in ("INPUT0", "INPUT1")
            ]
        }
        url = f"http://127.0.0.1:{match.group(1)}/v2/models/stuck/infer"
        with ThreadPoolExecutor(2) as pool:
            over_http = pool.submit(httpx.post, url, json=body, timeout=60)
            over_grpc = pool.submit(_grpc_stuck_call, f"127.0.0.1:{match.group(2)}")
            deadline = time.monotonic() + 30
            while len(list(running.iterdir())) < 2 and time.monotonic() < deadline:
                time.sleep(0.05)
            assert len(list(running.iterdir())) == 2, "both instances should be running a request"
            signalled = time.monotonic()
            process.send_signal(signal.SIGTERM)
            _, err = process.communicate(timeout=60)
            took = time.monotonic() - signalled
            held = over_http.result()
            assert held.status_code == 503, held.text
            assert held.json() == {"error": SHUTTING_DOWN}
            refused = over_grpc.result()
            # gRPC core ends it at the end of the grace, as UNAVAILABLE ("Cancelling all calls")
            assert refused is not None and refused.status() == "StatusCode.UNAVAILABLE", refused
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 1, err
    assert "threads still running: mcp-batch" in err and "exiting without them" in err, err
    assert "Traceback" not in err, err
    assert took < 1 + 1 + 5 + 15, took  # drain, executor stop, exit grace, and slack for a loaded host
