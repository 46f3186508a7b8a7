"""The project's own v2 clients (HTTP and gRPC, blocking and asyncio) against the real server."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import numpy as np
import pytest

from mcp2026ai.client import AsyncV2GrpcClient, AsyncV2HttpClient, V2GrpcClient, V2HttpClient
from mcp2026ai.errors import InvalidArgumentError, NotFoundError, UnavailableError
from mcp2026ai.registry import ModelRegistry
from mcp2026ai.testing import BackgroundServer
from support.images import png_bytes, render_text

pytestmark = pytest.mark.timeout(120)

ONES = np.ones((1, 4), np.float32)
TWOS = np.full((1, 4), 2.0, np.float32)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BackgroundServer]:
    from mcp2026ai.bundled import OCR_CLS_PREPROCESSING, bundled_model_path
    from mcp2026ai.registry import Preprocessing
    from support.models import add_sub_model

    root = tmp_path_factory.mktemp("client")
    registry = ModelRegistry(root / "home")
    registry.register("add_sub", add_sub_model(root / "add_sub.onnx"))
    prep = Preprocessing.model_validate(OCR_CLS_PREPROCESSING)
    registry.register("ocr-cls", bundled_model_path("ocr-cls"), preprocessing=prep)
    with BackgroundServer(registry, ["add_sub", "ocr-cls"]) as background:
        yield background


def test_http_client_infers_and_reads_metadata(server: BackgroundServer) -> None:
    with V2HttpClient(f"http://{server.http_url}") as client:
        assert client.live() and client.ready() and client.model_ready("add_sub")
        assert client.server_metadata()["name"]
        assert [t["name"] for t in client.model_metadata("add_sub")["inputs"]] == ["INPUT0", "INPUT1"]
        assert client.model_config("add_sub")["name"] == "add_sub"
        assert {row["name"] for row in client.repository_index()} >= {"add_sub", "ocr-cls"}
        for binary in (True, False):
            response = client.infer("add_sub", {"INPUT0": ONES, "INPUT1": TWOS}, binary=binary)
            assert response.model == "add_sub"
            np.testing.assert_array_equal(response.outputs["OUTPUT0"], ONES + TWOS)
            np.testing.assert_array_equal(response.outputs["OUTPUT1"], ONES - TWOS)
        only = client.infer("add_sub", {"INPUT0": ONES, "INPUT1": TWOS}, outputs=["OUTPUT1"])
        assert list(only.outputs) == ["OUTPUT1"]


def test_http_client_classifies_an_image(server: BackgroundServer) -> None:
    with V2HttpClient(f"http://{server.http_url}") as client:
        answer = client.predict_image("ocr-cls", png_bytes(render_text(rotate=True)), top_k=2)
    assert answer["model"] == "ocr-cls"
    assert answer["predictions"][0]["label"] == "180"


def test_grpc_client_infers_and_reads_metadata(server: BackgroundServer) -> None:
    with V2GrpcClient(server.grpc_url) as client:
        assert client.live() and client.ready() and client.model_ready("add_sub")
        assert client.model_metadata("add_sub")["name"] == "add_sub"
        assert client.model_config("add_sub")["name"] == "add_sub"
        response = client.infer("add_sub", {"INPUT0": ONES, "INPUT1": TWOS})
        np.testing.assert_array_equal(response.outputs["OUTPUT0"], ONES + TWOS)


@pytest.mark.parametrize("kind", ["http", "grpc"])
def test_refusals_become_the_servers_domain_errors(server: BackgroundServer, kind: str) -> None:
    client = V2HttpClient(f"http://{server.http_url}") if kind == "http" else V2GrpcClient(server.grpc_url)
    with client:
        with pytest.raises(NotFoundError, match="nope"):
            client.infer("nope", {"INPUT0": ONES})
        with pytest.raises(InvalidArgumentError, match="INPUT1"):
            client.infer("add_sub", {"INPUT0": ONES})
        assert not client.model_ready("nope")


def test_an_unreachable_server_is_unavailable() -> None:
    with V2HttpClient("http://127.0.0.1:9", timeout_s=2) as client:
        assert not client.live()
        with pytest.raises(UnavailableError, match=r"127\.0\.0\.1:9"):
            client.infer("add_sub", {"INPUT0": ONES})


def test_asyncio_clients(server: BackgroundServer) -> None:
    async def both() -> tuple[np.ndarray, np.ndarray]:
        async with AsyncV2HttpClient(f"http://{server.http_url}") as http, AsyncV2GrpcClient(server.grpc_url) as grpc:
            assert await http.model_ready("add_sub") and await grpc.model_ready("add_sub")
            with pytest.raises(NotFoundError):
                await grpc.infer("nope", {"INPUT0": ONES})
            inputs = {"INPUT0": ONES, "INPUT1": TWOS}
            first, second = await asyncio.gather(http.infer("add_sub", inputs), grpc.infer("add_sub", inputs))
            return first.outputs["OUTPUT0"], second.outputs["OUTPUT0"]

    from_http, from_grpc = asyncio.run(both())
    np.testing.assert_array_equal(from_http, ONES + TWOS)
    np.testing.assert_array_equal(from_grpc, ONES + TWOS)
