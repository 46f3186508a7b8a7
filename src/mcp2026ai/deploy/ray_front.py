"""The HTTP front of ``mcp serve`` on Ray: a small ingress deployment on the head node that relays every
request to a data-plane replica through a Ray Serve handle and sends it again, to another replica, when
the one serving it dies before answering.

Ray Serve's proxy sends a request to a replica once: if the replica's process or node dies while it
runs, the proxy answers ``500`` (Ray Serve routes again only a request the replica had not accepted).
The front turns that into a retry: inference requests are idempotent, and a replica's answer reaches
the front whole (:mod:`mcp2026ai.deploy.ray_relay`), so a request whose replica died has sent the client
nothing yet. A stream (Server-Sent Events) whose replica dies after its first event cannot be replayed
without repeating what the client already has: it ends with its API's error event
(:mod:`mcp2026ai.deploy.ray_errors`). The front runs on the head node, where Ray's controller and GCS
are (a cluster that loses its head loses Serve anyway), and reserves no CPU, like Ray's proxies.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Message, Receive, Scope, Send

from mcp2026ai.deploy.ray_errors import error_answer, replica_lost_errors, stream_tail
from mcp2026ai.deploy.ray_relay import RelayedRequest
from mcp2026ai.errors import InferenceFailedError, MCPError, UnavailableError
from mcp2026ai.server.http.body import BodyBudget, read_body

log = logging.getLogger(__name__)

FRONT_NAME = "HttpFront"
ATTEMPTS = 4
"""Replicas a request is sent to at most, one after the other as each dies under it."""
RETRY_PAUSE_S = 0.05
"""Pause before the n-th retry: n times this (the router learns of the dead replica meanwhile)."""
HEAD_NODE_RESOURCE = "node:__internal_head__"
"""The resource only Ray's head node has (Ray's own head-pinned actors ask for a sliver of it)."""


def front_options(max_ongoing_requests: int) -> dict[str, Any]:
    """Ray Serve options of the front: one replica on the head node, no CPU reserved."""
    return {
        "name": FRONT_NAME,
        "num_replicas": 1,
        "max_ongoing_requests": max_ongoing_requests,
        "ray_actor_options": {"num_cpus": 0, "resources": {HEAD_NODE_RESOURCE: 0.001}},
        "graceful_shutdown_wait_loop_s": 0.5,
        "graceful_shutdown_timeout_s": 10.0,
    }


class HttpFront:
    """The ingress deployment: ``replicas`` is the handle of the data-plane deployment. Bodies are read
    as the server reads them (server/http/body.py): within ``max_body_bytes`` each, the in-flight budget
    and the body timeout of the server's configuration."""

    def __init__(
        self,
        replicas: Any,
        max_body_bytes: int = 64 << 20,
        max_inflight_body_bytes: int = 256 << 20,
        body_timeout_s: float | None = 30.0,
    ) -> None:
        self.streamed = replicas.options(method_name="relay", stream=True)
        self.whole = replicas.options(method_name="relay_whole")
        self.max_body_bytes = max_body_bytes
        self.bodies = BodyBudget(max_inflight_body_bytes, body_timeout_s)

    async def __call__(self, request: Request) -> Response:
        try:
            async with read_body(request, self.max_body_bytes, self.bodies, inflate=False) as body:
                relayed = RelayedRequest.from_scope(request.scope, body)
        except MCPError as error:
            return error_answer(request.url.path, error)
        return RelayedResponse(self.streamed.remote if relayed.may_stream else self._in_one_part, relayed)

    async def _in_one_part(self, request: RelayedRequest) -> AsyncIterator[list[Message]]:
        yield await self.whole.remote(request)


Relay = Callable[[RelayedRequest], AsyncIterator[list[Message]]]
"""One try: the request sent to a replica, its answer coming back in parts."""


class RelayedResponse(Response):
    """The replica's answer sent on as it arrives, the request sent again while nothing of it was sent."""

    def __init__(self, relay: Relay, request: RelayedRequest, attempts: int = ATTEMPTS) -> None:
        self.relay = relay
        self.request = request
        self.attempts = attempts

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        client = ClientStream(scope, receive, send)
        lost = replica_lost_errors()
        for attempt in range(1, self.attempts + 1):
            try:
                async for part in self.relay(self.request):
                    await client.send_part(part)
                return
            except lost as error:
                if client.started:
                    await client.end_cut_off(self.request.path, error)
                    return
                log.warning(
                    "%s %s: replica lost (%s), attempt %d of %d", *self._what(), _kind(error), attempt, self.attempts
                )
            except Exception as error:  # the replica's own failure, not its loss: not retried  # noqa: BLE001
                await client.fail(self.request.path, error)
                return
            await asyncio.sleep(RETRY_PAUSE_S * attempt)
        message = f"no replica answered: {self.attempts} replicas were lost in turn while serving this request"
        await client.fail(self.request.path, UnavailableError(message))

    def _what(self) -> tuple[str, str]:
        return self.request.method, self.request.path


class ClientStream:
    """What the front's client has been sent: nothing, part of the answer, or all of it."""

    def __init__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.scope, self.receive, self.send = scope, receive, send
        self.started = False
        self.complete = False
        self.event_stream = False
        self.last_body = b""

    async def send_part(self, part: list[Message]) -> None:
        for message in part:
            await self.send(message)
            self.started = True
            if message["type"] == "http.response.start":
                self.event_stream = any(
                    name.lower() == b"content-type" and value.startswith(b"text/event-stream")
                    for name, value in message.get("headers", [])
                )
            elif message["type"] == "http.response.body":
                self.last_body = message.get("body", b"") or self.last_body
                self.complete = not message.get("more_body", False)

    async def end_cut_off(self, path: str, error: BaseException) -> None:
        """The replica died mid-answer: a stream of events ends with its API's error event; any other
        answer is cut (the connection drops, the client sees an incomplete body, not a short one)."""
        if self.complete:
            return
        log.warning("%s: the replica answering it was lost mid-answer (%s)", path, _kind(error))
        if not self.event_stream:
            raise ConnectionAbortedError(f"{path}: the replica answering it was lost mid-answer") from error
        lost = UnavailableError("the replica serving this stream was lost (its process or node died); it is incomplete")
        await self.send({"type": "http.response.body", "body": stream_tail(path, lost, self.last_body)})
        self.complete = True

    async def fail(self, path: str, error: BaseException) -> None:
        """An error before any byte: the error answer; after some: as if the replica were lost."""
        if self.started:
            await self.end_cut_off(path, error)
            return
        if not isinstance(error, MCPError):
            log.error("%s: the replica failed: %r", path, error)
            error = InferenceFailedError(f"the replica failed: {type(error).__name__}")
        await error_answer(path, error)(self.scope, self.receive, self.send)


def _kind(error: BaseException) -> str:
    """The error's type and first line (Ray's actor errors run over many lines)."""
    first = str(error).strip().splitlines()[:1]
    return f"{type(error).__name__}: {first[0]}" if first else type(error).__name__
