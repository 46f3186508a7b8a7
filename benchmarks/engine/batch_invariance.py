"""What batch invariance costs: a lone decode row run alone vs padded to two rows, A/B in one run.

On hosts whose int4 kernels give a lone row other logits than a batched one (AVX2 without AVX-512),
``EngineConfig.batch_invariance = auto`` pads every lone decode row with a throwaway second row
(docs/determinism.md). This times, in interleaved rounds (the minimum is the cost, the median what a
busy machine gives), one decode step of one sequence of 200 tokens, unpadded and padded, and the
engine's single-stream generation (64 greedy tokens) with ``batch_invariance`` off and on; and says
whether this host needs the padding (the engine's own probe).

    .venv/bin/python benchmarks/engine/batch_invariance.py [--rounds 5] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from mcp2026ai.bundled import bundled_model_path
from mcp2026ai.generation.config import BatchInvariance, EngineConfig
from mcp2026ai.generation.engine import Engine, build_engine
from mcp2026ai.generation.types import GenerationRequest, SamplingParams
from mcp2026ai.ir.llm_convert import convert_llm
from mcp2026ai.ir.llm_info import LLMPrecision, load_llm_info
from mcp2026ai.runtime.onnx_decoder import OnnxDecoder

CACHE = Path(__file__).resolve().parents[2] / ".cache" / "llm"
LENGTH = 200
TOKENS = 64


def step_ms(run: Callable[[], object], repeats: int = 20) -> float:
    """Fastest wall ms of ``repeats`` runs after a warm one."""
    run()
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - started)
    return best * 1000


def tokens_per_s(engine: Engine) -> float:
    ids = engine.tokenizer.chat_ids([{"role": "user", "content": "Tell me about the sea."}])
    params = SamplingParams(max_tokens=TOKENS, temperature=0, ignore_eos=True)

    async def one() -> float:
        started = time.perf_counter()
        await engine.submit(GenerationRequest(f"b{time.monotonic_ns()}", ids, params)).collect(1)
        return TOKENS / (time.perf_counter() - started)

    return asyncio.run(one())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", type=Path)
    arguments = parser.parse_args()
    folder = convert_llm(bundled_model_path("smollm2"), LLMPrecision.INT4, CACHE)
    decoder = OnnxDecoder(folder, load_llm_info(folder), num_slots=2, max_len=LENGTH + 8)
    needs_padding = not decoder.lone_row_matches_batched()
    decoder.prefill(0, list(range(1, LENGTH)))
    engines = {mode: build_engine("smollm2", folder, EngineConfig(batch_invariance=mode)) for mode in BatchInvariance}
    figures: dict[str, list[float]] = {"step alone ms": [], "step padded ms": [], "off tok/s": [], "on tok/s": []}
    for _ in range(arguments.rounds):
        figures["step alone ms"].append(step_ms(lambda: decoder.decode([5], [LENGTH])))
        figures["step padded ms"].append(step_ms(lambda: decoder.decode([5, 0], [LENGTH, 1])))
        figures["off tok/s"].append(tokens_per_s(engines[BatchInvariance.OFF]))
        figures["on tok/s"].append(tokens_per_s(engines[BatchInvariance.ON]))
    for engine in engines.values():
        engine.close()
    report = {
        "host_needs_padding": needs_padding,
        **{name: {"min": min(v), "median": statistics.median(v), "max": max(v)} for name, v in figures.items()},
        "padded/alone step (min)": min(figures["step padded ms"]) / min(figures["step alone ms"]),
        "on/off tok/s (max)": max(figures["on tok/s"]) / max(figures["off tok/s"]),
    }
    print(json.dumps(report, indent=2))
    if arguments.json:
        arguments.json.write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
