"""Triton's statistics of a dynamically batched execution, as Triton counts them: ``inference_stats``
per request (each request of a batch is charged the whole batch's compute, so a request's time in the
server splits into queue + compute, as perf_analyzer's server-side breakdown reads it) and
``batch_stats`` per execution, by batch size; over HTTP and gRPC.

Three one-row requests meet a batch of three rows and a 10 s window: they run as one batch once the
third is queued, without any timing.
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
import tritonclient.grpc as grpcclient

from mcp2026ai.contract import SLAClass
from mcp2026ai.dataplane import DataPlane
from mcp2026ai.registry import ModelRegistry, ModelVersion
from mcp2026ai.runtime.base import Backend
from mcp2026ai.runtime.stats import ModelStats
from mcp2026ai.scheduling.base import Executor
from mcp2026ai.scheduling.batcher import BatchingExecutor
from mcp2026ai.scheduling.config import AdaptiveConfig, BatchingConfig, ClassPolicy
from mcp2026ai.serving.models import ServedModels
from mcp2026ai.testing import BackgroundServer
from support.models import mlp_model

pytestmark = pytest.mark.timeout(60)

ROWS = 3
CONFIG = BatchingConfig(
    max_batch_size=ROWS,
    max_queue_delay_ms=10_000,
    classes={sla: ClassPolicy(weight=1) for sla in SLAClass},
    adaptive=AdaptiveConfig(enabled=False),
)


def batching(record: ModelVersion, backend: Backend, stats: ModelStats) -> Executor:
    return BatchingExecutor(backend, CONFIG, model=record.name, version=record.version, stats=stats)


@pytest.fixture()
def server(tmp_path: Path) -> Iterator[BackgroundServer]:
    registry = ModelRegistry(tmp_path / "home")
    registry.register("mlp", mlp_model(tmp_path / "mlp.onnx"))
    models = ServedModels(registry, executor_factory=batching, drain_timeout_s=10)
    with BackgroundServer(registry, ["mlp"], plane=DataPlane(models, default_models=["mlp"])) as running:
        yield running


def infer(http: str) -> int:
    body = {"inputs": [{"name": "x", "shape": [1, 16], "datatype": "FP32", "data": np.ones(16).tolist()}]}
    return httpx.post(f"http://{http}/v2/models/mlp/infer", json=body, timeout=30).status_code


def test_a_batch_of_three_requests_is_charged_to_each_request_and_counted_once_per_execution(
    server: BackgroundServer,
) -> None:
    with ThreadPoolExecutor(ROWS) as pool:
        assert list(pool.map(infer, [server.http_url] * ROWS)) == [200] * ROWS
    (over_http,) = httpx.get(f"http://{server.http_url}/v2/models/mlp/stats", timeout=10).json()["model_stats"]
    client = grpcclient.InferenceServerClient(server.grpc_url)
    try:
        (over_grpc,) = client.get_inference_statistics("mlp", as_json=True)["model_stats"]
    finally:
        client.close()
    for stats in (over_http, over_grpc):
        check(stats)


def check(stats: dict[str, Any]) -> None:
    requests = stats["inference_stats"]
    assert (int(stats["inference_count"]), int(stats["execution_count"])) == (ROWS, 1)
    (batch,) = stats["batch_stats"]
    assert int(batch["batch_size"]) == ROWS
    for name in ("compute_input", "compute_infer", "compute_output"):
        assert int(batch[name]["count"]) == 1, (name, batch)
        assert int(requests[name]["count"]) == ROWS, (name, requests)
        assert int(requests[name]["ns"]) == ROWS * int(batch[name].get("ns", 0)), (name, requests, batch)
    assert int(batch["compute_infer"]["ns"]) > 0

    def mean_ns(name: str) -> float:
        return int(requests[name].get("ns", 0)) / int(requests[name]["count"])

    assert int(requests["success"]["count"]) == int(requests["queue"]["count"]) == ROWS
    parts = sum(mean_ns(name) for name in ("queue", "compute_input", "compute_infer", "compute_output"))
    assert mean_ns("success") >= parts, "a request's time in the server holds its queue and its batch's compute"
