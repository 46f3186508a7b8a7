"""What an engine step spends outside the model: the Python on the critical path, per token.

Converts (or reuses from .cache/llm) SmolLM2-135M-Instruct's int4 decoder, runs ``--concurrency``
requests of ~128 prompt and ``--tokens`` output tokens per mode, and times every engine step and
every decoder run inside it (wrapped, same thread). The difference is what the engine thread does
between runs (sampling, KV and slot accounting, telemetry, handing tokens to the event loop; before
the text stage of issue 34 also detokenizing, stop strings and logprobs): the next run waits for it
(wall time, and the engine thread's CPU time, which other processes on the machine disturb less).
Modes, interleaved over ``--rounds``: greedy; temperature 1 with top-p;
temperature 1 with 5 logprobs; greedy with a stop string. Also per mode: output tok/s (wall), the
decoder's wall time per token, and the whole process's CPU time per token (what the event loop spends
on text, off the step, counts there: it shows whether moving work off the step only moved it).

Before / after a change to the engine, run it against each tree's source, alternately (``--json``
appends one object per round and mode, tagged ``--label``):

    .venv/bin/python benchmarks/engine/host_path.py [--rounds 3] [--concurrency 8] [--tokens 64]
    git archive <base> src | tar -x -C /tmp/base    # then, 3 times:
    PYTHONPATH=/tmp/base/src .venv/bin/python benchmarks/engine/host_path.py --rounds 1 --label base --json ab.jsonl
    PYTHONPATH=src .venv/bin/python benchmarks/engine/host_path.py --rounds 1 --label branch --json ab.jsonl
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repo root: benchmarks.* imports

from benchmarks.engine.generation_engine import prompt_ids
from mcp2026ai.bundled import bundled_model_path
from mcp2026ai.generation.config import EngineConfig
from mcp2026ai.generation.engine import Engine, build_engine
from mcp2026ai.generation.types import GenerationRequest, SamplingParams
from mcp2026ai.ir.llm_convert import convert_llm
from mcp2026ai.ir.llm_info import LLMPrecision

CACHE = Path(__file__).resolve().parents[2] / ".cache" / "llm"
MODES: dict[str, dict[str, Any]] = {
    "greedy": {"temperature": 0},
    "temperature 1, top_p 0.95": {"temperature": 1.0, "top_p": 0.95},
    "temperature 1, logprobs 5": {"temperature": 1.0, "logprobs": 5},
    "greedy, stop string": {"temperature": 0, "stop": ["zebra crossing"]},
}


class StepClock:
    """Wall time of engine steps and of the decoder runs inside them (both on the engine thread)."""

    def __init__(self, engine: Engine) -> None:
        self.step_s = self.model_s = 0.0
        self.step_cpu_s = self.model_cpu_s = 0.0
        """The engine thread's own CPU time (robust to other processes: they stretch wall time)."""
        self.steps = 0
        engine._step = self._timed(engine._step, "step")  # type: ignore[method-assign]
        for name in ("decode", "prefill", "verify"):
            setattr(engine.decoder, name, self._timed(getattr(engine.decoder, name), "model"))

    def _timed(self, function: Callable[..., Any], kind: str) -> Callable[..., Any]:
        def run(*args: Any) -> Any:
            started, cpu = time.perf_counter(), time.thread_time()
            try:
                return function(*args)
            finally:
                elapsed, cpu_used = time.perf_counter() - started, time.thread_time() - cpu
                if kind == "step":
                    self.step_s += elapsed
                    self.step_cpu_s += cpu_used
                    self.steps += 1
                else:
                    self.model_s += elapsed
                    self.model_cpu_s += cpu_used

        return run

    def reset(self) -> None:
        self.step_s = self.model_s = self.step_cpu_s = self.model_cpu_s = 0.0
        self.steps = 0


async def workload(engine: Engine, concurrency: int, tokens: int, params: dict[str, Any]) -> int:
    sampling = SamplingParams(max_tokens=tokens, ignore_eos=True, **params)
    streams = [
        engine.submit(GenerationRequest(f"h{i}", prompt_ids(engine, i, 110), sampling)) for i in range(concurrency)
    ]
    return sum([len((await stream.collect(1))[0].token_ids) for stream in streams])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--label", default="", help="tags this run's rows in --json (e.g. base, branch)")
    parser.add_argument("--json", type=Path, help="append one JSON line per round and mode to this file")
    args = parser.parse_args()
    folder = convert_llm(bundled_model_path("smollm2"), LLMPrecision.INT4, CACHE)
    engine = build_engine("host", folder, EngineConfig(max_num_seqs=args.concurrency, max_model_len=512))
    clock = StepClock(engine)
    figures: dict[str, list[tuple[float, ...]]] = {mode: [] for mode in MODES}
    try:
        asyncio.run(workload(engine, 1, 4, {}))  # warm-up
        for _ in range(args.rounds):
            for mode, params in MODES.items():
                clock.reset()
                started, cpu = time.perf_counter(), time.process_time()
                tokens = asyncio.run(workload(engine, args.concurrency, args.tokens, params))
                wall, cpu = time.perf_counter() - started, time.process_time() - cpu
                host, host_cpu = clock.step_s - clock.model_s, clock.step_cpu_s - clock.model_cpu_s
                row: tuple[float, ...] = (host / tokens * 1e6, host_cpu / tokens * 1e6, host / clock.step_s * 100)
                row += (tokens / wall, clock.model_s / tokens * 1e6, cpu / tokens * 1e6)
                figures[mode].append(row)
                record(args, mode, row)
    finally:
        engine.close()
    load = Path("/proc/loadavg").read_text().split()[0]
    print(f"c={args.concurrency}, {args.tokens} tokens each, {args.rounds} interleaved rounds (load average {load})")
    print(
        "| mode | host wall us per token, min / median / max | host CPU us per token | share of step wall time "
        "| tok/s | decoder wall us per token | process CPU us per token |\n|---|---|---|---|---|---|---|"
    )
    for mode, values in figures.items():
        print(
            f"| {mode} | {spread(values, 0)} | {spread(values, 1)} | {spread(values, 2, 1)}% | {spread(values, 3)} "
            f"| {spread(values, 4)} | {spread(values, 5)} |"
        )


FIELDS = ("host_wall_us", "host_cpu_us", "host_share_pct", "tok_s", "model_wall_us", "process_cpu_us")


def record(args: argparse.Namespace, mode: str, row: tuple[float, ...]) -> None:
    """Append one round of one mode to ``--json`` (one JSON object a line)."""
    if args.json is None:
        return
    load = float(Path("/proc/loadavg").read_text().split()[0])
    entry = {"label": args.label, "concurrency": args.concurrency, "mode": mode, "load": load}
    with args.json.open("a") as out:
        out.write(json.dumps(entry | dict(zip(FIELDS, row, strict=True))) + "\n")


def spread(rows: list[tuple[float, ...]], column: int, digits: int = 0) -> str:
    found = [row[column] for row in rows]
    return " / ".join(f"{x:.{digits}f}" for x in (min(found), statistics.median(found), max(found)))


if __name__ == "__main__":
    main()
