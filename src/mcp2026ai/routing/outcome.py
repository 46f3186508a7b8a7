"""How one request ended, as the routing layer counts it (transport-neutral, no status codes)."""

from __future__ import annotations

from enum import StrEnum

from mcp2026ai.errors import (
    DeadlineExceededError,
    InvalidArgumentError,
    NotFoundError,
    OverloadedError,
    PayloadTooLargeError,
    PermissionDeniedError,
    UnauthenticatedError,
)

_CALLER_FAULTS = (
    InvalidArgumentError,
    NotFoundError,
    PayloadTooLargeError,
    UnauthenticatedError,
    PermissionDeniedError,
)
_SHED = (OverloadedError, DeadlineExceededError)


class Outcome(StrEnum):
    OK = "ok"
    CLIENT_ERROR = "client_error"
    """The caller's fault (the 4xx family): counts as an error, not against the version's health."""
    SERVER_ERROR = "server_error"
    """The version's fault (the 5xx family): trips circuit breakers and canary 5xx checks."""
    SHED = "shed"
    """Refused by the scheduler's backpressure (class queue full, deadline passed while queued): a
    sign of load, not of the version's health. Counts as an error, never against the version: if
    load shedding tripped the breaker, shedding best-effort traffic would refuse every class."""

    @property
    def failed(self) -> bool:
        return self is not Outcome.OK


def classify(exc: BaseException | None) -> Outcome:
    """``None`` for success; backpressure is shed; caller errors are client errors; the rest server errors."""
    if exc is None:
        return Outcome.OK
    if isinstance(exc, _SHED):
        return Outcome.SHED
    if isinstance(exc, _CALLER_FAULTS):
        return Outcome.CLIENT_ERROR
    return Outcome.SERVER_ERROR
