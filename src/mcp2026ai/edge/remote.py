"""The remote path: the server behind ``fallback_url``, with retries that honour Retry-After and a
circuit breaker, so a device stops hammering a server that keeps failing.

``fallback_url`` is either a server's base URL (``http://host:8000``: images go to ``/v1/infer``,
arrays to the v2 ``infer`` endpoint) or the full URL of an image endpoint that speaks ``/v1/infer``'s
JSON (the seed's ``https://.../api/v1/predict``: arrays then go to v2 on the same origin).
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urlsplit

import numpy as np

from mcp2026ai.client.http import AsyncV2HttpClient, Call, V2HttpClient, image_call
from mcp2026ai.errors import OverloadedError, UnavailableError
from mcp2026ai.extras import require
from mcp2026ai.inference import InferenceResponse
from mcp2026ai.routing.breaker import CircuitBreaker
from mcp2026ai.routing.config import BreakerSpec
from mcp2026ai.routing.outcome import Outcome, classify

T = TypeVar("T")
MAX_WAIT_S = 30.0
"""The longest a retry waits, whatever Retry-After says."""


@dataclass(frozen=True)
class RemoteEndpoints:
    base_url: str
    """Scheme, host and port: v2 requests and model pulls go here."""
    image_path: str
    """Where an image is posted (``/v1/infer`` unless the URL names its own path)."""

    @classmethod
    def parse(cls, url: str) -> RemoteEndpoints:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise UnavailableError(f"fallback_url {url!r} is not an http(s) URL")
        base = f"{parts.scheme}://{parts.netloc}"
        path = parts.path.rstrip("/")
        return cls(base, path or "/v1/infer")


def retry_wait(attempt: int, error: BaseException | None) -> float:
    """Seconds before the next try: the server's Retry-After when it sent one, else 0.1 s doubling."""
    if isinstance(error, OverloadedError):
        return min(error.retry_after_s, MAX_WAIT_S)
    return min(0.1 * 2.0 ** (attempt - 1), MAX_WAIT_S)


def _retrying_kwargs(attempts: int) -> dict[str, Any]:
    tenacity = require("tenacity", "the edge proxy")
    return {
        "stop": tenacity.stop_after_attempt(attempts),
        "wait": lambda state: retry_wait(state.attempt_number, state.outcome.exception() if state.outcome else None),
        "retry": tenacity.retry_if_exception_type(UnavailableError),  # overload, not ready, unreachable
        "reraise": True,
    }


class _RemoteBase:
    """What both remote paths share: the endpoints, the breaker and its bookkeeping."""

    def __init__(
        self,
        model_id: str,
        url: str,
        attempts: int = 3,
        breaker: BreakerSpec | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.model_id = model_id
        self.endpoints = RemoteEndpoints.parse(url)
        self.attempts = attempts
        self.breaker = CircuitBreaker(model_id, "remote", breaker or BreakerSpec(min_requests=5), clock)

    def _admit(self) -> None:
        if not self.breaker.allow():
            raise UnavailableError(f"{self.endpoints.base_url}: circuit open after repeated failures")

    def _failed(self, error: BaseException) -> None:
        """Only the server's faults and an unreachable server count against it, never overload."""
        self.breaker.record(classify(error) is not Outcome.SERVER_ERROR and not _unreachable(error))


class RemoteModel(_RemoteBase):
    """Blocking remote path for one model."""

    def __init__(
        self,
        model_id: str,
        url: str,
        token: str | None = None,
        attempts: int = 3,
        timeout_s: float = 30.0,
        breaker: BreakerSpec | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(model_id, url, attempts, breaker, clock)
        self.client = V2HttpClient(self.endpoints.base_url, token, timeout_s)
        self._retrying = require("tenacity", "the edge proxy").Retrying(**_retrying_kwargs(attempts))

    def classify(self, image: bytes, k: int) -> dict[str, Any]:
        call = _image_call(self.endpoints, self.model_id, image, k)
        return self._guarded(lambda: dict(self.client.send(call).json()))

    def infer(self, inputs: Mapping[str, np.ndarray]) -> InferenceResponse:
        return self._guarded(lambda: self.client.infer(self.model_id, inputs))

    def _guarded(self, attempt: Callable[[], T]) -> T:
        self._admit()
        try:
            result: T = self._retrying(attempt)
        except Exception as exc:
            self._failed(exc)
            raise
        self.breaker.record(True)
        return result

    def close(self) -> None:
        self.client.close()


class AsyncRemoteModel(_RemoteBase):
    """The asyncio twin of :class:`RemoteModel`."""

    def __init__(
        self,
        model_id: str,
        url: str,
        token: str | None = None,
        attempts: int = 3,
        timeout_s: float = 30.0,
        breaker: BreakerSpec | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(model_id, url, attempts, breaker, clock)
        self.client = AsyncV2HttpClient(self.endpoints.base_url, token, timeout_s)

    async def classify(self, image: bytes, k: int) -> dict[str, Any]:
        call = _image_call(self.endpoints, self.model_id, image, k)

        async def attempt() -> dict[str, Any]:
            return dict((await self.client.send(call)).json())

        return await self._guarded(attempt)

    async def infer(self, inputs: Mapping[str, np.ndarray]) -> InferenceResponse:
        async def attempt() -> InferenceResponse:
            return await self.client.infer(self.model_id, inputs)

        return await self._guarded(attempt)

    async def _guarded(self, attempt: Callable[[], Awaitable[T]]) -> T:
        self._admit()
        retrying = require("tenacity", "the edge proxy").AsyncRetrying(**_retrying_kwargs(self.attempts))
        try:
            result: T = await retrying(attempt)
        except Exception as exc:
            self._failed(exc)
            raise
        self.breaker.record(True)
        return result

    async def aclose(self) -> None:
        await self.client.aclose()


def _image_call(endpoints: RemoteEndpoints, model_id: str, image: bytes, k: int) -> Call:
    call = image_call(model_id, image, k)
    return Call(call.method, endpoints.image_path, call.content, call.headers)


def _unreachable(error: BaseException) -> bool:
    """A server that cannot be reached (or keeps refusing as unavailable) counts against the breaker."""
    return isinstance(error, UnavailableError) and not isinstance(error, OverloadedError)
