"""Domain errors -> HTTP status and the v2 error body ``{"error": "..."}``."""

from __future__ import annotations

import logging

import orjson
from starlette.responses import Response

from mcp2026ai import errors

log = logging.getLogger(__name__)

_STATUS: list[tuple[type[errors.MCPError], int]] = [
    (errors.ClientGoneError, 499),  # nginx's "client closed request": nobody reads it
    (errors.RequestTimeoutError, 408),
    (errors.OverloadedError, 429),
    (errors.DeadlineExceededError, 503),
    (errors.UnavailableError, 503),
    (errors.InvalidArgumentError, 400),
    (errors.NotFoundError, 404),
    (errors.AlreadyExistsError, 409),
    (errors.PayloadTooLargeError, 413),
    (errors.UnauthenticatedError, 401),
    (errors.PermissionDeniedError, 403),
    (errors.InferenceFailedError, 500),
    (errors.UnsupportedError, 501),
    (errors.IntegrityError, 500),
]


_STATUS_BY_CLASS: dict[type[errors.MCPError], int] = {}


def http_status(error: errors.MCPError) -> int:
    """The HTTP status of a domain error (the first matching entry of the table; kept per error class:
    under overload every refusal asks)."""
    kind = type(error)
    status = _STATUS_BY_CLASS.get(kind)
    if status is None:
        status = _STATUS_BY_CLASS[kind] = next((code for base, code in _STATUS if issubclass(kind, base)), 500)
    return status


def error_response(error: errors.MCPError) -> Response:
    status = http_status(error)
    headers = {}
    if isinstance(error, errors.OverloadedError | errors.ColdLoadError):
        headers["Retry-After"] = str(max(1, round(error.retry_after_s)))
    if isinstance(error, errors.UnauthenticatedError):
        headers["WWW-Authenticate"] = "Bearer"
    if status >= 500 and not isinstance(error, errors.UnavailableError):
        log.warning("request failed with %s: %s", status, error)
    elif status >= 500:  # a refusal (draining, not ready, deadline passed): expected under overload, not a fault
        log.debug("request refused with %s: %s", status, error)
    return plain_error(errors.bounded_message(error), status, headers)


def plain_error(message: str, status: int, headers: dict[str, str] | None = None) -> Response:
    return Response(orjson.dumps({"error": message}), status, headers, media_type="application/json")


def unexpected_error(method: str, path: str, error: Exception) -> Response:
    """A bug, not the client's mistake: logged with its traceback, answered as a 500 v2 error that names
    only the kind of error."""
    log.exception("unexpected error on %s %s", method, path)
    return plain_error(f"internal server error: {type(error).__name__}", 500)
