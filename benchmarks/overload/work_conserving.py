"""Work-conserving batching under the ``latency`` objective against batch-1 execution, concurrency 8.

One `mcp serve` serves the same batchable model under two names:

- **queued-as-batch**: contract ``objective: latency``, ``max_batch_size: 8``: the policy's plan adds no
  queue delay, so whatever is queued when the backend frees up runs as one batch (up to 8 rows);
- **batch-1**: the same contract with ``max_batch_size: 1``: requests run one by one.

A closed-loop tritonclient gRPC client keeps ``--concurrency`` requests (one row each) in flight for
``--requests`` requests per round; rounds alternate between the two names (A B A B ...), so both see
the same minutes of a shared machine. Reported per name: median over rounds of throughput, p50 and
p99 (over every request of the round), and the mean rows per backend run (server statistics).

    .venv/bin/python benchmarks/overload/work_conserving.py [--model dense|ocr-cls] [--rounds 3] [--requests 400]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import tritonclient.grpc as grpcclient

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # benchmarks.* imports
sys.path.insert(0, str(ROOT / "tests"))  # tests/support/models.py: the project's generated test models
from benchmarks.local_server import MCP  # noqa: E402
from mcp2026ai.bundled import bundled_model_path  # noqa: E402
from support.models import slow_matmul_model  # noqa: E402

NAMES = {"queued-as-batch": 8, "batch-1": 1}
SHAPES = {"ocr-cls": ("x", (3, 48, 192)), "dense": ("x", (1024,))}


def model_file(name: str, workdir: Path) -> Path:
    """``ocr-cls``: the bundled text-direction classifier (batching gains ~10 % offline on one core);
    ``dense``: 8 dense 1024x1024 layers (tests/support/models.py; one row reads 32 MiB of weights, so a
    batch of 8 costs about twice one row: batching pays)."""
    if name == "dense":
        return slow_matmul_model(workdir / "dense.onnx", size=1024, depth=8)
    return bundled_model_path(name)


def contract(home: Path, max_batch: int) -> Path:
    path = home.parent / f"contract-{max_batch}.yaml"
    batching = f"{{max_batch_size: {max_batch}, max_queue_delay_ms: 2}}"
    path.write_text(f"objective: latency\nlatency: {{p99_ms: 2000}}\nbatching: {batching}\n")
    return path


Tensor = tuple[str, tuple[int, ...]]


def closed_loop(url: str, model: str, tensor: Tensor, concurrency: int, total: int) -> dict[str, float]:
    """``total`` requests with ``concurrency`` in flight; throughput and latency percentiles."""
    name, shape = tensor
    data = np.random.default_rng(0).random((1, *shape), dtype=np.float32)
    latencies: list[float] = []
    lock = threading.Lock()
    left = [total]

    def worker() -> None:
        client = grpcclient.InferenceServerClient(url)
        request = grpcclient.InferInput(name, list(data.shape), "FP32")
        request.set_data_from_numpy(data)
        while True:
            with lock:
                if left[0] == 0:
                    return
                left[0] -= 1
            started = time.perf_counter()
            client.infer(model, [request])
            with lock:
                latencies.append(time.perf_counter() - started)

    threads = [threading.Thread(target=worker) for _ in range(concurrency)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    ms = np.array(latencies) * 1000
    return {
        "rps": total / elapsed,
        "p50_ms": float(np.percentile(ms, 50)),
        "p99_ms": float(np.percentile(ms, 99)),
    }


def rows_per_run(url: str, model: str) -> tuple[int, int]:
    client = grpcclient.InferenceServerClient(url)
    stats = client.get_inference_statistics(model, as_json=True)["model_stats"][0]
    return int(stats.get("inference_count", 0)), int(stats.get("execution_count", 0))


def start_server(home: Path, model: Path) -> tuple[subprocess.Popen[str], str]:
    """Register ``model`` under both names (each with its contract) and serve them; (process, grpc host:port)."""
    env = {**os.environ, "MCP_HOME": str(home)}
    for name, max_batch in NAMES.items():
        register = [*MCP, "model", "register", "--name", name, "--path", str(model)]
        register += ["--contract", str(contract(home, max_batch))]
        subprocess.run(register, env=env, check=True, capture_output=True)
    names = [arg for name in NAMES for arg in ("--name", name)]
    server = subprocess.Popen(
        [*MCP, "serve", *names, "--port", "0", "--grpc-port", "0"], env=env, stdout=subprocess.PIPE, text=True
    )
    assert server.stdout is not None
    for line in server.stdout:
        if line.startswith("plan for"):
            print(line.strip())
        match = re.search(r"grpc=(\d+)", line)
        if line.startswith("listening") and match:
            return server, f"127.0.0.1:{match.group(1)}"
    raise RuntimeError("mcp serve did not start")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="dense", choices=sorted(SHAPES))
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--requests", type=int, default=400, help="Requests per round and name.")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp) / "home"
        home.mkdir()
        server, url = start_server(home, model_file(args.model, Path(tmp)))
        try:
            report(run(args, url))
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=60)


def run(args: argparse.Namespace, url: str) -> dict[str, Any]:
    tensor = SHAPES[args.model]
    rows: dict[str, list[dict[str, float]]] = {name: [] for name in NAMES}
    for name in NAMES:  # warm-up: sessions, connections, the batcher's placement estimate
        closed_loop(url, name, tensor, args.concurrency, 50)
    before = {name: rows_per_run(url, name) for name in NAMES}
    for index in range(args.rounds):
        order = list(NAMES) if index % 2 == 0 else list(reversed(NAMES))
        for name in order:
            rows[name].append(closed_loop(url, name, tensor, args.concurrency, args.requests))
    result: dict[str, Any] = {"model": args.model, "concurrency": args.concurrency, "rounds": args.rounds}
    for name in NAMES:
        inferences, executions = rows_per_run(url, name)
        done, runs = inferences - before[name][0], executions - before[name][1]
        result[name] = {key: statistics.median(row[key] for row in rows[name]) for key in ("rps", "p50_ms", "p99_ms")}
        result[name]["rows_per_run"] = done / runs if runs else 0.0
    return result


def report(result: dict[str, Any]) -> None:
    print(f"model {result['model']}, concurrency {result['concurrency']}, {result['rounds']} rounds (medians)")
    print(f"{'execution':<18}{'req/s':>9}{'p50 ms':>9}{'p99 ms':>9}{'rows/run':>10}")
    for name in NAMES:
        row = result[name]
        print(f"{name:<18}{row['rps']:>9.1f}{row['p50_ms']:>9.2f}{row['p99_ms']:>9.2f}{row['rows_per_run']:>10.2f}")
    batched, single = result["queued-as-batch"], result["batch-1"]
    print(f"throughput x{batched['rps'] / single['rps']:.2f}, p99 x{batched['p99_ms'] / single['p99_ms']:.2f}")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
