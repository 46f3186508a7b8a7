"""AnswerShutdownCancels: uvicorn's drain-timeout cancellation becomes a 503; any other passes through."""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest

from mcp2026ai.server.http.shutdown_cancel import AnswerShutdownCancels

UVICORN_MESSAGE = "Task cancelled, timeout graceful shutdown exceeded"  # uvicorn/server.py's words


async def _run(cancel_message: str | None, respond_first: bool = False) -> list[dict[str, Any]]:
    sent: list[dict[str, Any]] = []
    started = asyncio.Event()

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if respond_first:
            await send({"type": "http.response.start", "status": 200, "headers": []})
        started.set()
        await asyncio.Event().wait()  # never answers

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "POST", "path": "/v2/models/m/infer", "headers": []}
    task = asyncio.create_task(AnswerShutdownCancels(app)(scope, receive, send))
    await started.wait()
    task.cancel(msg=cancel_message)
    await task
    return sent


def test_a_request_cancelled_at_the_drain_timeout_is_answered_503_in_json() -> None:
    sent = asyncio.run(_run(UVICORN_MESSAGE))
    assert sent[0]["type"] == "http.response.start" and sent[0]["status"] == 503
    body = orjson.loads(b"".join(message.get("body", b"") for message in sent[1:]))
    assert body == {"error": "the server is shutting down: this request did not finish within the drain timeout"}


def test_any_other_cancellation_passes_through() -> None:
    with pytest.raises(asyncio.CancelledError):
        asyncio.run(_run("client went away"))
    with pytest.raises(asyncio.CancelledError):
        asyncio.run(_run(None))


def test_a_response_already_started_is_left_to_the_transport() -> None:
    with pytest.raises(asyncio.CancelledError):
        asyncio.run(_run(UVICORN_MESSAGE, respond_first=True))
