"""Metrics and the trace span of one inference request, shared by the HTTP and gRPC edges.

    with observe_inference("http", name, headers, is_served, EdgeCodes("200", "500", "499")) as seen:
        response = await plane.inference.infer(decoded)
        seen.answered(response)                  # its version and SLA class label the metrics and span
        ...
        seen.fail("404", exc)                    # the transport's code for a domain error

On leaving the block it counts the request (``mcp_requests_total``), observes its latency
(``mcp_request_duration_seconds``), keeps ``mcp_requests_in_flight`` and ends the span.
An exception nobody mapped counts with the edge's ``unexpected`` code.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import TracebackType

from mcp2026ai.inference import InferenceResponse
from mcp2026ai.observability import metrics, tracing


@dataclass(frozen=True)
class EdgeCodes:
    """The transport's status codes for success, an unmapped exception and a cancelled request."""

    ok: str
    unexpected: str
    cancelled: str


@dataclass
class InferObservation:
    code: str
    version: str = ""
    sla_class: str = metrics.UNKNOWN_CLASS
    error: BaseException | None = None
    resolved: bool = False
    """Whether :attr:`version` is the served version that answered (not what the client asked for)."""

    def answered(self, response: InferenceResponse) -> None:
        self.version = response.version
        self.resolved = True
        if response.sla_class is not None:
            self.sla_class = response.sla_class.value

    def fail(self, code: str, error: BaseException) -> None:
        self.code, self.error = code, error
        self.sla_class = getattr(error, "sla_class", None) or self.sla_class


class observe_inference:  # used like a function: ``with observe_inference(...) as seen``
    """Observe one inference request; ``is_served`` keeps unknown names out of the metric labels, and
    ``serves_version`` unknown versions (a version the client asked for that no answer resolved is
    labelled ``_unknown`` unless it is served; without ``serves_version`` always).

    A class rather than a generator-based context manager: it runs twice per request on the hot path.
    """

    __slots__ = (
        "_codes",
        "_in_flight",
        "_is_served",
        "_model",
        "_protocol",
        "_serves_version",
        "_span",
        "_span_scope",
        "_started",
        "seen",
    )

    def __init__(
        self,
        protocol: str,
        model: str,
        headers: Mapping[str, str],
        is_served: Callable[[str], bool],
        codes: EdgeCodes,
        serves_version: Callable[[str, str], bool] | None = None,
    ) -> None:
        self._protocol, self._model, self._is_served, self._codes = protocol, model, is_served, codes
        self._serves_version = serves_version
        self.seen = InferObservation(codes.ok)
        self._in_flight = metrics.child(metrics.IN_FLIGHT, protocol)
        self._span_scope = tracing.request_span(model, protocol, headers) if tracing.recording() else None
        self._span: tracing.SpanLike = tracing.NOOP_SPAN
        self._started = 0.0

    def __enter__(self) -> InferObservation:
        self._started = time.perf_counter()
        self._in_flight.inc()
        if self._span_scope is not None:
            self._span = self._span_scope.__enter__()
        return self.seen

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        seen = self.seen
        try:
            if error is not None and seen.error is None:
                cancelled = isinstance(error, asyncio.CancelledError)
                seen.code = self._codes.cancelled if cancelled else self._codes.unexpected
            tracing.finish_span(self._span, seen.version, seen.sla_class, seen.code, seen.error or error)
            if self._span_scope is not None:
                self._span_scope.__exit__(kind, error, trace)
        finally:
            self._in_flight.dec()
            served = self._is_served(self._model)
            label = self._model if served else metrics.UNKNOWN_MODEL
            version = seen.version if seen.resolved or not seen.version else self._version_label(served, seen.version)
            seconds = time.perf_counter() - self._started
            metrics.observe_request(label, version, self._protocol, seen.sla_class, seen.code, seconds)

    def _version_label(self, served: bool, asked: str) -> str:
        known = served and self._serves_version is not None and self._serves_version(self._model, asked)
        return asked if known else metrics.UNKNOWN_VERSION
