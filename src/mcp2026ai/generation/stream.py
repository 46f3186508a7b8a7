"""The caller's side of one generation: an async iterator of deltas, abortable, with exact usage."""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Callable

from mcp2026ai.errors import UnavailableError
from mcp2026ai.generation.types import Choice, Delta, TokenLogprob, Usage


class GenerationStream:
    """Deltas of every choice in the order produced; ends when all choices finished.

    The engine's thread hands batches over with :meth:`deliver` (thread-safe); iterating must happen
    on the event loop the stream was created on. :meth:`abort` frees the request's slots within one
    engine step; iteration then ends (each unfinished choice gets ``finish_reason`` abort).

    A reader slower than the engine (a client that reads its stream slowly or never) leaves deltas
    waiting here: past ``max_buffered`` of them the buffer is dropped, the generation aborted (its slots
    freed) and the reader gets :class:`SlowReaderError` after what it has already taken.
    """

    def __init__(
        self, request_id: str, prompt_tokens: int, loop: asyncio.AbstractEventLoop, max_buffered: int | None = None
    ) -> None:
        self.request_id = request_id
        self.usage = Usage(prompt_tokens)
        self.max_buffered = max_buffered
        self._loop = loop
        self._queue: asyncio.Queue[list[Delta] | BaseException | None] = asyncio.Queue()
        self._buffered = 0
        self._cut_off = False
        self._ready: deque[Delta] = deque()
        self._ended = False
        self.prompt_logprobs: list[TokenLogprob | None] | None = None
        """Each prompt token's log-probability (the first None), when the request asked for them."""
        self.on_abort: Callable[[], None] = lambda: None

    # engine thread ------------------------------------------------------------------------
    def deliver(self, deltas: list[Delta], completion_tokens: int, done: bool) -> None:
        self._call(self._put, deltas, completion_tokens, done)

    def _make_and_put(self, make: Made) -> None:
        made = make()  # even when cut off: it ends the request's accounting
        if made is not None:
            self._put(*made)

    def prefilled(self, cached_tokens: int, prompt_logprobs: list[TokenLogprob | None] | None) -> None:
        """The prompt is in: how many of its tokens came from the prefix cache, and its logprobs if asked."""
        self._call(self._set_prompt, cached_tokens, prompt_logprobs)

    def _set_prompt(self, cached_tokens: int, prompt_logprobs: list[TokenLogprob | None] | None) -> None:
        self.usage.cached_tokens = cached_tokens
        self.prompt_logprobs = prompt_logprobs

    def fail(self, error: BaseException) -> None:
        self._call(self._fail, error)

    def _call(self, function: Callable[..., None], *args: object) -> None:
        with contextlib.suppress(RuntimeError):  # the caller's loop is closed: nobody is reading any more
            self._loop.call_soon_threadsafe(function, *args)

    def _fail(self, error: BaseException) -> None:
        if not self._cut_off:
            self._queue.put_nowait(error)

    def _put(self, deltas: list[Delta], completion_tokens: int, done: bool) -> None:
        if self._cut_off:
            return
        self.usage.completion_tokens = completion_tokens
        if deltas:
            self._queue.put_nowait(deltas)
            self._buffered += len(deltas)
            if not done and self.max_buffered is not None and self._buffered > self.max_buffered:
                self._cut(self._buffered)
                return
        if done:
            self._queue.put_nowait(None)

    def _cut(self, buffered: int) -> None:
        """The reader fell ``buffered`` deltas behind: drop them, free the slots, end with an error."""
        self._cut_off = True
        while not self._queue.empty():
            self._queue.get_nowait()
        self._buffered = 0
        self._queue.put_nowait(SlowReaderError(buffered, self.max_buffered or 0))
        self.on_abort()

    # caller -------------------------------------------------------------------------------
    def abort(self) -> None:
        """Stop generating (the client went away): the slots are freed at the next engine step."""
        if not self._ended:
            self.on_abort()

    def __aiter__(self) -> GenerationStream:
        return self

    async def __anext__(self) -> Delta:
        while not self._ready:
            if self._ended:
                raise StopAsyncIteration
            item = await self._queue.get()
            if isinstance(item, list):
                self._buffered -= len(item)
            if item is None:
                self._ended = True
            elif isinstance(item, BaseException):
                self._ended = True
                raise item
            else:
                self._ready.extend(item)
        return self._ready.popleft()

    async def collect(self, choices: int) -> list[Choice]:
        """Every choice whole (non-streaming answers)."""
        gathered = [Choice(index) for index in range(choices)]
        async for delta in self:
            gathered[delta.index].add(delta)
        return gathered


class SlowReaderError(UnavailableError):
    """A stream's reader fell too far behind its generation (``stream_buffer_deltas``): it was ended."""

    def __init__(self, buffered: int, limit: int) -> None:
        super().__init__(
            f"stream ended: the client fell {buffered} tokens behind (stream_buffer_deltas {limit}); "
            "its decode slot was freed"
        )


Made = Callable[[], tuple[list[Delta], int, bool] | None]
"""Makes a stream's next deltas on its event loop (the engine's text stage); None delivers nothing."""


def deliver_all(made: list[tuple[GenerationStream, Made]]) -> None:
    """Hand several streams their next deltas, made on their event loops, with one wake-up of each loop:
    the engine calls it once per step (a wake-up per stream cost the step ~0.1 ms each, a socket write
    and the GIL handed back and forth)."""
    by_loop: dict[asyncio.AbstractEventLoop, list[tuple[GenerationStream, Made]]] = {}
    for stream, make in made:
        by_loop.setdefault(stream._loop, []).append((stream, make))
    for loop, batch in by_loop.items():
        with contextlib.suppress(RuntimeError):  # that loop is closed: nobody is reading any more
            loop.call_soon_threadsafe(_make_all, batch)


def _make_all(batch: list[tuple[GenerationStream, Made]]) -> None:
    for stream, make in batch:
        stream._make_and_put(make)
