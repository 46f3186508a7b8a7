"""Read a request body without ever holding more than the configured limit."""

from __future__ import annotations

from starlette.requests import ClientDisconnect, Request

from mcp2026ai.errors import ClientGoneError, InvalidInputError, PayloadTooLargeError


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
    try:
        async for chunk in request.stream():
            received += len(chunk)
            if received > limit:
                raise PayloadTooLargeError(f"request body exceeds the {limit}-byte limit")
            chunks.append(chunk)
    except ClientDisconnect:
        raise ClientGoneError(f"client disconnected after {received} bytes of the request body") from None
    return b"".join(chunks)
