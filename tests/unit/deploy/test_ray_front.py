"""The Ray front's relay (no Ray cluster needed): a real Starlette app served in process through
``relay``, and the front's answer when the replica under a request is lost (Ray's own ActorDiedError,
raised by a stand-in for the Serve handle): sent again while nothing was sent, else the stream's error
event. A real cluster and a real node kill: tests/integration/test_ray_multinode.py."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, StreamingResponse
from starlette.routing import Route
from starlette.types import Message

from mcp2026ai.deploy.ray_errors import stream_tail
from mcp2026ai.deploy.ray_front import RelayedResponse
from mcp2026ai.deploy.ray_relay import RelayedRequest, relay
from mcp2026ai.errors import UnavailableError

pytest.importorskip("ray", reason="the [ray] extra")
from ray.exceptions import ActorDiedError

EVENTS = [b'data: {"n": 0}\n\n', b'data: {"n": 1}\n\n', b"data: [DONE]\n\n"]


async def echo(request: Request) -> JSONResponse:
    return JSONResponse({"body": (await request.body()).decode(), "q": request.query_params.get("q")})


async def events(request: Request) -> StreamingResponse:
    async def stream() -> AsyncIterator[bytes]:
        for event in EVENTS:
            yield event
            await asyncio.sleep(0)

    return StreamingResponse(stream(), media_type="text/event-stream")


APP = Starlette(
    routes=[Route("/echo", echo, methods=["POST"]), Route("/v1/chat/completions", events, methods=["POST"])]
)


def request(path: str, body: bytes = b"{}", query: bytes = b"") -> RelayedRequest:
    return RelayedRequest("POST", path, query, [(b"content-type", b"application/json")], body, ("127.0.0.1", 1))


async def parts_of(relayed: RelayedRequest) -> list[list[Message]]:
    return [part async for part in relay(APP, relayed)]


def test_a_whole_answer_comes_back_as_one_part() -> None:
    parts = asyncio.run(parts_of(request("/echo", b"hello", b"q=1")))
    assert len(parts) == 1
    start, body = parts[0]
    assert start["type"] == "http.response.start" and start["status"] == 200
    assert json.loads(body["body"]) == {"body": "hello", "q": "1"} and not body.get("more_body")


def test_a_stream_comes_back_one_event_a_part() -> None:
    parts = asyncio.run(parts_of(request("/v1/chat/completions")))
    bodies = [message.get("body", b"") for part in parts for message in part if message["type"] == "http.response.body"]
    assert parts[0][0]["type"] == "http.response.start" and parts[0][1]["body"] == EVENTS[0]
    assert b"".join(bodies) == b"".join(EVENTS)
    assert all(len(part) == 1 for part in parts[1:])


class LosingHandle:
    """Stands in for the Serve handle: its first ``losses`` calls lose their replica after ``sent``
    parts; later calls relay to the app."""

    def __init__(self, losses: int, sent: int) -> None:
        self.losses, self.sent, self.calls = losses, sent, 0

    def remote(self, relayed: RelayedRequest) -> AsyncIterator[list[Message]]:
        self.calls += 1
        return self._parts(relayed, lose=self.calls <= self.losses)

    async def _parts(self, relayed: RelayedRequest, lose: bool) -> AsyncIterator[list[Message]]:
        count = 0
        async for part in relay(APP, relayed):
            if lose and count == self.sent:
                raise ActorDiedError()
            count += 1
            yield part
        if lose:
            raise ActorDiedError()


def answer(handle: LosingHandle, relayed: RelayedRequest) -> tuple[int, bytes]:
    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)

    async def receive() -> Message:
        return {"type": "http.disconnect"}

    scope: dict[str, Any] = {"type": "http", "method": "POST", "path": relayed.path, "headers": []}
    asyncio.run(RelayedResponse(handle.remote, relayed)(scope, receive, send))
    starts = [message for message in sent if message["type"] == "http.response.start"]
    assert len(starts) == 1, sent
    return starts[0]["status"], b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")


def test_a_request_whose_replica_died_before_answering_is_sent_again() -> None:
    handle = LosingHandle(losses=2, sent=0)
    status, body = answer(handle, request("/echo", b"again"))
    assert (status, json.loads(body)["body"], handle.calls) == (200, "again", 3)


def test_a_replica_lost_after_a_whole_answer_changes_nothing() -> None:
    handle = LosingHandle(losses=1, sent=1)
    status, body = answer(handle, request("/echo", b"once"))
    assert (status, json.loads(body)["body"], handle.calls) == (200, "once", 1)


def test_when_every_replica_is_lost_the_answer_is_503() -> None:
    handle = LosingHandle(losses=10, sent=0)
    status, body = answer(handle, request("/v2/models/m/infer"))
    assert status == 503 and "no replica answered" in json.loads(body)["error"] and handle.calls == 4


def test_a_stream_cut_off_ends_with_the_openai_error_and_done() -> None:
    handle = LosingHandle(losses=1, sent=2)
    status, body = answer(handle, request("/v1/chat/completions"))
    events = [event for event in body.split(b"\n\n") if event]
    assert status == 200 and handle.calls == 1
    assert events[:2] == [event.strip() for event in EVENTS[:2]]
    error = json.loads(events[2].removeprefix(b"data: "))["error"]
    assert error["type"] == "server_error" and "lost" in error["message"] and events[3] == b"data: [DONE]"


def test_each_api_ends_a_cut_stream_in_its_own_dialect() -> None:
    lost = UnavailableError("replica lost")
    assert stream_tail("/v2/models/m/generate_stream", lost, b"") == b'data: {"error":"replica lost"}\n\n'
    responses = stream_tail("/v1/responses", lost, b'event: x\ndata: {"type":"x","sequence_number":7}\n\n')
    kind, data = responses.decode().strip().split("\n")
    assert kind == "event: error" and json.loads(data.removeprefix("data: "))["sequence_number"] == 8
    completions = stream_tail("/v1/completions", lost, b"")
    assert completions.endswith(b"data: [DONE]\n\n") and b'"server_error"' in completions


@pytest.mark.parametrize(
    ("path", "body", "streams"),
    [
        ("/v2/models/m/generate_stream", b"{}", True),
        ("/v1/chat/completions", b'{"model": "m", "stream": true}', True),
        ("/v1/chat/completions", b'{"model": "m", "stream": false}', False),
        ("/v1/completions", b'{"prompt": "\\"stream\\": true"}', False),
        ("/v1/completions", b'{"stream": true', False),  # the replica's app answers the broken JSON
        ("/v2/models/m/infer", b'{"stream": true}', False),
    ],
)
def test_only_a_request_that_asks_for_a_stream_is_relayed_as_one(path: str, body: bytes, streams: bool) -> None:
    assert request(path, body).may_stream is streams
