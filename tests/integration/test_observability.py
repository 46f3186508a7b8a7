"""/metrics and OpenTelemetry spans of the real server, driven over HTTP and gRPC."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from queue import Queue
from typing import Any

import httpx
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode
from prometheus_client.parser import text_string_to_metric_families
from tritonclient.utils import InferenceServerException

from mcp2026ai.bundled import bundled_model_path
from mcp2026ai.observability import metrics, tracing
from mcp2026ai.registry import ModelRegistry
from mcp2026ai.testing import BackgroundServer
from tests.support.models import mlp_model

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_ID}-01"
MLP_BODY = {"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 16], "data": [0.5] * 16}]}


@pytest.fixture(scope="module")
def exporter() -> Iterator[InMemorySpanExporter]:
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracing.use_tracer_provider(provider)
    yield memory
    tracing.use_tracer_provider(None)
    provider.shutdown()


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, exporter: InMemorySpanExporter) -> Iterator[BackgroundServer]:
    registry = ModelRegistry(tmp_path_factory.mktemp("obs-home"))
    registry.register("ocr-cls", bundled_model_path("ocr-cls"))
    registry.register("mlp", mlp_model(tmp_path_factory.mktemp("obs-models") / "mlp.onnx"))
    with BackgroundServer(registry, ["ocr-cls", "mlp"]) as running:
        yield running


@pytest.fixture()
def http(server: BackgroundServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=f"http://{server.http_url}", timeout=30) as client:
        yield client


def _server_span(exporter: InMemorySpanExporter, trace_id: str) -> ReadableSpan:
    spans = [span for span in exporter.get_finished_spans() if f"{span.context.trace_id:032x}" == trace_id]
    assert len(spans) == 1, [span.name for span in exporter.get_finished_spans()]
    return spans[0]


def _assert_request_span(span: ReadableSpan, protocol: str, code: str) -> dict[str, Any]:
    attributes = dict(span.attributes or {})
    assert span.name == "infer mlp"
    assert span.parent is not None and f"{span.parent.span_id:016x}" == PARENT_ID and span.parent.is_remote
    assert attributes["model"] == "mlp" and attributes["model.version"] == "1.0.0"
    assert attributes["slo.class"] == "best-effort"
    assert attributes["protocol"] == protocol and attributes["status.code"] == code
    return attributes


def test_http_traceparent_is_the_parent_of_the_request_span(http: httpx.Client, exporter: InMemorySpanExporter) -> None:
    exporter.clear()
    reply = http.post("/v2/models/mlp/infer", json=MLP_BODY, headers={"traceparent": TRACEPARENT})
    assert reply.status_code == 200
    attributes = _assert_request_span(_server_span(exporter, TRACE_ID), "http", "200")
    assert isinstance(attributes["batch.id"], int) and attributes["batch.size"] >= 1


def test_grpc_metadata_traceparent_is_the_parent_of_the_request_span(
    server: BackgroundServer, exporter: InMemorySpanExporter
) -> None:
    exporter.clear()
    trace_id = "0af7651916cd43dd8448eb211c80319c"
    client = grpcclient.InferenceServerClient(server.grpc_url)
    try:
        tensor = grpcclient.InferInput("x", [1, 16], "FP32")
        tensor.set_data_from_numpy(np.full((1, 16), 0.5, dtype=np.float32))
        headers = {"traceparent": f"00-{trace_id}-{PARENT_ID}-01", "x-sla-class": "best-effort"}
        client.infer("mlp", [tensor], headers=headers)
    finally:
        client.close()
    attributes = _assert_request_span(_server_span(exporter, trace_id), "grpc", "OK")
    assert isinstance(attributes["batch.id"], int)


def _requests_total(http: httpx.Client, **labels: str) -> float:
    families = text_string_to_metric_families(http.get("/metrics").text)
    samples = next(family.samples for family in families if family.name == "mcp_requests")
    return sum(s.value for s in samples if s.name == "mcp_requests_total" and labels.items() <= s.labels.items())


def test_stream_infer_requests_are_counted_and_traced(
    server: BackgroundServer, http: httpx.Client, exporter: InMemorySpanExporter
) -> None:
    exporter.clear()
    trace_id = "5bf92f3577b34da6a3ce929d0e0e4737"
    ok = {"model": "mlp", "protocol": "grpc", "code": "OK"}
    bad = {"model": "mlp", "protocol": "grpc", "code": "INVALID_ARGUMENT"}
    before = _requests_total(http, **ok), _requests_total(http, **bad)
    replies: Queue[tuple[Any, Any]] = Queue()
    client = grpcclient.InferenceServerClient(server.grpc_url)
    try:
        client.start_stream(
            lambda result, error: replies.put((result, error)), headers={"traceparent": f"00-{trace_id}-{PARENT_ID}-01"}
        )
        good = grpcclient.InferInput("x", [1, 16], "FP32")
        good.set_data_from_numpy(np.full((1, 16), 0.5, dtype=np.float32))
        wrong = grpcclient.InferInput("nope", [1, 16], "FP32")
        wrong.set_data_from_numpy(np.zeros((1, 16), dtype=np.float32))
        client.async_stream_infer("mlp", [good])
        client.async_stream_infer("mlp", [wrong])
        (result, error), (_, failure) = replies.get(timeout=30), replies.get(timeout=30)
    finally:
        client.stop_stream()
        client.close()
    assert error is None and result.as_numpy("probs").shape == (1, 10)
    assert failure is not None and "nope" in str(failure)
    assert (_requests_total(http, **ok), _requests_total(http, **bad)) == (before[0] + 1, before[1] + 1)
    spans = [span for span in exporter.get_finished_spans() if f"{span.context.trace_id:032x}" == trace_id]
    assert sorted(dict(span.attributes or {})["status.code"] for span in spans) == ["INVALID_ARGUMENT", "OK"]
    assert all(span.parent is not None and f"{span.parent.span_id:016x}" == PARENT_ID for span in spans)


def test_batched_requests_share_a_batch_id(server: BackgroundServer, exporter: InMemorySpanExporter) -> None:
    """Concurrent requests merged by the batcher carry the same batch.id on their spans."""
    exporter.clear()

    async def burst() -> None:
        async with httpx.AsyncClient(base_url=f"http://{server.http_url}", timeout=30) as client:
            replies = await asyncio.gather(*(client.post("/v2/models/mlp/infer", json=MLP_BODY) for _ in range(16)))
            assert all(reply.status_code == 200 for reply in replies)

    asyncio.run(burst())
    spans = [span for span in exporter.get_finished_spans() if span.name == "infer mlp"]
    assert len(spans) == 16
    ids = [dict(span.attributes or {})["batch.id"] for span in spans]
    sizes = {dict(span.attributes or {})["batch.id"]: dict(span.attributes or {})["batch.size"] for span in spans}
    assert all(ids.count(batch) == size for batch, size in sizes.items())  # batch.size = spans sharing the id
    assert max(sizes.values()) > 1  # 16 concurrent requests within one 2 ms window: some were merged


def test_a_failed_request_span_has_error_status(http: httpx.Client, exporter: InMemorySpanExporter) -> None:
    exporter.clear()
    body = {"inputs": [{"name": "nope", "datatype": "FP32", "shape": [1, 16], "data": [0.0] * 16}]}
    assert http.post("/v2/models/mlp/infer", json=body, headers={"traceparent": TRACEPARENT}).status_code == 400
    span = _server_span(exporter, TRACE_ID)
    assert span.status.status_code is StatusCode.ERROR
    assert dict(span.attributes or {})["status.code"] == "400"
    assert any(event.name == "exception" for event in span.events)


REQUIRED = {
    "mcp_requests",
    "mcp_request_duration_seconds",
    "mcp_requests_in_flight",
    "mcp_compute_duration_seconds",
    "mcp_scheduler_queue_wait_seconds",
    "mcp_scheduler_queue_depth",
    "mcp_scheduler_batch_rows",
    "mcp_scheduler_batch_fill_ratio",
    "mcp_scheduler_rejections",
    "mcp_scheduler_queue_delay_seconds",
    "mcp_model_load_seconds",
    "mcp_models_loaded",
    "mcp_route_decisions",
    "mcp_circuit_state",
    "process_cpu_seconds",
    "process_resident_memory_bytes",
    "process_virtual_memory_bytes",
}
DECLARED = {
    "mcp_policy_decisions",
    "mcp_canary_rollbacks",
    "mcp_canary_analysis",
    "mcp_circuit_transitions",
    "mcp_circuit_fallbacks",
    "mcp_shadow_requests",
    "mcp_shadow_max_abs_diff",
    "mcp_shadow_rel_l2",
    "mcp_shadow_status_mismatches",
    "mcp_shadow_top1_rows",
    "mcp_shadow_latency_seconds",
}


def test_metrics_after_traffic_on_both_protocols(server: BackgroundServer, http: httpx.Client) -> None:
    assert http.post("/v2/models/mlp/infer", json=MLP_BODY).status_code == 200
    expired = {**MLP_BODY, "parameters": {"timeout": 1}}  # 1 µs: past its deadline before it is queued
    assert http.post("/v2/models/mlp/infer", json=expired).status_code in (429, 503, 504)
    assert http.post("/v2/models/nope/infer", json=MLP_BODY).status_code == 404
    client = grpcclient.InferenceServerClient(server.grpc_url)
    try:
        tensor = grpcclient.InferInput("x", [1, 16], "FP32")
        tensor.set_data_from_numpy(np.zeros((1, 16), dtype=np.float32))
        client.infer("mlp", [tensor], headers={"x-sla-class": "latency-critical"})
        with pytest.raises(InferenceServerException):
            client.infer("mlp", [tensor], headers={"x-sla-class": "gold"})  # no such class
    finally:
        client.close()

    scrape = http.get("/metrics")
    assert scrape.status_code == 200 and scrape.headers["content-type"].startswith("text/plain")
    families = {family.name: family for family in text_string_to_metric_families(scrape.text)}
    with_samples = {
        name for name, family in families.items() if name.startswith(("mcp_", "process_")) and family.samples
    }
    assert len(with_samples) >= 18, sorted(with_samples)
    assert sorted(REQUIRED - with_samples) == []
    assert sorted(DECLARED - set(families)) == []

    def value(name: str, **labels: str) -> float:
        return sum(
            sample.value for sample in families[name].samples
            if sample.name == name + "_total" and labels.items() <= sample.labels.items()
        )  # fmt: skip

    assert value("mcp_requests", model="mlp", protocol="http", sla_class="best-effort", code="200") >= 1
    assert value("mcp_requests", model="mlp", protocol="grpc", sla_class="latency-critical", code="OK") >= 1
    assert value("mcp_requests", model="_unknown", protocol="http", code="404") >= 1
    assert value("mcp_requests", model="mlp", protocol="grpc", sla_class="_unknown", code="INVALID_ARGUMENT") >= 1
    assert value("mcp_scheduler_rejections", model="mlp", reason="deadline") >= 1
    loaded = [s.value for s in families["mcp_models_loaded"].samples]
    assert loaded == [2.0]
    load_seconds = {s.labels["model"]: s.value for s in families["mcp_model_load_seconds"].samples}
    assert load_seconds["mlp"] > 0 and load_seconds["ocr-cls"] > 0


def test_an_openmetrics_2_scrape_carries_native_latency_histograms(http: httpx.Client) -> None:
    assert http.post("/v2/models/mlp/infer", json=MLP_BODY).status_code == 200
    reply = http.get("/metrics", headers={"Accept": "application/openmetrics-text; version=2.0.0"})
    assert reply.headers["content-type"].startswith("application/openmetrics-text; version=2.0.0")
    lines = reply.text.splitlines()
    for name in ("mcp_request_duration_seconds", "mcp_compute_duration_seconds", "mcp_scheduler_queue_wait_seconds"):
        assert any(line.startswith(name + "{") and "{count:" in line for line in lines), name
    series = 'model="mlp",protocol="http",sla_class="best-effort",version="1.0.0"}'
    native = next(line for line in lines if line.startswith("mcp_request_duration_seconds{" + series))
    classic = next(line for line in lines if line.startswith("mcp_request_duration_seconds_count{" + series))
    assert native.split("{count:")[1].split(",")[0] == classic.split()[-1].removesuffix(".0")
    assert "{count:" not in http.get("/metrics").text  # Prometheus text (the default) stays classic


class _HeldCollector:
    """A collector that holds its scrape until released: a slow /proc read or a huge registry."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()

    def describe(self) -> list[Any]:
        return []  # no names: registering does not run collect()

    def collect(self) -> Iterator[Any]:
        self.entered.set()
        self.release.wait(timeout=30)
        return iter(())


def test_a_slow_scrape_does_not_hold_up_inference(server: BackgroundServer, http: httpx.Client) -> None:
    held = _HeldCollector()
    metrics.REGISTRY.register(held)  # type: ignore[arg-type]
    try:
        with ThreadPoolExecutor(max_workers=1) as pool:
            scrape = pool.submit(http.get, "/metrics")
            assert held.entered.wait(timeout=30)
            # the scrape is still inside its collector; the event loop answers an inference meanwhile
            answer = http.post("/v2/models/mlp/infer", json=MLP_BODY, timeout=10)
            assert answer.status_code == 200 and not scrape.done()
            held.release.set()
            assert scrape.result(timeout=30).status_code == 200
    finally:
        held.release.set()
        metrics.REGISTRY.unregister(held)  # type: ignore[arg-type]
