"""Fuzzing both protocols of one live server with hypothesis.

Malformed JSON, random v2 request structures, wrong datatypes and shapes, huge dimensions, truncated
and oversized binary bodies, bad base64 and non-image bytes for /v1/infer, odd and unicode model
names, random protobuf requests and raw garbage on gRPC. Every answer must be a client error (HTTP
4xx with a JSON ``{"error": ...}`` body; a gRPC code from :data:`CLIENT_CODES`), or a success for an
input that happens to be valid; never a 5xx, INTERNAL or UNKNOWN. Meanwhile a background thread keeps
sending good requests over both protocols: every one must succeed, and the server is ready at the end.
"""

from __future__ import annotations

import base64
import json
import struct
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import grpc
import httpx
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from tritonclient.grpc import service_pb2 as pb
from tritonclient.grpc import service_pb2_grpc as pb_grpc

from mcp2026ai.bundled import OCR_CLS_PREPROCESSING, bundled_model_path
from mcp2026ai.registry import ModelRegistry, Preprocessing
from mcp2026ai.server.config import ServerConfig
from mcp2026ai.testing import BackgroundServer
from tests.support.images import png_bytes, render_text
from tests.support.models import add_sub_model, int_identity_model, string_identity_model

pytestmark = pytest.mark.timeout(300)

MODELS = ["add_sub", "int_identity", "string_identity", "ocr-cls"]
LIMIT = 256 << 10  # max_request_bytes of the fuzzed server
CLIENT_CODES = {
    grpc.StatusCode.INVALID_ARGUMENT,
    grpc.StatusCode.NOT_FOUND,
    grpc.StatusCode.RESOURCE_EXHAUSTED,
    grpc.StatusCode.FAILED_PRECONDITION,
    grpc.StatusCode.OUT_OF_RANGE,
}
DEADLINE = "request timeout expired"  # the one 503 / UNAVAILABLE a valid request may earn here
DATATYPES = ["BOOL", "UINT8", "UINT16", "UINT32", "UINT64", "INT8", "INT16", "INT32", "INT64"]
DATATYPES += ["FP16", "FP32", "FP64", "BF16", "BYTES"]
INPUT_NAMES = ["INPUT0", "INPUT1", "ids", "mask", "text", "x"]
FUZZ = settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
)
FEW = settings(FUZZ, max_examples=25)
NAMES = settings(FUZZ, max_examples=50)  # several requests per example


# the server and the good traffic ------------------------------------------------------------------


@dataclass
class GoodTraffic:
    """Valid HTTP and gRPC inferences in a loop; every failure is kept."""

    http_url: str
    grpc_url: str
    sent: int = 0
    failures: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="good-traffic", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(30)

    def _run(self) -> None:
        x = np.arange(4, dtype=np.float32).reshape(1, 4)
        http = httpclient.InferenceServerClient(self.http_url, network_timeout=30)
        rpc = grpcclient.InferenceServerClient(self.grpc_url)
        try:
            while not self._stop.is_set():
                for client, module in ((http, httpclient), (rpc, grpcclient)):
                    self._one(client, module, x)
                time.sleep(0.02)
        finally:
            http.close()
            rpc.close()

    def _one(self, client: Any, module: Any, x: np.ndarray) -> None:
        inputs = [module.InferInput(name, [1, 4], "FP32") for name in ("INPUT0", "INPUT1")]
        for item in inputs:
            item.set_data_from_numpy(x)
        try:
            result = client.infer("add_sub", inputs)
            if not np.array_equal(result.as_numpy("OUTPUT0"), x * 2):
                self.failures.append(f"{module.__name__}: wrong answer")
        except Exception as exc:  # noqa: BLE001 - every failure is the finding
            self.failures.append(f"{module.__name__}: {exc}")
        self.sent += 1


@dataclass
class Target:
    server: BackgroundServer
    http: httpx.Client
    stub: pb_grpc.GRPCInferenceServiceStub
    channel: grpc.Channel
    traffic: GoodTraffic

    def post(self, path: str, content: bytes, headers: dict[str, str] | None = None) -> httpx.Response:
        return self.http.post(path, content=content, headers=headers or {})


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    root = tmp_path_factory.mktemp("fuzz")
    registry = ModelRegistry(root / "home")
    registry.register("add_sub", add_sub_model(root / "add_sub.onnx"))
    registry.register("int_identity", int_identity_model(root / "int_identity.onnx"))
    registry.register("string_identity", string_identity_model(root / "string_identity.onnx"))
    preprocessing = Preprocessing.model_validate(OCR_CLS_PREPROCESSING)
    registry.register("ocr-cls", bundled_model_path("ocr-cls"), preprocessing=preprocessing)
    config = ServerConfig(http_port=0, grpc_port=0, drain_timeout_s=5, max_request_bytes=LIMIT)
    with BackgroundServer(registry, MODELS, config) as server:
        traffic = GoodTraffic(server.http_url, server.grpc_url)
        traffic.start()
        channel = grpc.insecure_channel(server.grpc_url, options=[("grpc.max_send_message_length", -1)])
        http = httpx.Client(base_url=f"http://{server.http_url}", timeout=30)
        try:
            yield Target(server, http, pb_grpc.GRPCInferenceServiceStub(channel), channel, traffic)
        finally:
            traffic.stop()
            http.close()
            channel.close()


def assert_client_error(response: httpx.Response, allow_ok: bool = True) -> None:
    """A 2xx (only where the input may be valid) or a 4xx with a JSON error body; never a 5xx or a redirect."""
    if allow_ok and response.status_code == 200:
        return
    if allow_ok and response.status_code == 503 and response.json() == {"error": DEADLINE}:
        return  # a valid request whose own "timeout" parameter expired: Triton's UNAVAILABLE, retryable
    assert 400 <= response.status_code < 500, (response.status_code, response.text[:300])
    body = response.json()
    assert isinstance(body, dict) and isinstance(body.get("error"), str) and body["error"], body


def assert_client_code(call: Callable[[], Any], allow_ok: bool = True) -> None:
    try:
        call()
    except grpc.RpcError as exc:
        if allow_ok and exc.code() is grpc.StatusCode.UNAVAILABLE and exc.details() == DEADLINE:
            return  # the request's own "timeout" parameter expired (see assert_client_error)
        assert exc.code() in CLIENT_CODES, (exc.code(), exc.details())
        assert exc.details(), "a refusal names its reason"
    else:
        assert allow_ok, "expected a refusal"


# strategies ---------------------------------------------------------------------------------------

scalars = (
    st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70) | st.floats() | st.text(max_size=12)
)
json_values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=6) | st.dictionaries(st.text(max_size=8), children, max_size=6),
    max_leaves=30,
)
huge_dims = st.sampled_from([2**31, 2**32 + 1, 2**40, 2**62, 2**63 - 1, 10**6, 65536])
shapes = st.lists(st.integers(min_value=-3, max_value=6) | huge_dims, max_size=5) | json_values
tensor_data = (
    st.lists(st.floats() | st.integers(-(2**65), 2**65) | st.booleans() | st.text(max_size=4), max_size=24)
    | st.lists(st.lists(st.floats(width=32), max_size=5), max_size=5)
    | json_values
)
tensors = st.fixed_dictionaries(
    {
        "name": st.sampled_from(INPUT_NAMES) | st.text(max_size=8),
        "shape": shapes,
        "datatype": st.sampled_from(DATATYPES) | st.text(max_size=6) | json_values,
        "data": tensor_data,
    },
    optional={"parameters": st.dictionaries(st.sampled_from(["binary_data_size", "x"]), json_values, max_size=2)},
)
request_parameters = st.dictionaries(
    st.sampled_from(["binary_data_output", "timeout", "sla_class", "priority"]) | st.text(max_size=6),
    json_values,
    max_size=3,
)
v2_requests = st.fixed_dictionaries(
    {"inputs": st.lists(tensors, max_size=3) | json_values},
    optional={
        "outputs": st.lists(st.fixed_dictionaries({"name": st.text(max_size=8)}), max_size=2) | json_values,
        "parameters": request_parameters | json_values,
        "id": json_values,
    },
)
header_text = st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E), max_size=8)  # valid field values
VALID_INPUTS = [{"name": n, "shape": [1, 4], "datatype": "FP32", "data": [1, 2, 3, 4]} for n in ("INPUT0", "INPUT1")]
model_names = st.text(min_size=1, max_size=40).filter(lambda name: name not in MODELS)


def _dumps(document: Any) -> bytes:
    return json.dumps(document).encode()  # stdlib: big integers and NaN go out as they are


def _nested(depth: int, leaf: str) -> str:
    return "[" * depth + leaf + "]" * depth


# HTTP ---------------------------------------------------------------------------------------------


@FUZZ
@given(body=st.binary(max_size=600) | st.text(max_size=300).map(str.encode))
def test_http_malformed_json_bodies(target: Target, body: bytes) -> None:
    assert_client_error(target.post("/v2/models/add_sub/infer", body), allow_ok=False)


@FUZZ
@given(document=json_values)
def test_http_random_json_documents(target: Target, document: Any) -> None:
    assert_client_error(target.post("/v2/models/add_sub/infer", _dumps(document)), allow_ok=False)


@settings(FUZZ, max_examples=150)
@example(model="add_sub", document={"inputs": VALID_INPUTS, "parameters": {"timeout": 1}})
@given(model=st.sampled_from(MODELS), document=v2_requests)
def test_http_random_v2_requests_wrong_dtypes_shapes_and_huge_dims(target: Target, model: str, document: Any) -> None:
    assert_client_error(target.post(f"/v2/models/{model}/infer", _dumps(document)))


@FEW
@example(depth=1017, datatype="BYTES")  # regression: recursive flattening hit RecursionError -> 500
@given(depth=st.integers(min_value=50, max_value=5000), datatype=st.sampled_from(["FP32", "BYTES"]))
def test_http_deeply_nested_data(target: Target, depth: int, datatype: str) -> None:
    name, leaf, model = ("text", '"a"', "string_identity") if datatype == "BYTES" else ("INPUT0", "1.0", "add_sub")
    tensor = f'{{"name": "{name}", "shape": [1], "datatype": "{datatype}", "data": {_nested(depth, leaf)}}}'
    assert_client_error(target.post(f"/v2/models/{model}/infer", f'{{"inputs": [{tensor}]}}'.encode()))


def _binary_request(claimed: int, raw: bytes) -> tuple[bytes, int]:
    header = {
        "inputs": [
            {"name": name, "shape": [1, 4], "datatype": "FP32", "parameters": {"binary_data_size": claimed}}
            for name in ("INPUT0", "INPUT1")
        ]
    }
    head = json.dumps(header).encode()
    return head + raw + raw, len(head)


@FUZZ
@given(
    claimed=st.integers(min_value=-5, max_value=40) | huge_dims,
    raw_size=st.integers(min_value=0, max_value=40),
    cut=st.integers(min_value=0, max_value=400),
    header_length=st.none() | st.integers(min_value=-10, max_value=10**7).map(str) | header_text,
    extra=st.binary(max_size=48),
)
def test_http_truncated_and_inconsistent_binary_bodies(
    target: Target, claimed: int, raw_size: int, cut: int, header_length: str | None, extra: bytes
) -> None:
    body, json_length = _binary_request(claimed, b"\x00" * raw_size)
    body = body[: max(0, len(body) - cut)] + extra
    length = str(json_length) if header_length is None else header_length
    headers = {"Inference-Header-Content-Length": length, "Content-Type": "application/octet-stream"}
    assert_client_error(target.post("/v2/models/add_sub/infer", body, headers))


@FEW
@given(size=st.integers(min_value=LIMIT + 1, max_value=LIMIT + 4096), chunked=st.booleans())
def test_http_oversized_bodies_are_413(target: Target, size: int, chunked: bool) -> None:
    body, json_length = _binary_request(16, b"\x00" * 16)
    body += b"\x00" * (size - len(body))
    headers = {"Inference-Header-Content-Length": str(json_length)}

    def chunks() -> Iterator[bytes]:
        for start in range(0, len(body), 8192):
            yield body[start : start + 8192]

    content: Any = chunks() if chunked else body
    response = target.http.post("/v2/models/add_sub/infer", content=content, headers=headers)
    assert response.status_code == 413, response.text[:200]
    assert_client_error(response, allow_ok=False)


def _png() -> bytes:
    return png_bytes(render_text("fuzz"))


@FUZZ
@given(
    image=st.text(max_size=64)
    | st.binary(max_size=256).map(lambda data: base64.b64encode(data).decode())
    | st.integers(min_value=1, max_value=200).map(lambda cut: base64.b64encode(_png()[:-cut]).decode())
    | json_values,
    model=st.sampled_from(["ocr-cls", "add_sub"]) | json_values,
    top_k=st.sampled_from([1, 2, 5]) | json_values,
    version=st.none() | json_values,
)
@example(image="", model="ocr-cls", top_k=1, version=[None])  # regression: unhashable version -> 500
def test_http_v1_bad_base64_and_non_image_bytes(
    target: Target, image: Any, model: Any, top_k: Any, version: Any
) -> None:
    document = {"image": image, "model": model, "top_k": top_k}
    if version is not None:
        document["version"] = version
    assert_client_error(target.post("/v1/infer", _dumps(document)))


@NAMES
@example(name="0/", version=None)  # decodes to a trailing slash: Starlette's redirect, then 404
@given(name=model_names, version=st.none() | st.text(min_size=1, max_size=12))
def test_http_unicode_and_odd_model_names(target: Target, name: str, version: str | None) -> None:
    ref = quote(name, safe="")
    if version is not None:
        ref += "/versions/" + quote(version, safe="")
    assert_client_error(target.http.get(f"/v2/models/{ref}"))
    assert_client_error(target.http.get(f"/v2/models/{ref}/ready"))
    assert_client_error(target.http.get(f"/v2/models/{ref}/config"))
    assert_client_error(target.http.get(f"/v2/models/{ref}/stats"))
    assert_client_error(target.post(f"/v2/models/{ref}/infer", b'{"inputs": []}'), allow_ok=False)
    assert_client_error(target.post(f"/v2/repository/models/{quote(name, safe='')}/load", b""), allow_ok=False)
    assert_client_error(target.post(f"/v2/repository/models/{quote(name, safe='')}/unload", b""), allow_ok=False)


# gRPC ---------------------------------------------------------------------------------------------

int64s = st.integers(min_value=-(2**63), max_value=2**63 - 1)
grpc_shapes = st.lists(st.integers(min_value=-3, max_value=6) | huge_dims | int64s, max_size=5)
parameter_values = st.one_of(
    st.builds(lambda v: pb.InferParameter(bool_param=v), st.booleans()),
    st.builds(lambda v: pb.InferParameter(int64_param=v), int64s),
    st.builds(lambda v: pb.InferParameter(string_param=v), st.text(max_size=10)),
)
grpc_parameters = st.dictionaries(
    st.sampled_from(["timeout", "sla_class", "priority", "binary_data_output"]) | st.text(max_size=6),
    parameter_values,
    max_size=3,
)


@st.composite
def infer_tensors(draw: st.DrawFn) -> pb.ModelInferRequest.InferInputTensor:
    tensor = pb.ModelInferRequest.InferInputTensor(
        name=draw(st.sampled_from(INPUT_NAMES) | st.text(max_size=8)),
        datatype=draw(st.sampled_from(DATATYPES) | st.text(max_size=6)),
        shape=draw(grpc_shapes),
    )
    contents = tensor.contents
    kind = draw(st.sampled_from(["fp32", "int", "int64", "bytes", "bool", "fp64", "uint64", "none"]))
    if kind == "fp32":
        contents.fp32_contents.extend(draw(st.lists(st.floats(width=32), max_size=16)))
    elif kind == "int":
        contents.int_contents.extend(draw(st.lists(st.integers(-(2**31), 2**31 - 1), max_size=16)))
    elif kind == "int64":
        contents.int64_contents.extend(draw(st.lists(int64s, max_size=16)))
    elif kind == "bytes":
        contents.bytes_contents.extend(draw(st.lists(st.binary(max_size=16), max_size=8)))
    elif kind == "bool":
        contents.bool_contents.extend(draw(st.lists(st.booleans(), max_size=16)))
    elif kind == "fp64":
        contents.fp64_contents.extend(draw(st.lists(st.floats(), max_size=16)))
    elif kind == "uint64":
        contents.uint64_contents.extend(draw(st.lists(st.integers(0, 2**64 - 1), max_size=16)))
    for key, value in draw(grpc_parameters).items():
        tensor.parameters[key].CopyFrom(value)
    return tensor


@st.composite
def infer_requests(draw: st.DrawFn) -> pb.ModelInferRequest:
    request = pb.ModelInferRequest(
        model_name=draw(st.sampled_from(MODELS) | st.text(max_size=20)),
        model_version=draw(st.sampled_from(["", "1", "1.0.0", "0", "-1"]) | st.text(max_size=8)),
        id=draw(st.text(max_size=8)),
    )
    request.inputs.extend(draw(st.lists(infer_tensors(), max_size=3)))
    raw = draw(st.lists(st.binary(max_size=40) | st.sampled_from([b"\x00" * 16, struct.pack("<I", 2**31)]), max_size=3))
    request.raw_input_contents.extend(raw)
    for name in draw(st.lists(st.text(max_size=8), max_size=2)):
        request.outputs.add(name=name)
    for key, value in draw(grpc_parameters).items():
        request.parameters[key].CopyFrom(value)
    return request


@settings(FUZZ, max_examples=150)
@given(request=infer_requests())
def test_grpc_random_infer_requests(target: Target, request: pb.ModelInferRequest) -> None:
    assert_client_code(lambda: target.stub.ModelInfer(request, timeout=30))


@FUZZ
@example(payload=b"\x00")  # regression: grpc answered UNKNOWN ("Unexpected DecodeError")
@given(payload=st.binary(max_size=300))
def test_grpc_raw_garbage_bytes(target: Target, payload: bytes) -> None:
    call = target.channel.unary_unary("/inference.GRPCInferenceService/ModelInfer")
    assert_client_code(lambda: call(payload, timeout=30))
    stream = target.channel.stream_stream("/inference.GRPCInferenceService/ModelStreamInfer")
    assert_client_code(lambda: list(stream(iter([payload]), timeout=30)))


@FEW
@given(requests=st.lists(infer_requests(), min_size=1, max_size=4))
def test_grpc_stream_infer_answers_every_bad_request_in_band(target: Target, requests: list[Any]) -> None:
    responses = list(target.stub.ModelStreamInfer(iter(requests), timeout=30))
    assert len(responses) == len(requests)


@NAMES
@given(name=st.text(max_size=40).filter(lambda name: name not in MODELS), version=st.text(max_size=8))
def test_grpc_unicode_and_odd_model_names(target: Target, name: str, version: str) -> None:
    stub = target.stub
    assert_client_code(lambda: stub.ModelMetadata(pb.ModelMetadataRequest(name=name, version=version)))
    assert_client_code(lambda: stub.ModelReady(pb.ModelReadyRequest(name=name, version=version)))
    assert_client_code(lambda: stub.ModelConfig(pb.ModelConfigRequest(name=name, version=version)))
    assert_client_code(lambda: stub.ModelStatistics(pb.ModelStatisticsRequest(name=name, version=version)))
    load = pb.RepositoryModelLoadRequest(model_name=name)
    assert_client_code(lambda: stub.RepositoryModelLoad(load), allow_ok=False)
    unload = pb.RepositoryModelUnloadRequest(model_name=name)
    assert_client_code(lambda: stub.RepositoryModelUnload(unload), allow_ok=False)


# the verdict --------------------------------------------------------------------------------------


def test_good_traffic_kept_succeeding_and_the_server_is_ready(target: Target) -> None:
    deadline = time.monotonic() + 10
    while target.traffic.sent < 20 and time.monotonic() < deadline:
        time.sleep(0.05)
    target.traffic.stop()
    assert target.traffic.failures == []
    assert target.traffic.sent >= 20
    assert target.server.plane.ready()
    assert target.http.get("/v2/health/ready").json() == {"ready": True}
    assert target.stub.ServerReady(pb.ServerReadyRequest()).ready
    assert sorted(target.server.plane.models.loaded_names()) == sorted(MODELS)
