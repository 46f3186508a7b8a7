"""What the Ray front's extra hop costs (deploy/ray_front.py): `mcp serve --replicas N` on a local Ray
(one node), the same tiny MLP, with the front (the default: Ray's proxy -> the front on the head node ->
a data-plane replica through a Serve handle) and without it (``--no-ray-failover``: Ray's proxy -> the
replica). `mcp bench` sends ``--requests`` v2 requests closed-loop at each ``--concurrency`` (after a
warm-up of 200); the figures are requests/s and p50/p99 latency. Bounded: each run stops after
``--requests`` or 60 s.

    .venv/bin/python benchmarks/ray/front_hop.py [--requests 2000] [--concurrency 1,8] [--replicas 1]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))  # tests/support/models.py: the project's generated test models

from benchmarks.local_server import MCP, serve_model  # noqa: E402
from support.models import mlp_model  # noqa: E402

WARM_UP = 200


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def bench(url: str, concurrency: int, requests: int) -> dict[str, float]:
    command = [*MCP, "bench", "-u", url, "-m", "mlp", "--shape", "x:16", "-q", "--json", "--output-format", "json"]
    command += ["-c", str(concurrency), "-n", str(requests), "--duration", "60"]
    done = subprocess.run(command, capture_output=True, text=True, check=True, timeout=180)
    report = json.loads(done.stdout)
    assert not report["errors"], report["errors"]
    latency = report["latency_ms"]
    return {"rps": report["throughput_rps"], "p50_ms": latency["p50"], "p99_ms": latency["p99"]}


def measure(front: bool, args: argparse.Namespace, model: Path) -> dict[int, dict[str, float]]:
    port = free_port()
    serve_args = ["--port", str(port), "--no-policy", "--replicas", str(args.replicas)]
    serve_args += [] if front else ["--no-ray-failover"]
    with tempfile.TemporaryDirectory(prefix="mcp-front-hop-") as home:
        server = serve_model(Path(home), "mlp", model, serve_args)
        try:
            url = f"127.0.0.1:{port}"
            bench(url, 2, WARM_UP)
            return {c: bench(url, c, args.requests) for c in args.concurrency}
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=90)
            time.sleep(2)  # Ray's processes leave


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=lambda text: [int(c) for c in text.split(",")], default=[1, 8])
    parser.add_argument("--replicas", type=int, default=1)
    args = parser.parse_args()
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    with tempfile.TemporaryDirectory() as scratch:
        model = mlp_model(Path(scratch) / "mlp.onnx")
        results = {"without front": measure(False, args, model), "with front": measure(True, args, model)}
    print(f"{args.replicas} replica(s), {args.requests} requests per row, os.cpu_count()={os.cpu_count()}")
    print(f"{'':15} {'c':>3} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8}")
    for name, rows in results.items():
        for concurrency, row in rows.items():
            print(f"{name:15} {concurrency:>3} {row['rps']:>8.1f} {row['p50_ms']:>8.2f} {row['p99_ms']:>8.2f}")
    out = ROOT / "benchmarks" / "results" / f"front_hop-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"args": vars(args), "results": results}, indent=2))
    print(f"written: {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
