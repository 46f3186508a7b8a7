"""Fixtures for the security tests: an isolated MCP_HOME, tiny real ONNX models, a throwaway PKI."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from ipaddress import IPv4Address
from pathlib import Path

import onnx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from onnx import TensorProto, helper

from mcp2026ai.cli import context
from mcp2026ai.cli.main import main
from mcp2026ai.registry import ModelRegistry


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """MCP_HOME in tmp_path; the CLI's cached settings are reset around the test."""
    root = tmp_path / "home"
    monkeypatch.setenv("MCP_HOME", str(root))
    for name in ("MCP_AUDIT_LOG", "MCP_TRUSTED_KEYS", "MCP_KEY_PASSPHRASE"):
        monkeypatch.delenv(name, raising=False)
    context.settings.cache_clear()
    yield root
    context.settings.cache_clear()


@pytest.fixture
def registry(home: Path) -> ModelRegistry:
    return ModelRegistry(home)


def write_onnx(path: Path, op: str = "Relu", width: int = 4) -> Path:
    """A one-node float model x[-1, width] -> y (real, loadable by onnxruntime)."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", width])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", width])
    graph = helper.make_graph([helper.make_node(op, ["x"], ["y"])], f"tiny_{op.lower()}", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, path)
    return path


@pytest.fixture
def relu_model(tmp_path: Path) -> Path:
    return write_onnx(tmp_path / "relu.onnx", "Relu")


@pytest.fixture
def sigmoid_model(tmp_path: Path) -> Path:
    return write_onnx(tmp_path / "sigmoid.onnx", "Sigmoid")


@dataclass(frozen=True)
class PKI:
    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    expired_cert: Path
    expired_key: Path


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _issue(
    subject: str,
    key: ec.EllipticCurvePrivateKey,
    issuer_key: ec.EllipticCurvePrivateKey,
    issuer: str,
    *,
    ca: bool = False,
    days: tuple[int, int] = (-1, 30),
) -> x509.Certificate:
    now = datetime.now(UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(_name(subject))
        .issuer_name(_name(issuer))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now + timedelta(days=days[0]))
        .not_valid_after(now + timedelta(days=days[1]))
        .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
    )
    if not ca:
        names = [x509.DNSName("localhost"), x509.IPAddress(IPv4Address("127.0.0.1"))]
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def _write(directory: Path, stem: str, cert: x509.Certificate, key: ec.EllipticCurvePrivateKey | None) -> Path:
    cert_path = directory / f"{stem}.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    if key is not None:
        pem = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        (directory / f"{stem}.key").write_bytes(pem)
    return cert_path


@pytest.fixture(scope="session")
def pki(tmp_path_factory: pytest.TempPathFactory) -> PKI:
    """A CA, a server cert for localhost/127.0.0.1, a client cert, and an expired server cert."""
    directory = tmp_path_factory.mktemp("pki")
    ca_key, server_key, client_key, old_key = (ec.generate_private_key(ec.SECP256R1()) for _ in range(4))
    _write(directory, "ca", _issue("test-ca", ca_key, ca_key, "test-ca", ca=True), None)
    _write(directory, "server", _issue("localhost", server_key, ca_key, "test-ca"), server_key)
    _write(directory, "client", _issue("client", client_key, ca_key, "test-ca"), client_key)
    _write(directory, "expired", _issue("localhost", old_key, ca_key, "test-ca", days=(-30, -1)), old_key)
    return PKI(
        ca=directory / "ca.pem",
        server_cert=directory / "server.pem",
        server_key=directory / "server.key",
        client_cert=directory / "client.pem",
        client_key=directory / "client.key",
        expired_cert=directory / "expired.pem",
        expired_key=directory / "expired.key",
    )


@dataclass(frozen=True)
class CliResult:
    code: int
    out: str
    err: str


@pytest.fixture
def cli(home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Callable[..., CliResult]:
    """Run ``mcp ARGS`` in-process through the console-script entry point (domain errors -> exit 2)."""
    monkeypatch.setenv("COLUMNS", "250")

    def run(*args: str) -> CliResult:
        capsys.readouterr()
        monkeypatch.setattr(sys, "argv", ["mcp", *args])
        try:
            main()
            code = 0
        except SystemExit as exc:
            code = int(exc.code or 0)
        captured = capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    return run
