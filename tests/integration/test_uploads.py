"""Uploads are not registrations (finding 2 of the security review): a Triton ``file:`` load over HTTP
or gRPC serves the uploaded model in this server only, as Triton does. Nothing is written to the
registry (no version, no artifact), the registry sync does not undo it, a restart forgets it; under
--require-signed only a registered version signed by a trusted key is accepted, and a refusal leaves
nothing behind. The audit log records every attempt."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
import tritonclient.grpc as grpcclient

from mcp2026ai.registry import ModelRegistry
from mcp2026ai.registry.signing import sign_version
from mcp2026ai.security import AuditLog, KeyRing, ServingSecurity, TrustConfig
from mcp2026ai.server.config import ServerConfig
from mcp2026ai.testing import BackgroundServer
from tests.support.models import mlp_model

pytestmark = pytest.mark.timeout(180)
ROWS = {"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 16], "data": [0.5] * 16}]}


def config(tmp_path: Path, signed: bool = False) -> ServerConfig:
    trust = TrustConfig(trusted_keys=[tmp_path / "keys" / "release.pub"]) if signed else TrustConfig()
    security = ServingSecurity(require_signed=signed, trust=trust, audit_log=tmp_path / "audit.jsonl")
    return ServerConfig(http_port=0, grpc_port=0, drain_timeout_s=5, security=security)


def load_body(model: bytes) -> dict[str, Any]:
    return {
        "parameters": {
            "config": json.dumps({"max_batch_size": 4}),
            "file:1/model.onnx": base64.b64encode(model).decode(),
        }
    }


def stored(registry: ModelRegistry) -> tuple[list[str], list[Path]]:
    """The registry's versions and artifact files: what an upload must not change."""
    objects = sorted(p for p in (registry.home / "artifacts").rglob("*") if p.is_file())
    return [record.ref for record in registry.versions()], objects


def served_version(url: str) -> str:
    answer = httpx.post(f"http://{url}/v2/models/mlp/infer", json=ROWS, timeout=30)
    assert answer.status_code == 200, answer.text
    return str(answer.json()["model_version"])


@pytest.fixture
def registry(tmp_path: Path) -> ModelRegistry:
    registry = ModelRegistry(tmp_path / "home")
    registry.register("mlp", mlp_model(tmp_path / "mlp.onnx"))
    return registry


def test_an_upload_is_served_here_only_and_never_registered(registry: ModelRegistry, tmp_path: Path) -> None:
    before = stored(registry)
    other = mlp_model(tmp_path / "other.onnx", seed=9).read_bytes()
    with BackgroundServer(registry, ["mlp"], config(tmp_path)) as server:
        loaded = httpx.post(
            f"http://{server.http_url}/v2/repository/models/mlp/load", json=load_body(other), timeout=30
        )
        assert loaded.status_code == 200, loaded.text
        version = served_version(server.http_url)
        assert version.startswith("0.0.0-upload.")
        server.call(server.server.sync.sync_once())  # type: ignore[union-attr]  # the registry sync leaves it
        assert served_version(server.http_url) == version
        assert stored(registry) == before  # no version, no artifact, no new default
        grpc = grpcclient.InferenceServerClient(server.grpc_url)
        grpc.load_model("fresh", config=json.dumps({"max_batch_size": 4}), files={"file:2/model.onnx": other})
        assert grpc.is_model_ready("fresh") and grpc.get_model_metadata("fresh").versions == [
            f"0.0.0-upload.{version[13:]}"
        ]
        grpc.close()
        assert stored(registry) == before
    with BackgroundServer(registry, ["mlp"], config(tmp_path)) as server:  # a restart forgets the upload
        assert served_version(server.http_url) == "1.0.0"
    loads = [e for e in AuditLog(tmp_path / "audit.jsonl").entries() if e["action"] == "model.load"]
    assert [(e["target"], e["details"]["ephemeral"], e["details"]["result"]) for e in loads] == [
        (f"mlp:{version}", True, "ok"),
        (f"fresh:{version}", True, "ok"),
    ]
    assert not [e for e in AuditLog(tmp_path / "audit.jsonl").entries() if e["action"] == "model.register"]


def test_loading_without_a_file_returns_to_the_registry_version(registry: ModelRegistry, tmp_path: Path) -> None:
    with BackgroundServer(registry, ["mlp"], config(tmp_path)) as server:
        body = load_body(mlp_model(tmp_path / "other.onnx", seed=9).read_bytes())
        assert (
            httpx.post(f"http://{server.http_url}/v2/repository/models/mlp/load", json=body, timeout=30).status_code
            == 200
        )
        assert httpx.post(f"http://{server.http_url}/v2/repository/models/mlp/load", timeout=30).status_code == 200
        assert served_version(server.http_url) == "1.0.0"
        assert [m.record.version for m in server.plane.models.served_versions("mlp")] == ["1.0.0"]


def test_under_require_signed_an_unsigned_upload_is_refused_and_leaves_nothing(
    registry: ModelRegistry, tmp_path: Path
) -> None:
    key = KeyRing(tmp_path / "keys").create("release")
    sign_version(registry, registry.resolve("mlp"), key)
    before = stored(registry)
    with BackgroundServer(registry, ["mlp"], config(tmp_path, signed=True)) as server:
        url = f"http://{server.http_url}/v2/repository/models/mlp/load"
        evil = load_body(mlp_model(tmp_path / "evil.onnx", seed=9).read_bytes())
        refused = httpx.post(url, json=evil, timeout=30)
        assert refused.status_code == 403, refused.text
        assert "no version of 'mlp' signed by a trusted key" in refused.json()["error"]
        grpc = grpcclient.InferenceServerClient(server.grpc_url)
        with pytest.raises(Exception, match="signed by a trusted key") as denied:
            grpc.load_model(
                "mlp",
                config="{}",
                files={"file:1/model.onnx": base64.b64decode(evil["parameters"]["file:1/model.onnx"])},
            )
        assert "PERMISSION_DENIED" in str(denied.value.status())  # type: ignore[attr-defined]
        grpc.close()
        assert served_version(server.http_url) == "1.0.0" and stored(registry) == before
        same = httpx.post(url, json=load_body((tmp_path / "mlp.onnx").read_bytes()), timeout=30)
        assert same.status_code == 200, same.text  # the signed version's own bytes: that version
        assert served_version(server.http_url) == "1.0.0"
    with BackgroundServer(registry, ["mlp"], config(tmp_path, signed=True)) as server:  # the next start is fine
        assert served_version(server.http_url) == "1.0.0"
    results = [
        (e["details"]["result"], e["details"].get("ephemeral"), "upload" in e["details"])
        for e in AuditLog(tmp_path / "audit.jsonl").entries()
        if e["action"] == "model.load"
    ]
    assert results == [("denied", None, True), ("denied", None, True), ("ok", False, True)]


def test_a_broken_upload_is_refused_in_one_line_without_server_paths(registry: ModelRegistry, tmp_path: Path) -> None:
    with BackgroundServer(registry, ["mlp"], config(tmp_path)) as server:
        body = load_body(b"not an onnx model at all")
        refused = httpx.post(f"http://{server.http_url}/v2/repository/models/mlp/load", json=body, timeout=30)
        assert refused.status_code == 400, refused.text
        error = refused.json()["error"]
        assert "the uploaded file" in error and str(tmp_path) not in error and "\n" not in error
        assert served_version(server.http_url) == "1.0.0"
    assert not list((registry.home / "tmp").glob(".upload-*"))
    [entry] = [e for e in AuditLog(tmp_path / "audit.jsonl").entries() if e["action"] == "model.load"]
    assert entry["details"]["result"] == "failed"
