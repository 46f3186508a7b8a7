"""Metrics and the trace span of one inference request, shared by the HTTP and gRPC edges.

    with observe_inference("http", name, headers, is_served, EdgeCodes("200", "500", "499")) as seen:
        seen.request = decoded                   # its SLA class labels the metrics and the span
        response = await plane.infer(decoded)
        seen.version = response.version
        ...
        seen.fail("404", exc)                    # the transport's code for a domain error

On leaving the block it counts the request (``mcp_requests_total``), observes its latency
(``mcp_request_duration_seconds``), keeps ``mcp_requests_in_flight`` and ends the span.
An exception nobody mapped counts with the edge's ``unexpected`` code.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from mcp2026ai.inference import InferenceRequest
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
    request: InferenceRequest | None = None
    error: BaseException | None = None

    def fail(self, code: str, error: BaseException) -> None:
        self.code, self.error = code, error

    @property
    def sla_class(self) -> str:
        cls = self.request.sla_class if self.request is not None else None
        return cls.value if cls is not None else metrics.UNKNOWN_CLASS


@contextlib.contextmanager
def observe_inference(
    protocol: str,
    model: str,
    headers: Mapping[str, str],
    is_served: Callable[[str], bool],
    codes: EdgeCodes,
) -> Iterator[InferObservation]:
    """Observe one inference request; ``is_served`` keeps unknown names out of the metric labels."""
    seen = InferObservation(codes.ok)
    started = time.perf_counter()
    metrics.IN_FLIGHT.labels(protocol).inc()
    try:
        with tracing.request_span(model, protocol, headers) as span:
            unexpected: BaseException | None = None
            try:
                yield seen
            except BaseException as exc:
                unexpected = exc
                if seen.error is None:
                    cancelled = isinstance(exc, asyncio.CancelledError)
                    seen.code = codes.cancelled if cancelled else codes.unexpected
                raise
            finally:
                tracing.finish_span(span, seen.version, seen.sla_class, seen.code, seen.error or unexpected)
    finally:
        metrics.IN_FLIGHT.labels(protocol).dec()
        label = model if is_served(model) else metrics.UNKNOWN_MODEL
        seconds = time.perf_counter() - started
        metrics.observe_request(label, seen.version, protocol, seen.sla_class, seen.code, seconds)
