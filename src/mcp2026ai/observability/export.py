"""Where `mcp serve` sends its request spans: nowhere, the console, or an OTLP/HTTP collector.

The spans themselves come from :mod:`.tracing`; this module only builds and installs the
OpenTelemetry SDK pipeline for one server process (each ``--workers`` process installs its own):
a tracer provider with a ``service.name`` resource, a parent-based ratio sampler (a caller's sampled
``traceparent`` is always honoured) and a batching span processor, flushed when the server stops.
Like Triton's ``--trace-config mode=opentelemetry``, but configured with three flags.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.observability import tracing

DEFAULT_OTLP_ENDPOINT = "http://127.0.0.1:4318/v1/traces"
EXTRA_HINT = "pip install 'mcp2026ai[tracing]'"


class TraceExport(BaseModel):
    """Requested trace export of one server (``mcp serve --trace ...``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    exporter: Literal["none", "console", "otlp"] = Field("none", description="Where finished spans go.")
    endpoint: str = Field(DEFAULT_OTLP_ENDPOINT, description="OTLP/HTTP traces URL (with exporter 'otlp').")
    sample_ratio: float = Field(
        1.0, ge=0.0, le=1.0, description="Share of new traces recorded; a sampled caller's traceparent is kept."
    )
    service_name: str = Field("mcp2026ai", min_length=1, description="The service.name resource attribute.")


def start_trace_export(settings: TraceExport) -> Callable[[], None]:
    """Install the pipeline ``settings`` ask for; returns the function that flushes and removes it."""
    if settings.exporter == "none":
        return _nothing
    provider = _provider(settings, _exporter(settings))
    tracing.use_tracer_provider(provider)

    def stop() -> None:
        tracing.use_tracer_provider(None)
        provider.shutdown()  # flushes what is still batched

    return stop


def check_trace_export(settings: TraceExport) -> None:
    """Fail early, with the install hint, when the packages ``settings`` need are missing."""
    if settings.exporter != "none":
        _exporter(settings)


def _nothing() -> None:
    return None


def _provider(settings: TraceExport, exporter: Any) -> Any:
    """A tracer provider that samples as asked and batches finished spans into ``exporter``."""
    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        from mcp2026ai.observability import sampling
    except ImportError:
        raise InvalidArgumentError(f"--trace {settings.exporter} needs the OpenTelemetry SDK: {EXTRA_HINT}") from None
    sampler = sampling.parent_based(settings.sample_ratio)
    provider = TracerProvider(resource=Resource.create({"service.name": settings.service_name}), sampler=sampler)
    provider.add_span_processor(BatchSpanProcessor(exporter))
    return provider


def _exporter(settings: TraceExport) -> Any:
    try:
        if settings.exporter == "console":
            from opentelemetry.sdk.trace.export import ConsoleSpanExporter

            return ConsoleSpanExporter(service_name=settings.service_name)
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError:
        raise InvalidArgumentError(f"--trace {settings.exporter} needs the tracing extra: {EXTRA_HINT}") from None
    return OTLPSpanExporter(endpoint=settings.endpoint)
