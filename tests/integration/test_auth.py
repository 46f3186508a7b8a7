"""`--auth` on the real server: bearer tokens with scopes over HTTP and gRPC, audited management."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import httpx
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import ProtoReflectionDescriptorDatabase
from tritonclient.grpc import service_pb2 as pb
from tritonclient.grpc import service_pb2_grpc as pb_grpc
from tritonclient.utils import InferenceServerException

from mcp2026ai.registry import ModelRegistry
from mcp2026ai.security import AuditLog, AuthConfig, Scope, ServingSecurity, TokenStore
from mcp2026ai.server.config import ServerConfig
from mcp2026ai.testing import BackgroundServer
from support.models import add_sub_model, mlp_model

pytestmark = pytest.mark.timeout(120)


@dataclass(frozen=True)
class Tokens:
    infer: str
    manage: str
    both: str
    store: TokenStore


@dataclass
class Secured:
    server: BackgroundServer
    tokens: Tokens
    audit: AuditLog

    def url(self, path: str) -> str:
        return f"http://{self.server.http_url}{path}"


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Secured]:
    root = tmp_path_factory.mktemp("auth")
    registry = ModelRegistry(root / "home")
    registry.register("add_sub", add_sub_model(root / "add_sub.onnx"))
    registry.register("mlp", mlp_model(root / "mlp.onnx"))
    store = TokenStore(root / "tokens.json")
    tokens = Tokens(
        infer=store.create("app", frozenset({Scope.INFER})).token,
        manage=store.create("ops", frozenset({Scope.MANAGE})).token,
        both=store.create("admin", frozenset(Scope)).token,
        store=store,
    )
    security = ServingSecurity(auth=AuthConfig(enabled=True, tokens_file=store.path), audit_log=root / "audit.jsonl")
    config = ServerConfig(http_port=0, grpc_port=0, drain_timeout_s=5, security=security)
    with BackgroundServer(registry, ["add_sub"], config) as server:
        yield Secured(server, tokens, AuditLog(root / "audit.jsonl"))


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def grpc_bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}  # gRPC metadata keys are lower case


def _inputs(module: Any) -> list[Any]:
    inputs = [module.InferInput(name, [1, 4], "FP32") for name in ("INPUT0", "INPUT1")]
    for item in inputs:
        item.set_data_from_numpy(np.ones((1, 4), dtype=np.float32))
    return inputs


# HTTP -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/v2/health/live", "/v2/health/ready", "/healthz", "/metrics", "/health", "/ping"])
def test_health_probes_and_metrics_stay_open(secured: Secured, path: str) -> None:
    assert httpx.get(secured.url(path)).status_code == 200


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/v2/models/add_sub/infer"),
        ("GET", "/v2/models/add_sub"),
        ("GET", "/v2/models/add_sub/config"),
        ("GET", "/v2/models/add_sub/ready"),
        ("GET", "/v2/models/add_sub/stats"),
        ("GET", "/v2"),
        ("GET", "/version"),
        ("POST", "/v2/repository/index"),
        ("POST", "/v2/repository/models/mlp/load"),
        ("POST", "/v1/infer"),
        ("GET", "/no/such/path"),
    ],
)
def test_http_without_a_valid_token_is_401_with_a_bearer_challenge(secured: Secured, method: str, path: str) -> None:
    for headers in ({}, {"Authorization": "Bearer mcp_000000000000_" + "x" * 43}, {"Authorization": "Basic Zm9v"}):
        response = httpx.request(method, secured.url(path), headers=headers, content=b"{}")
        assert response.status_code == 401, (headers, response.text)
        assert response.headers["www-authenticate"] == "Bearer"
        assert "error" in response.json()


def test_http_infer_and_metadata_need_the_infer_scope(secured: Secured) -> None:
    client = httpclient.InferenceServerClient(secured.server.http_url)
    try:
        result = client.infer("add_sub", _inputs(httpclient), headers=bearer(secured.tokens.infer))
        np.testing.assert_array_equal(result.as_numpy("OUTPUT0"), np.full((1, 4), 2, np.float32))
        assert client.get_model_metadata("add_sub", headers=bearer(secured.tokens.infer))["name"] == "add_sub"
        with pytest.raises(InferenceServerException, match="lacks the 'infer' scope"):
            client.infer("add_sub", _inputs(httpclient), headers=bearer(secured.tokens.manage))
    finally:
        client.close()


def test_http_load_and_unload_need_the_manage_scope_and_are_audited(secured: Secured) -> None:
    load = secured.url("/v2/repository/models/mlp/load")
    denied = httpx.post(load, headers=bearer(secured.tokens.infer))
    assert denied.status_code == 403 and "lacks the 'manage' scope" in denied.json()["error"]
    assert httpx.post(load, headers=bearer(secured.tokens.manage)).status_code == 200
    ready = httpx.get(secured.url("/v2/models/mlp/ready"), headers=bearer(secured.tokens.infer))
    assert ready.json() == {"name": "mlp", "ready": True}
    unload = httpx.post(secured.url("/v2/repository/models/mlp/unload"), headers=bearer(secured.tokens.both))
    assert unload.status_code == 200
    entries = [e for e in secured.audit.entries() if e["details"].get("protocol") == "http"]
    assert [(e["action"], e["actor"], e["target"], e["details"]["result"]) for e in entries[-2:]] == [
        ("model.load", "token:ops", "mlp:1.0.0", "ok"),
        ("model.unload", "token:admin", "mlp", "ok"),
    ]
    assert entries[-1]["details"]["peer"].startswith("127.0.0.1:")
    assert secured.audit.verify().ok


def test_a_revoked_token_is_refused_from_the_next_request(secured: Secured) -> None:
    token = secured.tokens.store.create("temporary", frozenset({Scope.INFER})).token
    url = secured.url("/v2/models/add_sub")
    assert httpx.get(url, headers=bearer(token)).status_code == 200
    secured.tokens.store.revoke("temporary")
    response = httpx.get(url, headers=bearer(token))
    assert response.status_code == 401 and "was revoked" in response.json()["error"]


# gRPC -------------------------------------------------------------------------------------------


def _grpc_code(call: Any) -> grpc.StatusCode:
    with pytest.raises(grpc.RpcError) as caught:
        call()
    return caught.value.code()  # type: ignore[no-any-return]


def test_grpc_health_is_open_and_the_rest_needs_a_token(secured: Secured) -> None:
    with grpc.insecure_channel(secured.server.grpc_url) as channel:
        stub = pb_grpc.GRPCInferenceServiceStub(channel)
        assert stub.ServerLive(pb.ServerLiveRequest()).live
        assert stub.ServerReady(pb.ServerReadyRequest()).ready
        health = health_pb2_grpc.HealthStub(channel)
        assert health.Check(health_pb2.HealthCheckRequest()).status == health_pb2.HealthCheckResponse.SERVING
        reflection = ProtoReflectionDescriptorDatabase(channel)
        assert _grpc_code(lambda: list(reflection.get_services())) is grpc.StatusCode.UNAUTHENTICATED
        calls = [
            lambda: stub.ServerMetadata(pb.ServerMetadataRequest()),
            lambda: stub.ModelMetadata(pb.ModelMetadataRequest(name="add_sub")),
            lambda: stub.ModelInfer(pb.ModelInferRequest(model_name="add_sub")),
            lambda: stub.RepositoryModelLoad(pb.RepositoryModelLoadRequest(model_name="mlp")),
            lambda: list(stub.ModelStreamInfer(iter([pb.ModelInferRequest(model_name="add_sub")]))),
        ]
        for call in calls:
            assert _grpc_code(call) is grpc.StatusCode.UNAUTHENTICATED
        garbage = channel.unary_unary("/inference.GRPCInferenceService/ModelInfer")
        assert _grpc_code(lambda: garbage(b"\xff\xff")) is grpc.StatusCode.UNAUTHENTICATED
        token = (("authorization", f"Bearer {secured.tokens.infer}"),)
        assert _grpc_code(lambda: garbage(b"\xff\xff", metadata=token)) is grpc.StatusCode.INVALID_ARGUMENT
        wrong = (("authorization", "Bearer not-a-token"),)
        assert _grpc_code(lambda: stub.ModelInfer(pb.ModelInferRequest(), metadata=wrong)) is (
            grpc.StatusCode.UNAUTHENTICATED
        )


def test_grpc_scopes_and_audit(secured: Secured) -> None:
    client = grpcclient.InferenceServerClient(secured.server.grpc_url)
    try:
        result = client.infer("add_sub", _inputs(grpcclient), headers=grpc_bearer(secured.tokens.infer))
        np.testing.assert_array_equal(result.as_numpy("OUTPUT1"), np.zeros((1, 4), np.float32))
        with pytest.raises(InferenceServerException) as denied:
            client.load_model("mlp", headers=grpc_bearer(secured.tokens.infer))
        assert denied.value.status() == "StatusCode.PERMISSION_DENIED"
        client.load_model("mlp", headers=grpc_bearer(secured.tokens.manage))
        assert client.is_model_ready("mlp", headers=grpc_bearer(secured.tokens.infer))
        client.unload_model("mlp", headers=grpc_bearer(secured.tokens.manage))
    finally:
        client.close()
    entries = [e for e in secured.audit.entries() if e["details"].get("protocol") == "grpc"]
    assert [(e["action"], e["actor"], e["details"]["result"]) for e in entries[-2:]] == [
        ("model.load", "token:ops", "ok"),
        ("model.unload", "token:ops", "ok"),
    ]
    assert secured.audit.verify().ok


def test_audit_log_is_written_where_configured(secured: Secured) -> None:
    assert Path(secured.audit.path).exists()
    assert all(entry["actor"].startswith("token:") for entry in secured.audit.entries())


@pytest.mark.parametrize("trusted", [[], ["127.0.0.1"]])
def test_x_forwarded_for_names_the_peer_only_from_a_trusted_proxy(tmp_path: Path, trusted: list[str]) -> None:
    registry = ModelRegistry(tmp_path / "home")
    registry.register("mlp", mlp_model(tmp_path / "mlp.onnx"))
    security = ServingSecurity(audit_log=tmp_path / "audit.jsonl")
    config = ServerConfig(http_port=0, grpc_port=0, drain_timeout_s=5, security=security, trusted_proxies=trusted)
    with BackgroundServer(registry, ["mlp"], config) as server:
        spoofed = {"X-Forwarded-For": "203.0.113.9"}
        assert httpx.post(f"http://{server.http_url}/v2/repository/models/mlp/load", headers=spoofed).status_code == 200
    [entry] = [e for e in AuditLog(tmp_path / "audit.jsonl").entries() if e["action"] == "model.load"]
    peer = entry["details"]["peer"]
    assert peer.startswith("203.0.113.9:") if trusted else peer.startswith("127.0.0.1:"), peer
