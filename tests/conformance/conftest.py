"""One real server (HTTP + gRPC on loopback ephemeral ports) shared by the conformance suite."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient

from mcp2026ai.bundled import bundled_model_path
from mcp2026ai.registry import ModelRegistry, Preprocessing
from mcp2026ai.testing import BackgroundServer
from support.models import add_sub_model, int_identity_model, mlp_model, string_identity_model

MODELS = ["ocr-cls", "add_sub", "mlp", "int_identity", "string_identity"]


@pytest.fixture(scope="session")
def registry(tmp_path_factory: pytest.TempPathFactory) -> ModelRegistry:
    home = tmp_path_factory.mktemp("mcp-home")
    models = tmp_path_factory.mktemp("models")
    registry = ModelRegistry(home)
    registry.register(
        "ocr-cls",
        bundled_model_path("ocr-cls"),
        preprocessing=Preprocessing(
            height=48, width=192, mean=[0.5] * 3, std=[0.5] * 3, color="BGR", resize="pad", labels=["0", "180"]
        ),
    )
    registry.register("add_sub", add_sub_model(Path(models) / "add_sub.onnx"))
    registry.register("mlp", mlp_model(Path(models) / "mlp.onnx"))
    registry.register("int_identity", int_identity_model(Path(models) / "int_identity.onnx"))
    registry.register("string_identity", string_identity_model(Path(models) / "string_identity.onnx"))
    return registry


@pytest.fixture(scope="session")
def server(registry: ModelRegistry) -> Iterator[BackgroundServer]:
    with BackgroundServer(registry, MODELS) as running:
        yield running


@pytest.fixture(params=["http", "grpc"])
def protocol(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture()
def client(server: BackgroundServer, protocol: str) -> Iterator[Any]:
    if protocol == "http":
        http = httpclient.InferenceServerClient(server.http_url)
        yield http
        http.close()
    else:
        grpc = grpcclient.InferenceServerClient(server.grpc_url)
        yield grpc
        grpc.close()


@pytest.fixture()
def module(protocol: str) -> Any:
    """The tritonclient module of the protocol under test (InferInput, InferRequestedOutput, ...)."""
    return httpclient if protocol == "http" else grpcclient
