"""uvicorn's httptools protocol, answering requests it cannot parse with the v2 error JSON, and
refusing connections over the server's limit.

uvicorn answers a malformed request line or header itself, before any application code runs, with a
plain-text 400; clients of a v2 server expect ``{"error": "..."}`` for every error, so this subclass
writes that body instead (same status, same connection close).

A connection opened while ``max_connections`` are already open gets one answer, a 503 JSON with
Retry-After, to its first request and is closed: thousands of idle or slow connections then cost a
refusal each instead of memory and event-loop time for everyone (uvicorn's own ``limit_concurrency``
counts requests and connections together and answers in plain text).

A request whose line and headers have not all arrived ``header_timeout_s`` after the connection
opened (or after its first byte, on a kept-alive connection) gets a 408 JSON and the connection is
closed: slow-header clients cannot hold connections (and so the connection cap) for ever.

A request that :class:`~mcp2026ai.server.http.connection.early.EarlyRefusal` refuses from its line and headers
(an inference request its SLA class queue would not take) is answered here, when its headers are
complete, instead of starting an ASGI task: its body is discarded as it arrives and the connection
stays open (closed when the client asked for ``Expect: 100-continue``: it may never send the body).
When a read holds exactly one whole plain POST (whole_request.py: nothing pipelined, no unusual
framing), the same check is asked before the parser sees it, and a refusal is answered without any of
uvicorn's per-request work (header callbacks, scope, request cycle, keep-alive timer): under overload
that is most requests. The keep-alive timeout then counts from the last such answer (the timer is
pushed back when it fires instead of re-armed for every refusal).

uvicorn writes a response's head and its body with two sends: with TCP_NODELAY two segments, two
wake-ups of the client. Each request's writes go through :class:`CoalescingWriter`, which holds a
write until the next one (the body follows its head in the same event-loop step) and sends both at
once; whatever is held goes out at the end of the step.

On shutdown an idle keep-alive connection is not cut at once, as uvicorn does: a client may have
sent its next request already and would see a reset instead of an answer. It stays open
:data:`DRAIN_LINGER_S`; a request arriving on it is answered (the draining data plane refuses
inference with a 503) with ``Connection: close``, so the client reconnects and is refused there.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable

from uvicorn._types import ASGI3Application
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol, RequestResponseCycle

from mcp2026ai.server.http.connection.early import EarlyAnswer, encode_answer
from mcp2026ai.server.http.connection.whole_request import plain_post

EarlyCheck = Callable[[str, str, Iterable[tuple[bytes, bytes]]], EarlyAnswer | None]
"""``check(method, path, headers)``: an answer to send before the app sees the request, or None."""

COALESCE_BYTES = 1 << 16
"""Writes larger than this are not copied together (a large body costs more to copy than a send)."""

DRAIN_LINGER_S = 1.0
"""How long an idle connection stays open once shutdown begins (requests on it are answered, then it closes)."""


class CoalescingWriter(asyncio.Transport):
    """The transport a request's cycle writes to: each write is held until the next one or the end of
    the event-loop step, and two writes that meet go out in one send. Everything else is the socket
    transport's."""

    __slots__ = ("_held", "_pending", "transport")

    def __init__(self, transport: asyncio.Transport) -> None:
        super().__init__()
        self.transport = transport
        self._held: bytes | None = None
        self._pending: asyncio.Handle | None = None

    def write(self, data: bytes | bytearray | memoryview) -> None:
        data = bytes(data)
        held = self._held
        if held is None:
            self._held = data
            self._pending = asyncio.get_running_loop().call_soon(self.flush)
            return
        self._release()
        if len(held) + len(data) <= COALESCE_BYTES:
            self.transport.write(held + data)
        else:
            self.transport.write(held)
            self.transport.write(data)

    def flush(self) -> None:
        held = self._held
        if held is not None:
            self._release()
            self.transport.write(held)

    def _release(self) -> None:
        self._held = None
        if self._pending is not None:
            self._pending.cancel()
            self._pending = None

    def close(self) -> None:
        self.flush()
        self.transport.close()

    def is_closing(self) -> bool:
        return self.transport.is_closing()

    def get_extra_info(self, name: str, default: object = None) -> object:
        return self.transport.get_extra_info(name, default)


class JsonErrorHttpToolsProtocol(HttpToolsProtocol):  # type: ignore[misc]
    max_connections: int | None = None
    header_timeout_s: float | None = None
    early_check: EarlyCheck | None = None
    _over_limit = False
    _draining = False
    _header_timer: asyncio.TimerHandle | None = None
    _headers_pending = False
    _at_boundary = True
    _checked_whole = False
    _last_answer_at = 0.0

    def _arm_header_timer(self) -> None:
        self._cancel_header_timer()
        if self.header_timeout_s is not None:
            self._header_timer = self.loop.call_later(self.header_timeout_s, self._headers_too_slow)

    def _cancel_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _headers_too_slow(self) -> None:
        self._header_timer = None
        if not self.transport.is_closing() and (self.cycle is None or self.cycle.response_complete):
            self._send_error(408, f"the request line and headers did not arrive within {self.header_timeout_s:g} s")

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._at_boundary = True

    def on_message_begin(self) -> None:
        self._at_boundary = False
        super().on_message_begin()
        # the timer is armed at the end of this read, and only if the headers did not all come in it
        # (nearly always they do: arming and cancelling a timer for every request costs the loop)
        self._headers_pending = True

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_header_timer()
        super().connection_lost(exc)

    def shutdown(self) -> None:
        self._draining = True
        if self.cycle is None or self.cycle.response_complete:
            self.loop.call_later(DRAIN_LINGER_S, self._close_when_idle)
        else:
            self.cycle.keep_alive = False

    def _close_when_idle(self) -> None:
        if self.cycle is None or self.cycle.response_complete:
            self.transport.close()
        else:
            self.cycle.keep_alive = False  # closes once its response is out

    def on_headers_complete(self) -> None:
        self._headers_pending = False
        self._cancel_header_timer()
        super().on_headers_complete()
        if self._draining and self.cycle is not None:
            self.cycle.keep_alive = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_header_timer()
        self._over_limit = self.max_connections is not None and len(self.connections) > self.max_connections

    def data_received(self, data: bytes) -> None:
        if self._over_limit:
            if not self.transport.is_closing():
                message = f"the server has {self.max_connections} connections open (its limit); retry later"
                self._send_error(503, message, retry_after=1)
            return
        if self._at_boundary and self._refused_whole(data):
            return
        super().data_received(data)
        self._checked_whole = False
        if self._headers_pending and self._header_timer is None:
            self._arm_header_timer()

    def _refused_whole(self, data: bytes) -> bool:
        """Refuse ``data`` without the parser when it is one whole plain POST that :attr:`early_check`
        refuses (whole_request.py); False (nothing done) for everything else."""
        check = type(self).early_check
        if check is None or self._draining or (self.cycle is not None and not self.cycle.response_complete):
            return False
        request = plain_post(data)
        if request is None or request.sla_class is None:
            return False
        headers = [(b"x-sla-class", request.sla_class), *request.site_headers]
        if request.authorization is not None:
            headers.append((b"authorization", request.authorization))
        answer = check("POST", request.path, headers)
        if answer is None:
            self._checked_whole = True  # served: the parser's pass need not ask again
            return False
        self._cancel_header_timer()
        self._write_answer(answer, keep_alive=True)
        self.server_state.total_requests += 1
        self._kept_alive_since_now()
        return True

    def _kept_alive_since_now(self) -> None:
        """The keep-alive timeout counts from now (the timer is armed once, and pushed back when it fires)."""
        self._last_answer_at = self.loop.time()
        if self.timeout_keep_alive_task is None:
            self.timeout_keep_alive_task = self.loop.call_later(
                self.timeout_keep_alive, self.timeout_keep_alive_handler
            )

    def timeout_keep_alive_handler(self) -> None:
        """uvicorn's keep-alive timeout, not counting from before a request refused whole (those arm no
        timer of their own: one timer per connection, pushed back when it fires)."""
        idle_for = self.loop.time() - self._last_answer_at
        if idle_for < self.timeout_keep_alive and not self.transport.is_closing():
            self.timeout_keep_alive_task = self.loop.call_later(
                self.timeout_keep_alive - idle_for, self.timeout_keep_alive_handler
            )
            return
        super().timeout_keep_alive_handler()

    def _start_asgi_task(self, cycle: RequestResponseCycle, app: ASGI3Application) -> None:
        """Answer now what :attr:`early_check` refuses; start the app for everything else (uvicorn
        >= 0.45 starts every request's task here, pipelined ones included)."""
        check = None if self._checked_whole else type(self).early_check
        answer = None if check is None else check(cycle.scope["method"], cycle.scope["path"], cycle.scope["headers"])
        if answer is None:
            cycle.transport = CoalescingWriter(cycle.transport)
            super()._start_asgi_task(cycle, app)
            return
        if self._draining or cycle.waiting_for_100_continue:
            cycle.keep_alive = False
        self._write_answer(answer, cycle.keep_alive)
        cycle.response_started = cycle.response_complete = True  # the parser now discards the body
        cycle.message_event.set()
        if not cycle.keep_alive:
            self.transport.close()
        self.on_response_complete()

    def _write_answer(self, answer: EarlyAnswer, keep_alive: bool) -> None:
        head = [STATUS_LINE[answer.status]]
        for name, value in self.server_state.default_headers:
            head.extend([name, b": ", value, b"\r\n"])
        head += [answer.head, b"" if keep_alive else b"connection: close\r\n", b"\r\n", answer.body]
        self.transport.write(b"".join(head))

    def send_400_response(self, msg: str) -> None:
        self._send_error(400, msg)

    def _send_error(self, status: int, message: str, retry_after: int | None = None) -> None:
        """Answer the v2 error JSON and close the connection."""
        self._write_answer(encode_answer(status, message, retry_after), keep_alive=False)
        self.transport.close()


def http_protocol(
    max_connections: int | None, header_timeout_s: float | None = None, early_check: EarlyCheck | None = None
) -> type[JsonErrorHttpToolsProtocol]:
    """The protocol class for one server (uvicorn instantiates it per connection)."""
    limits = {"max_connections": max_connections, "header_timeout_s": header_timeout_s, "early_check": early_check}
    return type("LimitedHttpToolsProtocol", (JsonErrorHttpToolsProtocol,), limits)
