"""`--require-signed` on the real server, encrypted artifacts, and `mcp serve` with every security flag."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.utils import InferenceServerException

from mcp2026ai.errors import SignatureError
from mcp2026ai.registry import ModelRegistry
from mcp2026ai.registry.signing import sign_version
from mcp2026ai.security import (
    AuditLog,
    KeyRing,
    Scope,
    ServingSecurity,
    SigningKey,
    TokenStore,
    TrustConfig,
    trust_key_file,
)
from mcp2026ai.security.encryption import ArtifactCipher
from mcp2026ai.server.config import ServerConfig
from mcp2026ai.testing import BackgroundServer
from support.models import add_sub_model, mlp_model
from tests.support.cli import run_main
from tests.support.pki import make_pki

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def key(tmp_path: Path) -> SigningKey:
    return KeyRing(tmp_path / "keys").create("release")


def signed_config(tmp_path: Path, audit: bool = True) -> ServerConfig:
    security = ServingSecurity(
        require_signed=True,
        trust=TrustConfig(trusted_keys=[tmp_path / "keys" / "release.pub"]),
        audit_log=tmp_path / "audit.jsonl" if audit else None,
    )
    return ServerConfig(http_port=0, grpc_port=0, drain_timeout_s=5, security=security)


def _overwrite(path: Path, data: bytes) -> None:
    os.chmod(path, 0o644)
    path.write_bytes(data)


def _add_sub_inputs(module: object) -> list[object]:
    inputs = [module.InferInput(name, [1, 4], "FP32") for name in ("INPUT0", "INPUT1")]  # type: ignore[attr-defined]
    for item in inputs:
        item.set_data_from_numpy(np.ones((1, 4), np.float32))
    return inputs


def test_signed_models_serve_and_the_api_refuses_unsigned_ones(
    registry: ModelRegistry, key: SigningKey, tmp_path: Path
) -> None:
    for name in ("add_sub", "mlp"):
        sign_version(registry, registry.resolve(name), key)  # ocr-cls stays unsigned
    with BackgroundServer(registry, ["add_sub"], signed_config(tmp_path)) as server:
        http = httpclient.InferenceServerClient(server.http_url)
        assert http.infer("add_sub", _add_sub_inputs(httpclient)).as_numpy("OUTPUT0").tolist() == [[2.0] * 4]
        http.load_model("mlp")
        assert http.is_model_ready("mlp")
        refused = httpx.post(f"http://{server.http_url}/v2/repository/models/ocr-cls/load")
        assert refused.status_code == 403
        assert refused.json()["error"].startswith("ocr-cls:1.0.0 is not signed")
        grpc = grpcclient.InferenceServerClient(server.grpc_url)
        with pytest.raises(InferenceServerException, match=r"ocr-cls:1\.0\.0 is not signed") as denied:
            grpc.load_model("ocr-cls")
        assert denied.value.status() == "StatusCode.PERMISSION_DENIED"
        index = {row["name"]: row for row in http.get_model_repository_index()}
        assert index["ocr-cls"]["state"] == "UNAVAILABLE" and "is not signed" in index["ocr-cls"]["reason"]
        http.close()
        grpc.close()
    audit = AuditLog(tmp_path / "audit.jsonl")
    rows = [(e["actor"], e["target"], e["details"]["result"], e["details"]["protocol"]) for e in audit.entries()]
    assert rows == [
        ("anonymous", "mlp:1.0.0", "ok", "http"),
        ("anonymous", "ocr-cls", "denied", "http"),
        ("anonymous", "ocr-cls", "denied", "grpc"),
    ]
    assert audit.verify().ok


def test_a_tampered_artifact_is_refused_at_start(registry: ModelRegistry, key: SigningKey, tmp_path: Path) -> None:
    record = registry.resolve("mlp")
    sign_version(registry, record, key)
    _overwrite(registry.store.path_for(record.digest), add_sub_model(tmp_path / "evil.onnx").read_bytes())
    with pytest.raises(SignatureError, match=r"mlp:1\.0\.0: artifact .* was modified on disk"):
        BackgroundServer(registry, ["mlp"], signed_config(tmp_path, audit=False)).__enter__()


def test_hot_reload_keeps_serving_the_signed_version_when_a_new_one_is_unsigned(
    registry: ModelRegistry, key: SigningKey, tmp_path: Path
) -> None:
    sign_version(registry, registry.resolve("mlp"), key)
    with BackgroundServer(registry, ["mlp"], signed_config(tmp_path, audit=False)) as server:
        registry.register("mlp", mlp_model(tmp_path / "mlp-v2.onnx", seed=7))  # 1.1.0, unsigned
        server.call(server.server.sync.sync_once())  # type: ignore[union-attr]
        assert [m.record.version for m in server.plane.models.served_versions("mlp")] == ["1.0.0"]
        assert server.plane.ready()


def test_artifacts_encrypted_at_rest_are_servable(tmp_path: Path) -> None:
    registry = ModelRegistry(tmp_path / "home", ArtifactCipher(os.urandom(32)))
    record = registry.register("add_sub", add_sub_model(tmp_path / "add_sub.onnx"))
    assert registry.store.is_encrypted(record.digest)
    with BackgroundServer(registry, ["add_sub"]) as server:
        client = grpcclient.InferenceServerClient(server.grpc_url)
        assert client.infer("add_sub", _add_sub_inputs(grpcclient)).as_numpy("OUTPUT1").tolist() == [[0.0] * 4]
        client.close()


# the CLI ----------------------------------------------------------------------------------------


def test_serve_refuses_to_start_naming_the_model_and_reason(
    mcp_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    registry = ModelRegistry(mcp_home)
    record = registry.register("mlp", mlp_model(tmp_path / "mlp.onnx"))
    serve = ["serve", "--name", "mlp", "--require-signed", "--no-policy", "--port", "0", "--grpc-port", "-1"]
    outcome = run_main(serve, capsys, monkeypatch)
    assert outcome.code == 2 and "--require-signed: no trusted public keys" in outcome.err
    key = KeyRing(mcp_home / "keys").create("default")
    trust_key_file(KeyRing(mcp_home / "keys").public_path("default"), mcp_home / "trusted")
    outcome = run_main(serve, capsys, monkeypatch)
    assert outcome.code == 2
    assert outcome.err.strip().startswith("error: refusing to serve: mlp:1.0.0 is not signed")
    assert len(outcome.err.strip().splitlines()) == 1 and "Traceback" not in outcome.err
    sign_version(registry, record, key)
    _overwrite(registry.store.path_for(record.digest), mlp_model(tmp_path / "other.onnx", seed=3).read_bytes())
    outcome = run_main(serve, capsys, monkeypatch)
    assert outcome.code == 2 and "mlp:1.0.0: artifact" in outcome.err and "was modified on disk" in outcome.err


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--trusted-key", "k.pub"], "--trusted-key only applies with --require-signed"),
        (["--tls-cert", "c.pem"], "--tls-cert and --tls-key go together"),
        (["--tls-ca", "ca.pem"], "--tls-ca and --tls-require-client-cert need --tls-cert and --tls-key"),
        (["--tls-cert", "missing.pem", "--tls-key", "missing.key"], "missing.pem: TLS certificate file not found"),
    ],
)
def test_serve_security_flag_mistakes_are_one_line_errors(
    mcp_home: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    flags: list[str],
    message: str,
) -> None:
    ModelRegistry(mcp_home).register("mlp", mlp_model(tmp_path / "mlp.onnx"))
    outcome = run_main(["serve", "--no-policy", "--port", "0", "--grpc-port", "-1", *flags], capsys, monkeypatch)
    assert outcome.code == 2 and message in outcome.err, outcome.err


def test_mcp_serve_with_signatures_auth_and_tls_end_to_end(tmp_path: Path) -> None:
    home = tmp_path / "home"
    registry = ModelRegistry(home)
    record = registry.register("add_sub", add_sub_model(tmp_path / "add_sub.onnx"))
    ring = KeyRing(home / "keys")
    sign_version(registry, record, ring.create("default"))
    trust_key_file(ring.public_path("default"), home / "trusted")
    token = TokenStore(home / "tokens.json").create("app", frozenset({Scope.INFER})).token
    pki = make_pki(tmp_path / "pki")
    command = [
        sys.executable, "-m", "mcp2026ai.cli", "serve", "--name", "add_sub", "--no-policy",
        "--port", "0", "--grpc-port", "0", "--require-signed", "--auth",
        "--tls-cert", str(pki.server_cert), "--tls-key", str(pki.server_key),
    ]  # fmt: skip
    env = {**os.environ, "MCP_HOME": str(home)}
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        lines = [process.stdout.readline() for _ in range(2)]
        assert lines[0].startswith("verified add_sub:1.0.0: signed by default"), lines
        match = re.search(r"listening http=(\d+) grpc=(\d+)", lines[1])
        assert match, lines
        http_port, grpc_port = match.groups()
        client = httpclient.InferenceServerClient(
            f"127.0.0.1:{http_port}", ssl=True, ssl_options={"ca_certs": str(pki.ca)}
        )
        headers = {"Authorization": f"Bearer {token}"}
        result = client.infer("add_sub", _add_sub_inputs(httpclient), headers=headers)
        assert result.as_numpy("OUTPUT0").tolist() == [[2.0] * 4]
        with pytest.raises(InferenceServerException, match="missing bearer token"):
            client.infer("add_sub", _add_sub_inputs(httpclient))
        client.close()
        grpc = grpcclient.InferenceServerClient(f"127.0.0.1:{grpc_port}", ssl=True, root_certificates=str(pki.ca))
        with pytest.raises(InferenceServerException, match="UNAUTHENTICATED"):
            grpc.load_model("add_sub", headers={"authorization": f"Bearer {token}x"})
        grpc.close()
    finally:
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=60)
    assert process.returncode == 0, err
    assert "Traceback" not in err
