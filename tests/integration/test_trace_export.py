"""`mcp serve --trace otlp` sends its request spans to a real OTLP/HTTP collector on loopback."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
import tritonclient.grpc as grpcclient
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

from mcp2026ai.observability import tracing
from mcp2026ai.observability.export import TraceExport, start_trace_export
from support.models import mlp_model

from .conftest import listening_line, mcp_command

pytestmark = pytest.mark.timeout(120)
PARENT_ID = "00f067aa0ba902b7"


class Collector:
    """An OTLP/HTTP traces endpoint: keeps every span it is sent, with its resource attributes."""

    def __init__(self) -> None:
        self.spans: list[tuple[dict[str, Any], Any]] = []
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                collector.receive(self.path, body)
                reply = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args: Any) -> None:
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1/traces"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def receive(self, path: str, body: bytes) -> None:
        assert path == "/v1/traces", path
        request = ExportTraceServiceRequest.FromString(body)
        for resource_spans in request.resource_spans:
            resource = {a.key: a.value.string_value for a in resource_spans.resource.attributes}
            for scope in resource_spans.scope_spans:
                self.spans += [(resource, span) for span in scope.spans]

    def by_trace(self, trace_id: str) -> list[Any]:
        return [span for _, span in self.spans if span.trace_id.hex() == trace_id]


@pytest.fixture()
def collector() -> Iterator[Collector]:
    running = Collector()
    yield running
    running.server.shutdown()


def _attributes(span: Any) -> dict[str, Any]:
    return {a.key: a.value.string_value or a.value.int_value for a in span.attributes}


def test_served_requests_reach_the_collector_over_both_protocols(tmp_path: Path, collector: Collector) -> None:
    command = [*mcp_command(), "serve", "--model-path", str(mlp_model(tmp_path / "mlp.onnx")), "--no-policy"]
    command += ["--port", "0", "--grpc-port", "0", "--trace", "otlp", "--trace-endpoint", collector.url]
    env = {**os.environ, "MCP_HOME": str(tmp_path / "home")}
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    http_trace, grpc_trace = "4bf92f3577b34da6a3ce929d0e0e4736", "0af7651916cd43dd8448eb211c80319c"
    try:
        match = re.search(r"http=(\d+) grpc=(\d+)", listening_line(process))
        assert match, "server did not start"
        body = {"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 16], "data": [0.5] * 16}]}
        headers = {"traceparent": f"00-{http_trace}-{PARENT_ID}-01"}
        reply = httpx.post(f"http://127.0.0.1:{match.group(1)}/v2/models/mlp/infer", json=body, headers=headers)
        assert reply.status_code == 200
        client = grpcclient.InferenceServerClient(f"127.0.0.1:{match.group(2)}")
        tensor = grpcclient.InferInput("x", [1, 16], "FP32")
        tensor.set_data_from_numpy(np.full((1, 16), 0.5, dtype=np.float32))
        client.infer("mlp", [tensor], headers={"traceparent": f"00-{grpc_trace}-{PARENT_ID}-01"})
        client.close()
    finally:
        process.send_signal(signal.SIGTERM)  # shutdown flushes the batched spans
        _, err = process.communicate(timeout=60)
    assert process.returncode == 0 and "Traceback" not in err, err
    for trace_id, protocol in ((http_trace, "http"), (grpc_trace, "grpc")):
        (span,) = collector.by_trace(trace_id)
        assert span.name == "infer mlp" and span.parent_span_id.hex() == PARENT_ID
        attributes = _attributes(span)
        assert attributes["protocol"] == protocol and attributes["model"] == "mlp"
        assert attributes["model.version"] == "1.0.0" and attributes["slo.class"] == "best-effort"
    assert {resource["service.name"] for resource, _ in collector.spans} == {"mcp2026ai"}


def test_sample_ratio_zero_still_keeps_a_sampled_callers_trace(collector: Collector) -> None:
    stop = start_trace_export(TraceExport(exporter="otlp", endpoint=collector.url, sample_ratio=0.0))
    try:
        assert tracing.recording()
        sampled = "5bf92f3577b34da6a3ce929d0e0e4737"
        with tracing.request_span("mlp", "http", {"traceparent": f"00-{sampled}-{PARENT_ID}-01"}):
            pass
        with tracing.request_span("mlp", "http", {}):  # a new trace: sampled out at ratio 0
            pass
    finally:
        stop()
    assert not tracing.recording(), "stopping removes the pipeline"
    assert [span.trace_id.hex() for _, span in collector.spans] == [sampled]


def test_an_unknown_exporter_is_refused_by_name(tmp_path: Path) -> None:
    command = [*mcp_command(), "serve", "--model-path", str(mlp_model(tmp_path / "mlp.onnx")), "--trace", "zipkin"]
    done = subprocess.run(command, env={**os.environ, "MCP_HOME": str(tmp_path / "home")}, capture_output=True,
                          text=True, timeout=60, check=False)  # fmt: skip
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "zipkin" in done.stderr and "otlp" in done.stderr
