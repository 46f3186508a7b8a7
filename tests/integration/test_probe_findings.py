"""The reliability probe's reproductions (../shared/reliability-findings.md), sent as found, over both
protocols of one live server: each must be a client error, and none may count against the model."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator

import grpc
import httpx
import numpy as np
import pytest
from tritonclient.grpc import service_pb2 as pb
from tritonclient.grpc import service_pb2_grpc as pb_grpc

from mcp2026ai.bundled import OCR_CLS_PREPROCESSING, bundled_model_path
from mcp2026ai.registry import ModelRegistry, Preprocessing
from mcp2026ai.server.config import ServerConfig
from mcp2026ai.testing import BackgroundServer
from support.models import add_sub_model

pytestmark = pytest.mark.timeout(180)

GOOD = {
    "inputs": [
        {"name": name, "shape": [1, 4], "datatype": "FP32", "data": [1.0, 2.0, 3.0, 4.0]}
        for name in ("INPUT0", "INPUT1")
    ]
}
LONG_VERSION = "9" * 4400


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BackgroundServer]:
    root = tmp_path_factory.mktemp("probe")
    registry = ModelRegistry(root / "home")
    registry.register("add_sub", add_sub_model(root / "add_sub.onnx"))
    prep = Preprocessing.model_validate(OCR_CLS_PREPROCESSING)
    registry.register("ocr-cls", bundled_model_path("ocr-cls"), preprocessing=prep)
    config = ServerConfig(http_port=0, grpc_port=0, drain_timeout_s=5)
    with BackgroundServer(registry, ["add_sub", "ocr-cls"], config) as running:
        yield running


@pytest.fixture(scope="module")
def http(server: BackgroundServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=f"http://{server.http_url}", timeout=30) as client:
        yield client


@pytest.fixture(scope="module")
def stub(server: BackgroundServer) -> Iterator[pb_grpc.GRPCInferenceServiceStub]:
    with grpc.insecure_channel(server.grpc_url) as channel:
        yield pb_grpc.GRPCInferenceServiceStub(channel)


def client_error(response: httpx.Response, status: int = 400) -> str:
    assert response.status_code == status, response.text[:300]
    return str(response.json()["error"])


def grpc_code(call: object) -> grpc.StatusCode:
    with pytest.raises(grpc.RpcError) as caught:
        call()  # type: ignore[operator]
    return caught.value.code()  # type: ignore[no-any-return]


def grpc_request(name: str, shape: list[int], raw: bytes, model: str = "add_sub") -> pb.ModelInferRequest:
    request = pb.ModelInferRequest(model_name=model)
    request.inputs.add(name=name, datatype="FP32", shape=shape)
    request.raw_input_contents.append(raw)
    return request


def test_a_shape_of_65_dimensions_is_a_client_error_and_the_stream_goes_on(
    http: httpx.Client, stub: pb_grpc.GRPCInferenceServiceStub
) -> None:
    shape = [1] * 65
    body = {"inputs": [{"name": "INPUT0", "shape": shape, "datatype": "FP32", "data": [0]}]}
    assert "65 dimensions" in client_error(http.post("/v2/models/add_sub/infer", json=body))
    bad = grpc_request("INPUT0", shape, np.zeros(1, np.float32).tobytes())
    assert grpc_code(lambda: stub.ModelInfer(bad)) is grpc.StatusCode.INVALID_ARGUMENT
    good = pb.ModelInferRequest(model_name="add_sub")
    for name in ("INPUT0", "INPUT1"):
        good.inputs.add(name=name, datatype="FP32", shape=[1, 4])
        good.raw_input_contents.append(np.ones(4, np.float32).tobytes())
    replies = list(stub.ModelStreamInfer(iter([bad, good, bad, good])))
    assert ["65 dimensions" in reply.error_message for reply in replies] == [True, False, True, False]
    assert replies[1].infer_response.model_name == "add_sub"


def test_a_4400_digit_version_is_not_found_not_a_crash(
    http: httpx.Client, stub: pb_grpc.GRPCInferenceServiceStub
) -> None:
    for path in ("", "/ready", "/config", "/stats"):
        client_error(http.get(f"/v2/models/add_sub/versions/{LONG_VERSION}{path}"), 404)
    client_error(http.post(f"/v2/models/add_sub/versions/{LONG_VERSION}/infer", json=GOOD), 404)
    calls = [
        lambda: stub.ModelReady(pb.ModelReadyRequest(name="add_sub", version=LONG_VERSION)),
        lambda: stub.ModelMetadata(pb.ModelMetadataRequest(name="add_sub", version=LONG_VERSION)),
        lambda: stub.ModelConfig(pb.ModelConfigRequest(name="add_sub", version=LONG_VERSION)),
        lambda: stub.ModelStatistics(pb.ModelStatisticsRequest(name="add_sub", version=LONG_VERSION)),
    ]
    assert {grpc_code(call) for call in calls} == {grpc.StatusCode.NOT_FOUND}


@pytest.mark.parametrize(
    ("data", "says"),
    [
        ([None, 2.0, 3.0, 4.0], "must be numbers"),
        ([True, 2.0, 3.0, 4.0], "must be numbers"),
        ([1e300, 2.0, 3.0, 4.0], "out of range for FP32"),
    ],
)
def test_fp32_from_json_takes_numbers_in_range_only(http: httpx.Client, data: list[object], says: str) -> None:
    body = {"inputs": [{**GOOD["inputs"][0], "data": data}, GOOD["inputs"][1]]}
    assert says in client_error(http.post("/v2/models/add_sub/infer", json=body))


def test_malformed_requests_never_open_the_breaker(server: BackgroundServer, http: httpx.Client) -> None:
    """50 zero-sized images (the probe's trigger: 25 opened the breaker for everyone) are client
    errors, and the next valid request is still served."""
    zero = {"inputs": [{"name": "x", "shape": [1, 3, 48, 0], "datatype": "FP32", "data": []}]}
    for _ in range(50):
        assert "zero-sized dimension" in client_error(http.post("/v2/models/ocr-cls/infer", json=zero))
    good = {"inputs": [{"name": "x", "shape": [1, 3, 48, 192], "datatype": "FP32", "data": [0.0] * (3 * 48 * 192)}]}
    for _ in range(3):
        assert http.post("/v2/models/ocr-cls/infer", json=good).status_code == 200
    opened = [
        line
        for line in http.get("/metrics").text.splitlines()
        if line.startswith("mcp_circuit_transitions_total") and 'model="ocr-cls"' in line and 'state="open"' in line
    ]
    assert not opened or all(line.endswith(" 0.0") for line in opened), opened


def test_a_client_gone_mid_body_is_a_499_not_a_500(server: BackgroundServer, http: httpx.Client) -> None:
    host, port = server.http_url.rsplit(":", 1)
    head = f"POST /v2/models/add_sub/infer HTTP/1.1\r\nHost: {host}\r\nContent-Length: 100000\r\n\r\n"
    with socket.create_connection((host, int(port))) as raw:
        raw.sendall(head.encode() + b'{"inputs": [')
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        metrics = http.get("/metrics").text
        if 'code="499",model="add_sub"' in metrics:
            break
        time.sleep(0.1)
    assert 'code="499",model="add_sub"' in metrics
    assert 'code="500",model="add_sub"' not in metrics


def test_a_200_kb_model_name_gets_a_short_error_the_client_can_read(
    http: httpx.Client, stub: pb_grpc.GRPCInferenceServiceStub
) -> None:
    name = "m" * 200_000
    with pytest.raises(grpc.RpcError) as caught:
        stub.ModelMetadata(pb.ModelMetadataRequest(name=name))
    assert caught.value.code() is grpc.StatusCode.NOT_FOUND
    assert len(caught.value.details() or "") < 1100 and "(truncated)" in (caught.value.details() or "")
    response = http.post(
        "/v2/models/add_sub/infer", json={"inputs": [{"name": name, "shape": [1], "datatype": "FP32"}]}
    )
    assert response.status_code == 400 and len(response.json()["error"]) < 1100


@pytest.mark.parametrize(
    "raw",
    [
        b"GARBAGE\r\n\r\n",
        b"GET /v2 HTTP/1.1\r\nHost: localhost\r\nBad Header Line\r\n\r\n",
        b"GET /v2 HTTP/9.9\r\n\r\n",
    ],
)
def test_requests_the_http_parser_rejects_get_a_json_error(server: BackgroundServer, raw: bytes) -> None:
    host, port = server.http_url.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as connection:
        connection.sendall(raw)
        reply = b""
        while chunk := connection.recv(65536):
            reply += chunk
    head, _, body = reply.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400"), reply[:200]
    assert b"content-type: application/json" in head.lower()
    assert isinstance(json.loads(body)["error"], str)
