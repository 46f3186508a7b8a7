"""Domain errors of mcp2026ai.

Every error the product raises on purpose derives from :class:`MCPError`. The tree is::

    MCPError
    ├── InvalidArgumentError        a caller's mistake (bad value, bad file, bad tensor)
    │   ├── ContextLengthError      a prompt that does not fit the model's context length
    │   ├── ContractError           an inference contract that does not validate
    │   ├── ModelImportError        a model file that cannot be imported
    │   ├── InvalidInputError       tensors that do not match the model signature
    │   ├── InvalidFieldError       one named request field is wrong or over its limit
    │   ├── ClientGoneError         the caller disconnected before its request arrived
    │   └── RequestTimeoutError     the caller stopped sending its request body (HTTP 408)
    ├── NotFoundError               unknown model, version or key
    ├── AlreadyExistsError          a duplicate model version
    ├── PayloadTooLargeError        a request over the configured size limit
    ├── UnavailableError            not ready, shutting down, or overloaded
    │   ├── ModelNotReadyError
    │   │   └── ColdLoadError       loading on first request: retry later (503 + Retry-After)
    │   ├── OverloadedError         queue full: retry later (Retry-After)
    │   └── DeadlineExceededError   request timeout expired before it ran
    ├── UnauthenticatedError
    ├── PermissionDeniedError
    │   └── SignatureError          an unsigned, untrusted or tampered model artifact
    ├── InferenceFailedError        the runtime failed on valid input (a server fault)
    └── IntegrityError              a stored artifact no longer matches its content address

This module imports nothing from HTTP or gRPC: the transports map these classes to status codes
at the edge (``server/http/errors.py``, ``server/grpc/errors.py``).
"""

from __future__ import annotations

import re

MAX_MESSAGE_CHARS = 1000
"""Longest error message an edge sends: messages quote what the caller sent (a model name, a version),
and a 200 KB name must not make a reply that clients or proxies refuse."""


_HIDDEN_PATHS: dict[str, tuple[re.Pattern[str], str]] = {}
"""Absolute folders the edges never show: the folder's pattern and the name shown instead (:func:`hide_in_messages`)."""


def hide_in_messages(folder: str, shown_as: str) -> None:
    """Replace ``folder`` with ``shown_as`` in every message an edge sends (the server's home, whose
    absolute path tells a caller the account and layout of the host; library text quotes it too)."""
    folder = folder.rstrip("/")
    if folder:  # the folder itself or a path under it, not a longer name that starts the same
        _HIDDEN_PATHS[folder] = (re.compile(re.escape(folder) + r"(?![\w.-])"), shown_as)


def bounded_message(error: BaseException) -> str:
    """``str(error)`` with the hidden folders replaced, cut to :data:`MAX_MESSAGE_CHARS`."""
    text = str(error)
    for folder, (pattern, shown_as) in _HIDDEN_PATHS.items():
        if folder in text:
            text = pattern.sub(shown_as, text)
    return text if len(text) <= MAX_MESSAGE_CHARS else text[:MAX_MESSAGE_CHARS] + "... (truncated)"


class MCPError(Exception):
    """Root of every domain error; ``str(err)`` is a one-line message for a person."""

    sla_class: str | None = None
    """For an inference request that failed after routing: the SLA class it was scheduled under."""
    param: str | None = None
    """The request field at fault, when one is (OpenAI's error document names it as ``param``)."""


class InvalidArgumentError(MCPError):
    """The caller supplied something invalid."""


class ContextLengthError(InvalidArgumentError):
    """A prompt (plus the tokens asked for) that does not fit the model's context length."""

    def __init__(self, message: str, max_len: int, param: str | None = None) -> None:
        super().__init__(message)
        self.max_len = max_len
        self.param = param


class ContractError(InvalidArgumentError):
    """An inference contract file or document is invalid."""


class ModelImportError(InvalidArgumentError):
    """A model file cannot be read, checked or converted."""


class InvalidInputError(InvalidArgumentError):
    """Request tensors do not match the model signature."""


class InvalidFieldError(InvalidArgumentError):
    """One named field of a request is invalid or over a configured limit (OpenAI's error ``param``)."""

    def __init__(self, message: str, param: str) -> None:
        super().__init__(message)
        self.param = param


class ClientGoneError(InvalidArgumentError):
    """The caller went away before its request arrived whole (HTTP 499, gRPC CANCELLED)."""


class RequestTimeoutError(InvalidArgumentError):
    """The caller's request body stopped arriving (HTTP 408)."""


class NotFoundError(MCPError):
    """A model, version or other named thing does not exist."""


class AlreadyExistsError(MCPError):
    """Something with that identity already exists."""


class PayloadTooLargeError(MCPError):
    """A request exceeds the configured size limit."""


class UnavailableError(MCPError):
    """The service cannot take the request now."""


class ModelNotReadyError(UnavailableError):
    """The model is known but not loaded or not ready."""


class ColdLoadError(ModelNotReadyError):
    """The model is being loaded for this request and will not be ready within its deadline; the
    caller should retry after ``retry_after_s`` seconds (503 + Retry-After)."""

    def __init__(self, message: str, retry_after_s: float = 1.0) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class OverloadedError(UnavailableError):
    """Queues are full; the caller should retry after ``retry_after_s`` seconds."""

    def __init__(self, message: str, retry_after_s: float = 1.0) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class DeadlineExceededError(UnavailableError):
    """The request's deadline passed before it could run."""


class UnauthenticatedError(MCPError):
    """No valid credentials were presented."""


class PermissionDeniedError(MCPError):
    """Credentials are valid but lack the needed scope."""


class SignatureError(PermissionDeniedError):
    """A model version is unsigned, signed by an untrusted key, or its artifact/metadata were altered.

    A subclass of :class:`PermissionDeniedError` so that transports refuse it (403 /
    PERMISSION_DENIED) without a table entry of their own; the message names the model version.
    """


class InferenceFailedError(MCPError):
    """The runtime failed while executing a valid request."""


class UnsupportedError(MCPError):
    """A valid request this endpoint does not serve (a decoupled model's non-streaming infer): HTTP 501,
    gRPC UNIMPLEMENTED, as Triton answers it."""


class IntegrityError(MCPError):
    """A stored artifact's bytes no longer hash to the digest it is stored under (corrupted or altered
    on disk): it is never loaded (HTTP 500, gRPC DATA_LOSS)."""
