"""uvicorn's httptools protocol, answering requests it cannot parse with the v2 error JSON, and
refusing connections over the server's limit.

uvicorn answers a malformed request line or header itself, before any application code runs, with a
plain-text 400; clients of a v2 server expect ``{"error": "..."}`` for every error, so this subclass
writes that body instead (same status, same connection close).

A connection opened while ``max_connections`` are already open gets one answer, a 503 JSON with
Retry-After, to its first request and is closed: thousands of idle or slow connections then cost a
refusal each instead of memory and event-loop time for everyone (uvicorn's own ``limit_concurrency``
counts requests and connections together and answers in plain text).
"""

from __future__ import annotations

import asyncio

import orjson
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol


class JsonErrorHttpToolsProtocol(HttpToolsProtocol):  # type: ignore[misc]
    max_connections: int | None = None
    _over_limit = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._over_limit = self.max_connections is not None and len(self.connections) > self.max_connections

    def data_received(self, data: bytes) -> None:
        if self._over_limit:
            if not self.transport.is_closing():
                message = f"the server has {self.max_connections} connections open (its limit); retry later"
                self._send_error(503, message, [b"retry-after: 1\r\n"])
            return
        super().data_received(data)

    def send_400_response(self, msg: str) -> None:
        self._send_error(400, msg)

    def _send_error(self, status: int, message: str, extra: list[bytes] | None = None) -> None:
        body = orjson.dumps({"error": message})
        head = [STATUS_LINE[status]]
        for name, value in self.server_state.default_headers:
            head.extend([name, b": ", value, b"\r\n"])
        head += [
            *(extra or []),
            b"content-type: application/json\r\n",
            b"content-length: " + str(len(body)).encode("ascii") + b"\r\n",
            b"connection: close\r\n",
            b"\r\n",
        ]
        self.transport.write(b"".join(head) + body)
        self.transport.close()


def http_protocol(max_connections: int | None) -> type[JsonErrorHttpToolsProtocol]:
    """The protocol class for one server (uvicorn instantiates it per connection)."""
    if max_connections is None:
        return JsonErrorHttpToolsProtocol
    return type("LimitedHttpToolsProtocol", (JsonErrorHttpToolsProtocol,), {"max_connections": max_connections})
