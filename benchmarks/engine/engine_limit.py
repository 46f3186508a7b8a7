"""The engine's limit: raw batched decode and prefill of the served decoder, no server, no engine.

Converts (or reuses from .cache/llm) SmolLM2-135M-Instruct's int4 decoder (as served), then times in
interleaved rounds (other processes share this machine: each round runs every measure once, so a
busy spell disturbs all of them alike):

- ``decode b=B``: one decode step of B sequences of ``--context`` tokens each; tokens/s = B / step;
- ``prefill N``: a prompt chunk of N tokens into a slot (the first chunk of an empty slot, or, with
  ``+past``, a chunk after ``--context`` tokens already in the slot: what chunked prefill runs);
  tokens/s = N / run.

Each round takes the median of ``--repeats`` runs per measure; the table gives min / median / max of
the rounds' figures (tokens/s), the CPU time this process spent per token (onnxruntime's threads
included: other processes on the machine stretch wall time far more than it; on an idle machine the
limit is about cores / CPU time per token) and the load average before and after. Every served figure in
docs/notebook/benchmarks.md is given as a fraction of these.

    .venv/bin/python benchmarks/engine/engine_limit.py [--rounds 3] [--batches 1 8 16 32]
        [--chunks 64 128 256 512] [--context 200] [--threads 0] [--session served|spinning|blocking]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from mcp2026ai.bundled import bundled_model_path
from mcp2026ai.ir.llm_convert import convert_llm
from mcp2026ai.ir.llm_info import LLMPrecision, load_llm_info
from mcp2026ai.runtime.cpu_load import LoadProbe
from mcp2026ai.runtime.onnx_decoder import OnnxDecoder

CACHE = Path(__file__).resolve().parents[2] / ".cache" / "llm"
NEVER_CONTENDED = LoadProbe(read=lambda: 0.0)


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=5, help="runs per measure and round (the median counts)")
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 8, 16, 32])
    parser.add_argument("--chunks", type=int, nargs="+", default=[64, 128, 256, 512])
    parser.add_argument("--context", type=int, default=200, help="tokens already in each decoding sequence")
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument(
        "--session",
        choices=["served", "spinning", "blocking"],
        default="served",
        help="served: what the engine runs (spinning workers, blocking ones while the load average says the "
        "CPUs are contended); or force one",
    )
    return parser.parse_args()


def _median_ms(run: Callable[[], object], repeats: int) -> tuple[float, float]:
    """(median wall ms, median CPU ms of this process) of ``repeats`` runs after a warm one."""
    run()
    times, cpu = [], []
    for _ in range(repeats):
        started, cpu_started = time.perf_counter(), time.process_time()
        run()
        times.append((time.perf_counter() - started) * 1000)
        cpu.append((time.process_time() - cpu_started) * 1000)
    return statistics.median(times), statistics.median(cpu)


def measures(decoder: OnnxDecoder, args: argparse.Namespace) -> dict[str, tuple[int, Callable[[], object]]]:
    """name -> (tokens per run, the run)."""
    rng = np.random.default_rng(0)
    table: dict[str, tuple[int, Callable[[], object]]] = {}
    for batch in args.batches:
        table[f"decode b={batch}"] = (batch, lambda b=batch: decoder.decode([5] * b, [args.context] * b))
    for chunk in args.chunks:
        prompt = [int(t) for t in rng.integers(100, 40_000, args.context + chunk)]
        table[f"prefill {chunk}"] = (chunk, lambda p=prompt[:chunk]: decoder.prefill(0, p))
        table[f"prefill {chunk} +past"] = (chunk, lambda p=prompt: decoder.prefill(0, p, args.context))
    return table


def main() -> None:
    args = _arguments()
    folder = convert_llm(bundled_model_path("smollm2"), LLMPrecision.INT4, CACHE)
    info = load_llm_info(folder)
    slots = max(args.batches)
    length = args.context + max(args.chunks) + 1
    probes = {"served": LoadProbe(), "spinning": NEVER_CONTENDED, "blocking": LoadProbe(read=lambda: 99.0)}
    probe = probes[args.session]
    decoder = OnnxDecoder(folder, info, slots, length, args.threads, load_probe=probe)
    table = measures(decoder, args)
    loads = [Path("/proc/loadavg").read_text().split()[0]]
    rates: dict[str, list[float]] = {name: [] for name in table}
    cpu: dict[str, list[float]] = {name: [] for name in table}
    blocking = 0
    for _ in range(args.rounds):
        for name, (tokens, run) in table.items():
            wall_ms, cpu_ms = _median_ms(run, args.repeats)
            rates[name].append(tokens / wall_ms * 1000)
            cpu[name].append(cpu_ms / tokens)
            blocking += decoder.last_run_blocking
    loads.append(Path("/proc/loadavg").read_text().split()[0])
    print(
        f"{args.rounds} interleaved rounds, median of {args.repeats} runs each; session {args.session} "
        f"({blocking} of {args.rounds * len(table)} measures ended on the blocking one), "
        f"threads={args.threads or 'default'}; load average {loads[0]} -> {loads[1]}"
    )
    print("| measure | tok/s min / median / max | ms per run (median) | CPU ms per token (median) |\n|---|---|---|---|")
    for name, values in rates.items():
        tokens = table[name][0]
        print(
            f"| {name} | {min(values):.0f} / {statistics.median(values):.0f} / {max(values):.0f} "
            f"| {tokens / statistics.median(values) * 1000:.1f} | {statistics.median(cpu[name]):.2f} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
