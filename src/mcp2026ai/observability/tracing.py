"""OpenTelemetry tracing of inference requests, a no-op when OpenTelemetry is not installed.

Install the ``tracing`` extra (``opentelemetry-api`` + ``opentelemetry-sdk``) and configure a tracer
provider (the global one, or :func:`use_tracer_provider` for this library only). Each inference
request then gets one server span, ``infer {model}``, whose parent is the W3C ``traceparent`` the
client sent (HTTP header or gRPC metadata). Attributes:

- ``model``, ``model.version``: the model and the version that served it (after routing);
- ``slo.class``: the SLA class the request was scheduled under;
- ``batch.id``, ``batch.size``: the batch it ran in (ids are unique in the process) and how many
  requests that batch merged;
- ``protocol`` (``http`` or ``grpc``) and ``status.code`` (the HTTP status or gRPC code name).

A pipeline's request has one child span per step, ``step {name}`` (:func:`step_span`), with its
queue and compute time.

Without OpenTelemetry every function here is a cheap no-op, so callers never check.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator, Mapping
from typing import Any, Protocol

try:
    from opentelemetry import propagate, trace
    from opentelemetry.trace import SpanKind, Status, StatusCode
except ImportError:  # the optional extra is not installed
    trace = None  # type: ignore[assignment]

TRACER_NAME = "mcp2026ai"


class SpanLike(Protocol):
    def set_attribute(self, key: str, value: Any) -> None: ...

    def is_recording(self) -> bool: ...


class _NoopSpan:
    def set_attribute(self, key: str, value: Any) -> None:
        return None

    def end(self) -> None:
        return None

    def is_recording(self) -> bool:
        return False


NOOP_SPAN = _NoopSpan()
_tracer: Any = None


def enabled() -> bool:
    """Is OpenTelemetry installed (spans are recorded only once a provider is configured)?"""
    return trace is not None


def use_tracer_provider(provider: Any | None) -> None:
    """Trace with ``provider`` instead of the global tracer provider (None: back to the global one)."""
    global _tracer
    _tracer = provider.get_tracer(TRACER_NAME) if provider is not None else None


@functools.cache
def _global_tracer() -> Any:
    return trace.get_tracer(TRACER_NAME)  # a proxy: follows a global provider set later


def _get_tracer() -> Any:
    return _tracer if _tracer is not None else _global_tracer()


_UNCONFIGURED = (trace.ProxyTracerProvider, trace.NoOpTracerProvider) if trace is not None else ()


def recording() -> bool:
    """Whether request spans are recorded (else the edges skip span work entirely)."""
    return _configured()


def _configured() -> bool:
    """A tracer provider that records: ours, or a global one other than OpenTelemetry's default proxy."""
    if trace is None:
        return False
    if _tracer is not None:
        return True
    return not isinstance(trace.get_tracer_provider(), _UNCONFIGURED)


@contextlib.contextmanager
def request_span(model: str, protocol: str, headers: Mapping[str, str]) -> Iterator[SpanLike]:
    """The current span for one inference request, child of the ``traceparent`` in ``headers``.

    ``headers`` are lower-cased HTTP headers or gRPC metadata. Exceptions are recorded on the span
    and re-raised; the caller sets the outcome attributes (see :func:`finish_span`).
    """
    if not _configured():
        yield NOOP_SPAN  # no provider: skip header extraction and span objects on the hot path
        return
    parent = propagate.extract(headers)
    with _get_tracer().start_as_current_span(
        f"infer {model}",
        context=parent,
        kind=SpanKind.SERVER,
        attributes={"model": model, "protocol": protocol},
        set_status_on_exception=False,
    ) as span:
        yield span


def start_span(name: str, headers: Mapping[str, str], attributes: Mapping[str, Any]) -> Any:
    """A server span that outlives the current context (a generation ends on the engine's thread):
    the caller ends it with ``span.end()``; a no-op span when tracing is off."""
    if not _configured():
        return NOOP_SPAN
    parent = propagate.extract(headers)
    return _get_tracer().start_span(name, context=parent, kind=SpanKind.SERVER, attributes=dict(attributes))


def finish_span(span: SpanLike, version: str, sla_class: str, code: str, error: BaseException | None) -> None:
    """Set the outcome attributes of a request span; a failed request's span gets status ERROR."""
    if not span.is_recording():
        return
    span.set_attribute("model.version", version)
    span.set_attribute("slo.class", sla_class)
    span.set_attribute("status.code", code)
    if error is not None and trace is not None:
        real = span  # an OpenTelemetry span: it also records exceptions and a status
        real.record_exception(error)  # type: ignore[attr-defined]
        real.set_status(Status(StatusCode.ERROR, f"{type(error).__name__}: {error}"))  # type: ignore[attr-defined]


def annotate_batch(batch_id: int, size: int) -> None:
    """Tell the current request span which batch ran it (called in the request's own task)."""
    if trace is None:
        return
    span = trace.get_current_span()
    if span.is_recording():
        span.set_attribute("batch.id", batch_id)
        span.set_attribute("batch.size", size)


@contextlib.contextmanager
def step_span(pipeline: str, step: str, runs: str) -> Iterator[SpanLike]:
    """A child span of the current request span for one pipeline step (``step {name}``); the caller
    sets ``step.queue_ns`` and ``step.compute_ns``. A failed step's span gets status ERROR."""
    if not _configured():
        yield NOOP_SPAN
        return
    attributes = {"pipeline": pipeline, "step": step, "step.runs": runs}
    with _get_tracer().start_as_current_span(f"step {step}", attributes=attributes) as span:
        yield span
