"""The caller's side of one generation: an async iterator of deltas, abortable, with exact usage."""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Callable

from mcp2026ai.generation.types import Choice, Delta, TokenLogprob, Usage


class GenerationStream:
    """Deltas of every choice in the order produced; ends when all choices finished.

    The engine's thread hands batches over with :meth:`deliver` (thread-safe); iterating must happen
    on the event loop the stream was created on. :meth:`abort` frees the request's slots within one
    engine step; iteration then ends (each unfinished choice gets ``finish_reason`` abort).
    """

    def __init__(self, request_id: str, prompt_tokens: int, loop: asyncio.AbstractEventLoop) -> None:
        self.request_id = request_id
        self.usage = Usage(prompt_tokens)
        self._loop = loop
        self._queue: asyncio.Queue[list[Delta] | BaseException | None] = asyncio.Queue()
        self._ready: deque[Delta] = deque()
        self._ended = False
        self.prompt_logprobs: list[TokenLogprob | None] | None = None
        """Each prompt token's log-probability (the first None), when the request asked for them."""
        self.on_abort: Callable[[], None] = lambda: None

    # engine thread ------------------------------------------------------------------------
    def deliver(self, deltas: list[Delta], completion_tokens: int, done: bool) -> None:
        self._call(self._put, deltas, completion_tokens, done)

    def prefilled(self, cached_tokens: int, prompt_logprobs: list[TokenLogprob | None] | None) -> None:
        """The prompt is in: how many of its tokens came from the prefix cache, and its logprobs if asked."""
        self._call(self._set_prompt, cached_tokens, prompt_logprobs)

    def _set_prompt(self, cached_tokens: int, prompt_logprobs: list[TokenLogprob | None] | None) -> None:
        self.usage.cached_tokens = cached_tokens
        self.prompt_logprobs = prompt_logprobs

    def fail(self, error: BaseException) -> None:
        self._call(self._queue.put_nowait, error)

    def _call(self, function: Callable[..., None], *args: object) -> None:
        with contextlib.suppress(RuntimeError):  # the caller's loop is closed: nobody is reading any more
            self._loop.call_soon_threadsafe(function, *args)

    def _put(self, deltas: list[Delta], completion_tokens: int, done: bool) -> None:
        self.usage.completion_tokens = completion_tokens
        if deltas:
            self._queue.put_nowait(deltas)
        if done:
            self._queue.put_nowait(None)

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
