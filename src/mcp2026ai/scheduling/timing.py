"""How long one request waited and ran inside an executor, for a caller that asks (a pipeline's step).

The caller opens :func:`measuring` around ``executor.submit``; the executor, in the request's own
task, :func:`report`\\ s the request's queue wait and the compute of the run it was part of. Nothing
is recorded when no caller asked (a context variable, so concurrent requests never mix).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar, Token
from dataclasses import dataclass


@dataclass
class RequestTimes:
    queue_ns: int = 0
    compute_ns: int = 0


_CURRENT: ContextVar[RequestTimes | None] = ContextVar("mcp_request_times", default=None)


@contextlib.contextmanager
def measuring() -> Iterator[RequestTimes]:
    times = RequestTimes()
    token = collect(times)
    try:
        yield times
    finally:
        stop(token)


def collect(times: RequestTimes) -> Token[RequestTimes | None]:
    """Report into ``times`` until :func:`stop` (the hot path's form of :func:`measuring`)."""
    return _CURRENT.set(times)


def stop(token: Token[RequestTimes | None]) -> None:
    _CURRENT.reset(token)


def report(queue_ns: int, compute_ns: int) -> None:
    times = _CURRENT.get()
    if times is not None:
        times.queue_ns += queue_ns
        times.compute_ns += compute_ns
