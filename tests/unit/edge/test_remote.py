"""The edge's remote path against a loopback HTTP server that answers what each test scripts:
Retry-After is honoured, caller errors are not retried, a failing server opens the breaker."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from mcp2026ai.edge.remote import RemoteEndpoints, RemoteModel, retry_wait
from mcp2026ai.errors import InvalidArgumentError, OverloadedError, UnavailableError
from mcp2026ai.routing.config import BreakerSpec
from tests.support.clock import FakeClock

ANSWER = {"model": "m", "version": "1", "id": "x", "predictions": [{"label": "a", "score": 0.9}]}


class Scripted(ThreadingHTTPServer):
    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.script: list[tuple[int, dict[str, str]]] = []  # (status, headers) per request; then 200
        self.arrivals: list[float] = []


class _Handler(BaseHTTPRequestHandler):
    server: Scripted

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.server.arrivals.append(time.monotonic())
        status, headers = self.server.script.pop(0) if self.server.script else (200, {})
        body = json.dumps(ANSWER if status == 200 else {"error": f"scripted {status}"}).encode()
        self.send_response(status)
        for key, value in {**headers, "Content-Type": "application/json"}.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        return None


@pytest.fixture
def scripted() -> Iterator[Scripted]:
    server = Scripted()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def remote(server: Scripted, path: str = "/api/v1/predict", **options: object) -> RemoteModel:
    host, port = server.server_address[:2]
    return RemoteModel("m", f"http://{host}:{port}{path}", **options)  # type: ignore[arg-type]


def test_overload_is_retried_after_the_servers_retry_after(scripted: Scripted) -> None:
    scripted.script = [(429, {"Retry-After": "1"})]
    answer = remote(scripted).classify(b"png", 1)
    assert answer["predictions"][0]["label"] == "a"
    assert len(scripted.arrivals) == 2
    assert scripted.arrivals[1] - scripted.arrivals[0] >= 0.95  # waited as told, not its own backoff


def test_a_callers_mistake_is_not_retried(scripted: Scripted) -> None:
    scripted.script = [(400, {})]
    with pytest.raises(InvalidArgumentError, match="scripted 400"):
        remote(scripted).classify(b"png", 1)
    assert len(scripted.arrivals) == 1


def test_attempts_are_bounded_and_the_last_refusal_is_raised(scripted: Scripted) -> None:
    scripted.script = [(503, {})] * 5
    with pytest.raises(UnavailableError, match="scripted 503"):
        remote(scripted, attempts=3).classify(b"png", 1)
    assert len(scripted.arrivals) == 3


def test_repeated_server_failures_open_the_circuit(scripted: Scripted) -> None:
    clock = FakeClock()
    model = remote(scripted, attempts=1, breaker=BreakerSpec(min_requests=3, cooldown_s=5), clock=clock)
    scripted.script = [(500, {})] * 3
    for _ in range(3):
        with pytest.raises(Exception, match="scripted 500"):
            model.classify(b"png", 1)
    with pytest.raises(UnavailableError, match="circuit open"):
        model.classify(b"png", 1)
    assert len(scripted.arrivals) == 3  # the open circuit sent nothing
    clock.advance(6)
    assert model.classify(b"png", 1)["model"] == "m"  # half-open probe passes


def test_overload_never_opens_the_circuit(scripted: Scripted) -> None:
    model = remote(scripted, attempts=1, breaker=BreakerSpec(min_requests=2))
    scripted.script = [(429, {"Retry-After": "0"})] * 4
    for _ in range(4):
        with pytest.raises(OverloadedError):
            model.classify(b"png", 1)
    assert model.classify(b"png", 1)["model"] == "m"


def test_endpoints_from_the_fallback_url() -> None:
    assert RemoteEndpoints.parse("https://h:8443/api/v1/predict") == RemoteEndpoints(
        "https://h:8443", "/api/v1/predict"
    )
    assert RemoteEndpoints.parse("http://h:8000") == RemoteEndpoints("http://h:8000", "/v1/infer")
    with pytest.raises(UnavailableError, match="ftp://h"):
        RemoteEndpoints.parse("ftp://h")


def test_retry_wait_prefers_retry_after_and_caps_it() -> None:
    assert retry_wait(1, OverloadedError("busy", 2.0)) == 2.0
    assert retry_wait(1, OverloadedError("busy", 3600)) == 30.0
    assert retry_wait(1, UnavailableError("down")) == pytest.approx(0.1)
    assert retry_wait(3, UnavailableError("down")) == pytest.approx(0.4)
