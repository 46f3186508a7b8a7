"""What the engine's step costs the host, with a decoder that costs nothing: CPU per token.

The engine (scheduler, executor, output processing, sampling over SmolLM2's 49,152-token vocabulary,
KV bookkeeping, hand-over) runs on a stand-in decoder that returns fixed logits rows at once, so
every microsecond the engine thread spends is the engine's own. The figure is the engine thread's
CPU time (``time.thread_time``) per generated token, which other processes on a busy machine
disturb far less than wall time; wall tok/s is printed too. Requests: ``--concurrency`` at once,
greedy and sampled (temperature 1), ``--tokens`` each (EOS ignored), ``--rounds`` rounds.

Compare two trees alternately (``--label`` and ``--json`` append one row per round):

    git archive <base> src | tar -x -C /tmp/base
    PYTHONPATH=/tmp/base/src .venv/bin/python benchmarks/engine/step_overhead.py --label base --json ab.jsonl
    PYTHONPATH=src .venv/bin/python benchmarks/engine/step_overhead.py --label branch --json ab.jsonl
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mcp2026ai.bundled import bundled_model_path
from mcp2026ai.generation.config import EngineConfig
from mcp2026ai.generation.engine import Engine
from mcp2026ai.generation.tokenizer import TextTokenizer
from mcp2026ai.generation.types import GenerationRequest, SamplingParams
from mcp2026ai.ir.llm_convert import convert_llm
from mcp2026ai.ir.llm_info import LLMInfo, LLMPrecision, load_llm_info

CACHE = Path(__file__).resolve().parents[2] / ".cache" / "llm"
PROMPT_TOKENS = 128


class FreeDecoder:
    """The decoder's call interface (``runtime/onnx_decoder.py``) at no cost: fixed logits rows."""

    multi_row_logits = True
    bytes_per_token = 4096

    def __init__(self, info: LLMInfo, slots: int, max_len: int) -> None:
        self.num_slots, self.max_len = slots, max_len
        rows = np.random.default_rng(0).standard_normal((max(slots, 17), info.vocab_size)).astype(np.float32)
        rows[:, info.eos_token_ids] = -1e9  # no choice ends early
        self._rows = rows

    def decode(self, token_ids: Sequence[int], lengths: Sequence[int]) -> np.ndarray:
        return self._rows[: len(token_ids)]

    def prefill(self, slot: int, token_ids: Sequence[int], cached: int = 0) -> np.ndarray:
        return self._rows[slot]

    def verify(self, slot: int, token_ids: Sequence[int], total: int) -> np.ndarray:
        return self._rows[: len(token_ids)]

    def prompt_logits(self, slot: int, token_ids: Sequence[int]) -> np.ndarray:
        return np.resize(self._rows[0], (len(token_ids), self._rows.shape[1]))

    def move(self, source: int, target: int, length: int) -> None: ...

    def release(self, slot: int) -> None: ...

    def read_block(self, slot: int, start: int, size: int) -> np.ndarray:
        return np.zeros((1, 1, size, 1), np.float32)

    def write_blocks(self, slot: int, blocks: Sequence[np.ndarray]) -> None: ...


class ThreadClock:
    """The engine thread's CPU time, summed over its steps (``Engine._step`` wrapped, same thread)."""

    def __init__(self, engine: Engine) -> None:
        self.cpu_s = 0.0
        self.steps = 0
        step = engine._step

        def timed(*args: Any) -> None:
            started = time.thread_time()
            try:
                step(*args)
            finally:
                self.cpu_s += time.thread_time() - started
                self.steps += 1

        engine._step = timed  # type: ignore[method-assign]


async def generate(engine: Engine, concurrency: int, tokens: int, params: dict[str, Any]) -> int:
    prompts = [[100 + (i * 7 + j) % 1000 for j in range(PROMPT_TOKENS)] for i in range(concurrency)]
    sampling = SamplingParams(max_tokens=tokens, ignore_eos=True, **params)
    streams = [engine.submit(GenerationRequest(f"o{i}", ids, sampling)) for i, ids in enumerate(prompts)]
    choices = await asyncio.gather(*(stream.collect(1) for stream in streams))
    return sum(len(choice[0].token_ids) for choice in choices)


def measure(
    engine: Engine, clock: ThreadClock, concurrency: int, tokens: int, params: dict[str, Any]
) -> tuple[float, float]:
    """(engine thread CPU µs per token, wall tok/s) of one run."""
    cpu, started = clock.cpu_s, time.perf_counter()
    produced = asyncio.run(generate(engine, concurrency, tokens, params))
    wall = time.perf_counter() - started
    return (clock.cpu_s - cpu) / produced * 1e6, produced / wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--label", default="")
    parser.add_argument("--json", type=Path, help="append one JSON line per round, concurrency and mode")
    args = parser.parse_args()
    folder = convert_llm(bundled_model_path("smollm2"), LLMPrecision.INT4, CACHE)
    info = load_llm_info(folder)
    slots = max(args.concurrency)
    config = EngineConfig(max_num_seqs=slots, max_model_len=512, prefix_cache_mb=0)
    engine = Engine("free", FreeDecoder(info, slots, 512), TextTokenizer(folder), info, config)  # type: ignore[arg-type]
    clock = ThreadClock(engine)
    modes = {"greedy": {"temperature": 0}, "sampled": {"temperature": 1.0, "seed": 1}}
    rows: dict[tuple[int, str], list[tuple[float, float]]] = {}
    try:
        asyncio.run(generate(engine, 1, 8, modes["greedy"]))  # warm-up
        for _ in range(args.rounds):
            for concurrency in args.concurrency:
                for mode, params in modes.items():
                    figure = measure(engine, clock, concurrency, args.tokens, params)
                    rows.setdefault((concurrency, mode), []).append(figure)
                    if args.json:
                        with args.json.open("a") as out:
                            row = {"label": args.label, "c": concurrency, "mode": mode}
                            out.write(json.dumps({**row, "cpu_us_per_token": figure[0], "tok_s": figure[1]}) + "\n")
    finally:
        engine.close()
    for (concurrency, mode), figures in rows.items():
        cpu = statistics.median(f[0] for f in figures)
        wall = statistics.median(f[1] for f in figures)
        print(f"{args.label} c={concurrency} {mode}: {cpu:.0f} µs engine CPU per token, {wall:.0f} tok/s (medians)")


if __name__ == "__main__":
    main()
