"""Output tokens per second of the generation engine alone (no HTTP), at concurrency 1 and 8.

Converts (or reuses from .cache/llm) SmolLM2-135M-Instruct's int4 decoder, then runs greedy
requests of ~128 prompt tokens and exactly ``--tokens`` output tokens (EOS ignored), ``--rounds``
rounds per concurrency; prints tokens/s (all output tokens over the round's wall time), TTFT and
ITL percentiles. A measurement, not a test: numbers depend on the machine and its load.

    .venv/bin/python benchmarks/engine/generation_engine.py [--tokens 128] [--rounds 3] [--concurrency 1 8]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import statistics
import time
from pathlib import Path

from mcp2026ai.bundled import bundled_model_path
from mcp2026ai.generation.config import EngineConfig
from mcp2026ai.generation.engine import Engine, build_engine
from mcp2026ai.generation.types import GenerationRequest, SamplingParams
from mcp2026ai.ir.llm_convert import convert_llm
from mcp2026ai.ir.llm_info import LLMPrecision

CACHE = Path(__file__).resolve().parents[2] / ".cache" / "llm"
TOPICS = ["rivers", "compilers", "bees", "volcanoes", "chess", "bridges", "tea", "comets", "jazz", "forests"]


def prompt_ids(engine: Engine, index: int, length: int) -> list[int]:
    """A chat prompt of about ``length`` tokens, different per index (no shared prefix beyond the template)."""
    topic = TOPICS[index % len(TOPICS)]
    words = f"Request {index}: tell me everything about {topic}. " * 40
    ids = engine.tokenizer.encode(words, add_special_tokens=False)[:length]
    text = engine.tokenizer.decode(ids)
    prompt = engine.tokenizer.apply_chat_template([{"role": "user", "content": text}])
    return engine.tokenizer.encode(prompt, add_special_tokens=False)


async def one(engine: Engine, ids: list[int], tokens: int, tag: str) -> tuple[float, list[float], int]:
    started = time.perf_counter()
    stamps: list[float] = []
    stream = engine.submit(
        GenerationRequest(tag, ids, SamplingParams(max_tokens=tokens, temperature=0, ignore_eos=True))
    )
    async for delta in stream:
        stamps.extend([time.perf_counter()] * len(delta.token_ids))
    ttft = stamps[0] - started
    return ttft, [b - a for a, b in itertools.pairwise(stamps) if b > a], stream.usage.completion_tokens


async def round_at(engine: Engine, concurrency: int, tokens: int, prompt_len: int, offset: int) -> dict[str, float]:
    prompts = [prompt_ids(engine, offset + i, prompt_len) for i in range(concurrency)]
    started = time.perf_counter()
    results = await asyncio.gather(*(one(engine, ids, tokens, f"b{offset + i}") for i, ids in enumerate(prompts)))
    wall = time.perf_counter() - started
    ttfts = sorted(r[0] for r in results)
    gaps = sorted(g for r in results for g in r[1])
    return {
        "tok_s": sum(r[2] for r in results) / wall,
        "ttft_p50_ms": statistics.median(ttfts) * 1000,
        "itl_p50_ms": statistics.median(gaps) * 1000 if gaps else 0.0,
        "itl_p99_ms": gaps[int(0.99 * (len(gaps) - 1))] * 1000 if gaps else 0.0,
        "prompt_tokens": statistics.mean(len(ids) for ids in prompts),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--prompt-tokens", type=int, default=110, help="user text tokens (the template adds ~20)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8])
    parser.add_argument("--threads", type=int, default=0)
    args = parser.parse_args()
    folder = convert_llm(bundled_model_path("smollm2"), LLMPrecision.INT4, CACHE)
    config = EngineConfig(max_num_seqs=max(args.concurrency), max_model_len=512, threads=args.threads)
    engine = build_engine("smollm2", folder, config)
    try:
        asyncio.run(round_at(engine, 1, 8, args.prompt_tokens, 10_000))  # warm-up
        for concurrency in args.concurrency:
            rounds = [
                asyncio.run(round_at(engine, concurrency, args.tokens, args.prompt_tokens, r * 100))
                for r in range(args.rounds)
            ]
            best = max(rounds, key=lambda r: r["tok_s"])
            median = statistics.median(r["tok_s"] for r in rounds)
            print(
                f"c={concurrency}: {median:.0f} tok/s median of {args.rounds} (best {best['tok_s']:.0f}); "
                f"prompt {best['prompt_tokens']:.0f} tokens, TTFT p50 {best['ttft_p50_ms']:.0f} ms, "
                f"ITL p50 {best['itl_p50_ms']:.1f} ms p99 {best['itl_p99_ms']:.1f} ms",
                flush=True,
            )
    finally:
        engine.close()


if __name__ == "__main__":
    main()
