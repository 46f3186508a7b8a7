"""Does `mcp bench` measure what Triton's perf_analyzer measures? One server, same load, both tools.

    python benchmarks/compare/bench_vs_perf_analyzer.py [--mode together|time|count] [--concurrency 8] [--repeat 6]

Starts `mcp serve` in its own process (ocr-cls, the real bundled classifier, and a small MLP) on
loopback ports. For each model x protocol, after a warm-up, it runs perf_analyzer and `mcp bench`
(each in its own process) back to back ``--repeat`` times (pairs; which goes first alternates) and
prints the medians of throughput and mean/p50/p90/p99 latency side by side, and the median of the
per-pair ratios mcp/perf_analyzer (a shared machine's background load drifts between pairs, much
less within one). Results go to benchmarks/results/bench_vs_perf_analyzer-<time>.json (gitignored).

Modes:

- ``together`` (default): both tools run *at the same time* against the same server, each with
  ``--concurrency`` and ``--requests``, so the server shares itself evenly between them and the
  machine's background load (which swings throughput by tens of percent from one second to the
  next on a shared host) hits both alike. `mcp bench` starts first; perf_analyzer starts once the
  server has counted its first requests, so the two overlap for all but that head start.
  perf_analyzer's figures come from its ``--profile-export-file`` (every request's timestamps).
- ``time``: perf_analyzer measures steady-state time windows (``--measurement-interval``)
  with ``--stability-percentage 999``, so that on a noisy machine it never loops looking for
  stability; `mcp bench` runs for three intervals (``--duration``).
- ``count``: both send ``--requests`` requests (perf_analyzer's ``--request-count``). Its throughput
  then includes its ramp-up: it comes out below concurrency / mean latency (see ``busy`` below).

Diagnostics per tool: ``busy`` = throughput x mean latency / concurrency (1.0 when the client keeps
every slot busy and its throughput agrees with its own latencies: Little's law), and the client's
CPU per request: `mcp bench` reports its own (``client_cpu_ms_per_request``: process CPU during the
load); perf_analyzer's is its process CPU time less a start-up run's, over its requests. Both clients
share the machine with the server: on a 2-core box client CPU is taken from the server.
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
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "benchmarks" / "results"
SHAPES = {"ocr-cls": ["x:3,48,192"], "mlp": []}
DEFAULT_REQUESTS = {"ocr-cls": 1000, "mlp": 3000}
TOOLS = ("perf_analyzer", "mcp bench")
FIGURES = ("throughput", "mean_ms", "p50_ms", "p90_ms", "p99_ms")


@dataclass
class Figures:
    tool: str
    throughput: float
    mean_ms: float
    p50_ms: float
    p90_ms: float
    p99_ms: float
    cpu_s: float = 0.0
    """CPU time (user + system) of the client process, start-up included."""
    served: int = 0
    """Requests the server completed while the client ran (its statistics endpoint)."""
    cpu_us_per_request: float | None = None
    """The client's own CPU per request during the load, where it reports one (`mcp bench`)."""


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
        nodes,
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", features])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["batch", classes])],
        initializer=[numpy_helper.from_array(value, name) for name, value in weights.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


def register_models(home: Path, workdir: Path) -> None:
    from mcp2026ai.bundled import OCR_CLS_PREPROCESSING, bundled_model_path
    from mcp2026ai.registry import ModelRegistry, Preprocessing

    registry = ModelRegistry(home)
    preprocessing = Preprocessing.model_validate(OCR_CLS_PREPROCESSING)
    registry.register("ocr-cls", bundled_model_path("ocr-cls"), preprocessing=preprocessing)
    registry.register("mlp", build_mlp(workdir / "mlp.onnx"))


class Server:
    """`mcp serve` in a child process with its own MCP_HOME; ports read from its first line."""

    def __init__(self, home: Path, env: dict[str, str]) -> None:
        command = [sys.executable, "-m", "mcp2026ai.cli", "serve", "--port", "0", "--grpc-port", "0"]
        self.process = subprocess.Popen(
            command, env={**env, "MCP_HOME": str(home)}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        while line.startswith("plan for "):  # `mcp serve` first reports each model's plan
            line = self.process.stdout.readline()
        match = re.search(r"listening http=(\d+) grpc=(\d+)", line)
        if match is None:
            self.stop()
            raise SystemExit(f"server did not start: {line}{self.process.stdout.read()}")
        self.http, self.grpc = f"127.0.0.1:{match.group(1)}", f"127.0.0.1:{match.group(2)}"

    def url(self, protocol: str) -> str:
        return self.http if protocol == "http" else self.grpc

    def served(self, model: str) -> int:
        with urllib.request.urlopen(f"http://{self.http}/v2/models/{model}/stats", timeout=30) as reply:
            stats = json.loads(reply.read())["model_stats"]
        return sum(int(entry["inference_stats"]["success"]["count"]) for entry in stats)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()


def run_child(command: list[str], env: dict[str, str]) -> tuple[str, float]:
    """Run a client process to completion; its stdout and the CPU seconds it used."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env, check=False)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command[:3])}... failed:\n{done.stdout}\n{done.stderr}")
    return done.stdout, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


@dataclass(frozen=True)
class Setup:
    perf_analyzer: str
    server: Server
    workdir: Path
    env: dict[str, str]
    concurrency: int
    mode: str
    interval_ms: int

    def measure(self, tool: str, model: str, protocol: str, requests: int | None) -> Figures:
        """One run of ``tool``; ``requests`` None means the mode's default load (a time or a count)."""
        before = self.server.served(model)
        run = self._perf_analyzer if tool == "perf_analyzer" else self._mcp_bench
        figures = run(model, protocol, requests)
        figures.served = self.server.served(model) - before
        return figures

    def measure_together(self, model: str, protocol: str, requests: int) -> tuple[Figures, Figures]:
        """perf_analyzer and `mcp bench` at once, same concurrency and count: (perf_analyzer, mcp bench)."""
        export, pa_out, mcp_out = (self.workdir / name for name in ("pa-export.json", "pa.out", "mcp.out"))
        export.unlink(missing_ok=True)  # perf_analyzer refuses to overwrite its export
        before = self.server.served(model)
        mcp = start_child(self._mcp_bench_command(model, protocol, requests), self.env, mcp_out)
        deadline = time.monotonic() + 60
        while self.server.served(model) == before and time.monotonic() < deadline and mcp.poll() is None:
            time.sleep(0.02)  # until mcp bench (a Python process: ~1 s to start) is sending
        command = self._perf_analyzer_command(
            model, protocol, "--request-count", str(requests), "--profile-export-file", str(export)
        )
        pa = start_child(command, self.env, pa_out)
        _, pa_cpu = wait_child(pa, pa_out)
        mcp_stdout, mcp_cpu = wait_child(mcp, mcp_out)
        pa_figures = export_figures(export, pa_cpu)
        mcp_figures = self._bench_figures(mcp_stdout, mcp_cpu)
        pa_figures.served = mcp_figures.served = requests
        return pa_figures, mcp_figures

    def _perf_analyzer_command(self, model: str, protocol: str, *load: str) -> list[str]:
        command = [self.perf_analyzer, "-m", model, "-i", protocol, "-u", self.server.url(protocol)]
        command += ["--concurrency-range", str(self.concurrency), *load]
        return command + [arg for shape in SHAPES[model] for arg in ("--shape", shape)]

    def _load(self, tool: str, requests: int | None) -> list[str]:
        if requests is not None or self.mode == "count":
            count = str(requests or 0)
            return ["--request-count", count] if tool == "perf_analyzer" else ["-n", count]
        if tool == "perf_analyzer":
            return ["--measurement-interval", str(self.interval_ms), "--stability-percentage", "999"]
        return ["--duration", str(3 * self.interval_ms / 1000)]

    def _perf_analyzer(self, model: str, protocol: str, requests: int | None) -> Figures:
        report = self.workdir / "pa.csv"
        command = self._perf_analyzer_command(
            model, protocol, "-f", str(report), *self._load("perf_analyzer", requests)
        )
        stdout, cpu_s = run_child(command, self.env)
        (row,) = list(csv.DictReader(report.open()))
        average = re.search(r"Avg latency: (\d+) usec", stdout)  # the CSV has percentiles only
        assert average is not None, stdout
        values = (average.group(1), row["p50 latency"], row["p90 latency"], row["p99 latency"])
        ms = [float(value) / 1000 for value in values]
        return Figures("perf_analyzer", float(row["Inferences/Second"]), *ms, cpu_s=cpu_s)

    def _mcp_bench_command(self, model: str, protocol: str, requests: int | None) -> list[str]:
        command = [
            sys.executable,
            "-m",
            "mcp2026ai.cli",
            "bench",
            "-m",
            model,
            "-i",
            protocol,
            "-u",
            self.server.url(protocol),
            "-c",
            str(self.concurrency),
            "--output-format",
            "json",
            "-q",
            *self._load("mcp bench", requests),
        ]
        return command + [arg for shape in SHAPES[model] for arg in ("--shape", shape)]

    def _mcp_bench(self, model: str, protocol: str, requests: int | None) -> Figures:
        stdout, cpu_s = run_child(self._mcp_bench_command(model, protocol, requests), self.env)
        return self._bench_figures(stdout, cpu_s)

    @staticmethod
    def _bench_figures(stdout: str, cpu_s: float) -> Figures:
        report = json.loads(stdout)
        if report["errors"]:
            raise SystemExit(f"mcp bench saw errors: {report['errors']}")
        latency = report["latency_ms"]
        figures = (latency["mean"], latency["p50"], latency["p90"], latency["p99"])
        cpu_us = report["client_cpu_ms_per_request"] * 1000
        return Figures("mcp bench", report["throughput_infer_s"], *figures, cpu_s=cpu_s, cpu_us_per_request=cpu_us)


def export_figures(path: Path, cpu_s: float) -> Figures:
    """perf_analyzer's figures from its profile export: throughput over first send to last answer."""
    document = json.loads(path.read_bytes().decode("utf-8", "replace"))
    requests = [r for e in document["experiments"] for r in e["requests"] if r["response_timestamps"]]
    sent = np.array([r["timestamp"] for r in requests], dtype=np.int64)
    done = np.array([r["response_timestamps"][-1] for r in requests], dtype=np.int64)
    latency_ms = (done - sent) / 1e6
    p50, p90, p99 = np.percentile(latency_ms, [50, 90, 99])
    throughput = len(requests) / ((done.max() - sent.min()) / 1e9)
    return Figures("perf_analyzer", float(throughput), float(latency_ms.mean()), p50, p90, p99, cpu_s=cpu_s)


def start_child(command: list[str], env: dict[str, str], stdout: Path) -> subprocess.Popen[bytes]:
    with stdout.open("wb") as sink:
        return subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, env=env)


def wait_child(process: subprocess.Popen[bytes], stdout: Path) -> tuple[str, float]:
    """Wait for one of several concurrent children; its output and its own CPU seconds (wait4)."""
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    output = stdout.read_text(errors="replace")
    if process.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, process.args[:3]))}... failed:\n{output}")  # type: ignore[index]
    return output, usage.ru_utime + usage.ru_stime


def median(figures: list[Figures]) -> Figures:
    values = {name: statistics.median(getattr(f, name) for f in figures) for name in (*FIGURES, "cpu_s")}
    reported = [f.cpu_us_per_request for f in figures if f.cpu_us_per_request is not None]
    return Figures(
        figures[0].tool,
        served=int(statistics.median(f.served for f in figures)),
        cpu_us_per_request=statistics.median(reported) if reported else None,
        **values,
    )


def measure_case(setup: Setup, model: str, protocol: str, requests: int, repeat: int) -> dict[str, Any]:
    """Warm up, then ``repeat`` back-to-back pairs of runs (which tool goes first alternates).

    The background load of a shared machine drifts within minutes, so each pair is compared on its
    own (``pair_ratio``: mcp/perf_analyzer); the medians of the figures are reported too.
    """
    setup.measure("mcp bench", model, protocol, min(500, requests))
    runs: dict[str, list[Figures]] = {tool: [] for tool in TOOLS}
    for index in range(repeat):
        if setup.mode == "together":
            pa, mcp = setup.measure_together(model, protocol, requests)
            runs["perf_analyzer"].append(pa)
            runs["mcp bench"].append(mcp)
            continue
        for tool in TOOLS if index % 2 == 0 else TOOLS[::-1]:
            runs[tool].append(setup.measure(tool, model, protocol, requests if setup.mode == "count" else None))
    medians = {tool: median(runs[tool]) for tool in TOOLS}
    # perf_analyzer reports no CPU figure: its process CPU less a start-up run's (median of 3)
    startup = median([setup.measure("perf_analyzer", model, protocol, setup.concurrency) for _ in range(3)])
    pa_cpu_us = (medians["perf_analyzer"].cpu_s - startup.cpu_s) / max(medians["perf_analyzer"].served, 1) * 1e6
    pairs = list(zip(runs["mcp bench"], runs["perf_analyzer"], strict=True))
    pair_ratio = {name: [getattr(m, name) / getattr(p, name) for m, p in pairs] for name in FIGURES}
    return {
        "model": model,
        "protocol": protocol,
        "concurrency": setup.concurrency,
        "mode": setup.mode,
        "requests": requests if setup.mode != "time" else None,
        "interval_ms": setup.interval_ms if setup.mode == "time" else None,
        "perf_analyzer": asdict(medians["perf_analyzer"]),
        "mcp_bench": asdict(medians["mcp bench"]),
        "ratio": {name: statistics.median(values) for name, values in pair_ratio.items()},
        "pair_ratio": pair_ratio,
        "throughput_range": {
            tool: [min(f.throughput for f in fs), max(f.throughput for f in fs)] for tool, fs in runs.items()
        },
        "busy": {tool: f.throughput * f.mean_ms / 1000 / setup.concurrency for tool, f in medians.items()},
        "client_cpu_us_per_request": {"perf_analyzer": pa_cpu_us, "mcp bench": medians["mcp bench"].cpu_us_per_request},
        "client_startup_cpu_s": {"perf_analyzer": startup.cpu_s},
        "runs": {tool: [asdict(f) for f in figures] for tool, figures in runs.items()},
        "load_average": os.getloadavg(),
    }


def print_case(case: dict[str, Any]) -> None:
    load = f"3 x {case['interval_ms']} ms windows" if case["mode"] == "time" else f"{case['requests']} requests"
    load += ", both tools at once" if case["mode"] == "together" else ""
    print(
        f"\n{case['model']} over {case['protocol']}, concurrency {case['concurrency']}, {load}"
        f" (load average {case['load_average'][0]:.1f})"
    )
    header = "".join(f"{name:>9}" for name in ("infer/s", "mean ms", "p50 ms", "p90 ms", "p99 ms"))
    print(f"  {'':14}{header}{'infer/s range':>16}{'busy':>7}{'cpu us/req':>12}")
    for tool, key in zip(TOOLS, ("perf_analyzer", "mcp_bench"), strict=True):
        cells = "".join(f"{case[key][name]:9.1f}" for name in FIGURES)
        low, high = case["throughput_range"][tool]
        print(
            f"  {tool:14}{cells}{f'{low:.0f}-{high:.0f}':>16}{case['busy'][tool]:7.2f}"
            f"{case['client_cpu_us_per_request'][tool]:12.0f}"
        )
    print(
        f"  {'mcp/pa':14}"
        + "".join(f"{case['ratio'][name]:9.3f}" for name in FIGURES)
        + "   (median of per-pair ratios)"
    )
    throughput = case["pair_ratio"]["throughput"]
    print(f"  throughput ratio per pair: {' '.join(f'{r:.2f}' for r in throughput)}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mode", choices=["together", "time", "count"], default="together")
    parser.add_argument("--interval-ms", type=int, default=1500, help="time mode: perf_analyzer's window")
    parser.add_argument("--requests", type=int, help="requests per run (default ocr-cls 1000, mlp 3000)")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=6, help="pairs of runs per case")
    parser.add_argument("--models", default="ocr-cls,mlp")
    parser.add_argument("--protocols", default="http,grpc")
    parser.add_argument(
        "--perf-analyzer",
        default=shutil.which("perf_analyzer", path=str(Path(sys.executable).parent)) or shutil.which("perf_analyzer"),
    )
    args = parser.parse_args()
    if not args.perf_analyzer:
        raise SystemExit("perf_analyzer not found: run scripts/install-perf-analyzer.sh")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT / "src"), os.environ.get("PYTHONPATH")]))}
    sys.path.insert(0, str(ROOT / "src"))
    cases = []
    with tempfile.TemporaryDirectory(prefix="mcp-bench-vs-pa-") as tmp:
        workdir = Path(tmp)
        register_models(workdir / "home", workdir)
        server = Server(workdir / "home", env)
        try:
            setup = Setup(args.perf_analyzer, server, workdir, env, args.concurrency, args.mode, args.interval_ms)
            for model in args.models.split(","):
                for protocol in args.protocols.split(","):
                    requests = args.requests or DEFAULT_REQUESTS.get(model, 2000)
                    cases.append(measure_case(setup, model, protocol, requests, args.repeat))
                    print_case(cases[-1])
        finally:
            server.stop()
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"bench_vs_perf_analyzer-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.write_text(json.dumps({"cases": cases, "cpus": os.cpu_count(), "load": os.getloadavg()}, indent=2))
    print(f"\nwrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
