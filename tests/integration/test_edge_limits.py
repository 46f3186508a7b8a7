"""Issue 50, findings 6, 7, 11, 12 and 16 against the real server: what one client can make it hold,
grow or tell.

- bodies count against the in-flight budget as they arrive, not as declared, and a body that stops
  arriving is answered 408 (idle connections declaring 64 MiB no longer starve everyone: 429);
- every route reads its body through the same reader (413 above the JSON limit: shared memory,
  trace and log settings too);
- only served versions become metric labels (client-chosen ones are ``_unknown``);
- errors never show the server's home, and an upload onnx refuses (external data) is a 400, audited;
- gRPC ``--max-connections`` counts the calls of every acceptor.
"""

from __future__ import annotations

import base64
import json
import queue
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import grpc
import httpx
import onnx
import pytest
from onnx import TensorProto, helper
from tritonclient.grpc import service_pb2 as pb
from tritonclient.grpc import service_pb2_grpc as pb_grpc

from mcp2026ai.registry import ModelRegistry
from mcp2026ai.security import AuditLog, ServingSecurity
from mcp2026ai.server.config import ServerConfig
from mcp2026ai.testing import BackgroundServer
from support.models import add_sub_model

pytestmark = pytest.mark.timeout(120)

REQUEST_LIMIT = 64 << 10
JSON_LIMIT = 64 << 10
BODY_TIMEOUT_S = 1.0
INFER = {
    "inputs": [{"name": n, "shape": [1, 4], "datatype": "FP32", "data": [1, 2, 3, 4]} for n in ("INPUT0", "INPUT1")]
}


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("limits")


@pytest.fixture(scope="module")
def server(home: Path) -> Iterator[BackgroundServer]:
    registry = ModelRegistry(home / "home")
    registry.register("add_sub", add_sub_model(home / "add_sub.onnx"))
    config = ServerConfig(
        http_port=0,
        grpc_port=0,
        drain_timeout_s=5,
        max_request_bytes=REQUEST_LIMIT,
        max_json_bytes=JSON_LIMIT,
        max_inflight_body_bytes=4 * REQUEST_LIMIT,
        body_timeout_s=BODY_TIMEOUT_S,
        security=ServingSecurity(audit_log=home / "audit.jsonl"),
    )
    with BackgroundServer(registry, ["add_sub"], config) as running:
        yield running


def url(server: BackgroundServer, path: str) -> str:
    return f"http://{server.http_url}{path}"


def test_idle_connections_declaring_big_bodies_starve_nobody(server: BackgroundServer) -> None:
    host, port = server.http_url.rsplit(":", 1)
    head = (
        f"POST /v2/models/add_sub/infer HTTP/1.1\r\nHost: localhost\r\nContent-Length: {REQUEST_LIMIT}\r\n\r\n{{"
    ).encode()
    idle = [socket.create_connection((host, int(port)), timeout=10) for _ in range(4)]
    try:
        for connection in idle:  # together they declare the whole in-flight budget, and send one byte each
            connection.sendall(head)
        time.sleep(0.3)
        answer = httpx.post(url(server, "/v2/models/add_sub/infer"), json=INFER)
        assert answer.status_code == 200, answer.text
        started = time.monotonic()
        reply = idle[0].recv(65536)  # the body stopped arriving: 408 after --body-timeout
        assert reply.startswith(b"HTTP/1.1 408"), reply
        assert b"--body-timeout" in reply
        assert time.monotonic() - started < BODY_TIMEOUT_S + 5
    finally:
        for connection in idle:
            connection.close()


@pytest.mark.parametrize(
    "path",
    [
        "/v2/systemsharedmemory/region/x/register",
        "/v2/logging",
        "/v2/trace/setting",
        "/v2/models/add_sub/trace/setting",
    ],
)
def test_small_routes_read_their_bodies_within_the_json_limit(server: BackgroundServer, path: str) -> None:
    answer = httpx.post(url(server, path), content=b" " * (JSON_LIMIT + 1024) + b"{}")
    assert answer.status_code == 413, answer.text
    assert "limit" in answer.json()["error"]


def test_client_chosen_versions_do_not_become_metric_labels(server: BackgroundServer) -> None:
    for index in range(30):
        httpx.post(url(server, f"/v2/models/add_sub/versions/rnd{index}/infer"), json=INFER)
    with grpc.insecure_channel(server.grpc_url) as channel:
        stub = pb_grpc.GRPCInferenceServiceStub(channel)
        with pytest.raises(grpc.RpcError):
            stub.ModelInfer(pb.ModelInferRequest(model_name="add_sub", model_version="V" * 100_000))
    assert httpx.post(url(server, "/v2/models/add_sub/versions/1.0.0/infer"), json=INFER).status_code == 200
    scrape = httpx.get(url(server, "/metrics")).text
    assert "rnd" not in scrape and "VVVV" not in scrape
    assert 'version="_unknown"' in scrape and 'version="1.0.0"' in scrape
    assert len(scrape) < 1_000_000


def test_load_errors_hide_the_home_and_external_data_is_a_400(server: BackgroundServer, home: Path) -> None:
    load = url(server, "/v2/repository/models/uploaded/load")
    garbage = {"parameters": {"config": "{}", "file:1/model.onnx": base64.b64encode(b"not an onnx").decode()}}
    answer = httpx.post(load, json=garbage, timeout=30)
    assert answer.status_code == 400
    assert str(home) not in answer.text and "not a valid ONNX model" in answer.json()["error"]
    external = {"parameters": {"config": "{}", "file:1/model.onnx": base64.b64encode(_external_data_onnx()).decode()}}
    answer = httpx.post(load, json=external, timeout=30)
    assert answer.status_code == 400, answer.text  # was 500 internal server error: ValidationError
    assert "points outside the directory" in answer.json()["error"] and str(home) not in answer.text
    refusals = [e for e in AuditLog(home / "audit.jsonl").entries() if e["action"] == "model.load"]
    assert len(refusals) == 2 and all(e["details"].get("result") != "ok" for e in refusals)


def _external_data_onnx() -> bytes:
    weight = helper.make_tensor("w", TensorProto.FLOAT, [4], [1, 2, 3, 4])
    weight.ClearField("float_data")
    weight.data_location = TensorProto.EXTERNAL
    entry = weight.external_data.add()
    entry.key, entry.value = "location", "../../../etc/hostname"
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    graph = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "g", [x], [y], [weight])
    model: onnx.ModelProto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    return model.SerializeToString()


def test_grpc_max_connections_counts_every_acceptors_calls(home: Path) -> None:
    registry = ModelRegistry(home / "home-grpc")
    registry.register("add_sub", add_sub_model(home / "add_sub.onnx"))
    config = ServerConfig(http_port=0, grpc_port=0, drain_timeout_s=5, max_connections=2, grpc_acceptors=5)
    with BackgroundServer(registry, ["add_sub"], config) as server, grpc.insecure_channel(server.grpc_url) as channel:
        stub = pb_grpc.GRPCInferenceServiceStub(channel)
        request = _infer_request()
        streams = [_OpenStream(stub, request) for _ in range(2)]  # two calls in progress: the limit
        try:
            codes = []
            for _ in range(10):
                try:
                    stub.ModelInfer(request, timeout=10)
                    codes.append(grpc.StatusCode.OK)
                except grpc.RpcError as exc:
                    codes.append(exc.code())
                    assert "--max-connections" in (exc.details() or "")
            assert codes == [grpc.StatusCode.RESOURCE_EXHAUSTED] * 10
        finally:
            for stream in streams:
                stream.close()
        time.sleep(0.3)
        assert stub.ModelInfer(request, timeout=10).model_name == "add_sub"  # the slots came back


def _infer_request() -> pb.ModelInferRequest:
    request = pb.ModelInferRequest(model_name="add_sub")
    for name in ("INPUT0", "INPUT1"):
        tensor = request.inputs.add(name=name, datatype="FP32", shape=[1, 4])
        tensor.contents.fp32_contents.extend([1.0, 2.0, 3.0, 4.0])
    return request


class _OpenStream:
    """A ModelStreamInfer call kept open (answered once) until :meth:`close`."""

    def __init__(self, stub: pb_grpc.GRPCInferenceServiceStub, request: pb.ModelInferRequest) -> None:
        self._requests: queue.Queue[pb.ModelInferRequest | None] = queue.Queue()
        self._requests.put(request)
        self._replies = stub.ModelStreamInfer(iter(self._requests.get, None), timeout=60)
        assert not next(self._replies).error_message
        self._drained = threading.Thread(target=lambda: list(self._replies), daemon=True)
        self._drained.start()

    def close(self) -> None:
        self._requests.put(None)
        self._drained.join(timeout=10)


def test_settings_routes_still_take_small_bodies(server: BackgroundServer) -> None:
    assert httpx.post(url(server, "/v2/logging"), content=json.dumps({})).status_code == 200
    assert httpx.post(url(server, "/v2/trace/setting"), content=b"").status_code == 200
