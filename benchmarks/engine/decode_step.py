"""Decoder step times and the sampler's draw, A/B in one run.

Converts (or reuses from .cache/llm) SmolLM2-135M-Instruct's GGUF (int4, as served), then times, in
interleaved rounds (other processes share this machine: the minimum is the cost, the median what a
busy machine gives), for each variant:

- ``prefill``: one 128-token prompt into an empty slot;
- ``decode b=1`` / ``decode b=8``: one decode step of 1 / 8 sequences of 200 tokens each
  (a ~128-token prompt half way through 128 output tokens).

Variants: the default session options (onnxruntime's spinning workers), then each
``--session-config`` entry added (e.g. ``session.intra_op.allow_spinning=0``, the session the
served decoder switches to while the load average says the machine is contended). ``--profile``
adds onnxruntime's per-operator profile of each measure (by operator type, the sum over its nodes of
each node's fastest run). Last, the sampler's
full-vocabulary draw at temperature 1: a plain ``np.cumsum`` (before) vs ``sampling.inverse_cdf`` (now).

    .venv/bin/python benchmarks/engine/decode_step.py [--rounds 5] [--profile]
        [--session-config session.force_spinning_stop=1 ...] [--threads 0]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from mcp2026ai.bundled import bundled_model_path
from mcp2026ai.generation.sampling import inverse_cdf
from mcp2026ai.ir.llm_convert import convert_llm
from mcp2026ai.ir.llm_info import LLMPrecision, load_llm_info
from mcp2026ai.runtime.cpu_load import LoadProbe
from mcp2026ai.runtime.onnx_decoder import SESSION_CONFIG, OnnxDecoder

CACHE = Path(__file__).resolve().parents[2] / ".cache" / "llm"
PROMPT_TOKENS = 128
LENGTH = 200
MEASURES = ("prefill", "decode b=1", "decode b=8")
NEVER_CONTENDED = LoadProbe(read=lambda: 0.0)


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--session-config", nargs="*", default=[], help="KEY=VALUE onnxruntime entries to try")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--profile", action="store_true", help="per-operator times (onnxruntime profiling)")
    return parser.parse_args()


def run_times(run: Callable[[], object], repeats: int) -> list[float]:
    """Wall ms of each of ``repeats`` runs after a warm one."""
    run()
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        times.append((time.perf_counter() - started) * 1000)
    return times


def _measure(decoder: OnnxDecoder, prompt: list[int], measure: str) -> list[float]:
    if measure == "prefill":
        return run_times(lambda: decoder.prefill(0, prompt), 3)
    batch = 1 if measure == "decode b=1" else 8
    return run_times(lambda: decoder.decode([5] * batch, [LENGTH] * batch), 20)


def _variants(folder: Path, entries: list[str], threads: int) -> dict[str, OnnxDecoder]:
    """Each variant runs its own session whatever the load (the served decoder switches to a blocking
    session while the machine is contended: compare with ``session.intra_op.allow_spinning=0``)."""
    info = load_llm_info(folder)
    variants = {"default": OnnxDecoder(folder, info, 8, 2048, threads, load_probe=NEVER_CONTENDED)}
    for entry in entries:
        key, _, value = entry.partition("=")
        config = {**SESSION_CONFIG, key: value}
        variants[entry] = OnnxDecoder(folder, info, 8, 2048, threads, config, load_probe=NEVER_CONTENDED)
    return variants


def _profile(folder: Path, prompt: list[int], threads: int) -> None:
    """Per operator type: the sum over its nodes of each node's fastest run, for each measure."""
    for measure in MEASURES:
        with tempfile.TemporaryDirectory() as work:
            info = load_llm_info(folder)
            decoder = OnnxDecoder(folder, info, 8, 2048, threads, None, Path(work) / "profile", NEVER_CONTENDED)
            runs = _measure(decoder, prompt, measure)
            events = json.loads(Path(decoder.session.end_profiling()).read_text())
        fastest: dict[str, tuple[float, str]] = {}
        for event in events:
            if event.get("cat") == "Node" and event["name"].endswith("_kernel_time"):
                op = event["args"]["op_name"] + (" (LM head)" if "lm_head" in event["name"] else "")
                best = fastest.get(event["name"], (float("inf"), op))[0]
                fastest[event["name"]] = (min(best, event["dur"] / 1000), op)
        by_op: dict[str, float] = {}
        for duration, op in fastest.values():
            by_op[op] = by_op.get(op, 0.0) + duration
        top = sorted(by_op.items(), key=lambda item: -item[1])[:5]
        print(f"{measure}: fastest run {min(runs):.2f} ms; by operator: " + ", ".join(f"{o} {t:.2f}" for o, t in top))


def _sampler_ab(rounds: int) -> None:
    rng = np.random.default_rng(0)
    row = rng.normal(0, 3, 49_152).astype(np.float32)

    def before() -> int:
        probs = np.exp(row - row.max())
        cumulative = np.cumsum(probs)
        return min(int(np.searchsorted(cumulative, rng.random() * cumulative[-1], side="right")), len(probs) - 1)

    def after() -> int:
        return inverse_cdf(np.exp(row - row.max()), rng.random())

    for name, draw in (("np.cumsum (before)", before), ("inverse_cdf (now)", after)):
        best = min(min(run_times(draw, 200)) for _ in range(rounds))
        print(f"sampler draw over 49,152 tokens, {name}: {best * 1000:.0f} us", flush=True)


def main() -> None:
    args = _arguments()
    folder = convert_llm(bundled_model_path("smollm2"), LLMPrecision.INT4, CACHE)
    variants = _variants(folder, args.session_config, args.threads)
    prompt = [int(t) for t in np.random.default_rng(0).integers(100, 40_000, PROMPT_TOKENS)]
    results: dict[str, dict[str, list[float]]] = {name: {m: [] for m in MEASURES} for name in variants}
    for _ in range(args.rounds):
        for name, decoder in variants.items():
            for measure in MEASURES:
                results[name][measure] += _measure(decoder, prompt, measure)
    load = Path("/proc/loadavg").read_text().split()[0]
    print(f"{args.rounds} interleaved rounds; ms, min / median (load average {load})")
    print("| session options | prefill 128 tokens | decode b=1 | decode b=8 |\n|---|---|---|---|")
    for name, measures in results.items():
        cells = [f"{min(v):.2f} / {statistics.median(v):.2f}" for v in measures.values()]
        print(f"| {name} | " + " | ".join(cells) + " |")
    if args.profile:
        _profile(folder, prompt, args.threads)
    _sampler_ab(args.rounds)


if __name__ == "__main__":
    main()
