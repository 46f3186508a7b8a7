"""One bounded, interleaved side-by-side benchmark run; prints the table and writes results.

    python benchmarks/compare/run.py                 # mlp (3 rounds) + resnet50 (3 rounds): ~7 minutes on 2 cores
    python benchmarks/compare/run.py --quick         # half the requests, one round
    python benchmarks/compare/run.py --models mlp --rounds 5 --peers-on-resnet
    python benchmarks/compare/run.py --models classifier,resnet50 --concurrency 1,8 --peers-on-resnet \
        --servers mcp2026ai,mcp2026ai-tput,pytriton   # issue 23: image models vs PyTriton

Per model, every server is started at once; then per round and per concurrency level c, the
ceiling (raw onnxruntime at batch c) runs, then every (server, protocol) in a rotated order, so
all ratios come from the same minutes of this noisy shared machine. Besides perf_analyzer's
figures, each run records the server's CPU time per request (its whole process group), which
other load on the machine disturbs far less than throughput. Figures are medians over rounds.
Results go to benchmarks/results/<time>/ (results.json, table.md).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repo root: benchmarks.* imports

from benchmarks.compare.models import (
    CLASSIFIER_INPUT,
    CLASSIFIER_OUTPUT,
    MLP_FEATURES,
    RESNET_INPUT,
    RESNET_SHAPE,
    resnet50_dynamic,
    squeezenet_classifier,
    tiny_mlp,
)
from benchmarks.compare.perf import PerfError, PerfHang, PerfResult, find_perf_analyzer, perf_command, run_perf
from benchmarks.compare.report import render
from benchmarks.compare.servers import (
    SERVERS,
    BenchModel,
    Endpoints,
    OurServer,
    ServerProcess,
    Unavailable,
    chosen_plan,
)
from benchmarks.engine.ceiling import Runner, offline_throughput, open_runtimes

PROTOCOLS = ("http", "grpc")


@dataclass(frozen=True)
class Workload:
    """How hard to drive one model: perf_analyzer request counts and ceiling run lengths."""

    requests_per_slot: int
    min_requests: int
    ceiling_runs: int
    ceiling_seconds: float
    perf_timeout_s: float
    http_format: str
    """Tensor format over HTTP: json where MLServer (no binary extension) takes the same command."""

    def requests(self, concurrency: int) -> int:
        return max(self.min_requests, self.requests_per_slot * concurrency)


WORKLOADS = {
    "mlp": Workload(
        requests_per_slot=100,  # c=32: 3200 requests, ~2 s: a p99 of 32 samples, past the start of fresh connections
        min_requests=400,
        ceiling_runs=200,
        ceiling_seconds=1.0,
        perf_timeout_s=45,
        http_format="json",
    ),
    "resnet50": Workload(
        requests_per_slot=4,  # c=32: 128 requests, ~7 s: at 2 per slot a round's figure moved 15-20 %
        # c=1 and c=8 run 48 requests (~1 s): with 8 and 32, the first requests on a fresh connection
        # (gRPC's p99 57-70 ms against 27-29 at 128 requests) took 2-6 % off every server's rate.
        min_requests=48,
        ceiling_runs=1,
        ceiling_seconds=3.0,
        perf_timeout_s=300,
        http_format="binary",
    ),
    "classifier": Workload(
        requests_per_slot=40,  # ~4 ms a request on 2 cores: c=8 runs 320 requests, ~2 s
        min_requests=100,
        ceiling_runs=50,
        ceiling_seconds=1.5,
        perf_timeout_s=120,
        http_format="binary",
    ),
}


def build_model(name: str, directory: Path) -> BenchModel:
    if name == "mlp":
        # The workload is throughput at 32 concurrent requests, and the contract says so: with the
        # default objective (latency) the policy picks batch 1 with no queue delay, the best latency of
        # a lone request, and over gRPC requests then rarely meet in the queue (docs/notebook/benchmarks.md).
        path = tiny_mlp(directory / "mlp.onnx")
        return BenchModel("mlp", path, "x", (MLP_FEATURES,), outputs=(("probs", (10,)),), objective="throughput")
    if name == "classifier":  # the 224x224 image classifier of issue 23
        path = squeezenet_classifier(directory / "classifier.onnx")
        return BenchModel(
            "classifier", path, CLASSIFIER_INPUT, RESNET_SHAPE, outputs=((CLASSIFIER_OUTPUT, (1000, 1, 1)),)
        )
    # batch 8/32 shapes are exercised by the ceiling runs right after
    path = resnet50_dynamic(directory / "resnet50.onnx", check_batches=())
    # A CPU ResNet-50 at 32 concurrent requests answers in seconds: its contract says so, or no plan
    # would meet the default 100 ms budget and `mcp serve` would refuse to start.
    return BenchModel(
        "resnet50", path, RESNET_INPUT, RESNET_SHAPE, outputs=(("gpu_0/softmax_1", (1000,)),), p99_budget_ms=5000
    )


class Bench:
    def __init__(self, args: argparse.Namespace, workdir: Path) -> None:
        self.args = args
        self.workdir = workdir
        self.tool = find_perf_analyzer()
        self.rows: list[dict[str, object]] = []
        self.hangs = 0
        self.sessions: dict[str, dict[str, Runner]] = {}
        self.servers: dict[str, ServerProcess] = {}

    def record(self, **row: object) -> None:
        self.rows.append(row)
        shown = {k: (round(v, 2) if isinstance(v, float) else v) for k, v in row.items()}
        print("  ", shown, flush=True)

    def ceiling(self, model: BenchModel, workload: Workload, batch: int, round_no: int) -> None:
        if model.name not in self.sessions:
            self.sessions[model.name] = open_runtimes(model.path)
        seconds = workload.ceiling_seconds * self.args.scale
        for runtime, session in self.sessions[model.name].items():  # the report keeps the best runtime's
            result = offline_throughput(session, model.sample_shape, batch, workload.ceiling_runs, seconds)
            figures = {"rows_per_s": result.rows_per_s, "cpu_ms_per_row": result.cpu_ms_per_row}
            self.record(kind="ceiling", model=model.name, runtime=runtime, batch=batch, round=round_no, **figures)

    def start_servers(self, model: BenchModel) -> dict[str, tuple[ServerProcess, Endpoints]]:
        running: dict[str, tuple[ServerProcess, Endpoints]] = {}
        with_peers = model.name == "mlp" or self.args.peers_on_resnet
        for label, kind in SERVERS.items():
            wanted = label in self.args.servers if self.args.servers else label == "mcp2026ai" or with_peers
            if not wanted:
                continue
            if label == "mcp2026ai-tput" and model.objective == "throughput":
                continue  # the model's own contract already says throughput
            server = kind(label, self.workdir / model.name / label)
            try:
                endpoints = server.start(model)
                running[label] = (server, endpoints)
                print(f"  {label} ready for {model.name}", flush=True)
                if isinstance(server, OurServer):  # what the policy chose explains a surprising figure
                    plan = chosen_plan(endpoints, model.name)
                    self.record(kind="plan", model=model.name, server=label, plan=plan or "not reported")
            except Unavailable as exc:
                for protocol in PROTOCOLS:
                    self.record(kind="served", model=model.name, server=label, protocol=protocol, error=str(exc))
        return running

    def perf(
        self, model: BenchModel, label: str, url: str, protocol: str, concurrency: int, requests: int
    ) -> PerfResult:
        """One perf_analyzer run; retried once if it hangs (perf_analyzer 2.48 in --request-count mode
        now and then waits forever after the server has answered every request)."""
        workload = WORKLOADS[model.name]
        http_format = "json" if label == "mlserver" else workload.http_format  # MLServer: JSON only
        command = perf_command(
            self.tool, model.name, url, protocol, concurrency, requests, model.perf_shape, http_format
        )
        timeout = workload.perf_timeout_s
        try:
            return run_perf(command, timeout)
        except PerfHang as exc:
            print(f"   {exc}; retrying once", flush=True)
            self.hangs += 1
            return run_perf(command, timeout)

    def warm_up(
        self, model: BenchModel, running: dict[str, tuple[ServerProcess, Endpoints]]
    ) -> list[tuple[str, str, str]]:
        """One short unrecorded run per (server, protocol); those that fail are reported, not measured."""
        usable = []
        for label, (_, endpoints) in running.items():
            for protocol in PROTOCOLS:
                url = endpoints.http if protocol == "http" else endpoints.grpc
                try:
                    assert url is not None
                    self.perf(model, label, url, protocol, 2, 8)
                    usable.append((label, protocol, url))
                except PerfError as exc:
                    self.record(kind="served", model=model.name, server=label, protocol=protocol, error=str(exc))
        return usable

    def measure(self, model: BenchModel) -> None:
        workload = WORKLOADS[model.name]
        print(f"== {model.name}", flush=True)
        running = self.start_servers(model)
        try:
            combos = self.warm_up(model, running)
            self.servers = {label: server for label, (server, _) in running.items()}
            rounds = self.args.rounds if model.name == "mlp" else self.args.resnet_rounds
            for round_no in range(rounds):
                for concurrency in self.args.concurrency:
                    self.ceiling(model, workload, concurrency, round_no)  # batch b next to concurrency b
                    shift = round_no % max(1, len(combos))
                    for label, protocol, url in combos[shift:] + combos[:shift]:
                        self.served(model, workload, label, protocol, url, concurrency, round_no)
        finally:
            self.sessions.pop(model.name, None)
            for server, _ in running.values():
                server.stop()

    def served(
        self,
        model: BenchModel,
        workload: Workload,
        label: str,
        protocol: str,
        url: str,
        concurrency: int,
        round_no: int,
    ) -> None:
        requests = max(8, int(workload.requests(concurrency) * self.args.scale))
        base = {"kind": "served", "model": model.name, "server": label, "protocol": protocol}
        base["concurrency"] = concurrency
        server = self.servers[label]
        cpu_before = server.cpu_seconds()
        try:
            result = self.perf(model, label, url, protocol, concurrency, requests)
        except PerfError as exc:
            self.record(**base, round=round_no, error=str(exc))
            return
        cpu_ms = (server.cpu_seconds() - cpu_before) * 1000 / result.requests
        self.record(**base, round=round_no, **asdict(result), cpu_ms_per_request=cpu_ms)


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="mlp,resnet50", help="Comma-separated: mlp, resnet50, classifier.")
    parser.add_argument("--concurrency", default="1,8,32", help="perf_analyzer concurrency levels.")
    parser.add_argument("--rounds", type=int, default=None, help="Interleaved MLP rounds (default 3; 1 with --quick).")
    parser.add_argument(
        "--resnet-rounds", type=int, default=None, help="Interleaved ResNet-50 rounds (default 3; 1 with --quick)."
    )
    parser.add_argument("--quick", action="store_true", help="Half the requests, one round.")
    parser.add_argument(
        "--servers", default="", help="Comma-separated subset of: " + ", ".join(SERVERS) + " (default: all)."
    )
    parser.add_argument("--peers-on-resnet", action="store_true", help="Also run MLServer and PyTriton on ResNet-50.")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parents[1] / "results")
    args = parser.parse_args()
    args.models = [name.strip() for name in args.models.split(",") if name.strip()]
    unknown = [name for name in args.models if name not in WORKLOADS]
    if unknown:
        parser.error(f"--models: unknown {unknown} (known: {', '.join(WORKLOADS)})")
    args.concurrency = [int(level) for level in args.concurrency.split(",")]
    args.servers = [name.strip() for name in args.servers.split(",") if name.strip()]
    if unknown_servers := [name for name in args.servers if name not in SERVERS]:
        parser.error(f"--servers: unknown {unknown_servers} (known: {', '.join(SERVERS)})")
    args.scale = 0.5 if args.quick else 1.0
    args.rounds = args.rounds or (1 if args.quick else 3)
    args.resnet_rounds = args.resnet_rounds or (1 if args.quick else 3)
    return args


def main() -> None:
    args = _arguments()
    started = time.time()
    with tempfile.TemporaryDirectory(prefix="mcp-bench-") as tmp:
        workdir = Path(tmp)
        bench = Bench(args, workdir)
        for name in args.models:
            bench.measure(build_model(name, workdir))
    elapsed = time.time() - started
    table = render(bench.rows, args.concurrency, elapsed, bench.hangs)
    out = args.out / time.strftime("%Y%m%d-%H%M%S")
    out.mkdir(parents=True, exist_ok=True)
    document = {"rows": bench.rows, "seconds": elapsed, "perf_analyzer_hangs": bench.hangs, "args": vars(args)}
    (out / "results.json").write_text(json.dumps(document, default=str, indent=1))
    (out / "table.md").write_text(table)
    print(table)
    print(f"results: {out}")


if __name__ == "__main__":
    main()
