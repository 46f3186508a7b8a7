"""HTTP-specific behaviour: v2 error JSON and statuses, size limits, binary framing, /v1/infer, ops endpoints."""

from __future__ import annotations

import base64
import io
import json
import struct
from collections.abc import Iterator

import httpx
import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont
from prometheus_client.parser import text_string_to_metric_families

from mcp2026ai.registry import ModelRegistry
from mcp2026ai.server.config import ServerConfig
from mcp2026ai.testing import BackgroundServer

pytestmark = pytest.mark.timeout(120)


@pytest.fixture()
def server(registry: ModelRegistry) -> Iterator[BackgroundServer]:
    config = ServerConfig(http_port=0, grpc_port=0, max_request_bytes=256 * 1024, drain_timeout_s=5)
    with BackgroundServer(registry, ["ocr-cls", "add_sub", "mlp"], config) as running:
        yield running


@pytest.fixture()
def http(server: BackgroundServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=f"http://{server.http_url}", timeout=30) as client:
        yield client


def add_sub_body(rows: int = 1, width: int = 4) -> dict[str, object]:
    data = list(range(rows * width))
    return {
        "inputs": [
            {"name": "INPUT0", "shape": [rows, width], "datatype": "FP32", "data": data},
            {"name": "INPUT1", "shape": [rows, width], "datatype": "FP32", "data": data},
        ]
    }


def assert_error(response: httpx.Response, status: int, *fragments: str) -> None:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error"}
    for fragment in fragments:
        assert fragment in body["error"]


def text_png(rotate: bool) -> str:
    font = ImageFont.load_default(size=40)
    image = Image.new("RGB", (520, 60), "white")
    ImageDraw.Draw(image).text((8, 4), "Contract-driven inference", fill="black", font=font)
    if rotate:
        image = image.rotate(180)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return base64.b64encode(buffer.getvalue()).decode()


class TestJsonInfer:
    def test_json_round_trip(self, http: httpx.Client) -> None:
        response = http.post("/v2/models/add_sub/infer", json={**add_sub_body(2), "id": "abc"})
        assert response.status_code == 200
        body = response.json()
        assert body["id"] == "abc" and body["model_name"] == "add_sub" and body["model_version"] == "1.0.0"
        out = {o["name"]: o for o in body["outputs"]}
        assert out["OUTPUT0"]["data"] == [2.0 * v for v in range(8)]
        assert out["OUTPUT0"]["shape"] == [2, 4] and out["OUTPUT0"]["datatype"] == "FP32"

    def test_nested_data_is_accepted(self, http: httpx.Client) -> None:
        body = add_sub_body(2)
        for tensor in body["inputs"]:  # type: ignore[attr-defined]
            tensor["data"] = [[0, 1, 2, 3], [4, 5, 6, 7]]
        assert http.post("/v2/models/add_sub/infer", json=body).status_code == 200

    def test_binary_output_on_request(self, http: httpx.Client) -> None:
        body = {**add_sub_body(1), "outputs": [{"name": "OUTPUT0", "parameters": {"binary_data": True}}]}
        response = http.post("/v2/models/add_sub/infer", json=body)
        assert response.status_code == 200
        header_length = int(response.headers["inference-header-content-length"])
        header = json.loads(response.content[:header_length])
        size = header["outputs"][0]["parameters"]["binary_data_size"]
        values = np.frombuffer(response.content[header_length : header_length + size], np.float32)
        np.testing.assert_array_equal(values, [0, 2, 4, 6])


class TestErrors:
    @pytest.mark.parametrize(
        ("body", "fragment"),
        [
            (b"{not json", "not valid JSON"),
            (b"[1, 2]", "JSON object"),
            (b'{"inputs": []}', "non-empty 'inputs'"),
            (b'{"inputs": [{"name": "INPUT0", "shape": [1, 4], "datatype": "FP32"}]}', "neither 'data'"),
            (b'{"inputs": [{"name": "INPUT0", "shape": [1, 4], "datatype": "FP99", "data": [1,2,3,4]}]}', "FP99"),
            (b'{"inputs": [{"name": "INPUT0", "shape": [1, 4], "datatype": "FP32", "data": [1]}]}', "1 values"),
            (b'{"inputs": [{"name": "INPUT0", "shape": [-1, 4], "datatype": "FP32", "data": []}]}', "negative"),
            (b'{"inputs": [{"name": "INPUT0", "shape": "x", "datatype": "FP32", "data": []}]}', "'shape' list"),
            (
                b'{"inputs": [{"name": "INPUT0", "shape": [1, 4], "datatype": "FP32", "data": ["a","b","c","d"]}]}',
                "FP32",
            ),
        ],
    )
    def test_malformed_requests_are_400(self, http: httpx.Client, body: bytes, fragment: str) -> None:
        assert_error(http.post("/v2/models/add_sub/infer", content=body), 400, fragment)

    def test_unknown_model_is_404(self, http: httpx.Client) -> None:
        assert_error(http.post("/v2/models/ghost/infer", json=add_sub_body()), 404, "ghost")
        assert_error(http.get("/v2/models/ghost"), 404, "ghost")
        assert_error(http.get("/v2/models/ghost/ready"), 404)

    def test_unknown_route_is_json_404(self, http: httpx.Client) -> None:
        assert_error(http.get("/v2/nothing/here"), 404, "not found")

    def test_huge_declared_dims_are_rejected_without_allocating(self, http: httpx.Client) -> None:
        body = {"inputs": [{"name": "INPUT0", "shape": [1 << 20, 1 << 20], "datatype": "FP32", "data": [1]}]}
        assert_error(http.post("/v2/models/add_sub/infer", json=body), 413, "elements")

    def test_body_over_limit_is_413(self, http: httpx.Client) -> None:
        assert_error(http.post("/v2/models/add_sub/infer", content=b"x" * (300 * 1024)), 413, "limit")

    def test_bad_binary_header_length(self, http: httpx.Client) -> None:
        response = http.post(
            "/v2/models/add_sub/infer", content=b"{}", headers={"Inference-Header-Content-Length": "99"}
        )
        assert_error(response, 400, "Inference-Header-Content-Length")

    def test_truncated_binary_tensor(self, http: httpx.Client) -> None:
        header = json.dumps(
            {
                "inputs": [
                    {"name": "INPUT0", "shape": [1, 4], "datatype": "FP32", "parameters": {"binary_data_size": 16}},
                    {"name": "INPUT1", "shape": [1, 4], "datatype": "FP32", "parameters": {"binary_data_size": 16}},
                ]
            }
        ).encode()
        body = header + struct.pack("<4f", 1, 2, 3, 4) + b"\x00" * 5
        response = http.post(
            "/v2/models/add_sub/infer", content=body, headers={"Inference-Header-Content-Length": str(len(header))}
        )
        assert_error(response, 400, "binary_data_size")

    def test_server_healthy_after_errors(self, http: httpx.Client) -> None:
        for _ in range(5):
            http.post("/v2/models/add_sub/infer", content=b"garbage")
        assert http.get("/v2/health/ready").status_code == 200
        assert http.post("/v2/models/add_sub/infer", json=add_sub_body()).status_code == 200


class TestLegacyImageEndpoint:
    def test_upright_and_rotated_text(self, http: httpx.Client) -> None:
        upright = http.post("/v1/infer", json={"model": "ocr-cls", "image": text_png(False), "top_k": 2}).json()
        rotated = http.post("/v1/infer?model=ocr-cls", json={"image": text_png(True)}).json()
        assert upright["predictions"][0]["label"] == "0"
        assert rotated["predictions"][0]["label"] == "180"
        assert len(upright["predictions"]) == 2
        assert upright["predictions"][0]["score"] > 0.9

    def test_bad_base64_and_bad_image(self, http: httpx.Client) -> None:
        assert_error(http.post("/v1/infer", json={"model": "ocr-cls", "image": "%%%"}), 400, "base64")
        junk = base64.b64encode(b"not an image").decode()
        assert_error(http.post("/v1/infer", json={"model": "ocr-cls", "image": junk}), 400, "decode image")
        assert_error(http.post("/v1/infer", json={"model": "add_sub", "image": text_png(False)}), 400, "preprocessing")
        assert_error(http.post("/v1/infer", json={"image": text_png(False)}), 400, "several models")

    def test_calls_are_counted_like_v2_requests(self, http: httpx.Client) -> None:
        def count(code: str) -> float:
            families = text_string_to_metric_families(http.get("/metrics").text)
            samples = next(family.samples for family in families if family.name == "mcp_requests")
            wanted = {"model": "ocr-cls", "protocol": "http", "code": code}
            return sum(x.value for x in samples if x.name.endswith("_total") and wanted.items() <= x.labels.items())

        before = count("200"), count("400")
        assert http.post("/v1/infer", json={"model": "ocr-cls", "image": text_png(False)}).status_code == 200
        assert http.post("/v1/infer", json={"model": "ocr-cls", "image": "%%%"}).status_code == 400
        assert (count("200"), count("400")) == (before[0] + 1, before[1] + 1)


class TestOperations:
    def test_healthz_and_metrics(self, http: httpx.Client) -> None:
        assert http.get("/healthz").json()["status"] == "ok"
        http.post("/v2/models/add_sub/infer", json=add_sub_body())
        text = http.get("/metrics").text
        labels = 'code="200",model="add_sub",protocol="http",sla_class="best-effort",version="1.0.0"'
        assert f"mcp_requests_total{{{labels}}}" in text
        assert "mcp_request_duration_seconds_bucket" in text
        assert "process_resident_memory_bytes" in text

    def test_repository_endpoints(self, http: httpx.Client) -> None:
        index = http.post("/v2/repository/index").json()
        assert {row["name"] for row in index} == {"ocr-cls", "add_sub", "mlp"}
        assert http.post("/v2/repository/models/mlp/unload").status_code == 200
        assert_error(http.get("/v2/models/mlp/ready"), 503, "not ready")  # known, not loaded (Triton: not ready)
        assert_error(http.get("/v2/models/ghost/ready"), 404, "ghost")
        assert http.post("/v2/repository/models/mlp/load").status_code == 200
        assert http.get("/v2/models/mlp/ready").status_code == 200
        assert_error(http.post("/v2/repository/models/ghost/load"), 404, "failed to load 'ghost'")


def test_trailing_slash_is_a_json_404_not_a_redirect(http: httpx.Client) -> None:
    response = http.post("/v2/models/add_sub/infer/", json=add_sub_body())
    assert_error(response, 404, "not found")
