"""Request spans with OpenTelemetry installed, and the no-op fallback without it."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from mcp2026ai.errors import InvalidInputError
from mcp2026ai.observability import tracing
from tests.support import REPO_ROOT

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"


@pytest.fixture()
def exporter() -> Iterator[InMemorySpanExporter]:
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracing.use_tracer_provider(provider)
    yield memory
    tracing.use_tracer_provider(None)


def test_span_continues_the_callers_trace(exporter: InMemorySpanExporter) -> None:
    headers = {"traceparent": f"00-{TRACE_ID}-00f067aa0ba902b7-01"}
    with tracing.request_span("m", "http", headers) as span:
        assert trace.get_current_span() is span  # the batcher annotates the current span
        tracing.annotate_batch(7, 3)
        tracing.finish_span(span, "1.0.0", "best-effort", "200", None)
    (finished,) = exporter.get_finished_spans()
    assert finished.kind is SpanKind.SERVER and finished.name == "infer m"
    assert f"{finished.context.trace_id:032x}" == TRACE_ID
    assert dict(finished.attributes or {}) == {
        "model": "m",
        "protocol": "http",
        "model.version": "1.0.0",
        "slo.class": "best-effort",
        "status.code": "200",
        "batch.id": 7,
        "batch.size": 3,
    }
    assert finished.status.status_code is StatusCode.UNSET


def test_without_traceparent_or_with_a_broken_one_the_span_is_a_root(exporter: InMemorySpanExporter) -> None:
    for headers in ({}, {"traceparent": "garbage"}):
        with tracing.request_span("m", "grpc", headers):
            pass
    assert [span.parent for span in exporter.get_finished_spans()] == [None, None]


def test_failures_set_error_status_and_record_the_exception(exporter: InMemorySpanExporter) -> None:
    error = InvalidInputError("bad input")
    with tracing.request_span("m", "http", {}) as span:
        tracing.finish_span(span, "", "_unknown", "400", error)
    (finished,) = exporter.get_finished_spans()
    assert finished.status.status_code is StatusCode.ERROR and "bad input" in (finished.status.description or "")
    assert [event.name for event in finished.events] == ["exception"]


def test_annotate_batch_outside_a_span_is_harmless(exporter: InMemorySpanExporter) -> None:
    tracing.annotate_batch(1, 1)
    assert exporter.get_finished_spans() == ()


NOOP_SCRIPT = """
import sys
sys.modules["opentelemetry"] = None  # as if the tracing extra were not installed
from mcp2026ai.observability import tracing
assert not tracing.enabled()
with tracing.request_span("m", "http", {"traceparent": "00-TRACE_ID-00f067aa0ba902b7-01"}) as span:
    tracing.annotate_batch(1, 2)
    tracing.finish_span(span, "1", "best-effort", "200", ValueError("x"))
    assert span is tracing.NOOP_SPAN and not span.is_recording()
try:
    with tracing.request_span("m", "http", {}):
        raise KeyError("propagates")
except KeyError:
    print("noop ok")
""".replace("TRACE_ID", TRACE_ID)


def test_without_opentelemetry_everything_is_a_no_op() -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT / "src")}
    done = subprocess.run([sys.executable, "-c", NOOP_SCRIPT], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "noop ok"
