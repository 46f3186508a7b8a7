"""Issue 50, finding 4 and secure defaults: what a web page in the local browser can make a default
(no ``--auth``, loopback) server do. DNS rebinding (a foreign ``Host``) and cross-site requests
(``Origin`` / ``Sec-Fetch-Site``) are refused on every path: the Starlette routes, the direct infer
route and the refusals written from the headers alone (test_early_refusal.py); clients that are not
browsers are not affected.
Also: ``--disable-api`` on both transports, and ``mcp serve`` refusing a non-loopback bind without ``--auth``."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator

import grpc
import httpx
import numpy as np
import pytest
import tritonclient.http as httpclient
from tritonclient.grpc import service_pb2 as pb
from tritonclient.grpc import service_pb2_grpc as pb_grpc

from mcp2026ai.registry import ModelRegistry
from mcp2026ai.server.config import ServerConfig
from mcp2026ai.server.http.site_guard import check_exposure
from mcp2026ai.testing import BackgroundServer
from support.models import add_sub_model

from .conftest import mcp_command

pytestmark = pytest.mark.timeout(120)

ATTACKER = "http://attacker.example"
PLAIN_FORM = {"Content-Type": "text/plain"}  # what <form enctype="text/plain"> sends
INFER_BODY = {
    "inputs": [{"name": n, "shape": [1, 4], "datatype": "FP32", "data": [1, 2, 3, 4]} for n in ("INPUT0", "INPUT1")]
}


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> ModelRegistry:
    root = tmp_path_factory.mktemp("guard")
    registry = ModelRegistry(root / "home")
    registry.register("add_sub", add_sub_model(root / "add_sub.onnx"))
    return registry


@pytest.fixture(scope="module")
def server(registry: ModelRegistry) -> Iterator[BackgroundServer]:
    config = ServerConfig(http_port=0, grpc_port=0, drain_timeout_s=5, allowed_hosts=["models.internal"])
    with BackgroundServer(registry, ["add_sub"], config) as running:
        yield running


def url(server: BackgroundServer, path: str) -> str:
    return f"http://{server.http_url}{path}"


def refused(response: httpx.Response, *words: str) -> None:
    assert response.status_code == 403, response.text
    message = response.json()["error"]
    for word in words:
        assert word in message, message


def test_a_rebinding_page_reads_nothing(server: BackgroundServer) -> None:
    foreign = {"Host": f"rebind.attacker.example:{server.http_url.rsplit(':', 1)[1]}"}
    refused(httpx.get(url(server, "/v2/models/add_sub/artifact"), headers=foreign), "--allowed-host")
    refused(httpx.get(url(server, "/v2/models/add_sub"), headers=foreign), "rebind.attacker.example")
    refused(httpx.post(url(server, "/v2/models/add_sub/infer"), json=INFER_BODY, headers=foreign))  # direct route
    for host in ("localhost", "127.0.0.1", "[::1]", "models.internal", "app.localhost"):
        assert httpx.get(url(server, "/v2/models/add_sub"), headers={"Host": host}).status_code == 200, host


def test_cross_site_requests_change_nothing(server: BackgroundServer) -> None:
    unload = url(server, "/v2/repository/models/add_sub/unload")
    csrf_body = '{"pad":"=x"}'
    refused(httpx.post(unload, content=csrf_body, headers={**PLAIN_FORM, "Origin": ATTACKER}), "cross-site", ATTACKER)
    refused(httpx.post(unload, content=csrf_body, headers={"Sec-Fetch-Site": "cross-site"}), "cross-site")
    refused(httpx.post(unload, content=csrf_body, headers={"Origin": "null"}), "cross-site")
    refused(httpx.post(url(server, "/v2/models/add_sub/infer"), json=INFER_BODY, headers={"Origin": ATTACKER}))
    refused(httpx.post(url(server, "/v2/logging"), json={"log_info": False}, headers={"Sec-Fetch-Site": "same-site"}))
    assert httpx.get(url(server, "/v2/models/add_sub/ready")).status_code == 200  # still loaded
    same_origin = {"Origin": f"http://{server.http_url}", "Sec-Fetch-Site": "same-origin"}
    assert httpx.post(url(server, "/v2/logging"), json={}, headers=same_origin).status_code == 200  # the console
    assert httpx.get(url(server, "/v2/models/add_sub"), headers={"Origin": ATTACKER}).status_code == 200  # reads


def test_clients_that_are_not_browsers_need_no_change(server: BackgroundServer) -> None:
    client = httpclient.InferenceServerClient(server.http_url)
    inputs = [httpclient.InferInput(n, [1, 4], "FP32") for n in ("INPUT0", "INPUT1")]
    for tensor in inputs:
        tensor.set_data_from_numpy(np.ones((1, 4), np.float32))
    assert client.infer("add_sub", inputs).as_numpy("OUTPUT0").tolist() == [[2.0] * 4]
    client.unload_model("add_sub")
    client.load_model("add_sub")
    assert client.is_model_ready("add_sub")


def test_disabled_api_groups_are_refused_on_both_transports(registry: ModelRegistry) -> None:
    config = ServerConfig(http_port=0, grpc_port=0, drain_timeout_s=5, disabled_apis=["repository", "shared-memory"])
    with BackgroundServer(registry, ["add_sub"], config) as running:
        refused(httpx.post(url(running, "/v2/repository/models/add_sub/unload")), "--disable-api repository")
        refused(httpx.get(url(running, "/v2/systemsharedmemory/status")), "--disable-api shared-memory")
        assert httpx.post(url(running, "/v2/models/add_sub/infer"), json=INFER_BODY).status_code == 200
        with grpc.insecure_channel(running.grpc_url) as channel:
            stub = pb_grpc.GRPCInferenceServiceStub(channel)
            with pytest.raises(grpc.RpcError) as caught:
                stub.RepositoryModelUnload(pb.RepositoryModelUnloadRequest(model_name="add_sub"))
            assert caught.value.code() == grpc.StatusCode.PERMISSION_DENIED
            assert "--disable-api repository" in (caught.value.details() or "")
            assert stub.ModelReady(pb.ModelReadyRequest(name="add_sub")).ready


def test_serve_on_a_reachable_address_without_auth_is_refused(registry: ModelRegistry) -> None:
    result = subprocess.run(
        [*mcp_command(), "serve", "--name", "add_sub", "--host", "0.0.0.0", "--port", "0", "--grpc-port", "-1"],
        env={**os.environ, "MCP_HOME": str(registry.home)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode != 0
    assert "--allow-unauthenticated" in result.stderr + result.stdout and "--auth" in result.stderr + result.stdout
    assert "Traceback" not in result.stderr
    check_exposure("0.0.0.0", authenticated=False, allow_unauthenticated=True)  # the explicit opt-out
    check_exposure("0.0.0.0", authenticated=True, allow_unauthenticated=False)
    for loopback in ("127.0.0.1", "::1", "localhost", "127.0.0.2"):
        check_exposure(loopback, authenticated=False, allow_unauthenticated=False)
