"""server/grpc/streams.py: ordinary requests answered in order, decoupled ones' replies as they come."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from mcp2026ai.server.grpc.streams import interleave


async def requests(*names: str) -> AsyncIterator[str]:
    for name in names:
        yield name


async def answer(request: str) -> str:
    await asyncio.sleep(0.01)
    return f"{request}:done"


async def stream(request: str) -> AsyncIterator[str]:
    delays = {"slow": [0.0, 0.2], "quick": [0.05, 0.02]}[request]
    for index, delay in enumerate(delays):
        await asyncio.sleep(delay)
        yield f"{request}:{index}"


def test_decoupled_replies_interleave_and_ordinary_ones_keep_their_order() -> None:
    async def run() -> list[str]:
        source = requests("a", "slow", "b", "quick", "c")
        return [reply async for reply in interleave(source, lambda r: r in ("slow", "quick"), answer, stream)]

    replies = asyncio.run(run())
    assert [reply for reply in replies if reply.endswith(":done")] == ["a:done", "b:done", "c:done"]
    assert replies.index("slow:0") < replies.index("quick:0") < replies.index("quick:1") < replies.index("slow:1")
    assert replies[-1] == "slow:1"  # the stream ends only once every producer finished


def test_closing_the_stream_cancels_its_producers() -> None:
    started: list[str] = []

    async def endless(request: str) -> AsyncIterator[str]:
        started.append(request)
        while True:
            await asyncio.sleep(0.01)
            yield request

    async def run() -> None:
        replies = interleave(requests("forever"), lambda r: True, answer, endless)
        assert await anext(replies) == "forever"
        await replies.aclose()
        await asyncio.sleep(0.05)
        assert [task for task in asyncio.all_tasks() if task is not asyncio.current_task()] == []

    asyncio.run(run())
    assert started == ["forever"]
