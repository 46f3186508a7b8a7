"""What the web console costs inference, and whether it stays usable under overload, with 1,000
registered models.

1. A fresh registry holds 1,000 tiny models and the overload benchmark's ``heavy`` model (a known
   cost per batch); ``mcp serve`` serves ``heavy`` (``--no-policy``).
2. Capacity: closed-loop ``mcp bench -c 16`` for ``--seconds``, alternately without and with
   ``--viewers`` console viewers, ``--rounds`` times each; a viewer does what an open Live page and
   Models page do (``/ui/api/live`` every second, as an open Live tab polls; a Models fragment, a page
   of 50 of the 1,000 models, every 10 s, as a person browsing). The ratio with / without viewers is
   what the console takes from inference. Before that, with no other load: the server's CPU per
   console request of each kind.
3. Overload: open-loop ``mcp bench`` at ``--load`` x capacity for ``--seconds`` while the viewers
   poll: the console's answers (share answered, p50/p99) and the inference goodput.

    .venv/bin/python benchmarks/console_load.py [--viewers 5] [--seconds 8] [--rounds 2] [--load 3]

Clients and viewers share the machine with the server (2 cores here): their CPU is load too.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from support.models import add_sub_model, chained_matmul_model  # noqa: E402

sys.path.insert(0, str(ROOT / "benchmarks"))
from local_server import MCP  # noqa: E402

from mcp2026ai.registry import ModelRegistry  # noqa: E402

MODELS = 1000
SHAPE = ["--shape", "x:1024"]


@dataclass
class Viewers:
    """Threads that poll the console like open Live and Models pages, recording each answer."""

    base: str
    count: int
    latencies_ms: list[float] = field(default_factory=list)
    failures: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _threads: list[threading.Thread] = field(default_factory=list)

    def __enter__(self) -> Viewers:
        for index in range(self.count):
            thread = threading.Thread(target=self._view, args=(index,), daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(10)

    def _view(self, index: int) -> None:
        with httpx.Client(base_url=self.base, timeout=10) as client:
            tick = 0
            while not self._stop.is_set():
                self._get(client, "/ui/api/live")
                if tick % 10 == 0:
                    self._get(client, f"/ui/fragments/models?page={1 + (index + tick) % 20}")
                tick += 1
                self._stop.wait(1.0)

    def _get(self, client: httpx.Client, path: str) -> None:
        started = time.perf_counter()
        try:
            ok = client.get(path).status_code == 200
        except httpx.HTTPError:
            ok = False
        if ok:
            self.latencies_ms.append((time.perf_counter() - started) * 1000)
        else:
            self.failures += 1


def bench(port: int, *args: str) -> dict[str, float]:
    command = [*MCP, "bench", "-u", f"127.0.0.1:{port}", "-m", "heavy", "--output-format", "json", "-q", *args, *SHAPE]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=True)
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def capacity(port: int, seconds: float) -> float:
    return float(bench(port, "-c", "16", "--duration", str(seconds), "-n", "10000000")["throughput_rps"])


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (/proc stat fields 14 and 15)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def console_cost(server: subprocess.Popen[str], base: str, seconds: float) -> None:
    """The server's CPU per console request of each kind, with no other load."""
    paths = {"/ui/api/live": "Live poll", "/ui/fragments/models?page=7": "Models fragment (1,000 models)"}
    with httpx.Client(base_url=base, timeout=10) as client:
        for path, name in paths.items():
            before, latencies, deadline = cpu_seconds(server.pid), [], time.monotonic() + seconds / 2
            while time.monotonic() < deadline:
                started = time.perf_counter()
                client.get(path).raise_for_status()
                latencies.append((time.perf_counter() - started) * 1000)
            spent = cpu_seconds(server.pid) - before
            print(f"{name}: {len(latencies)} requests back to back, server CPU {spent / len(latencies) * 1000:.1f} ms "
                  f"each, answered in p50 {percentile(latencies, 0.5):.1f} ms")  # fmt: skip


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def start_server(home: Path, port: int) -> subprocess.Popen[str]:
    registry = ModelRegistry(home)
    tiny = add_sub_model(home / "tiny.onnx")
    for index in range(MODELS):
        registry.register(f"m{index:04d}", tiny)
    contract = home / "contract.yaml"
    contract.write_text("batching: {max_batch_size: 4, max_queue_delay_ms: 2}\n")
    heavy = chained_matmul_model(home / "heavy.onnx", depth=200)
    subprocess.run(
        [*MCP, "model", "register", "--name", "heavy", "--path", str(heavy), "--contract", str(contract)],
        env={**os.environ, "MCP_HOME": str(home)}, check=True, capture_output=True,
    )  # fmt: skip
    server = subprocess.Popen(
        [*MCP, "serve", "--name", "heavy", "--port", str(port), "--grpc-port", "-1", "--no-policy"],
        env={**os.environ, "MCP_HOME": str(home)},
        stdout=subprocess.PIPE,
        text=True,
    )
    assert server.stdout is not None
    for line in server.stdout:
        if line.startswith("listening"):
            return server
    raise RuntimeError("mcp serve did not start")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--viewers", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--load", type=float, default=3.0, help="Offered load in the overload phase, x capacity.")
    parser.add_argument("--port", type=int, default=18700)
    args = parser.parse_args()
    home = Path(tempfile.mkdtemp(prefix="mcp-console-load-", dir="/dev/shm" if Path("/dev/shm").is_dir() else None))
    server = start_server(home, args.port)
    base = f"http://127.0.0.1:{args.port}"
    try:
        console_cost(server, base, args.seconds)
        alone, watched = [], []
        for _ in range(args.rounds):
            alone.append(capacity(args.port, args.seconds))
            with Viewers(base, args.viewers):
                watched.append(capacity(args.port, args.seconds))
        plain, viewed = statistics.median(alone), statistics.median(watched)
        rounds = f"{[round(x) for x in alone]} / {[round(x) for x in watched]}"
        print(f"capacity, closed loop c=16: {plain:.0f} req/s alone, {viewed:.0f} req/s with {args.viewers} viewers "
              f"({viewed / plain:.3f} x); rounds {rounds}")  # fmt: skip
        with Viewers(base, args.viewers) as viewers:
            rate = plain * args.load
            overload = bench(args.port, "--rate", f"{rate:.0f}", "--duration", str(args.seconds), "-n", "10000000",
                             "--max-in-flight", "1000", "--timeout", "30")  # fmt: skip
        answered = len(viewers.latencies_ms)
        print(f"overload at {args.load:g} x capacity ({rate:.0f} req/s offered): goodput "
              f"{float(overload['throughput_rps']):.0f} req/s; the console answered {answered} of "
              f"{answered + viewers.failures} requests, p50 {percentile(viewers.latencies_ms, 0.5):.1f} ms, "
              f"p99 {percentile(viewers.latencies_ms, 0.99):.1f} ms")  # fmt: skip
    finally:
        server.terminate()
        server.wait(60)
        shutil.rmtree(home, ignore_errors=True)


if __name__ == "__main__":
    main()
