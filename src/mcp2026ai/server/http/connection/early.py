"""Refusing an inference request from its request line and headers, before any ASGI work.

Under overload most requests are refused, and every refusal costs the one event loop. Through the
ASGI app a refusal is a task, Starlette's routing over every route, its middleware, a Request and
a Response object; :class:`EarlyRefusal` is asked by the HTTP protocol (protocol.py) as soon as a
request's headers are complete, and answers without any of that: for a ``POST`` to a v2 infer path
that names its SLA class in ``X-SLA-Class``, it asks the data plane whether that class would take
the request now (:meth:`DataPlane.check_admission`: the class queue is full, best-effort is being
shed, the deadline classes' backlog already outlasts the deadline, or the server is draining) and,
if not, returns the whole answer: the status, ``Retry-After`` and the v2 error JSON, encoded once
per message. The body is never read (the parser discards it as it arrives) and the connection stays
open for the client's next request.

The refusal is counted in ``mcp_requests_total`` and ``mcp_request_duration_seconds`` like any
other (and in the scheduler's rejection counter), but gets no trace span. With ``--auth`` only a
request whose token is valid for ``infer`` is refused here; any other goes on to be answered 401/403
by the app, as is a request the site guard refuses (a foreign ``Host``, another site's page:
site_guard.py). Everything the early check does not refuse takes the ordinary path, which checks
admission again (the queue may have filled meanwhile).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass

import orjson

from mcp2026ai.dataplane import DataPlane
from mcp2026ai.errors import MCPError, OverloadedError, bounded_message
from mcp2026ai.observability import metrics
from mcp2026ai.security import Authenticator
from mcp2026ai.security import Scope as TokenScope
from mcp2026ai.server.http.errors import http_status
from mcp2026ai.server.http.paths import infer_target
from mcp2026ai.server.http.site_guard import SiteGuard

_CACHED_ANSWERS = 256
"""Distinct refusal messages kept encoded (per class and reason: a handful in practice)."""


@dataclass(frozen=True)
class EarlyAnswer:
    """A complete answer but for the status line and the server's default headers: ``head`` holds the
    remaining header lines (each ending in CRLF), ``body`` the payload."""

    status: int
    head: bytes
    body: bytes


class EarlyRefusal:
    """``refusal(method, path, headers)``: the answer to send now, or None to serve the request."""

    def __init__(
        self, plane: DataPlane, authenticator: Authenticator | None = None, guard: SiteGuard | None = None
    ) -> None:
        self.plane = plane
        self.authenticator = authenticator
        self.guard = guard
        self._answers: dict[tuple[int, str, int | None], EarlyAnswer] = {}

    def __call__(self, method: str, path: str, headers: Iterable[tuple[bytes, bytes]]) -> EarlyAnswer | None:
        target = infer_target(path) if method == "POST" else None
        if target is None:
            return None
        headers = headers if isinstance(headers, list) else list(headers)  # read twice (the site guard)
        sla_class = credentials = None
        for name, value in headers:
            if name == b"x-sla-class":
                sla_class = value.decode("latin-1")
            elif name == b"authorization":
                credentials = value.decode("latin-1")
        if not sla_class or not self._may_answer(credentials):
            return None
        if self.guard is not None and self.guard.refusal(method, headers) is not None:
            return None  # the app answers it (403): nothing is told to a foreign Host or another site
        started = time.perf_counter()
        model, version = target
        try:
            self.plane.inference.check_admission(model, version, sla_class)
        except MCPError as exc:
            answer = self._answer(exc)
            served = self.plane.is_served(model)
            label = model if served else metrics.UNKNOWN_MODEL
            if version and not (served and self.plane.serves_version(model, version)):
                version = metrics.UNKNOWN_VERSION  # the label set stays the served versions
            seconds = time.perf_counter() - started
            metrics.observe_request(
                label, version or "", "http", exc.sla_class or metrics.UNKNOWN_CLASS, str(answer.status), seconds
            )
            return answer
        return None

    def _may_answer(self, credentials: str | None) -> bool:
        """Without auth, always; with it, only for a caller allowed to infer (the app answers the rest)."""
        if self.authenticator is None:
            return True
        try:
            self.authenticator.authenticate(credentials, TokenScope.INFER)
        except MCPError:
            return False
        return True

    def _answer(self, error: MCPError) -> EarlyAnswer:
        status = http_status(error)
        message = bounded_message(error)
        retry_after = max(1, round(error.retry_after_s)) if isinstance(error, OverloadedError) else None
        key = (status, message, retry_after)
        answer = self._answers.get(key)
        if answer is None:
            answer = encode_answer(status, message, retry_after)
            if len(self._answers) < _CACHED_ANSWERS:
                self._answers[key] = answer
        return answer


def encode_answer(status: int, message: str, retry_after: int | None = None) -> EarlyAnswer:
    """A v2 error answer: ``{"error": message}`` with its content headers and Retry-After if given."""
    body = orjson.dumps({"error": message})
    lines = [
        *([b"retry-after: %d\r\n" % retry_after] if retry_after is not None else []),
        b"content-type: application/json\r\n",
        b"content-length: %d\r\n" % len(body),
    ]
    return EarlyAnswer(status, b"".join(lines), body)
