"""What one refusal costs the server's event loop: CPU time per request when (nearly) every request
is refused because its SLA class queue is full.

The server runs in this process (the project's test harness) with a best-effort queue of one
request and a 10 s batching window: one best-effort request waits there, so every other one is
refused 429 (as under overload, with no model compute in the way). A `mcp bench` client in another
process sends ``--requests`` best-effort requests closed-loop at ``--concurrency``; the figure is
the CPU time of the event-loop thread (from /proc) per request, with the refusals per second.
The machine's other load moves the rate much more than the CPU per request.

    .venv/bin/python benchmarks/overload/refusal_cost.py [--requests 20000] [--concurrency 16]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import numpy as np

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

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))  # tests/support/models.py: the project's generated test models

from support.models import mlp_model  # noqa: E402

MCP = [sys.executable, "-m", "mcp2026ai.cli"]
CONFIG = BatchingConfig(
    max_batch_size=4,
    max_queue_delay_ms=10_000,
    classes={
        SLAClass.LATENCY_CRITICAL: ClassPolicy(weight=5, deadline_ms=50),
        SLAClass.THROUGHPUT_GUARANTEED: ClassPolicy(weight=3, deadline_ms=2000),
        SLAClass.BEST_EFFORT: ClassPolicy(weight=1, capacity=1),
    },
    adaptive=AdaptiveConfig(enabled=False),
)


def one_slot(record: ModelVersion, backend: Backend, stats: ModelStats) -> Executor:
    return BatchingExecutor(backend, CONFIG, model=record.name, version=record.version, stats=stats)


def thread_cpu_s(native_id: int) -> float:
    fields = Path(f"/proc/self/task/{native_id}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def hold_the_queue(server: BackgroundServer, stop: threading.Event) -> threading.Thread:
    """Keep one best-effort request waiting in the queue (each waits out its 10 s window)."""
    body = {"inputs": [{"name": "x", "shape": [1, 16], "datatype": "FP32", "data": np.zeros(16).tolist()}]}

    def hold() -> None:
        with httpx.Client(timeout=60) as client:
            while not stop.is_set():
                url = f"http://{server.http_url}/v2/models/mlp/infer"
                client.post(url, json=body, headers={"X-SLA-Class": "best-effort"})

    thread = threading.Thread(target=hold, daemon=True)
    thread.start()
    executor = server.plane.models.get("mlp").executor
    while executor.backlog < 1:
        time.sleep(0.01)
    return thread


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=20000)
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mcp-refusal-") as folder:
        registry = ModelRegistry(Path(folder) / "home")
        registry.register("mlp", mlp_model(Path(folder) / "mlp.onnx"))
        models = ServedModels(registry, executor_factory=one_slot, drain_timeout_s=1)
        stop = threading.Event()
        with BackgroundServer(registry, ["mlp"], plane=DataPlane(models, default_models=["mlp"])) as server:
            hold_the_queue(server, stop)
            loop_thread = server._thread.native_id
            assert loop_thread is not None
            bench = [*MCP, "bench", "-u", server.http_url, "-m", "mlp", "--shape", "x:16", "-q"]
            bench += ["-c", str(args.concurrency), "-n", str(args.requests), "--output-format", "json"]
            bench += ["-H", "x-sla-class:best-effort", "--duration", "120"]
            cpu = thread_cpu_s(loop_thread)
            done = subprocess.run(bench, capture_output=True, text=True, check=True, timeout=300)
            cpu = thread_cpu_s(loop_thread) - cpu
            stop.set()
            logging.getLogger("uvicorn.error").setLevel(logging.CRITICAL)  # the held request is cut at exit
    result = json.loads(done.stdout)
    sent, errors = int(result["sent"]), result["errors"]
    print(f"sent {sent} best-effort requests, c={args.concurrency}: answered {errors}, 200: {result['ok']}")
    print(f"{(result['ok'] + sum(errors.values())) / max(result['duration_s'], 1e-9):.0f} answers/s")
    print(f"event loop CPU: {cpu:.2f} s = {cpu / max(1, sent) * 1e6:.0f} us per request")


if __name__ == "__main__":
    main()
