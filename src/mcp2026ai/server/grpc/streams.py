"""One ``ModelStreamInfer`` stream's replies: in request order, with decoupled models' interleaved.

Requests to ordinary models are answered one after the other, in the order they came (sequences rely
on it). A request to a decoupled model starts its own producer as soon as it is read, and its
responses go out as the model sends them, between the others' (as Triton's repeat_int32 example
shows: one stream, several requests in flight). The stream ends once the client stopped sending and
every producer finished; a client that goes away cancels them.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from typing import Any

_END = object()

Reply = Any
Request = Any


async def interleave(
    requests: AsyncIterator[Request],
    is_decoupled: Callable[[Request], bool],
    answer: Callable[[Request], Awaitable[Reply]],
    stream: Callable[[Request], AsyncIterator[Reply]],
) -> AsyncGenerator[Reply, None]:
    """Every reply of the stream: ``answer(request)`` for ordinary requests (in order), each reply of
    ``stream(request)`` for decoupled ones (as it comes)."""
    replies: asyncio.Queue[Reply] = asyncio.Queue()
    producers: set[asyncio.Task[None]] = set()

    async def produce(request: Request) -> None:
        async for reply in stream(request):
            await replies.put(reply)

    async def read() -> None:
        try:
            async for request in requests:
                if is_decoupled(request):
                    task = asyncio.create_task(produce(request))
                    producers.add(task)
                    task.add_done_callback(producers.discard)
                else:
                    await replies.put(await answer(request))
            while producers:
                await asyncio.gather(*list(producers), return_exceptions=True)
        finally:
            await replies.put(_END)

    reader = asyncio.create_task(read())
    try:
        while (reply := await replies.get()) is not _END:
            yield reply
        await reader  # its failure (the client's stream broke) is the stream's
    finally:
        for task in [reader, *producers]:
            task.cancel()
