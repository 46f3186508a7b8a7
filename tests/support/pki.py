"""A throwaway PKI for TLS tests: a CA, a server certificate for localhost/127.0.0.1, a client
certificate, and an expired server certificate (EC P-256, written as PEM files)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from ipaddress import IPv4Address
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID


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


def make_pki(directory: Path) -> PKI:
    """Write the CA, server, client and expired certificates (and keys) into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
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
