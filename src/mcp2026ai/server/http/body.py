"""Read a request body without ever holding more than the configured limits: every HTTP route that takes a
body reads it here.

Each body is bounded by the route's limit (``max_request_bytes`` for tensors, ``max_json_bytes`` or the
generation limits for JSON); all bodies held at once, over every connection, by a :class:`BodyBudget`
(``max_inflight_body_bytes``), so that many large requests together are refused with 429 instead of
growing the server until it swaps or dies. The budget counts bytes as they arrive, never what a
``Content-Length`` promises (idle connections declaring large bodies hold nothing), and a body that
stops arriving for ``body_timeout_s`` is answered 408 and its bytes given back.
"""

from __future__ import annotations

import asyncio
import zlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from starlette.requests import ClientDisconnect, Request

from mcp2026ai.errors import (
    ClientGoneError,
    InvalidInputError,
    OverloadedError,
    PayloadTooLargeError,
    RequestTimeoutError,
)

RETRY_AFTER_S = 1.0
_WBITS = {"gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS}
_INFLATE_STEP = 1 << 20


class BodyBudget:
    """Bytes of request bodies held at once (one event loop: no lock needed), and how long a body may
    go without a byte arriving (None: no limit)."""

    def __init__(self, limit: int, idle_timeout_s: float | None = None) -> None:
        self.limit = limit
        self.held = 0
        self.idle_timeout_s = idle_timeout_s

    def check_room(self, size: int) -> None:
        """Refuse now a body that could not fit (429, or 413 if it never could), without holding anything."""
        if size > self.limit:
            raise PayloadTooLargeError(f"request body of {size} bytes exceeds the {self.limit}-byte in-flight limit")
        if self.held + size > self.limit:
            raise OverloadedError(
                f"server is holding {self.held} bytes of request bodies (limit {self.limit}); retry later",
                RETRY_AFTER_S,
            )

    def take(self, size: int) -> None:
        self.check_room(size)
        self.held += size

    def give_back(self, size: int) -> None:
        self.held -= size


@asynccontextmanager
async def read_body(request: Request, limit: int, budget: BodyBudget, inflate: bool = True) -> AsyncIterator[bytes]:
    """The request's body, counted against ``budget`` as it arrives and until the block ends (the request
    is answered); a gzip or deflate body inflated unless ``inflate`` is False (a relay sends it on as is)."""
    declared = _declared_length(request, limit)
    if declared is not None:
        budget.check_room(declared)
    taken = 0
    try:
        chunks: list[bytes] = []
        try:
            async with asyncio.timeout(None) as deadline:
                async for chunk in _arriving(request, deadline, budget.idle_timeout_s):
                    if taken + len(chunk) > limit:
                        raise PayloadTooLargeError(f"request body exceeds the {limit}-byte limit")
                    budget.take(len(chunk))
                    taken += len(chunk)
                    chunks.append(chunk)
        except ClientDisconnect:
            raise ClientGoneError(f"client disconnected after {taken} bytes of the request body") from None
        except TimeoutError:
            raise RequestTimeoutError(
                f"the request body stopped arriving ({taken} bytes in, none for {budget.idle_timeout_s:g} s: "
                "--body-timeout)"
            ) from None
        body = b"".join(chunks)
        encoding = request.headers.get("content-encoding", "identity").strip().lower()
        if encoding != "identity" and inflate:
            body = decompress(body, encoding, limit)
            budget.take(len(body))
            taken += len(body)
        yield body
    finally:
        budget.give_back(taken)


async def _arriving(request: Request, deadline: asyncio.Timeout, idle_timeout_s: float | None) -> AsyncIterator[bytes]:
    """The body's chunks, ``deadline`` pushed back ``idle_timeout_s`` before each one is awaited."""
    loop = asyncio.get_running_loop()
    stream = request.stream()
    while True:
        if idle_timeout_s is not None:
            deadline.reschedule(loop.time() + idle_timeout_s)
        try:
            chunk = await anext(stream)
        except StopAsyncIteration:
            return
        if chunk:
            yield chunk


def decompress(body: bytes, encoding: str, limit: int) -> bytes:
    """A gzip or deflate request body, inflated a step at a time and never past ``limit`` bytes (a
    decompression bomb is refused with 413 having cost at most ``limit``)."""
    wbits = _WBITS.get(encoding)
    if wbits is None:
        raise InvalidInputError(f"Content-Encoding {encoding[:40]!r} is not supported (gzip, deflate)")
    inflater = zlib.decompressobj(wbits)
    parts: list[bytes] = []
    size = 0
    pending = body
    try:
        while True:
            part = inflater.decompress(pending, _INFLATE_STEP)
            size += len(part)
            if size > limit:
                raise PayloadTooLargeError(f"{encoding} body inflates past the {limit}-byte limit")
            parts.append(part)
            pending = inflater.unconsumed_tail
            if not pending:
                break
        tail = inflater.flush()
    except zlib.error as exc:
        raise InvalidInputError(f"request body is not valid {encoding} ({exc})") from None
    if size + len(tail) > limit:
        raise PayloadTooLargeError(f"{encoding} body inflates past the {limit}-byte limit")
    return b"".join([*parts, tail])


def _declared_length(request: Request, limit: int) -> int | None:
    declared = request.headers.get("content-length")
    if declared is None:
        return None
    try:
        size = int(declared)
    except ValueError:
        raise InvalidInputError(f"Content-Length {declared[:40]!r} is not an integer") from None
    if size > limit:
        raise PayloadTooLargeError(f"request body of {size} bytes exceeds the {limit}-byte limit")
    return size
