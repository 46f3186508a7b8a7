"""Where a served request's time and CPU go, beside the offline ceiling: ResNet-50 by default.

    python benchmarks/compare/overhead.py                       # latency contract, grpc+http, c=1 and c=8
    python benchmarks/compare/overhead.py --objective throughput --requests 48

One server (``mcp serve`` under the benchmark's contract) and, per (protocol, concurrency), one bounded
perf_analyzer run. Per request it reports: the client's latency and rate; the server's own breakdown
from its Triton statistics (queue, compute input / infer / output, and the rest of the time between
decode and encode); the CPU time of each server thread group (the event loop, the batch threads,
native threads: the runtime's workers and gRPC's) read from /proc before and after; and the CPU of
perf_analyzer itself, which shares the cores. Run it under the benchmark lock.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import defaultdict
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repo root: benchmarks.* imports

from benchmarks.compare.models import RESNET_INPUT, RESNET_SHAPE, resnet50_dynamic
from benchmarks.compare.perf import find_perf_analyzer, perf_command, run_perf
from benchmarks.compare.servers import (
    MAX_BATCH,
    QUEUE_DELAY_MS,
    BenchModel,
    OurServer,
    OurServerThroughput,
    chosen_plan,
)

TICK_S = 1.0 / os.sysconf("SC_CLK_TCK")


def thread_cpu(pid: int) -> dict[int, tuple[str, float]]:
    """CPU seconds (user + system) of every thread of ``pid`` by thread id, with its name."""
    threads: dict[int, tuple[str, float]] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            comm = (task / "comm").read_text().strip()
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        threads[int(task.name)] = (comm, (int(fields[11]) + int(fields[12])) * TICK_S)
    return threads


def group_of(tid: int, pid: int, comm: str, python_threads: dict[int, str]) -> str:
    if tid == pid:
        return "event loop (main)"
    if tid in python_threads:
        name = python_threads[tid]
        return "python: " + name.rstrip("0123456789_")
    return f"native: {comm.rstrip('0123456789-_')}"


def python_thread_names(pid: int) -> dict[int, str]:
    """Thread id -> Python thread name, from ``py-spy dump`` (empty when py-spy is unavailable)."""
    spy = Path(sys.executable).parent / "py-spy"
    if not spy.exists():
        return {}
    done = subprocess.run([str(spy), "dump", "--pid", str(pid), "--json"], capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        return {}
    threads = json.loads(done.stdout)
    return {int(t["os_thread_id"]): str(t.get("thread_name") or "?") for t in threads if t.get("os_thread_id")}


def model_stats(http: str, model: str) -> dict[str, Any]:
    with urllib.request.urlopen(f"http://{http}/v2/models/{model}/stats", timeout=10) as response:
        return dict(json.load(response)["model_stats"][0])


def stat_delta(before: dict[str, Any], after: dict[str, Any]) -> dict[str, float]:
    """Mean ms per request of each Triton duration, and requests / executions."""
    old, new = before["inference_stats"], after["inference_stats"]
    out: dict[str, float] = {"requests": new["success"]["count"] - old["success"]["count"]}
    out["executions"] = after["execution_count"] - before["execution_count"]
    for name in ("success", "queue", "compute_input", "compute_infer", "compute_output"):
        count = new[name]["count"] - old[name]["count"]  # Triton's way: each duration over its own count
        out[name] = (new[name]["ns"] - old[name]["ns"]) / max(count, 1) / 1e6
    return out


def batch_sizes(before: dict[str, Any], after: dict[str, Any]) -> str:
    """The executions of each batch size between two snapshots, e.g. ``1x3 4x9``."""
    counts = {int(b["batch_size"]): int(b["compute_infer"]["count"]) for b in after.get("batch_stats", [])}
    for batch in before.get("batch_stats", []):
        counts[int(batch["batch_size"])] -= int(batch["compute_infer"]["count"])
    return " ".join(f"{size}x{count}" for size, count in sorted(counts.items()) if count)


def busy_seconds(before: dict[str, Any], after: dict[str, Any]) -> float:
    """Seconds the backend spent running batches between two snapshots (every execution once)."""
    total = sum(int(b["compute_infer"].get("ns", 0)) for b in after.get("batch_stats", []))
    return (total - sum(int(b["compute_infer"].get("ns", 0)) for b in before.get("batch_stats", []))) / 1e9


def measure(args: argparse.Namespace, server: OurServer, endpoints: Any, model: BenchModel) -> None:
    tool = find_perf_analyzer()
    assert server.process is not None
    pid = server.process.pid
    names = python_thread_names(pid)
    print("python threads:", sorted(set(names.values())), flush=True)
    for protocol in args.protocols.split(","):
        for concurrency in (int(c) for c in args.concurrency.split(",")):
            url = endpoints.grpc if protocol == "grpc" else endpoints.http
            requests = args.requests
            command = perf_command(tool, model.name, url, protocol, concurrency, requests, model.perf_shape, "binary")
            stats0, cpu0, client0 = model_stats(endpoints.http, model.name), thread_cpu(pid), _children_cpu()
            wall0 = time.monotonic()
            spy = _start_py_spy(pid, args.py_spy / f"{protocol}-c{concurrency}.txt") if args.py_spy else None
            result = run_perf(command, timeout_s=300)
            wall = time.monotonic() - wall0
            if spy is not None:
                spy.send_signal(signal.SIGINT)
                spy.wait(30)
            stats1, cpu1, client1 = model_stats(endpoints.http, model.name), thread_cpu(pid), _children_cpu()
            delta = stat_delta(stats0, stats1)
            n = max(delta["requests"], 1)
            groups: dict[str, float] = defaultdict(float)
            for tid, (comm, seconds) in cpu1.items():
                groups[group_of(tid, pid, comm, names)] += seconds - cpu0.get(tid, (comm, 0.0))[1]
            rest = delta["success"] - delta["queue"] - delta["compute_input"] - delta["compute_infer"]
            rest -= delta["compute_output"]
            print(
                f"\n{protocol} c={concurrency}: {result.throughput:.1f} req/s, p50 {result.p50_ms:.1f} ms, "
                f"p99 {result.p99_ms:.1f} ms; {delta['requests']:.0f} requests in {delta['executions']:.0f} runs "
                f"(batch sizes {batch_sizes(stats0, stats1)})",
                flush=True,
            )
            print(
                f"  server ms/request: in-server {delta['success']:.2f} = queue {delta['queue']:.2f} + input "
                f"{delta['compute_input']:.2f} + infer {delta['compute_infer']:.2f} + output "
                f"{delta['compute_output']:.2f} + other {rest:.2f}; client p50 - in-server "
                f"{result.p50_ms - delta['success']:.2f}"
            )
            busy = busy_seconds(stats0, stats1) / (delta["requests"] / result.throughput)
            print(f"  backend busy {busy * 100:.0f} % of the run (the sum of batch runs over instances x time)")
            total = sum(groups.values())
            print(
                f"  server CPU ms/request {total / n * 1000:.2f}; perf_analyzer CPU ms/request "
                f"{(client1 - client0) / n * 1000:.2f}; wall {wall:.1f} s"
            )
            for group, seconds in sorted(groups.items(), key=lambda item: -item[1]):
                if seconds > 0:
                    print(f"    {group:40s} {seconds / n * 1000:7.2f} ms/request")


def _start_py_spy(pid: int, output: Path) -> subprocess.Popen[bytes]:
    """``py-spy record`` of the server's Python threads (collapsed stacks, one thread per stack root)."""
    output.parent.mkdir(parents=True, exist_ok=True)
    spy = Path(sys.executable).parent / "py-spy"
    command = [str(spy), "record", "--pid", str(pid), "--format", "raw", "--threads", "--rate", "1000"]
    command += ["--nonblocking", "--output", str(output)]  # sampling must not pause the server
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(1.0)  # attached before the load starts
    return process


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


class PinnedServer(OurServer):
    """``benchmarks/compare/pinned_serve.py``: the same contract, a given plan, the server code of ``src``."""

    def __init__(self, label: str, workdir: Path, plan: str, src: Path) -> None:
        super().__init__(label, workdir)
        self.plan, self.src = plan, src

    def launch(self, model: BenchModel, http: int, grpc: int) -> tuple[list[str], dict[str, str]]:
        contract = self.workdir / "contract.yaml"
        document = {"objective": self.objective or model.objective, "latency": {"p99_ms": model.p99_budget_ms}}
        document["batching"] = {"max_batch_size": MAX_BATCH, "max_queue_delay_ms": QUEUE_DELAY_MS}
        contract.write_text(yaml.safe_dump(document))
        command = [sys.executable, str(Path(__file__).with_name("pinned_serve.py")), "--model", str(model.path)]
        command += ["--name", model.name, "--contract", str(contract), "--plan", self.plan]
        command += ["--http-port", str(http), "--grpc-port", str(grpc)]
        return command, {"PYTHONPATH": str(self.src.resolve())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objective", choices=("latency", "throughput"), default="latency")
    parser.add_argument("--protocols", default="grpc,http")
    parser.add_argument("--concurrency", default="1,8")
    parser.add_argument("--requests", type=int, default=40)
    parser.add_argument("--py-spy", type=Path, default=None, help="Record each run's Python stacks into this folder.")
    parser.add_argument("--backend", default=None, help="mcp serve --backend (default: the policy picks the runtime).")
    parser.add_argument("--plan", default=None, help="Serve this Plan (JSON) with benchmarks/compare/pinned_serve.py.")
    parser.add_argument("--src", type=Path, default=Path(__file__).resolve().parents[2] / "src", help="With --plan.")
    parser.add_argument("--workdir", type=Path, default=None, help="Keep the model and MCP_HOME here (plans reused).")
    args = parser.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="overhead-"))
    path = workdir / "resnet50.onnx"
    if not path.exists():
        resnet50_dynamic(path, check_batches=())
    model = BenchModel(
        "resnet50", path, RESNET_INPUT, RESNET_SHAPE, outputs=(("gpu_0/softmax_1", (1000,)),), p99_budget_ms=5000
    )
    kind = OurServerThroughput if args.objective == "throughput" else OurServer
    label = f"mcp2026ai-{args.objective}" + (f"-{args.backend}" if args.backend else "")
    if args.plan:
        server: OurServer = PinnedServer("pinned", workdir / "pinned", args.plan, args.src)
    else:
        server = kind(label, workdir / label)
        server.backend = args.backend
    endpoints = server.start(model)
    try:
        print("plan:", chosen_plan(endpoints, model.name), flush=True)
        measure(args, server, endpoints, model)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
