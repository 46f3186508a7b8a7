"""Server-Sent Events and whole answers of text generations, shared by the OpenAI and generate routes.

A client that disconnects, streaming or not, aborts its generation (its KV slots free within one
engine step).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, MutableMapping
from typing import Any, Protocol

import orjson
from starlette.requests import Request

from mcp2026ai.errors import ClientGoneError, MCPError
from mcp2026ai.generation.types import Choice, Delta

SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
DONE = b"data: [DONE]\n\n"


def sse(document: Any) -> bytes:
    return b"data: " + orjson.dumps(document) + b"\n\n"


class Answer(Protocol):
    """What is collected: one generation, or several read as one (a list of prompts)."""

    async def collect(self, choices: int) -> list[Choice]: ...

    def abort(self) -> None: ...


class Streamed(Protocol):
    """What is streamed: its deltas (iterated once), its TTFT budget, an abort for a client gone early."""

    @property
    def ttft_budget_s(self) -> float | None: ...

    def __aiter__(self) -> AsyncIterator[Delta]: ...

    def abort(self) -> None: ...


async def response_deltas(request: Request, generation: Streamed) -> AsyncIterator[Delta]:
    """The deltas a streamed response sends. Under a contract's TTFT budget the first one is awaited
    before the response starts: a refusal that comes before the first token (the budget can no longer
    be met, the server drains) raises its domain error here, while the response's status can still say
    so (429 with Retry-After, which OpenAI clients retry), not as an error event inside a 200 stream; a
    client that disconnects meanwhile aborts the generation (ClientGoneError). Without a budget nothing
    refuses a request once queued, and the stream starts at once (a client sees its 200 while it waits)."""
    deltas = aiter(generation)
    if generation.ttft_budget_s is None:
        return deltas
    first = asyncio.ensure_future(anext(deltas))
    if not await _done_before_disconnect(request, first):
        generation.abort()
        first.cancel()
        await asyncio.wait({first})  # its outcome is nobody's now
        raise ClientGoneError("the client disconnected before its first token")
    try:
        head = first.result()
    except StopAsyncIteration:
        return _rest(None, deltas)
    return _rest(head, deltas)


async def _rest(head: Delta | None, deltas: AsyncIterable[Delta]) -> AsyncIterator[Delta]:
    if head is not None:
        yield head
    async for delta in deltas:
        yield delta


async def collect_unless_gone(request: Request, generation: Answer, choices: int) -> list[Choice]:
    """The whole answer; if the client disconnects first, the generation is aborted (ClientGone)."""
    collecting = asyncio.ensure_future(generation.collect(choices))
    if not await _done_before_disconnect(request, collecting):
        generation.abort()
        with contextlib.suppress(MCPError):
            await collecting
        raise ClientGoneError("the client disconnected before its answer was ready")
    return collecting.result()


async def _done_before_disconnect(request: Request, work: asyncio.Future[Any]) -> bool:
    """Wait for ``work`` or the client's disconnect, whichever comes first; whether ``work`` is done."""
    watching = asyncio.ensure_future(_disconnected(request.receive))
    try:
        await asyncio.wait({work, watching}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        watching.cancel()
    return work.done()


async def _disconnected(receive: Callable[[], Awaitable[MutableMapping[str, Any]]]) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
