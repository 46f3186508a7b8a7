"""Does `mcp bench` measure what Triton's perf_analyzer measures? One server, same load, both tools.

    python benchmarks/bench_vs_perf_analyzer.py [--requests 2000] [--concurrency 8] [--repeat 2]

Starts `mcp serve` in its own process (ocr-cls, the real bundled classifier, and a small MLP) on
loopback ports, then for each model x protocol runs perf_analyzer (`--request-count` mode: one
bounded measurement, no stability loop) and `mcp bench` (its own process too), alternating which
goes first on each repeat, after a warm-up. Prints throughput, p50 and p99 side by side with the
ratio mcp/perf_analyzer and writes benchmarks/results/bench_vs_perf_analyzer-<time>.json.

Both clients share the machine with the server: on a 2-core box every client CPU cycle is taken
from the server, so client efficiency shows up as server throughput.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
SHAPES = {"ocr-cls": ["x:3,48,192"], "mlp": []}


FIGURES = ("throughput", "mean_ms", "p50_ms", "p90_ms", "p99_ms", "client_cpu_us")


@dataclass
class Figures:
    tool: str
    throughput: float
    mean_ms: float
    p50_ms: float
    p90_ms: float
    p99_ms: float
    client_cpu_us: float
    """CPU time (user + system) the client process spent per request, start-up included."""


def run_child(command: list[str], env: dict[str, str] | None = None) -> tuple[subprocess.CompletedProcess[str], float]:
    """Run a client process; also return the CPU seconds it used (rusage of waited-for children)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return done, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def build_mlp(path: Path, features: int = 64, hidden: int = 256, classes: int = 10) -> Path:
    rng = np.random.default_rng(0)
    weights = {
        "w1": rng.standard_normal((features, hidden)).astype(np.float32),
        "b1": np.zeros(hidden, np.float32),
        "w2": rng.standard_normal((hidden, classes)).astype(np.float32),
        "b2": np.zeros(classes, np.float32),
    }
    nodes = [
        helper.make_node("Gemm", ["x", "w1", "b1"], ["h"]),
        helper.make_node("Relu", ["h"], ["r"]),
        helper.make_node("Gemm", ["r", "w2", "b2"], ["logits"]),
        helper.make_node("Softmax", ["logits"], ["probs"], axis=1),
    ]
    graph = helper.make_graph(
        nodes, "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", features])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["batch", classes])],
        initializer=[numpy_helper.from_array(value, name) for name, value in weights.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


class Server:
    """`mcp serve` in a child process with its own MCP_HOME; ports read from its first line."""

    def __init__(self, home: Path, env: dict[str, str]) -> None:
        command = [sys.executable, "-m", "mcp2026ai.cli", "serve", "--port", "0", "--grpc-port", "0"]
        self.process = subprocess.Popen(
            command, env={**env, "MCP_HOME": str(home)}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        match = re.search(r"listening http=(\d+) grpc=(\d+)", line)
        if match is None:
            self.stop()
            raise SystemExit(f"server did not start: {line}{self.process.stdout.read()}")
        self.http, self.grpc = f"127.0.0.1:{match.group(1)}", f"127.0.0.1:{match.group(2)}"

    def url(self, protocol: str) -> str:
        return self.http if protocol == "http" else self.grpc

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()


def run_perf_analyzer(tool: str, server: Server, model: str, protocol: str, requests: int, concurrency: int,
                      workdir: Path) -> Figures:
    report = workdir / f"pa-{model}-{protocol}.csv"
    command = [tool, "-m", model, "-i", protocol, "-u", server.url(protocol), "--request-count", str(requests),
               "--concurrency-range", str(concurrency), "-f", str(report)]
    command += [arg for shape in SHAPES[model] for arg in ("--shape", shape)]
    done, cpu_s = run_child(command)
    if done.returncode != 0:
        raise SystemExit(f"perf_analyzer failed:\n{done.stdout}\n{done.stderr}")
    (row,) = list(csv.DictReader(report.open()))
    ms = [float(row[key]) / 1000 for key in ("Avg latency", "p50 latency", "p90 latency", "p99 latency")]
    return Figures("perf_analyzer", float(row["Inferences/Second"]), *ms, cpu_s / requests * 1e6)


def run_mcp_bench(server: Server, model: str, protocol: str, requests: int, concurrency: int,
                  env: dict[str, str]) -> Figures:
    command = [sys.executable, "-m", "mcp2026ai.cli", "bench", "-m", model, "-i", protocol, "-u", server.url(protocol),
               "-n", str(requests), "-c", str(concurrency), "--output-format", "json", "-q"]
    command += [arg for shape in SHAPES[model] for arg in ("--shape", shape)]
    done, cpu_s = run_child(command, env)
    if done.returncode != 0:
        raise SystemExit(f"mcp bench failed:\n{done.stdout}\n{done.stderr}")
    report = json.loads(done.stdout)
    if report["errors"]:
        raise SystemExit(f"mcp bench saw errors: {report['errors']}")
    latency = report["latency_ms"]
    figures = (latency["mean"], latency["p50"], latency["p90"], latency["p99"])
    return Figures("mcp bench", report["throughput_infer_s"], *figures, cpu_s / requests * 1e6)


def median(figures: list[Figures]) -> Figures:
    return Figures(figures[0].tool, *(statistics.median(getattr(f, name) for f in figures) for name in FIGURES))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=3, help="measurements per tool and case (median kept)")
    parser.add_argument("--models", default="ocr-cls,mlp")
    parser.add_argument("--protocols", default="http,grpc")
    parser.add_argument("--perf-analyzer", default=shutil.which("perf_analyzer", path=str(Path(sys.executable).parent))
                        or shutil.which("perf_analyzer"))
    args = parser.parse_args()
    if not args.perf_analyzer:
        raise SystemExit("perf_analyzer not found: run scripts/install-perf-analyzer.sh")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")]))}
    sys.path.insert(0, str(ROOT / "src"))
    from mcp2026ai.bundled import OCR_CLS_PREPROCESSING, bundled_model_path
    from mcp2026ai.registry import ModelRegistry, Preprocessing

    with tempfile.TemporaryDirectory(prefix="mcp-bench-vs-pa-") as tmp:
        workdir = Path(tmp)
        registry = ModelRegistry(workdir / "home")
        registry.register("ocr-cls", bundled_model_path("ocr-cls"),
                          preprocessing=Preprocessing.model_validate(OCR_CLS_PREPROCESSING))
        registry.register("mlp", build_mlp(workdir / "mlp.onnx"))
        server = Server(workdir / "home", env)
        cases = []
        try:
            for model in args.models.split(","):
                for protocol in args.protocols.split(","):
                    run_mcp_bench(server, model, protocol, min(500, args.requests), args.concurrency, env)  # warm-up
                    runs: dict[str, list[Figures]] = {"perf_analyzer": [], "mcp bench": []}
                    for repeat in range(args.repeat):
                        order = ["perf_analyzer", "mcp bench"] if repeat % 2 == 0 else ["mcp bench", "perf_analyzer"]
                        for tool in order:
                            figures = (
                                run_perf_analyzer(args.perf_analyzer, server, model, protocol, args.requests,
                                                  args.concurrency, workdir)
                                if tool == "perf_analyzer"
                                else run_mcp_bench(server, model, protocol, args.requests, args.concurrency, env)
                            )
                            runs[tool].append(figures)
                    pa, mcp = median(runs["perf_analyzer"]), median(runs["mcp bench"])
                    case = {
                        "model": model, "protocol": protocol, "concurrency": args.concurrency,
                        "requests": args.requests, "perf_analyzer": asdict(pa), "mcp_bench": asdict(mcp),
                        "runs": {tool: [asdict(f) for f in figures] for tool, figures in runs.items()},
                        "ratio": {name: getattr(mcp, name) / getattr(pa, name) for name in FIGURES},
                        "load_average": os.getloadavg(),
                    }
                    cases.append(case)
                    print_case(case)
        finally:
            server.stop()
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"bench_vs_perf_analyzer-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps({"cases": cases, "cpus": os.cpu_count(), "load": os.getloadavg()}, indent=2))
    print(f"wrote {out.relative_to(ROOT)}")


def print_case(case: dict) -> None:  # type: ignore[type-arg]
    print(f"\n{case['model']} over {case['protocol']}, concurrency {case['concurrency']}, {case['requests']} requests"
          f" (load average {case['load_average'][0]:.1f})")
    print(f"  {'':14}{'infer/s':>9}{'mean ms':>9}{'p50 ms':>9}{'p90 ms':>9}{'p99 ms':>9}{'cpu us/req':>12}")
    rows = (("perf_analyzer", case["perf_analyzer"]), ("mcp bench", case["mcp_bench"]), ("mcp/pa", case["ratio"]))
    for name, figures in rows:
        digits = 3 if name == "mcp/pa" else 1
        cells = "".join(f"{figures[key]:9.{digits}f}" for key in FIGURES[:-1])
        print(f"  {name:14}{cells}{figures['client_cpu_us']:12.{digits}f}", flush=True)


if __name__ == "__main__":
    main()
