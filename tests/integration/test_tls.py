"""TLS on the real server: HTTPS and gRPC over TLS with a self-signed CA; plaintext is refused."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import grpc
import httpx
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
import tritonclient.http as httpclient
from tritonclient.grpc import service_pb2 as pb
from tritonclient.grpc import service_pb2_grpc as pb_grpc
from tritonclient.utils import InferenceServerException

from mcp2026ai.registry import ModelRegistry
from mcp2026ai.security import ServingSecurity, TLSConfig, client_ssl_context, grpc_channel_credentials
from mcp2026ai.server.config import ServerConfig
from mcp2026ai.testing import BackgroundServer
from tests.support.pki import PKI, make_pki

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> PKI:
    return make_pki(tmp_path_factory.mktemp("pki"))


def _server(tmp_path: Path, tls: TLSConfig) -> BackgroundServer:
    from support.models import add_sub_model

    registry = ModelRegistry(tmp_path / "home")
    registry.register("add_sub", add_sub_model(tmp_path / "add_sub.onnx"))
    config = ServerConfig(http_port=0, grpc_port=0, drain_timeout_s=5, security=ServingSecurity(tls=tls))
    return BackgroundServer(registry, ["add_sub"], config)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, pki: PKI) -> Iterator[BackgroundServer]:
    tls = TLSConfig(cert_file=pki.server_cert, key_file=pki.server_key)
    with _server(tmp_path_factory.mktemp("tls"), tls) as running:
        yield running


def _infer(client: object, module: object) -> np.ndarray:
    a = np.arange(4, dtype=np.float32).reshape(1, 4)
    inputs = [module.InferInput(name, [1, 4], "FP32") for name in ("INPUT0", "INPUT1")]  # type: ignore[attr-defined]
    for item in inputs:
        item.set_data_from_numpy(a)
    return client.infer("add_sub", inputs).as_numpy("OUTPUT0")  # type: ignore[attr-defined]


def test_https_with_the_ca_infers(server: BackgroundServer, pki: PKI) -> None:
    client = httpclient.InferenceServerClient(server.http_url, ssl=True, ssl_options={"ca_certs": str(pki.ca)})
    try:
        assert client.is_server_live()
        np.testing.assert_array_equal(_infer(client, httpclient), np.arange(4, dtype=np.float32).reshape(1, 4) * 2)
    finally:
        client.close()


def test_grpc_over_tls_with_the_ca_infers(server: BackgroundServer, pki: PKI) -> None:
    client = grpcclient.InferenceServerClient(server.grpc_url, ssl=True, root_certificates=str(pki.ca))
    try:
        assert client.is_server_ready()
        np.testing.assert_array_equal(_infer(client, grpcclient), np.arange(4, dtype=np.float32).reshape(1, 4) * 2)
    finally:
        client.close()


def test_plaintext_http_to_the_tls_port_fails(server: BackgroundServer) -> None:
    with pytest.raises(httpx.HTTPError):
        httpx.get(f"http://{server.http_url}/v2/health/live", timeout=5)


def test_plaintext_grpc_to_the_tls_port_fails(server: BackgroundServer) -> None:
    with grpc.insecure_channel(server.grpc_url) as channel, pytest.raises(grpc.RpcError) as caught:
        pb_grpc.GRPCInferenceServiceStub(channel).ServerLive(pb.ServerLiveRequest(), timeout=5)
    assert caught.value.code() is grpc.StatusCode.UNAVAILABLE


def test_a_client_that_does_not_trust_the_ca_is_refused(server: BackgroundServer, tmp_path: Path) -> None:
    stranger = make_pki(tmp_path / "other-pki")
    client = httpclient.InferenceServerClient(server.http_url, ssl=True, ssl_options={"ca_certs": str(stranger.ca)})
    try:
        with pytest.raises(Exception, match="CERTIFICATE_VERIFY_FAILED"):
            client.is_server_live()
    finally:
        client.close()


def test_mutual_tls_needs_a_client_certificate_on_both_transports(tmp_path: Path, pki: PKI) -> None:
    mtls = TLSConfig(cert_file=pki.server_cert, key_file=pki.server_key, ca_file=pki.ca, require_client_cert=True)
    with _server(tmp_path, mtls) as server:
        with_cert = client_ssl_context(pki.ca, pki.client_cert, pki.client_key)
        url = f"https://{server.http_url}/v2/health/ready"
        assert httpx.get(url, verify=with_cert, timeout=5).json() == {"ready": True}
        with pytest.raises(httpx.HTTPError):
            httpx.get(url, verify=client_ssl_context(pki.ca), timeout=5)
        client = grpcclient.InferenceServerClient(
            server.grpc_url,
            creds=grpc_channel_credentials(pki.ca, pki.client_cert, pki.client_key),
        )
        assert client.is_server_live()
        client.close()
        anonymous = grpcclient.InferenceServerClient(server.grpc_url, ssl=True, root_certificates=str(pki.ca))
        with pytest.raises(InferenceServerException):
            anonymous.is_server_live()
        anonymous.close()
