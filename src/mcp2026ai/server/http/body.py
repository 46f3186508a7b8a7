"""Read a request body without ever holding more than the configured limits.

Each body is bounded by ``max_request_bytes``; all bodies held at once, over every connection, by a
:class:`BodyBudget` (``max_inflight_body_bytes``), so that many large requests together are refused
with 429 instead of growing the server until it swaps or dies.
"""

from __future__ import annotations

import zlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from starlette.requests import ClientDisconnect, Request

from mcp2026ai.errors import ClientGoneError, InvalidInputError, OverloadedError, PayloadTooLargeError

RETRY_AFTER_S = 1.0
_WBITS = {"gzip": 16 + zlib.MAX_WBITS, "deflate": zlib.MAX_WBITS, "x-gzip": 16 + zlib.MAX_WBITS}
_INFLATE_STEP = 1 << 20


class BodyBudget:
    """Bytes of request bodies held at once (one event loop: no lock needed)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.held = 0

    def take(self, size: int) -> None:
        if size > self.limit:  # could never fit: not worth a retry
            raise PayloadTooLargeError(f"request body of {size} bytes exceeds the {self.limit}-byte in-flight limit")
        if self.held + size > self.limit:
            raise OverloadedError(
                f"server is holding {self.held} bytes of request bodies (limit {self.limit}); retry later",
                RETRY_AFTER_S,
            )
        self.held += size

    def give_back(self, size: int) -> None:
        self.held -= size


@asynccontextmanager
async def read_body(request: Request, limit: int, budget: BodyBudget) -> AsyncIterator[bytes]:
    """The request's body, counted against ``budget`` until the block ends (the request is answered)."""
    declared = _declared_length(request, limit)
    taken = 0
    try:
        if declared is not None:
            budget.take(declared)
            taken = declared
        chunks: list[bytes] = []
        received = 0
        try:
            async for chunk in request.stream():
                received += len(chunk)
                if received > limit:
                    raise PayloadTooLargeError(f"request body exceeds the {limit}-byte limit")
                if received > taken:  # chunked, or more than declared
                    budget.take(received - taken)
                    taken = received
                chunks.append(chunk)
        except ClientDisconnect:
            raise ClientGoneError(f"client disconnected after {received} bytes of the request body") from None
        body = b"".join(chunks)
        encoding = request.headers.get("content-encoding", "identity").strip().lower()
        if encoding != "identity":
            body = decompress(body, encoding, limit)
            budget.take(len(body))
            taken += len(body)
        yield body
    finally:
        budget.give_back(taken)


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
