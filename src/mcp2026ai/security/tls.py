"""TLS for the HTTP and gRPC servers: one validated config, adapters for uvicorn and grpc."""

from __future__ import annotations

import ssl
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cryptography import x509
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from mcp2026ai.errors import InvalidArgumentError

if TYPE_CHECKING:
    import grpc


class TLSConfig(BaseModel):
    """A server certificate chain and key (PEM), plus an optional CA bundle for client certificates."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    cert_file: Path = Field(description="PEM certificate chain, server certificate first.")
    key_file: Path = Field(description="PEM private key of the server certificate (unencrypted).")
    ca_file: Path | None = Field(None, description="PEM CA bundle that client certificates must chain to.")
    require_client_cert: bool = Field(False, description="Mutual TLS: refuse clients without a valid certificate.")

    @model_validator(mode="after")
    def _check_files(self) -> TLSConfig:
        for label, path in (("certificate", self.cert_file), ("key", self.key_file), ("CA", self.ca_file)):
            if path is not None and not path.is_file():
                raise ValueError(f"{path}: TLS {label} file not found")
        _check_certificate(self.cert_file)
        _check_key_matches(self.cert_file, self.key_file)
        if self.ca_file is not None:
            _check_ca(self.ca_file)
        elif self.require_client_cert:
            raise ValueError("require_client_cert needs ca_file (the CA that signs client certificates)")
        return self

    @classmethod
    def from_paths(
        cls, cert_file: Path, key_file: Path, ca_file: Path | None = None, require_client_cert: bool = False
    ) -> TLSConfig:
        """Build and validate, raising InvalidArgumentError with a one-line message (for CLI flags)."""
        try:
            return cls(cert_file=cert_file, key_file=key_file, ca_file=ca_file, require_client_cert=require_client_cert)
        except ValidationError as exc:
            message = exc.errors()[0]["msg"].removeprefix("Value error, ")
            raise InvalidArgumentError(message) from None

    def server_ssl_context(self) -> ssl.SSLContext:
        """A TLS 1.2+ server context (for asyncio/socket servers and tests)."""
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.load_cert_chain(self.cert_file, self.key_file)
        if self.ca_file is not None:
            context.load_verify_locations(self.ca_file)
            context.verify_mode = ssl.CERT_REQUIRED if self.require_client_cert else ssl.CERT_OPTIONAL
        return context

    def uvicorn_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``uvicorn.Config``."""
        kwargs: dict[str, Any] = {"ssl_certfile": str(self.cert_file), "ssl_keyfile": str(self.key_file)}
        if self.ca_file is not None:
            kwargs["ssl_ca_certs"] = str(self.ca_file)
            kwargs["ssl_cert_reqs"] = ssl.CERT_REQUIRED if self.require_client_cert else ssl.CERT_OPTIONAL
        return kwargs

    def grpc_server_credentials(self) -> grpc.ServerCredentials:
        """Credentials for ``server.add_secure_port(address, credentials)``."""
        import grpc

        root = self.ca_file.read_bytes() if self.ca_file is not None else None
        return grpc.ssl_server_credentials(
            [(self.key_file.read_bytes(), self.cert_file.read_bytes())],
            root_certificates=root,
            require_client_auth=self.require_client_cert,
        )


def grpc_channel_credentials(
    ca_file: Path | None = None, cert_file: Path | None = None, key_file: Path | None = None
) -> grpc.ChannelCredentials:
    """Client credentials: trust ``ca_file`` (system roots if None), optionally present a client cert."""
    import grpc

    return grpc.ssl_channel_credentials(
        root_certificates=ca_file.read_bytes() if ca_file else None,
        private_key=key_file.read_bytes() if key_file else None,
        certificate_chain=cert_file.read_bytes() if cert_file else None,
    )


def client_ssl_context(
    ca_file: Path | None = None, cert_file: Path | None = None, key_file: Path | None = None
) -> ssl.SSLContext:
    """Client context that verifies the server against ``ca_file`` (system roots if None)."""
    context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=str(ca_file) if ca_file else None)
    if cert_file is not None and key_file is not None:
        context.load_cert_chain(cert_file, key_file)
    return context


def _check_certificate(path: Path) -> None:
    try:
        certificate = x509.load_pem_x509_certificate(path.read_bytes())
    except ValueError:
        raise ValueError(f"{path}: not a PEM certificate") from None
    if certificate.not_valid_after_utc < datetime.now(UTC):
        raise ValueError(f"{path}: certificate expired at {certificate.not_valid_after_utc:%Y-%m-%d %H:%M} UTC")


def _check_key_matches(cert_file: Path, key_file: Path) -> None:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:  # an empty password: an encrypted key fails here instead of prompting on the terminal
        context.load_cert_chain(cert_file, key_file, password="")
    except ssl.SSLError as exc:
        raise ValueError(f"{key_file}: key does not load or does not match {cert_file} ({exc.reason})") from None


def _check_ca(path: Path) -> None:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    try:
        context.load_verify_locations(path)
    except ssl.SSLError as exc:
        raise ValueError(f"{path}: not a PEM CA bundle ({exc.reason})") from None
