"""Domain errors -> gRPC status codes (mirrors server/http/errors.py)."""

from __future__ import annotations

import grpc

from mcp2026ai import errors

_CODES: list[tuple[type[errors.MCPError], grpc.StatusCode]] = [
    (errors.OverloadedError, grpc.StatusCode.RESOURCE_EXHAUSTED),
    (errors.UnavailableError, grpc.StatusCode.UNAVAILABLE),
    (errors.InvalidArgumentError, grpc.StatusCode.INVALID_ARGUMENT),
    (errors.NotFoundError, grpc.StatusCode.NOT_FOUND),
    (errors.AlreadyExistsError, grpc.StatusCode.ALREADY_EXISTS),
    (errors.PayloadTooLargeError, grpc.StatusCode.RESOURCE_EXHAUSTED),
    (errors.UnauthenticatedError, grpc.StatusCode.UNAUTHENTICATED),
    (errors.PermissionDeniedError, grpc.StatusCode.PERMISSION_DENIED),
    (errors.InferenceFailedError, grpc.StatusCode.INTERNAL),
]


def grpc_status(error: errors.MCPError) -> grpc.StatusCode:
    return next((code for kind, code in _CODES if isinstance(error, kind)), grpc.StatusCode.INTERNAL)
