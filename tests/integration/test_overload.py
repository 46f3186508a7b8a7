"""Overload at twice capacity, mixed SLA classes, through the real server over HTTP and gRPC.

The model has a known, nearly row-independent cost per batch (one weight streamed ``DEPTH`` times),
the executor runs one batch of at most 4 rows at a time, and the class queues are small:

    capacity = 4 in flight + 12 latency-critical + 4 best-effort = 20 requests

A burst of 40 concurrent requests (10 latency-critical over HTTP, 30 best-effort: 10 over HTTP
and 20 over gRPC) must shed best-effort only (429 + Retry-After / RESOURCE_EXHAUSTED +
grpc-retry-pushback-ms), serve every
latency-critical request within its budget, and answer every request: no accepted request lost.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import httpx
import numpy as np
import pytest
import tritonclient.grpc.aio as grpcclient
from tritonclient.grpc import service_pb2 as pb
from tritonclient.grpc import service_pb2_grpc as pb_grpc
from tritonclient.utils import InferenceServerException

from mcp2026ai.contract import SLAClass
from mcp2026ai.dataplane import DataPlane
from mcp2026ai.observability import metrics
from mcp2026ai.registry import ModelRegistry, ModelVersion
from mcp2026ai.runtime.base import Backend
from mcp2026ai.runtime.stats import ModelStats
from mcp2026ai.scheduling.base import Executor
from mcp2026ai.scheduling.batcher import BatchingExecutor
from mcp2026ai.scheduling.config import AdaptiveConfig, BatchingConfig, ClassPolicy
from mcp2026ai.server.grpc.errors import RETRY_PUSHBACK_KEY
from mcp2026ai.serving.models import ServedModels
from mcp2026ai.testing import BackgroundServer
from support.models import chained_matmul_model

pytestmark = pytest.mark.timeout(120)

MODEL = "heavy"
SIZE = 1024
DEPTH = 400
BUDGET_MS = 8000.0
"""Latency-critical budget: its class deadline, and the bound its client-side p99 must meet."""
LATENCY_CRITICAL = 10
BEST_EFFORT_HTTP = 10
BEST_EFFORT_GRPC = 20
CONFIG = BatchingConfig(
    max_batch_size=4,
    max_queue_delay_ms=2.0,
    classes={
        SLAClass.LATENCY_CRITICAL: ClassPolicy(weight=5, capacity=12, deadline_ms=BUDGET_MS),
        SLAClass.THROUGHPUT_GUARANTEED: ClassPolicy(weight=3, capacity=4, deadline_ms=BUDGET_MS),
        SLAClass.BEST_EFFORT: ClassPolicy(weight=1, capacity=4),
    },
    adaptive=AdaptiveConfig(enabled=False),
    retry_after_s=2.0,
)


def overload_executor(record: ModelVersion, backend: Backend, stats: ModelStats) -> Executor:
    return BatchingExecutor(backend, CONFIG, model=record.name, version=record.version, stats=stats)


@dataclass
class Outcome:
    sla_class: SLAClass
    protocol: str
    status: str
    """HTTP status code as text, or the gRPC status code name."""
    seconds: float
    detail: str = ""


@pytest.fixture()
def server(tmp_path: Path) -> Iterator[BackgroundServer]:
    registry = ModelRegistry(tmp_path / "home")
    registry.register(MODEL, chained_matmul_model(tmp_path / "heavy.onnx", SIZE, DEPTH))
    repository = ServedModels(registry, executor_factory=overload_executor, drain_timeout_s=30)
    with BackgroundServer(registry, [MODEL], plane=DataPlane(repository, default_models=[MODEL])) as running:
        yield running


def _rejections(version: str, cls: SLAClass, reason: str) -> float:
    return metrics.SCHEDULER_REJECTIONS.labels(MODEL, version, cls.value, reason)._value.get()


def _body(parameters: dict[str, object] | None = None) -> dict[str, object]:
    row = np.full(SIZE, 0.01, np.float32)
    body: dict[str, object] = {"inputs": [{"name": "x", "shape": [1, SIZE], "datatype": "FP32", "data": row.tolist()}]}
    if parameters:
        body["parameters"] = parameters
    return body


async def _http_call(client: httpx.AsyncClient, url: str, cls: SLAClass) -> Outcome:
    started = time.perf_counter()
    response = await client.post(url, json=_body(), headers={"X-SLA-Class": cls.value})
    detail = response.headers.get("retry-after", "") if response.status_code == 429 else ""
    if response.status_code == 200:
        assert response.json()["outputs"][0]["shape"] == [1, SIZE]
    else:
        detail += " " + response.json()["error"]
    return Outcome(cls, "http", str(response.status_code), time.perf_counter() - started, detail.strip())


async def _grpc_call(stub: pb_grpc.GRPCInferenceServiceStub, cls: SLAClass) -> Outcome:
    """A raw grpcio call (tritonclient drops trailing metadata): a rejection's detail starts with its
    retry pushback, as the HTTP one starts with Retry-After."""
    request = pb.ModelInferRequest(model_name=MODEL)
    request.parameters["sla_class"].string_param = cls.value
    request.inputs.add(name="x", datatype="FP32", shape=[1, SIZE])
    request.raw_input_contents.append(np.full((1, SIZE), 0.01, np.float32).tobytes())
    started = time.perf_counter()
    try:
        reply = await stub.ModelInfer(request, timeout=60)
    except grpc.aio.AioRpcError as exc:
        pushback = dict(exc.trailing_metadata() or ()).get(RETRY_PUSHBACK_KEY, "")
        return Outcome(cls, "grpc", exc.code().name, time.perf_counter() - started, f"{pushback} {exc.details()}")
    assert list(reply.outputs[0].shape) == [1, SIZE]
    return Outcome(cls, "grpc", "OK", time.perf_counter() - started)


async def _burst(server: BackgroundServer) -> list[Outcome]:
    """Fire every request at once, classes interleaved; wait for every answer."""
    url = f"http://{server.http_url}/v2/models/{MODEL}/infer"
    limits = httpx.Limits(max_connections=64, max_keepalive_connections=64)
    async with (
        httpx.AsyncClient(timeout=60, limits=limits) as http,
        grpc.aio.insecure_channel(server.grpc_url) as channel,
    ):
        stub = pb_grpc.GRPCInferenceServiceStub(channel)
        assert (await stub.ServerLive(pb.ServerLiveRequest())).live  # the channel is up before the burst
        calls = []
        for index in range(max(LATENCY_CRITICAL, BEST_EFFORT_HTTP, BEST_EFFORT_GRPC)):
            if index < BEST_EFFORT_GRPC:
                calls.append(_grpc_call(stub, SLAClass.BEST_EFFORT))
            if index < LATENCY_CRITICAL:
                calls.append(_http_call(http, url, SLAClass.LATENCY_CRITICAL))
            if index < BEST_EFFORT_HTTP:
                calls.append(_http_call(http, url, SLAClass.BEST_EFFORT))
        return list(await asyncio.gather(*calls))


def test_twice_capacity_sheds_best_effort_and_keeps_latency_critical_in_budget(server: BackgroundServer) -> None:
    served = server.plane.models.get(MODEL)
    version = served.record.version
    before = {cls: _rejections(version, cls, "overloaded") for cls in SLAClass}
    successes_before = served.stats.success.count

    outcomes = asyncio.run(asyncio.wait_for(_burst(server), timeout=90))

    by_class = Counter((o.sla_class, o.status) for o in outcomes)
    summary = sorted(by_class.items())
    assert len(outcomes) == LATENCY_CRITICAL + BEST_EFFORT_HTTP + BEST_EFFORT_GRPC
    # every request got an answer, and only these: served, shed (429 / RESOURCE_EXHAUSTED)
    unexpected = [(o.status, o.detail) for o in outcomes if o.status not in ("200", "OK", "429", "RESOURCE_EXHAUSTED")]
    assert not unexpected, (unexpected, summary)
    # latency-critical: never shed, all served, p99 within budget
    critical = [o for o in outcomes if o.sla_class is SLAClass.LATENCY_CRITICAL]
    assert all(o.status == "200" for o in critical), summary
    p99_ms = float(np.percentile([o.seconds * 1000 for o in critical], 99))
    assert p99_ms < BUDGET_MS, f"latency-critical p99 {p99_ms:.0f} ms over its {BUDGET_MS:.0f} ms budget"
    # best-effort takes every rejection, on both transports, with the retry hint
    shed = [o for o in outcomes if o.status in ("429", "RESOURCE_EXHAUSTED")]
    assert shed and all(o.sla_class is SLAClass.BEST_EFFORT for o in shed), summary
    assert {o.protocol for o in shed} == {"http", "grpc"}, summary
    assert all(o.detail.startswith("2 ") and "queue is full" in o.detail for o in shed if o.protocol == "http")
    assert all(o.detail.startswith("2000 ") and "queue is full" in o.detail for o in shed if o.protocol == "grpc")
    # zero accepted requests lost: the server counts exactly the successes the clients saw ...
    ok = [o for o in outcomes if o.status in ("200", "OK")]
    assert served.stats.success.count - successes_before == len(ok)
    # ... and exactly the rejections they saw, all best-effort; nothing is left queued
    after = {cls: _rejections(version, cls, "overloaded") for cls in SLAClass}
    assert after[SLAClass.BEST_EFFORT] - before[SLAClass.BEST_EFFORT] == len(shed)
    assert after[SLAClass.LATENCY_CRITICAL] == before[SLAClass.LATENCY_CRITICAL]
    assert served.executor.backlog == 0


def test_expired_request_gets_503_on_http_and_unavailable_on_grpc(server: BackgroundServer) -> None:
    """A v2 ``timeout`` of 1 microsecond has passed by the time the request is admitted."""
    url = f"http://{server.http_url}/v2/models/{MODEL}/infer"
    response = httpx.post(url, json=_body({"timeout": 1}), headers={"X-SLA-Class": "best-effort"}, timeout=30)
    assert response.status_code == 503
    assert response.json() == {"error": "request timeout expired"}

    async def grpc_expired() -> InferenceServerException:
        client = grpcclient.InferenceServerClient(server.grpc_url)
        tensor = grpcclient.InferInput("x", [1, SIZE], "FP32")
        tensor.set_data_from_numpy(np.full((1, SIZE), 0.01, np.float32))
        try:
            with pytest.raises(InferenceServerException) as caught:
                await client.infer(MODEL, [tensor], timeout=1, parameters={"sla_class": "latency-critical"})
            return caught.value
        finally:
            await client.close()

    error = asyncio.run(grpc_expired())
    assert error.status() == "StatusCode.UNAVAILABLE"
    assert error.message() == "request timeout expired"
