"""The standard gRPC health service and server reflection, and the HTTP probe aliases, on the real server."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import grpc
import httpx
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import ProtoReflectionDescriptorDatabase

from mcp2026ai import __version__
from mcp2026ai.registry import ModelRegistry
from mcp2026ai.server.config import ServerConfig
from mcp2026ai.testing import BackgroundServer
from support.models import mlp_model

pytestmark = pytest.mark.timeout(120)
Status = health_pb2.HealthCheckResponse


@pytest.fixture()
def server(tmp_path: Path) -> Iterator[BackgroundServer]:
    registry = ModelRegistry(tmp_path / "home")
    registry.register("mlp", mlp_model(tmp_path / "mlp.onnx"))
    with BackgroundServer(registry, ["mlp"], ServerConfig(http_port=0, grpc_port=0, drain_timeout_s=5)) as running:
        yield running


def check(stub: health_pb2_grpc.HealthStub, service: str) -> int:
    return int(stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=5).status)


def test_health_serving_per_service_then_not_serving_during_a_drain(server: BackgroundServer) -> None:
    with grpc.insecure_channel(server.grpc_url) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        for service in ("", "inference.GRPCInferenceService", "mlp"):
            assert check(stub, service) == Status.SERVING, service
        with pytest.raises(grpc.RpcError) as unknown:
            check(stub, "no-such-model")
        assert unknown.value.code() is grpc.StatusCode.NOT_FOUND

        watch = stub.Watch(health_pb2.HealthCheckRequest(service="mlp"), timeout=30)
        assert next(watch).status == Status.SERVING
        seen_by_check: list[int] = []

        def probe_during_drain() -> None:  # the probe a kubelet sends while the pod drains
            while True:
                try:
                    seen_by_check.append(check(stub, ""))
                except grpc.RpcError:
                    return  # the listener closed

        stopping = threading.Thread(target=server.stop)
        stopping.start()
        assert next(watch).status == Status.NOT_SERVING
        probe_during_drain()
        stopping.join(60)
    assert Status.NOT_SERVING in seen_by_check
    assert Status.SERVING not in seen_by_check[seen_by_check.index(Status.NOT_SERVING) :]


def test_reflection_lists_and_describes_the_inference_service(server: BackgroundServer) -> None:
    with grpc.insecure_channel(server.grpc_url) as channel:
        database = ProtoReflectionDescriptorDatabase(channel)  # what grpcurl's list/describe ask
        services = set(database.get_services())
        assert {"inference.GRPCInferenceService", "grpc.health.v1.Health"} <= services
        infer = database.FindFileContainingSymbol("inference.GRPCInferenceService")
        service = next(service for service in infer.service if service.name == "GRPCInferenceService")
        methods = {method.name for method in service.method}
        assert {"ModelInfer", "ModelMetadata", "ServerReady"} <= methods


def test_http_probe_aliases(server: BackgroundServer) -> None:
    base = f"http://{server.http_url}"
    for path in ("/health", "/ping"):
        response = httpx.get(base + path)
        assert (response.status_code, response.json()) == (200, {"status": "ok"}), path
    assert httpx.get(base + "/version").json() == {"name": "mcp2026ai", "version": __version__}
    server.plane.stop_accepting()
    for path in ("/health", "/ping"):
        response = httpx.get(base + path)
        assert (response.status_code, response.json()) == (503, {"status": "unavailable"}), path
