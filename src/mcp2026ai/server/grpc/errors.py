"""Domain errors -> gRPC status codes (mirrors server/http/errors.py)."""

from __future__ import annotations

import grpc

from mcp2026ai import errors

_CODES: list[tuple[type[errors.MCPError], grpc.StatusCode]] = [
    (errors.ClientGoneError, grpc.StatusCode.CANCELLED),
    (errors.OverloadedError, grpc.StatusCode.RESOURCE_EXHAUSTED),
    (errors.UnavailableError, grpc.StatusCode.UNAVAILABLE),
    (errors.InvalidArgumentError, grpc.StatusCode.INVALID_ARGUMENT),
    (errors.NotFoundError, grpc.StatusCode.NOT_FOUND),
    (errors.AlreadyExistsError, grpc.StatusCode.ALREADY_EXISTS),
    (errors.PayloadTooLargeError, grpc.StatusCode.RESOURCE_EXHAUSTED),
    (errors.UnauthenticatedError, grpc.StatusCode.UNAUTHENTICATED),
    (errors.PermissionDeniedError, grpc.StatusCode.PERMISSION_DENIED),
    (errors.InferenceFailedError, grpc.StatusCode.INTERNAL),
    (errors.UnsupportedError, grpc.StatusCode.UNIMPLEMENTED),
    (errors.IntegrityError, grpc.StatusCode.DATA_LOSS),
]


def grpc_status(error: errors.MCPError) -> grpc.StatusCode:
    return next((code for kind, code in _CODES if isinstance(error, kind)), grpc.StatusCode.INTERNAL)


RETRY_PUSHBACK_KEY = "grpc-retry-pushback-ms"
"""Trailing metadata by which a server tells a client's retry policy when to try again (gRFC A6):
gRPC's counterpart of HTTP's Retry-After."""

Metadata = tuple[tuple[str, str], ...]


def trailing_metadata(error: errors.MCPError) -> Metadata:
    """What goes with the status: the retry pushback of an overload rejection or of a model still
    loading for the request (a cold start under the memory budget), nothing otherwise."""
    if isinstance(error, errors.OverloadedError | errors.ColdLoadError):
        return ((RETRY_PUSHBACK_KEY, str(max(1, round(error.retry_after_s * 1000)))),)
    return ()
