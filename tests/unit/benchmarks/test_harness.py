"""The benchmark harness's own logic: perf_analyzer export parsing, the report, the ResNet-50 copy."""

from __future__ import annotations

import http.server
import json
import threading
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest
from benchmarks.compare.models import (
    CLASSIFIER_INPUT,
    RESNET_INPUT,
    RESNET_SHAPE,
    resnet50_dynamic,
    squeezenet_classifier,
)
from benchmarks.compare.perf import PerfError, parse_export, perf_command
from benchmarks.compare.report import ceilings, render
from benchmarks.compare.servers import Endpoints, chosen_plan
from benchmarks.engine.ceiling import SplitRunner, offline_throughput, open_session

from mcp2026ai.runtime.plan import Plan


def _export(pairs_ms: list[tuple[float, float]]) -> bytes:
    """A perf_analyzer profile export. Its outputs hold raw tensor bytes, not valid UTF-8, as here."""
    requests = [
        {"timestamp": int(sent * 1e6), "response_timestamps": [int(done * 1e6)], "response_outputs": [{"y": "RAW"}]}
        for sent, done in pairs_ms
    ]
    text = json.dumps({"experiments": [{"experiment": {"mode": "concurrency", "value": 2}, "requests": requests}]})
    return text.encode().replace(b"RAW", b"\\u0000\x80\xff?")


def test_throughput_is_requests_over_first_send_to_last_response() -> None:
    result = parse_export(_export([(0, 10), (0, 20), (10, 30), (20, 40)]))  # latencies 10, 20, 20, 20 ms
    assert result.requests == 4
    assert result.throughput == pytest.approx(4 / 0.040)
    assert result.p50_ms == pytest.approx(20.0)
    assert result.p90_ms == pytest.approx(20.0)


def test_an_export_without_completed_requests_is_an_error() -> None:
    unanswered = {"experiments": [{"requests": [{"timestamp": 1, "response_timestamps": []}]}]}
    with pytest.raises(PerfError, match="no completed request"):
        parse_export(json.dumps(unanswered).encode())


def test_same_command_for_every_server_json_over_http() -> None:
    http = perf_command("pa", "mlp", "127.0.0.1:1", "http", 8, 320, "x:16")
    grpc = perf_command("pa", "mlp", "127.0.0.1:2", "grpc", 8, 320, "x:16")
    assert http[http.index("--input-tensor-format") + 1] == "json"
    assert "--input-tensor-format" not in grpc
    assert http[http.index("--input-data") + 1] == "zero" == grpc[grpc.index("--input-data") + 1]


def test_report_ratios_and_targets() -> None:
    def served(model: str, server: str, protocol: str, throughput: float, p99: float, cpu: float) -> dict:
        figures = {"throughput": throughput, "p99_ms": p99, "cpu_ms_per_request": cpu}
        where = {"model": model, "server": server, "protocol": protocol, "concurrency": 1, "round": 0}
        return {"kind": "served", **where, **figures}

    rows = [
        {"kind": "ceiling", "model": "resnet50", "batch": 1, "round": 0, "rows_per_s": 10.0},
        served("resnet50", "mcp2026ai", "grpc", 9.5, 200.0, 90.0),
        served("mlp", "mcp2026ai", "http", 300.0, 10.0, 1.0),
        served("mlp", "mcp2026ai-w2", "http", 140.0, 40.0, 1.5),
        served("mlp", "mlserver", "http", 100.0, 30.0, 2.0),
        {"kind": "served", "model": "mlp", "server": "mlserver", "protocol": "grpc", "error": "no ModelConfig"},
        {"kind": "plan", "model": "mlp", "server": "mcp2026ai", "plan": "cpu/fp32 threads=1 batch<=32 delay=2ms"},
    ]
    table = render(rows, [1], 12.0)
    assert "- ResNet-50 served grpc >= 0.9 x ceiling: 9.50 / 10.00 = 0.95 (met)" in table
    assert (
        "http, mcp2026ai: >= 1.5 x mlserver req/s with lower p99: 300 vs 100 = 3.00x, p99 10.0 vs 30.0 ms (met)"
        in table
    )
    assert "| mlp | http | mcp2026ai | mlserver | 3.00 | 10.0 / 30.0 | 1.00 / 2.00 |" in table
    # both of our variants are compared, each on its own merits
    assert "| mlp | http | mcp2026ai-w2 | mlserver | 1.40 | 40.0 / 30.0 | 1.50 / 2.00 |" in table
    assert (
        "mcp2026ai-w2: >= 1.5 x mlserver req/s with lower p99: 140 vs 100 = 1.40x, p99 40.0 vs 30.0 ms (MISSED)"
        in table
    )
    assert "- mlp / mlserver / grpc: no ModelConfig" in table
    assert "- mlp / mcp2026ai: cpu/fp32 threads=1 batch<=32 delay=2ms" in table.split("### Plans our policy chose")[1]


PLAN = "cpu/fp32 threads=2 batch<=1 delay=0ms"


class ModelConfigHandler(http.server.BaseHTTPRequestHandler):
    """Answers GET /v2/models/mlp/config as ``mcp serve`` does (the plan in its parameters); 404 otherwise."""

    def do_GET(self) -> None:
        found = self.path == "/v2/models/mlp/config"
        config = {"name": "mlp", "parameters": {"mcp_plan": {"string_value": PLAN}}}
        body = json.dumps(config if found else {"error": "unknown model"}).encode()
        self.send_response(200 if found else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_the_chosen_plan_is_read_from_the_model_config() -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), ModelConfigHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        endpoints = Endpoints(http=f"127.0.0.1:{server.server_address[1]}", grpc=None)
        assert chosen_plan(endpoints, "mlp") == PLAN
        assert chosen_plan(endpoints, "other") is None
    finally:
        server.shutdown()
        server.server_close()


def test_resnet50_copy_takes_any_batch(tmp_path: Path) -> None:
    path = resnet50_dynamic(tmp_path / "resnet50.onnx", check_batches=())  # checks batch 1 == original
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    assert [i.name for i in session.get_inputs()] == [RESNET_INPUT]  # weights are no longer graph inputs
    assert session.get_inputs()[0].shape[0] == "batch"
    out = session.run(None, {RESNET_INPUT: np.zeros((2, *RESNET_SHAPE), np.float32)})[0]
    assert out.shape == (2, 1000)


def test_the_ceiling_is_the_best_runtimes() -> None:
    def ceiling(runtime: str | None, batch: int, rps: float, cpu: float, round_no: int) -> dict:
        row = {"kind": "ceiling", "model": "resnet50", "batch": batch, "round": round_no, "rows_per_s": rps}
        return row | {"cpu_ms_per_row": cpu} | ({"runtime": runtime} if runtime else {})

    rows = [
        ceiling(None, 1, 10.0, 95.0, 0),  # onnxruntime (rows written before runtimes were recorded)
        ceiling("onnxruntime", 1, 12.0, 90.0, 1),
        ceiling("openvino", 1, 14.0, 70.0, 0),
        ceiling("openvino", 1, 15.0, 66.0, 1),
        ceiling("onnxruntime", 8, 40.0, 25.0, 0),
        ceiling("openvino", 8, 30.0, 30.0, 0),
    ]
    assert ceilings(rows) == {"resnet50": {1: 14.5, 8: 40.0}}
    assert ceilings(rows, "cpu_ms_per_row") == {"resnet50": {1: 68.0, 8: 25.0}}  # the best runtime's own CPU


def test_the_split_ceiling_runs_the_rows_on_every_instance_at_once(tmp_path: Path) -> None:
    path = squeezenet_classifier(tmp_path / "classifier.onnx")  # checks batch 1 == the shipped model
    whole = open_session(path, Plan(intra_op_threads=1))
    calls: list[int] = []

    class Counting:
        def get_inputs(self) -> list[object]:
            return list(whole.get_inputs())

        def run(self, output_names: None, feed: dict[str, np.ndarray]) -> object:
            calls.append(len(next(iter(feed.values()))))
            return whole.run(None, feed)

    split = SplitRunner([Counting(), Counting()])
    feed = {CLASSIFIER_INPUT: np.random.default_rng(1).standard_normal((5, *RESNET_SHAPE)).astype(np.float32)}
    parts = split.run(None, feed)
    assert sorted(calls) == [2, 3]  # five rows: three on one instance, two on the other, at once
    joined = np.concatenate([part[0] for part in parts])  # type: ignore[index,union-attr]
    np.testing.assert_allclose(joined, whole.run(None, feed)[0], rtol=1e-5, atol=1e-6)
    result = offline_throughput(split, RESNET_SHAPE, 4, 2, 0.0)
    assert result.runs >= 2 and result.rows_per_s > 0
