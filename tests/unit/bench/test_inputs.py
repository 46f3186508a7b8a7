"""Targets, --shape, synthesized tensors, and request encodings decoded by the server's own codecs."""

from __future__ import annotations

import numpy as np
import pytest
from tritonclient.grpc import service_pb2 as pb

from mcp2026ai.bench import http as http_codec
from mcp2026ai.bench.config import BenchConfig, parse_shapes, parse_target
from mcp2026ai.bench.inputs import model_info, request_shapes, synthesize
from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.protocol.v2_grpc import decode_request as decode_grpc
from mcp2026ai.protocol.v2_grpc import encode_request as encode_grpc
from mcp2026ai.protocol.v2_json import decode_request as decode_http
from mcp2026ai.protocol.v2_json import encode_request as encode_http


@pytest.mark.parametrize(
    ("url", "protocol", "expected"),
    [
        ("http://localhost:8080/infer", "http", ("localhost", 8080, None, None)),
        ("localhost:9000", "http", ("localhost", 9000, None, None)),
        ("127.0.0.1", "http", ("127.0.0.1", 8080, None, None)),
        ("127.0.0.1", "grpc", ("127.0.0.1", 8081, None, None)),
        ("http://h:1/v2/models/mlp/infer", "http", ("h", 1, "mlp", None)),
        ("http://h:1/v2/models/mlp/versions/2/infer", "http", ("h", 1, "mlp", "2")),
    ],
)
def test_parse_target(url: str, protocol: str, expected: tuple[object, ...]) -> None:
    target = parse_target(url, protocol)  # type: ignore[arg-type]
    assert (target.host, target.port, target.model, target.version) == expected


@pytest.mark.parametrize("url", ["ftp://h:1", "http://:80", "http://h:99999"])
def test_bad_targets_name_the_value(url: str) -> None:
    with pytest.raises(InvalidArgumentError, match="-u"):
        parse_target(url, "http")


def test_parse_shapes() -> None:
    assert parse_shapes(["x:3,48,192", "y:4"]) == {"x": [3, 48, 192], "y": [4]}
    for bad in ("x", "x:", "x:3,,4", "x:0,2", "x:a"):
        with pytest.raises(InvalidArgumentError, match="--shape"):
            parse_shapes([bad])


def test_config_defaults_to_a_bounded_run() -> None:
    assert BenchConfig().requests == 1000
    assert BenchConfig(duration_s=5).requests is None
    assert not BenchConfig().open_loop and BenchConfig(rate=10).open_loop


OCR_METADATA = {
    "name": "ocr-cls",
    "inputs": [{"name": "x", "datatype": "FP32", "shape": [-1, 3, 48, -1]}],
    "outputs": [{"name": "probs", "datatype": "FP32", "shape": [-1, 2]}],
}


def test_batchable_shapes_take_batch_size_and_overrides() -> None:
    info = model_info(OCR_METADATA, {"max_batch_size": 8})
    assert request_shapes(info, {"x": [3, 48, 192]}, 4) == {"x": [4, 3, 48, 192]}
    with pytest.raises(InvalidArgumentError, match=r"input 'x' has dynamic dimensions .*--shape x:3,48,1"):
        request_shapes(info, {}, 1)
    with pytest.raises(InvalidArgumentError, match="max_batch_size 8"):
        request_shapes(info, {"x": [3, 48, 192]}, 9)
    with pytest.raises(InvalidArgumentError, match=r"unknown input\(s\) y"):
        request_shapes(info, {"y": [1]}, 1)


def test_unbatched_model_uses_full_shapes() -> None:
    metadata = {"name": "m", "inputs": [{"name": "a", "datatype": "INT64", "shape": ["2", "3"]}], "outputs": []}
    info = model_info(metadata, {"max_batch_size": 0})
    assert request_shapes(info, {}, 1) == {"a": [2, 3]}
    with pytest.raises(InvalidArgumentError, match="does not batch"):
        request_shapes(info, {}, 2)
    without_config = model_info({**OCR_METADATA}, None)
    assert without_config.max_batch_size == 1


def test_synthesized_tensors_have_the_datatypes_and_are_seeded() -> None:
    metadata = {
        "name": "m",
        "inputs": [
            {"name": "f", "datatype": "FP16", "shape": [-1, 2]},
            {"name": "i", "datatype": "INT32", "shape": [-1, 2]},
            {"name": "b", "datatype": "BOOL", "shape": [-1, 2]},
            {"name": "s", "datatype": "BYTES", "shape": [-1, 2]},
        ],
    }
    info = model_info(metadata, {"max_batch_size": 4})
    shapes = request_shapes(info, {}, 3)
    tensors = synthesize(info, shapes, seed=3)
    assert {name: (a.dtype.name, a.shape) for name, a in tensors.items()} == {
        "f": ("float16", (3, 2)),
        "i": ("int32", (3, 2)),
        "b": ("bool", (3, 2)),
        "s": ("object", (3, 2)),
    }
    assert np.array_equal(synthesize(info, shapes, seed=3)["f"], tensors["f"])


TENSORS = {"x": np.arange(6, dtype=np.float32).reshape(2, 3), "ids": np.array([[1, 2]], dtype=np.int64)}


@pytest.mark.parametrize("binary", [True, False])
def test_http_bodies_decode_with_the_server_codec(binary: bool) -> None:
    body, header_length = encode_http(TENSORS, ["y"], binary)
    assert (header_length is not None) == binary
    request = decode_http("m", None, body, str(header_length) if binary else None, {})
    assert request.output_names == ["y"]
    for name, array in TENSORS.items():
        np.testing.assert_array_equal(request.inputs[name], array)


def test_http_request_bytes_carry_length_and_headers() -> None:
    data = http_codec.request_bytes("h", 1, "/v2/models/m/infer", b"abc", 2, {"x-sla-class": "best-effort"})
    head, _, body = data.partition(b"\r\n\r\n")
    assert body == b"abc"
    lines = head.decode().split("\r\n")
    assert lines[0] == "POST /v2/models/m/infer HTTP/1.1"
    assert {"Content-Length: 3", "Inference-Header-Content-Length: 2", "x-sla-class: best-effort"} <= set(lines)


@pytest.mark.parametrize("binary", [True, False])
def test_grpc_requests_decode_with_the_server_codec(binary: bool) -> None:
    data = encode_grpc("m", "2", TENSORS, ["y"], binary).SerializeToString()
    message = pb.ModelInferRequest.FromString(data)
    assert bool(message.raw_input_contents) == binary
    request = decode_grpc(message, {})
    assert (request.model, request.version, request.output_names) == ("m", "2", ["y"])
    for name, array in TENSORS.items():
        np.testing.assert_array_equal(request.inputs[name], array)


def test_grpc_json_mode_refuses_fp16() -> None:
    with pytest.raises(InvalidArgumentError, match="use --binary"):
        encode_grpc("m", None, {"h": np.zeros(2, np.float16)}, [], binary=False)
