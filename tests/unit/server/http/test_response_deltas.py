"""When a streamed text response starts (server/http/streaming.py: response_deltas): under a contract's
TTFT budget only once its first token is there, so a refusal before it is the response's status."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from starlette.requests import Request

from mcp2026ai.errors import ClientGoneError, OverloadedError
from mcp2026ai.generation.types import Delta
from mcp2026ai.server.http.streaming import response_deltas


class Scripted:
    """A generation that yields ``deltas`` once ``go`` is set, or raises ``error`` first."""

    def __init__(self, budget: float | None, deltas: list[Delta], error: Exception | None = None) -> None:
        self.ttft_budget_s = budget
        self.deltas = deltas
        self.error = error
        self.go = asyncio.Event()
        self.aborted = False

    def __aiter__(self) -> AsyncIterator[Delta]:
        return self._run()

    async def _run(self) -> AsyncIterator[Delta]:
        await self.go.wait()
        if self.error is not None:
            raise self.error
        for delta in self.deltas:
            yield delta

    def abort(self) -> None:
        self.aborted = True


def request(disconnect: asyncio.Event) -> Request:
    async def receive() -> dict[str, object]:
        await disconnect.wait()
        return {"type": "http.disconnect"}

    return Request({"type": "http", "method": "POST", "path": "/v1/chat/completions", "headers": []}, receive)


async def collected(deltas: AsyncIterator[Delta]) -> list[str]:
    return [delta.text async for delta in deltas]


def test_without_a_budget_the_stream_starts_before_its_first_token() -> None:
    async def scenario() -> list[str]:
        generation = Scripted(None, [Delta(0, text="a"), Delta(0, text="b")])
        deltas = await asyncio.wait_for(response_deltas(request(asyncio.Event()), generation), 5)
        generation.go.set()  # the first token comes only after the response has started
        return await collected(deltas)

    assert asyncio.run(scenario()) == ["a", "b"]


def test_under_a_budget_the_first_token_is_awaited_and_nothing_is_lost() -> None:
    async def scenario() -> list[str]:
        generation = Scripted(2.0, [Delta(0, text="a"), Delta(0, text="b"), Delta(0, text="c")])
        starting = asyncio.ensure_future(response_deltas(request(asyncio.Event()), generation))
        await asyncio.sleep(0.05)
        assert not starting.done()  # no status yet: the first token is not there
        generation.go.set()
        return await collected(await asyncio.wait_for(starting, 5))

    assert asyncio.run(scenario()) == ["a", "b", "c"]


def test_under_a_budget_a_refusal_before_the_first_token_is_raised_for_the_status() -> None:
    async def scenario() -> None:
        late = OverloadedError("the prompts ahead leave no time for a first token in the TTFT budget", 2.0)
        generation = Scripted(2.0, [], late)
        generation.go.set()
        await response_deltas(request(asyncio.Event()), generation)

    with pytest.raises(OverloadedError, match="no time for a first token") as refused:
        asyncio.run(scenario())
    assert refused.value.retry_after_s == 2.0


def test_under_a_budget_a_client_gone_before_the_first_token_aborts_the_generation() -> None:
    generation = Scripted(2.0, [Delta(0, text="a")])

    async def scenario() -> None:
        disconnect = asyncio.Event()
        starting = asyncio.ensure_future(response_deltas(request(disconnect), generation))
        await asyncio.sleep(0.05)
        disconnect.set()
        await asyncio.wait_for(starting, 5)

    with pytest.raises(ClientGoneError):
        asyncio.run(scenario())
    assert generation.aborted
