"""A server's refusal -> the domain error it stands for (the inverse of the edges' status tables).

The client raises the same :mod:`mcp2026ai.errors` classes the server raised, so callers (the edge
proxy, ``mcp bench``) handle a remote failure exactly like a local one: ``OverloadedError`` carries
the server's Retry-After, a client's mistake stays an ``InvalidArgumentError``.
"""

from __future__ import annotations

import grpc
import orjson

from mcp2026ai import errors

_BY_HTTP_STATUS: dict[int, type[errors.MCPError]] = {
    400: errors.InvalidArgumentError,
    401: errors.UnauthenticatedError,
    403: errors.PermissionDeniedError,
    404: errors.NotFoundError,
    409: errors.AlreadyExistsError,
    413: errors.PayloadTooLargeError,
    422: errors.InvalidArgumentError,
    499: errors.ClientGoneError,
    501: errors.UnsupportedError,
    503: errors.UnavailableError,
    504: errors.DeadlineExceededError,
}

_BY_GRPC_CODE: dict[grpc.StatusCode, type[errors.MCPError]] = {
    grpc.StatusCode.INVALID_ARGUMENT: errors.InvalidArgumentError,
    grpc.StatusCode.OUT_OF_RANGE: errors.InvalidArgumentError,
    grpc.StatusCode.FAILED_PRECONDITION: errors.InvalidArgumentError,
    grpc.StatusCode.NOT_FOUND: errors.NotFoundError,
    grpc.StatusCode.ALREADY_EXISTS: errors.AlreadyExistsError,
    grpc.StatusCode.UNAUTHENTICATED: errors.UnauthenticatedError,
    grpc.StatusCode.PERMISSION_DENIED: errors.PermissionDeniedError,
    grpc.StatusCode.UNAVAILABLE: errors.UnavailableError,
    grpc.StatusCode.DEADLINE_EXCEEDED: errors.DeadlineExceededError,
    grpc.StatusCode.CANCELLED: errors.ClientGoneError,
    grpc.StatusCode.DATA_LOSS: errors.IntegrityError,
    grpc.StatusCode.UNIMPLEMENTED: errors.UnsupportedError,
}


def error_message(body: bytes) -> str:
    """The ``error`` of a v2 (or OpenAI) error body, else the body's start."""
    try:
        document = orjson.loads(body)
    except orjson.JSONDecodeError:
        return body[:200].decode("utf-8", "replace")
    if isinstance(document, dict):
        error = document.get("error")
        if isinstance(error, dict):  # OpenAI's {"error": {"message": ...}}
            error = error.get("message")
        if error:
            return str(error)
    return body[:200].decode("utf-8", "replace")


def from_http(status: int, body: bytes, retry_after: str | None, where: str) -> errors.MCPError:
    message = f"{where}: HTTP {status}: {error_message(body)}"
    if status == 429:
        return errors.OverloadedError(message, retry_after_seconds(retry_after))
    return _BY_HTTP_STATUS.get(status, errors.InferenceFailedError)(message)


def from_grpc(code: grpc.StatusCode, details: str | None, pushback_ms: str | None, where: str) -> errors.MCPError:
    """``pushback_ms``: the server's grpc-retry-pushback-ms trailer (gRPC's Retry-After)."""
    message = f"{where}: {code.name}: {details or ''}"
    if code is grpc.StatusCode.RESOURCE_EXHAUSTED:
        if details and "too large" in details.lower():
            return errors.PayloadTooLargeError(message)
        return errors.OverloadedError(message, retry_after_seconds(pushback_ms) / 1000 if pushback_ms else 1.0)
    return _BY_GRPC_CODE.get(code, errors.InferenceFailedError)(message)


def retry_after_seconds(value: str | None, default: float = 1.0) -> float:
    """Retry-After in seconds (the delta form; an HTTP date or garbage falls back to ``default``)."""
    try:
        return max(0.0, float(value)) if value is not None else default
    except ValueError:
        return default
