"""A long prompt arriving while streams decode: how long the running streams wait, with and without
chunked prefill (the engine alone, no server).

Converts (or reuses from .cache/llm) SmolLM2-135M-Instruct's int4 decoder, then per round and per
variant (interleaved, so a busy spell on this shared machine disturbs all of them alike):
``--streams`` greedy requests (~128 prompt tokens) decode; once each has its first token, a
``--long``-token prompt is submitted. Reported: the largest gap between two tokens of any running
stream while the long prompt is prefilled, over their median ITL; the long prompt's TTFT, over its
TTFT alone (the same prompt on the idle engine, the same variant).

Variants: ``whole`` (one run per prompt: chunk and budget above the prompt) and ``chunk=N`` for each
``--chunks`` (the step budget: streams + N).

    .venv/bin/python benchmarks/engine/long_prompt.py [--rounds 3] [--chunks 64 128] [--long 1900]
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repo root: benchmarks.* imports

from benchmarks.engine.generation_engine import prompt_ids
from mcp2026ai.bundled import bundled_model_path
from mcp2026ai.generation.config import EngineConfig
from mcp2026ai.generation.engine import Engine, build_engine
from mcp2026ai.generation.types import GenerationRequest, SamplingParams
from mcp2026ai.ir.llm_convert import convert_llm
from mcp2026ai.ir.llm_info import LLMPrecision

CACHE = Path(__file__).resolve().parents[2] / ".cache" / "llm"


def long_prompt(engine: Engine, length: int) -> list[int]:
    text = " ".join(f"Line {i}: the keeper lit the lamp and wrote the weather in the log." for i in range(400))
    ids = engine.tokenizer.encode(text, add_special_tokens=False)
    return ids[:length]


async def stamped(engine: Engine, ids: list[int], tokens: int, tag: str, first: asyncio.Event) -> list[float]:
    params = SamplingParams(max_tokens=tokens, temperature=0, ignore_eos=True)
    stream = engine.submit(GenerationRequest(tag, ids, params))
    stamps: list[float] = []
    async for delta in stream:
        stamps.extend([time.perf_counter()] * len(delta.token_ids))
        first.set()
    return stamps


async def scenario(engine: Engine, streams: int, long: list[int], tag: str) -> dict[str, float]:
    """Streams decoding, then the long prompt: the largest gap of the streams while it prefilled (gaps
    that overlap its submission .. first token), their median ITL over the whole run, its TTFT."""
    events = [asyncio.Event() for _ in range(streams)]
    running = [
        asyncio.create_task(stamped(engine, prompt_ids(engine, i, 110), 160, f"{tag}-{i}", events[i]))
        for i in range(streams)
    ]
    for event in events:
        await event.wait()
    await asyncio.sleep(0.05)
    submitted = time.perf_counter()
    long_stamps = await stamped(engine, long, 2, f"{tag}-long", asyncio.Event())
    stamps = await asyncio.gather(*running)
    pairs = [(a, b) for s in stamps for a, b in itertools.pairwise(s) if b > a]
    gaps = [b - a for a, b in pairs]
    window = [b - a for a, b in pairs if a <= long_stamps[0] and b >= submitted]
    return {
        "max_gap_ratio": max(window) / statistics.median(gaps),
        "max_gap_ms": max(window) * 1000,
        "itl_p50_ms": statistics.median(gaps) * 1000,
        "ttft_ms": (long_stamps[0] - submitted) * 1000,
    }


async def alone(engine: Engine, long: list[int]) -> float:
    started = time.perf_counter()
    stamps = await stamped(engine, long, 2, "alone", asyncio.Event())
    return (stamps[0] - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--streams", type=int, default=8)
    parser.add_argument("--long", type=int, default=1900)
    parser.add_argument("--chunks", type=int, nargs="+", default=[64, 128])
    parser.add_argument("--threads", type=int, default=0)
    args = parser.parse_args()
    folder = convert_llm(bundled_model_path("smollm2"), LLMPrecision.INT4, CACHE)
    base = {"max_num_seqs": args.streams + 1, "max_model_len": 2048, "threads": args.threads, "prefix_cache_mb": 0}
    variants = {"whole": EngineConfig(**base, prefill_chunk_tokens=2048, max_num_batched_tokens=4096)}
    for chunk in args.chunks:
        variants[f"chunk={chunk}"] = EngineConfig(
            **base, prefill_chunk_tokens=chunk, max_num_batched_tokens=args.streams + 1 + chunk
        )
    engines = {name: build_engine(name, folder, config) for name, config in variants.items()}
    results: dict[str, list[dict[str, float]]] = {name: [] for name in engines}
    try:
        long = long_prompt(next(iter(engines.values())), args.long)
        loads = [Path("/proc/loadavg").read_text().split()[0]]
        for index in range(args.rounds):
            for name, engine in engines.items():
                figures = asyncio.run(scenario(engine, args.streams, long, f"r{index}"))
                figures["alone_ms"] = asyncio.run(alone(engine, long))
                results[name].append(figures)
        loads.append(Path("/proc/loadavg").read_text().split()[0])
    finally:
        for engine in engines.values():
            engine.close()
    print(
        f"{args.streams} streams decoding, then a {len(long)}-token prompt; {args.rounds} interleaved rounds, "
        f"min / median / max; load average {loads[0]} -> {loads[1]}"
    )
    print("| variant | max gap / ITL p50 | max gap (ms) | ITL p50 (ms) | long TTFT (ms) | TTFT alone (ms) | ratio |")
    print("|---|---|---|---|---|---|---|")
    for name, rounds in results.items():

        def spread(values: list[float], digits: int = 0) -> str:
            return " / ".join(f"{v:.{digits}f}" for v in (min(values), statistics.median(values), max(values)))

        ratio = [r["ttft_ms"] / r["alone_ms"] for r in rounds]
        gap_ratio, gap_ms = [r["max_gap_ratio"] for r in rounds], [r["max_gap_ms"] for r in rounds]
        print(
            f"| {name} | {spread(gap_ratio, 1)} | {spread(gap_ms)} "
            f"| {spread([r['itl_p50_ms'] for r in rounds], 1)} | {spread([r['ttft_ms'] for r in rounds])} "
            f"| {spread([r['alone_ms'] for r in rounds])} | {spread(ratio, 2)} |",
            flush=True,
        )


if __name__ == "__main__":
    main()
