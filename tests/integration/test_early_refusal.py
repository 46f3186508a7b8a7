"""An inference request its SLA class queue would refuse is answered 429 from its headers alone:
before its body is sent, with Retry-After and the v2 error JSON, on a connection that stays usable.

The best-effort queue holds one request and the batching window is long (3 s, four rows wanted):
a first best-effort request waits in the queue for its window, so the queue is full, without any
timing, until that window ends.
"""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest

from mcp2026ai.contract import SLAClass
from mcp2026ai.dataplane import DataPlane
from mcp2026ai.observability import metrics
from mcp2026ai.registry import ModelRegistry, ModelVersion
from mcp2026ai.runtime.base import Backend
from mcp2026ai.runtime.stats import ModelStats
from mcp2026ai.scheduling.base import Executor
from mcp2026ai.scheduling.batcher import BatchingExecutor
from mcp2026ai.scheduling.config import AdaptiveConfig, BatchingConfig, ClassPolicy
from mcp2026ai.security import AuthConfig, ServingSecurity, TokenStore
from mcp2026ai.security import Scope as TokenScope
from mcp2026ai.server.config import ServerConfig
from mcp2026ai.server.http.connection.early import EarlyRefusal
from mcp2026ai.serving.models import ServedModels
from mcp2026ai.testing import BackgroundServer
from support.models import mlp_model

pytestmark = pytest.mark.timeout(60)

WINDOW_MS = 3000.0
CONFIG = BatchingConfig(
    max_batch_size=4,
    max_queue_delay_ms=WINDOW_MS,
    classes={
        SLAClass.LATENCY_CRITICAL: ClassPolicy(weight=5, deadline_ms=10_000),
        SLAClass.THROUGHPUT_GUARANTEED: ClassPolicy(weight=3, deadline_ms=10_000),
        SLAClass.BEST_EFFORT: ClassPolicy(weight=1, capacity=1),
    },
    adaptive=AdaptiveConfig(enabled=False),
    retry_after_s=2.0,
)
BODY = json.dumps(
    {"inputs": [{"name": "x", "shape": [1, 16], "datatype": "FP32", "data": np.zeros(16).tolist()}]}
).encode()


def one_slot_executor(record: ModelVersion, backend: Backend, stats: ModelStats) -> Executor:
    return BatchingExecutor(backend, CONFIG, model=record.name, version=record.version, stats=stats)


def start(tmp_path: Path, config: ServerConfig | None = None) -> BackgroundServer:
    registry = ModelRegistry(tmp_path / "home")
    registry.register("mlp", mlp_model(tmp_path / "mlp.onnx"))
    models = ServedModels(registry, executor_factory=one_slot_executor, drain_timeout_s=10)
    return BackgroundServer(registry, ["mlp"], config, plane=DataPlane(models, default_models=["mlp"]))


@pytest.fixture()
def server(tmp_path: Path) -> Iterator[BackgroundServer]:
    with start(tmp_path) as running:
        yield running


def fill_best_effort_queue(server: BackgroundServer, headers: dict[str, str] | None = None) -> threading.Thread:
    """Queue one best-effort request (answered when its window ends); returns once it is queued."""
    answers: list[int] = []

    def send() -> None:
        url = f"http://{server.http_url}/v2/models/mlp/infer"
        sent = {"X-SLA-Class": "best-effort", "Content-Type": "application/json", **(headers or {})}
        answers.append(httpx.post(url, content=BODY, headers=sent, timeout=30).status_code)

    thread = threading.Thread(target=send)
    thread.start()
    executor = server.plane.models.get("mlp").executor
    deadline = time.monotonic() + 10
    while executor.backlog < 1:
        assert time.monotonic() < deadline, "the first request never reached the queue"
        time.sleep(0.01)
    thread.answers = answers  # type: ignore[attr-defined]
    return thread


def connect(server: BackgroundServer) -> socket.socket:
    host, port = server.http_url.rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=5)


def head_only(extra: str = "") -> bytes:
    """An infer request's line and headers, announcing a body that is not sent with them."""
    return (
        "POST /v2/models/mlp/infer HTTP/1.1\r\nHost: localhost\r\nX-SLA-Class: best-effort\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(BODY)}\r\n{extra}\r\n"
    ).encode()


def read_response(connection: socket.socket) -> tuple[int, dict[str, str], bytes]:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = connection.recv(65536)
        assert chunk, f"connection closed after {data!r}"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {name.lower(): value.strip() for name, _, value in (line.partition(":") for line in lines)}
    while len(body) < int(headers.get("content-length", "0")):
        body += connection.recv(65536)
    return int(status_line.split()[1]), headers, body


def assert_refused_kept_open(connection: socket.socket) -> None:
    """The next answer on ``connection`` is the best-effort refusal, and the connection stays open."""
    status, headers, body = read_response(connection)
    assert (status, headers["retry-after"], headers["content-type"]) == (429, "2", "application/json")
    assert json.loads(body) == {"error": "best-effort queue is full; retry later"}
    assert "connection" not in headers and "date" in headers and "server" in headers


def refusals_counted(sla_class: str) -> float:
    return metrics.REQUESTS.labels("mlp", "", "http", sla_class, "429")._value.get()


def test_a_best_effort_request_is_refused_before_its_body_is_sent(server: BackgroundServer) -> None:
    first = fill_best_effort_queue(server)
    counted = refusals_counted("best-effort")
    with connect(server) as connection:
        connection.sendall(head_only())  # no body yet: the answer cannot have waited for it
        assert_refused_kept_open(connection)
        # the body that follows is discarded and the connection serves the next request
        connection.sendall(BODY + b"GET /v2/health/live HTTP/1.1\r\nHost: localhost\r\n\r\n")
        status, _, body = read_response(connection)
        assert (status, json.loads(body)) == (200, {"live": True})
    assert refusals_counted("best-effort") == counted + 1
    first.join(timeout=30)
    assert first.answers == [200]  # type: ignore[attr-defined]


def test_expect_100_continue_is_refused_and_the_connection_closed(server: BackgroundServer) -> None:
    first = fill_best_effort_queue(server)
    with connect(server) as connection:
        connection.sendall(head_only("Expect: 100-continue\r\n"))
        status, headers, _ = read_response(connection)
        assert status == 429 and headers["connection"] == "close"
        assert connection.recv(1) == b""  # closed: the body it may never send cannot be misread
    first.join(timeout=30)


def test_with_auth_a_request_without_a_valid_token_is_answered_401_not_refused(tmp_path: Path) -> None:
    store = TokenStore(tmp_path / "tokens.json")
    token = store.create("client", frozenset({TokenScope.INFER})).token
    security = ServingSecurity(auth=AuthConfig(enabled=True, tokens_file=store.path))
    config = ServerConfig(http_port=0, grpc_port=0, drain_timeout_s=5, security=security)
    with start(tmp_path, config) as server:
        first = fill_best_effort_queue(server, {"Authorization": f"Bearer {token}"})
        url = f"http://{server.http_url}/v2/models/mlp/infer"
        headers = {"X-SLA-Class": "best-effort", "Content-Type": "application/json"}
        assert httpx.post(url, content=BODY, headers=headers).status_code == 401
        refused = httpx.post(url, content=BODY, headers={**headers, "Authorization": f"Bearer {token}"})
        assert refused.status_code == 429 and refused.headers["retry-after"] == "2"
        first.join(timeout=30)
        assert first.answers == [200]  # type: ignore[attr-defined]


def test_only_a_refusable_infer_request_is_answered_early(server: BackgroundServer) -> None:
    early = EarlyRefusal(server.plane)
    best_effort = [(b"x-sla-class", b"best-effort"), (b"content-type", b"application/json")]
    assert early("POST", "/v2/models/mlp/infer", best_effort) is None  # the queue has room
    first = fill_best_effort_queue(server)
    refused = early("POST", "/v2/models/mlp/versions/1/infer", best_effort)
    assert refused is not None and refused.status == 429 and b"retry-after: 2\r\n" in refused.head
    assert early("POST", "/v2/models/mlp/infer", best_effort) is refused  # encoded once
    critical = [(b"x-sla-class", b"latency-critical")]
    for method, path, headers in [
        ("POST", "/v2/models/mlp/infer", []),  # no class header: it may be in the body
        ("POST", "/v2/models/mlp/infer", critical),  # that class has room
        ("GET", "/v2/models/mlp/infer", best_effort),
        ("POST", "/v2/models/mlp/ready", best_effort),
        ("POST", "/v2/models/unknown/infer", best_effort),  # the app answers 404
        ("POST", "/v2/models/mlp/infer", [(b"x-sla-class", b"bulk")]),  # the app answers 400
    ]:
        assert early(method, path, headers) is None, (method, path, headers)
    first.join(timeout=30)


def whole(sla_class: str = "best-effort") -> bytes:
    """One whole infer request, line, headers and body, as one write (as most clients send it)."""
    return head_only().replace(b"best-effort", sla_class.encode()) + BODY


def test_a_whole_request_in_one_read_is_refused_and_the_connection_serves_on(server: BackgroundServer) -> None:
    first = fill_best_effort_queue(server)
    counted = refusals_counted("best-effort")
    with connect(server) as connection:
        for _ in range(3):
            connection.sendall(whole())
            assert_refused_kept_open(connection)
        connection.sendall(whole("latency-critical"))  # that class has room: served on the same connection
        status, _, body = read_response(connection)
        assert status == 200 and json.loads(body)["outputs"][0]["shape"] == [1, 10]
    assert refusals_counted("best-effort") == counted + 3
    first.join(timeout=30)
    assert first.answers == [200]  # type: ignore[attr-defined]


def test_pipelined_requests_in_one_read_are_each_answered(server: BackgroundServer) -> None:
    first = fill_best_effort_queue(server)
    with connect(server) as connection:
        connection.sendall(whole() + whole() + b"GET /v2/health/live HTTP/1.1\r\nHost: localhost\r\n\r\n")
        answers = b""
        while not answers.endswith(b'{"live":true}'):
            chunk = connection.recv(65536)
            assert chunk, f"connection closed after {answers!r}"
            answers += chunk
        assert re.findall(rb"HTTP/1.1 (\d+)", answers) == [b"429", b"429", b"200"]
    first.join(timeout=30)


def test_refusals_keep_a_connection_alive_and_idleness_closes_it(tmp_path: Path) -> None:
    config = ServerConfig(http_port=0, grpc_port=0, drain_timeout_s=5, keep_alive_s=1)
    with start(tmp_path, config) as server:
        first = fill_best_effort_queue(server)
        with connect(server) as connection:
            for _ in range(6):  # 1.8 s of refusals, longer than the keep-alive timeout
                connection.sendall(whole())
                assert read_response(connection)[0] == 429
                time.sleep(0.3)
            connection.settimeout(4)
            assert connection.recv(1) == b""  # idle for a second since the last answer: closed
        first.join(timeout=30)


def test_a_foreign_host_or_another_site_gets_the_guards_403_not_an_early_answer(server: BackgroundServer) -> None:
    """Issue 50 (DNS rebinding, CSRF): what the headers alone would refuse (429) is the site guard's 403
    for a foreign Host or a cross-site page, whole in one read (no parser) or head first, body after."""
    first = fill_best_effort_queue(server)
    foreign = head_only().replace(b"Host: localhost", b"Host: rebind.attacker.example")
    cross_site = head_only("Origin: http://attacker.example\r\n")
    with connect(server) as connection:
        for head in (foreign, cross_site):
            for parts in ([head + BODY], [head, BODY]):
                for part in parts:
                    connection.sendall(part)
                status, _, body = read_response(connection)
                assert status == 403, body
                assert b"--allowed-host" in body or b"cross-site" in body
    first.join(timeout=30)
