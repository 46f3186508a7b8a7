"""benchmarks/compare/overhead.py's parts on a real server: pinned_serve.py serves the plan it is given, and
the Triton statistics, per-thread CPU and batch figures it reads come from that running server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest
from benchmarks.compare.overhead import PinnedServer, batch_sizes, busy_seconds, model_stats, stat_delta, thread_cpu
from benchmarks.compare.servers import BenchModel, Endpoints, chosen_plan

from mcp2026ai.runtime.plan import Plan
from support.models import mlp_model

pytestmark = pytest.mark.timeout(120)

SRC = Path(__file__).resolve().parents[3] / "src"
PLAN = Plan(intra_op_threads=1, instances=2, lone_threads=2)


@pytest.fixture()
def pinned(tmp_path: Path) -> Iterator[tuple[PinnedServer, Endpoints, BenchModel]]:
    model = BenchModel("mlp", mlp_model(tmp_path / "mlp.onnx"), "x", (16,), p99_budget_ms=1000)
    server = PinnedServer("pinned", tmp_path / "pinned", json.dumps(PLAN.model_dump(mode="json")), SRC)
    endpoints = server.start(model)
    try:
        yield server, endpoints, model
    finally:
        server.stop()


def test_the_pinned_plan_is_served_and_its_statistics_read(pinned: tuple[PinnedServer, Endpoints, BenchModel]) -> None:
    server, endpoints, model = pinned
    assert chosen_plan(endpoints, model.name) == PLAN.describe()
    assert server.process is not None
    before, cpu_before = model_stats(endpoints.http, model.name), thread_cpu(server.process.pid)
    body = {"inputs": [{"name": "x", "shape": [3, 16], "datatype": "FP32", "data": np.ones(48).tolist()}]}
    for _ in range(2):
        answer = httpx.post(f"http://{endpoints.http}/v2/models/{model.name}/infer", json=body, timeout=30)
        assert answer.status_code == 200, answer.text
    after = model_stats(endpoints.http, model.name)
    delta = stat_delta(before, after)
    assert (delta["requests"], delta["executions"]) == (2, 2)
    assert delta["success"] >= delta["queue"] + delta["compute_infer"] > 0
    assert batch_sizes(before, after) == "3x2"
    assert busy_seconds(before, after) > 0
    threads = thread_cpu(server.process.pid)
    pid = server.process.pid
    assert threads[pid][1] >= cpu_before[pid][1], "the main thread (thread id = process id), read twice"
