"""uvicorn's httptools protocol, answering requests it cannot parse with the v2 error JSON.

uvicorn answers a malformed request line or header itself, before any application code runs, with a
plain-text 400; clients of a v2 server expect ``{"error": "..."}`` for every error, so this subclass
writes that body instead (same status, same connection close).
"""

from __future__ import annotations

import orjson
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol


class JsonErrorHttpToolsProtocol(HttpToolsProtocol):  # type: ignore[misc]
    def send_400_response(self, msg: str) -> None:
        body = orjson.dumps({"error": msg})
        head = [STATUS_LINE[400]]
        for name, value in self.server_state.default_headers:
            head.extend([name, b": ", value, b"\r\n"])
        head += [
            b"content-type: application/json\r\n",
            b"content-length: " + str(len(body)).encode("ascii") + b"\r\n",
            b"connection: close\r\n",
            b"\r\n",
        ]
        self.transport.write(b"".join(head) + body)
        self.transport.close()
