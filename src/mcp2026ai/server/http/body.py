"""Read a request body without ever holding more than the configured limit."""

from __future__ import annotations

from starlette.requests import Request

from mcp2026ai.errors import InvalidInputError, PayloadTooLargeError


async def read_body(request: Request, limit: int) -> bytes:
    declared = request.headers.get("content-length")
    if declared is not None:
        try:
            size = int(declared)
        except ValueError:
            raise InvalidInputError(f"Content-Length {declared!r} is not an integer") from None
        if size > limit:
            raise PayloadTooLargeError(f"request body of {size} bytes exceeds the {limit}-byte limit")
    chunks: list[bytes] = []
    received = 0
    async for chunk in request.stream():
        received += len(chunk)
        if received > limit:
            raise PayloadTooLargeError(f"request body exceeds the {limit}-byte limit")
        chunks.append(chunk)
    return b"".join(chunks)
