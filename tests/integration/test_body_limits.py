"""Request bodies cost bounded memory: JSON is capped before it is parsed, and the bodies held at once
over all connections have a budget (429 + Retry-After beyond, given back when a request ends)."""

from __future__ import annotations

import gzip
import json
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest
import tritonclient.http as httpclient

from mcp2026ai.registry import ModelRegistry
from mcp2026ai.server.config import ServerConfig
from mcp2026ai.testing import BackgroundServer
from support.models import add_sub_model

pytestmark = pytest.mark.timeout(120)

JSON_LIMIT = 64 << 10
BUDGET = 200 << 10


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BackgroundServer]:
    root = tmp_path_factory.mktemp("bodies")
    registry = ModelRegistry(root / "home")
    registry.register("add_sub", add_sub_model(root / "add_sub.onnx", width=8192))
    config = ServerConfig(http_port=0, grpc_port=None, max_json_bytes=JSON_LIMIT, max_inflight_body_bytes=BUDGET)
    with BackgroundServer(registry, ["add_sub"], config) as running:
        yield running


def body(rows: int) -> bytes:
    data = [0.123456] * (rows * 8192)
    tensors = [{"name": n, "shape": [rows, 8192], "datatype": "FP32", "data": data} for n in ("INPUT0", "INPUT1")]
    return json.dumps({"inputs": tensors}).encode()


def test_json_over_its_limit_is_413_before_parsing_and_binary_still_works(server: BackgroundServer) -> None:
    started = time.perf_counter()
    response = httpx.post(f"http://{server.http_url}/v2/models/add_sub/infer", content=body(1))  # ~150 KB of JSON
    assert response.status_code == 413
    assert "binary tensor extension" in response.json()["error"]
    assert time.perf_counter() - started < 2
    client = httpclient.InferenceServerClient(server.http_url)  # the same tensors in binary: 64 KB, accepted
    inputs = [httpclient.InferInput(n, [1, 8192], "FP32") for n in ("INPUT0", "INPUT1")]
    for tensor in inputs:
        tensor.set_data_from_numpy(np.ones((1, 8192), np.float32), binary_data=True)
    outputs = [httpclient.InferRequestedOutput("OUTPUT0", binary_data=True)]
    assert client.infer("add_sub", inputs, outputs=outputs).as_numpy("OUTPUT0").sum() == 2 * 8192


def test_bodies_held_at_once_have_a_budget(server: BackgroundServer) -> None:
    host, port = server.http_url.rsplit(":", 1)
    big = 150 << 10
    head = f"POST /v2/models/add_sub/infer HTTP/1.1\r\nHost: localhost\r\nContent-Length: {big}\r\n\r\n".encode()
    with socket.create_connection((host, int(port))) as slow:
        slow.sendall(head + b"{" + b" " * (big - 2))  # 150 KB arrived and held, its last byte still to come
        time.sleep(0.5)
        refused = httpx.post(f"http://{server.http_url}/v2/models/add_sub/infer", content=b"{" + b" " * (60 << 10))
        assert refused.status_code == 429 and refused.headers["retry-after"] == "1"
        assert "request bodies" in refused.json()["error"]
    time.sleep(0.3)  # the slow client left: its bytes are given back
    again = httpx.post(f"http://{server.http_url}/v2/models/add_sub/infer", content=b"{" + b" " * (60 << 10))
    assert again.status_code == 400  # taken in and parsed (it is not a valid request)


@pytest.mark.parametrize("algorithm", ["gzip", "deflate"])
def test_compressed_requests_and_responses_with_tritonclient(server: BackgroundServer, algorithm: str) -> None:
    client = httpclient.InferenceServerClient(server.http_url)
    x = np.random.default_rng(0).standard_normal((1, 8192)).astype(np.float32)
    inputs = [httpclient.InferInput(n, [1, 8192], "FP32") for n in ("INPUT0", "INPUT1")]
    for tensor in inputs:
        tensor.set_data_from_numpy(x, binary_data=True)
    result = client.infer(
        "add_sub", inputs, request_compression_algorithm=algorithm, response_compression_algorithm="gzip"
    )
    np.testing.assert_allclose(result.as_numpy("OUTPUT0"), 2 * x, rtol=1e-6)


def test_a_decompression_bomb_is_413_having_inflated_no_more_than_the_limit(tmp_path: Path) -> None:
    registry = ModelRegistry(tmp_path / "home")
    registry.register("add_sub", add_sub_model(tmp_path / "add_sub.onnx"))
    config = ServerConfig(http_port=0, grpc_port=None, max_request_bytes=1 << 20)
    with BackgroundServer(registry, ["add_sub"], config) as bombed:
        bomb = gzip.compress(b" " * (200 << 20))  # 200 MiB of spaces in about 200 KB
        assert len(bomb) < (1 << 20)
        response = httpx.post(
            f"http://{bombed.http_url}/v2/models/add_sub/infer", content=bomb, headers={"Content-Encoding": "gzip"}
        )
        assert response.status_code == 413 and "inflates past" in response.json()["error"]
        garbage = httpx.post(
            f"http://{bombed.http_url}/v2/models/add_sub/infer",
            content=b"not gzip",
            headers={"Content-Encoding": "gzip"},
        )
        assert garbage.status_code == 400 and "not valid gzip" in garbage.json()["error"]
        assert httpx.get(f"http://{bombed.http_url}/v2/health/ready").status_code == 200


def test_large_responses_are_gzipped_for_clients_that_accept_it(server: BackgroundServer) -> None:
    from mcp2026ai.protocol.v2_json import encode_request

    x = np.ones((1, 8192), np.float32)
    body, header_length = encode_request({"INPUT0": x, "INPUT1": x}, binary=True)
    headers = {"Inference-Header-Content-Length": str(header_length)}
    url = f"http://{server.http_url}/v2/models/add_sub/infer"
    zipped = httpx.post(url, content=body, headers={**headers, "Accept-Encoding": "gzip"})
    plain = httpx.post(url, content=body, headers={**headers, "Accept-Encoding": "identity"})
    assert zipped.headers["content-encoding"] == "gzip" and "content-encoding" not in plain.headers
    assert zipped.json()["outputs"] == plain.json()["outputs"]  # httpx inflates it
    assert int(zipped.headers["content-length"]) < int(plain.headers["content-length"]) / 10


def test_connections_over_the_limit_get_a_503_json_and_the_others_keep_working(tmp_path: Path) -> None:
    registry = ModelRegistry(tmp_path / "home")
    registry.register("add_sub", add_sub_model(tmp_path / "add_sub.onnx"))
    config = ServerConfig(http_port=0, grpc_port=None, max_connections=4)
    with BackgroundServer(registry, ["add_sub"], config) as running:
        host, port = running.http_url.split(":")
        idle = [socket.create_connection((host, int(port))) for _ in range(4)]  # hold the four places
        try:
            time.sleep(0.2)
            refused = httpx.get(f"http://{running.http_url}/v2/health/ready")
            assert refused.status_code == 503 and refused.headers["retry-after"] == "1"
            assert "4 connections open" in refused.json()["error"]
            request = b"GET /v2/health/ready HTTP/1.1\r\nHost: localhost\r\n\r\n"
            idle[0].sendall(request)  # a connection within the limit is served as usual
            assert idle[0].recv(4096).startswith(b"HTTP/1.1 200")
        finally:
            for sock in idle:
                sock.close()
        time.sleep(0.2)
        assert httpx.get(f"http://{running.http_url}/v2/health/ready").status_code == 200  # places freed


def listen_backlog(port: int) -> int:
    """The accept-queue size of the socket listening on ``port`` (``ss``: Send-Q of a listener)."""
    lines = subprocess.run(["ss", "-ltnH", f"sport = :{port}"], capture_output=True, text=True, check=True).stdout
    return int(lines.split()[2])


@pytest.mark.skipif(shutil.which("ss") is None, reason="needs iproute2's ss to read a listener's backlog")
def test_the_http_listener_queues_a_burst_of_connections_up_to_the_kernels_limit(tmp_path: Path) -> None:
    """Thousands of clients connecting at once (an overload's start) wait in the kernel's accept queue
    instead of having their handshakes dropped and retried a second later: by default the queue is as
    long as the kernel allows (net.core.somaxconn), not uvicorn's 2048; the operator can set it."""
    registry = ModelRegistry(tmp_path / "home")
    registry.register("add_sub", add_sub_model(tmp_path / "add_sub.onnx"))
    somaxconn = int(Path("/proc/sys/net/core/somaxconn").read_text())
    for config, expected in (
        (ServerConfig(http_port=0, grpc_port=None), min(somaxconn, 65535)),
        (ServerConfig(http_port=0, grpc_port=None, listen_backlog=64), min(somaxconn, 64)),
    ):
        with BackgroundServer(registry, ["add_sub"], config) as running:
            assert listen_backlog(int(running.http_url.rsplit(":", 1)[1])) == expected
            assert httpx.get(f"http://{running.http_url}/v2/health/ready").status_code == 200


def test_slow_headers_get_a_408_json_and_the_connection_closes(tmp_path: Path) -> None:
    registry = ModelRegistry(tmp_path / "home")
    registry.register("add_sub", add_sub_model(tmp_path / "add_sub.onnx"))
    config = ServerConfig(http_port=0, grpc_port=None, header_timeout_s=0.5)
    with BackgroundServer(registry, ["add_sub"], config) as running:
        host, port = running.http_url.split(":")
        with socket.create_connection((host, int(port))) as slow:
            slow.sendall(b"GET /v2/health/ready HTTP/1.1\r\nHost: localhost\r\n")  # and never the blank line
            slow.settimeout(5)
            started = time.monotonic()
            reply = b""
            while chunk := slow.recv(4096):
                reply += chunk
            assert time.monotonic() - started < 3
        head, _, body = reply.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 408") and b"did not arrive within 0.5 s" in body
        with socket.create_connection((host, int(port))) as silent:  # connects, sends nothing
            silent.settimeout(5)
            assert silent.recv(4096).startswith(b"HTTP/1.1 408")
        with socket.create_connection((host, int(port))) as kept:  # one prompt request, then slow headers
            kept.sendall(b"GET /v2/health/live HTTP/1.1\r\nHost: localhost\r\n\r\n")
            kept.settimeout(5)
            assert kept.recv(4096).startswith(b"HTTP/1.1 200")
            time.sleep(0.7)  # idle longer than the header timeout: only a started request is timed
            kept.sendall(b"GET /v2/health/live HTTP/1.1\r\n")
            started = time.monotonic()
            reply = b""
            while chunk := kept.recv(4096):
                reply += chunk
            assert 0.4 < time.monotonic() - started < 3  # counted from the request's first byte
            assert reply.startswith(b"HTTP/1.1 408")
        assert httpx.get(f"http://{running.http_url}/v2/health/ready").status_code == 200  # prompt clients are fine
