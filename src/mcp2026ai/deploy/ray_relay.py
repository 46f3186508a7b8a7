"""A request relayed to a data-plane replica through a Ray Serve handle, served there by the replica's
own HTTP application in process.

The front deployment (:mod:`mcp2026ai.deploy.ray_front`) sends a :class:`RelayedRequest` (method, path,
query, headers, body); :func:`relay` runs it through the replica's ASGI app and streams the response
back in parts, each a list of ASGI messages. A response the app sends whole (a JSON answer: its start
and its one body message) comes back as one part, so the front holds none of it until it has all of it
and can send the request to another replica if this one dies first. A streamed response (Server-Sent
Events) comes back one part per event as the app sends it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass

import orjson
from starlette.types import ASGIApp, Message, Scope

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RelayedRequest:
    """What the front received: all of it, the body read whole (inference requests are bounded by the
    app's own body limits)."""

    method: str
    path: str
    query_string: bytes
    headers: list[tuple[bytes, bytes]]
    body: bytes
    client: tuple[str, int] | None = None

    @classmethod
    def from_scope(cls, scope: Scope, body: bytes) -> RelayedRequest:
        client = scope.get("client")
        return cls(
            method=scope["method"],
            path=scope["path"],
            query_string=scope.get("query_string", b""),
            headers=list(scope.get("headers", [])),
            body=body,
            client=(str(client[0]), int(client[1])) if client else None,
        )

    @property
    def may_stream(self) -> bool:
        """Whether the answer may be a stream of events: Triton's generate_stream, or an OpenAI request
        that asks ``"stream": true``. Others are relayed in one call, which costs Ray less than a
        stream (a stream relayed that way still arrives, whole, at its end)."""
        if self.path.endswith("/generate_stream"):
            return True
        if not self.path.startswith("/v1/") or b'"stream"' not in self.body:
            return False
        try:
            document = orjson.loads(self.body)
        except orjson.JSONDecodeError:
            return False
        return isinstance(document, dict) and document.get("stream") is True

    def scope(self) -> Scope:
        """The ASGI scope the replica's app serves it under."""
        return {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": "1.1",
            "method": self.method,
            "scheme": "http",
            "path": self.path,
            "raw_path": self.path.encode(),
            "root_path": "",
            "query_string": self.query_string,
            "headers": self.headers,
            "client": self.client,
            "server": None,
        }


async def relay_whole(app: ASGIApp, request: RelayedRequest) -> list[Message]:
    """Serve ``request`` with ``app``; return every message of its response at once."""
    return [message async for part in relay(app, request) for message in part]


def ends_a_part(message: Message) -> bool:
    """A body message closes a part: the last one (the response is complete) or one that carries
    bytes of a stream (an event the client should get now)."""
    return message["type"] == "http.response.body" and (not message.get("more_body") or bool(message.get("body")))


async def relay(app: ASGIApp, request: RelayedRequest) -> AsyncIterator[list[Message]]:
    """Serve ``request`` with ``app``; yield the response in parts. The app sees the body once, then a
    disconnect only when the caller stops reading (the front's client went away): a running generation
    is aborted, as on a direct connection. An exception of the app that left its response unfinished
    is raised here, after the parts it sent; one after a complete response is only logged."""
    outbox: asyncio.Queue[Message | None] = asyncio.Queue()
    caller_gone = asyncio.Event()
    body_sent = False

    async def receive() -> Message:
        nonlocal body_sent
        if not body_sent:
            body_sent = True
            return {"type": "http.request", "body": request.body, "more_body": False}
        await caller_gone.wait()
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        outbox.put_nowait(message)

    async def serve() -> None:
        try:
            await app(request.scope(), receive, send)
        finally:
            outbox.put_nowait(None)

    serving = asyncio.ensure_future(serve())
    complete = False
    try:
        part: list[Message] = []
        while (message := await outbox.get()) is not None:
            part.append(message)
            complete = complete or (message["type"] == "http.response.body" and not message.get("more_body"))
            if ends_a_part(message):
                yield part
                part = []
        if part:
            yield part
        try:
            await serving
        except Exception:
            if not complete:
                raise
            log.exception("%s %s failed after its response was sent", request.method, request.path)
    finally:
        caller_gone.set()
        if not serving.done():
            serving.cancel()
            with contextlib.suppress(BaseException):
                await serving
