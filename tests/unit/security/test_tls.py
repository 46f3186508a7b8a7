"""TLS config validation and real loopback handshakes: raw ssl socket, gRPC, and uvicorn (HTTP)."""

from __future__ import annotations

import asyncio
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import grpc
import httpx
import pytest
import uvicorn

from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.security import TLSConfig, client_ssl_context, grpc_channel_credentials

from .conftest import PKI


@pytest.fixture
def tls(pki: PKI) -> TLSConfig:
    return TLSConfig(cert_file=pki.server_cert, key_file=pki.server_key)


@pytest.fixture
def mtls(pki: PKI) -> TLSConfig:
    return TLSConfig(cert_file=pki.server_cert, key_file=pki.server_key, ca_file=pki.ca, require_client_cert=True)


def test_adapters_build_for_uvicorn_and_grpc(tls: TLSConfig, mtls: TLSConfig, pki: PKI) -> None:
    assert tls.uvicorn_kwargs() == {"ssl_certfile": str(pki.server_cert), "ssl_keyfile": str(pki.server_key)}
    assert mtls.uvicorn_kwargs()["ssl_ca_certs"] == str(pki.ca)
    assert mtls.uvicorn_kwargs()["ssl_cert_reqs"] == ssl.CERT_REQUIRED
    assert isinstance(tls.grpc_server_credentials(), grpc.ServerCredentials)
    assert isinstance(mtls.server_ssl_context(), ssl.SSLContext)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"cert_file": Path("/nonexistent/cert.pem")}, "/nonexistent/cert.pem: TLS certificate file not found"),
        ({"key_file": Path("/nonexistent/key.pem")}, "/nonexistent/key.pem: TLS key file not found"),
        ({"key_file": "client_key"}, "does not match"),
        ({"cert_file": "server_key"}, "not a PEM certificate"),
        ({"cert_file": "expired_cert", "key_file": "expired_key"}, "certificate expired at"),
        ({"ca_file": "server_key"}, "not a PEM CA bundle"),
        ({"require_client_cert": True}, "require_client_cert needs ca_file"),
    ],
)
def test_invalid_tls_settings_are_one_line_errors_naming_the_file(
    pki: PKI, change: dict[str, Any], message: str
) -> None:
    values: dict[str, Any] = {"cert_file": pki.server_cert, "key_file": pki.server_key}
    values.update({k: getattr(pki, v) if isinstance(v, str) else v for k, v in change.items()})
    with pytest.raises(InvalidArgumentError, match=message) as caught:
        TLSConfig.from_paths(**values)
    assert "\n" not in str(caught.value)


def _serve_one_echo(listener: socket.socket, context: ssl.SSLContext, seen: list[str]) -> None:
    try:
        connection, _ = listener.accept()
        with context.wrap_socket(connection, server_side=True) as tls_connection:
            seen.append(tls_connection.version() or "")
            tls_connection.sendall(tls_connection.recv(64).upper())
    except (ssl.SSLError, OSError) as exc:
        seen.append(f"error: {exc}")


def _echo_over_tls(config: TLSConfig, client: ssl.SSLContext) -> tuple[bytes | OSError, list[str]]:
    """The echoed reply (or the client's error) and what the server saw (TLS version or its error)."""
    seen: list[str] = []
    reply: bytes | OSError
    with socket.create_server(("127.0.0.1", 0)) as listener:
        server = threading.Thread(target=_serve_one_echo, args=(listener, config.server_ssl_context(), seen))
        server.start()
        try:
            with (
                socket.create_connection(listener.getsockname(), timeout=10) as raw,
                client.wrap_socket(raw, server_hostname="localhost") as conn,
            ):
                conn.sendall(b"hello")
                reply = conn.recv(64)
        except OSError as exc:  # ssl.SSLError is an OSError
            reply = exc
        finally:
            server.join(timeout=10)
    return reply, seen


def test_loopback_socket_handshake_verifies_against_the_ca(tls: TLSConfig, pki: PKI) -> None:
    reply, seen = _echo_over_tls(tls, client_ssl_context(pki.ca))
    assert reply == b"HELLO"
    assert seen == ["TLSv1.3"] or seen == ["TLSv1.2"]


def test_client_without_the_ca_refuses_the_server(tls: TLSConfig) -> None:
    reply, _ = _echo_over_tls(tls, client_ssl_context(None))
    assert isinstance(reply, ssl.SSLCertVerificationError)


def test_mutual_tls_needs_a_client_certificate(mtls: TLSConfig, pki: PKI) -> None:
    reply, seen = _echo_over_tls(mtls, client_ssl_context(pki.ca, pki.client_cert, pki.client_key))
    assert reply == b"HELLO" and seen[0].startswith("TLSv1")
    reply, seen = _echo_over_tls(mtls, client_ssl_context(pki.ca))
    assert isinstance(reply, OSError) or reply == b""
    assert seen[0].startswith("error:") and "CERTIFICATE" in seen[0]


def _echo_grpc_server(config: TLSConfig) -> tuple[grpc.Server, int]:
    def echo(request: bytes, context: grpc.ServicerContext) -> bytes:
        return request[::-1]

    handler = grpc.method_handlers_generic_handler("test.Echo", {"Reverse": grpc.unary_unary_rpc_method_handler(echo)})
    server = grpc.server(ThreadPoolExecutor(max_workers=2))
    server.add_generic_rpc_handlers((handler,))
    port = server.add_secure_port("127.0.0.1:0", config.grpc_server_credentials())
    server.start()
    return server, port


@pytest.fixture
def grpc_server(mtls: TLSConfig) -> Iterator[int]:
    server, port = _echo_grpc_server(mtls)
    yield port
    server.stop(grace=None)


def _reverse(port: int, credentials: grpc.ChannelCredentials) -> bytes:
    with grpc.secure_channel(f"127.0.0.1:{port}", credentials) as channel:
        call = channel.unary_unary("/test.Echo/Reverse")
        return call(b"abc", timeout=10)


def test_grpc_over_mutual_tls_on_loopback(grpc_server: int, pki: PKI) -> None:
    assert _reverse(grpc_server, grpc_channel_credentials(pki.ca, pki.client_cert, pki.client_key)) == b"cba"


def test_grpc_refuses_clients_without_a_certificate_or_the_ca(grpc_server: int, pki: PKI) -> None:
    for credentials in (grpc_channel_credentials(pki.ca), grpc_channel_credentials(None)):
        with pytest.raises(grpc.RpcError) as caught:
            _reverse(grpc_server, credentials)
        assert caught.value.code() == grpc.StatusCode.UNAVAILABLE


async def _hello_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    assert scope["type"] == "http"
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": scope["scheme"].encode()})


def test_uvicorn_serves_https_with_the_generated_kwargs(tls: TLSConfig, pki: PKI) -> None:
    config = uvicorn.Config(_hello_app, lifespan="off", log_level="warning", **tls.uvicorn_kwargs())
    server = uvicorn.Server(config)
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    thread = threading.Thread(target=lambda: asyncio.run(server.serve(sockets=[listener])))
    thread.start()
    try:
        deadline = time.monotonic() + 20
        while not server.started and time.monotonic() < deadline and thread.is_alive():
            time.sleep(0.02)
        assert server.started
        reply = httpx.get(f"https://127.0.0.1:{port}/", verify=client_ssl_context(pki.ca), timeout=10)
        assert (reply.status_code, reply.text) == (200, "https")
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"https://127.0.0.1:{port}/", verify=client_ssl_context(None), timeout=10)
    finally:
        server.should_exit = True
        thread.join(timeout=20)
        listener.close()
