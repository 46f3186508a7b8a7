"""Server-Sent Events and whole answers of text generations, shared by the OpenAI and generate routes.

A client that disconnects, streaming or not, aborts its generation (its KV slots free within one
engine step).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any, Protocol

import orjson
from starlette.requests import Request

from mcp2026ai.errors import ClientGoneError, MCPError
from mcp2026ai.generation.types import Choice

SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
DONE = b"data: [DONE]\n\n"


def sse(document: Any) -> bytes:
    return b"data: " + orjson.dumps(document) + b"\n\n"


class Answer(Protocol):
    """What is collected: one generation, or several read as one (a list of prompts)."""

    async def collect(self, choices: int) -> list[Choice]: ...

    def abort(self) -> None: ...


async def collect_unless_gone(request: Request, generation: Answer, choices: int) -> list[Choice]:
    """The whole answer; if the client disconnects first, the generation is aborted (ClientGone)."""
    collecting = asyncio.ensure_future(generation.collect(choices))
    watching = asyncio.ensure_future(_disconnected(request.receive))
    try:
        await asyncio.wait({collecting, watching}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        watching.cancel()
    if not collecting.done():
        generation.abort()
        with contextlib.suppress(MCPError):
            await collecting
        raise ClientGoneError("the client disconnected before its answer was ready")
    return collecting.result()


async def _disconnected(receive: Callable[[], Awaitable[MutableMapping[str, Any]]]) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
