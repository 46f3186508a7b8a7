"""Concurrent sequences at one KV memory budget: the paged block pool against a static
``max_model_len`` reservation, on the real engine (SmolLM2-135M int4, no HTTP).

Static: ``--static-seqs`` slots of ``--max-len`` tokens each (what the engine reserved before: the
budget is their memory). Paged: the same budget as 16-token blocks, with up to 4x the slots; a
sequence takes blocks as it grows. The same ``--requests`` greedy requests (~60-token prompts,
``--tokens`` output tokens, EOS ignored) are submitted at once to each engine. Printed: peak
concurrent sequences, output tokens/s, KV fragmentation (reserved-but-unfilled / reserved: for the
static reservation, of its slots' max_model_len tokens; for the pool, of the blocks held, while at
least half of it is in use), preemptions, and whether every answer matched.

    .venv/bin/python benchmarks/llm/kv_paging.py [--requests 32] [--tokens 64] [--static-seqs 4] [--max-len 512]
"""

from __future__ import annotations

import argparse
import asyncio
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


def prompts(engine: Engine, count: int) -> list[list[int]]:
    found = []
    for index in range(count):
        text = f"Request {index}: in a few sentences, tell me what is most surprising about {TOPICS[index % 10]}."
        chat = engine.tokenizer.apply_chat_template([{"role": "user", "content": text}])
        found.append(engine.tokenizer.encode(chat, add_special_tokens=False))
    return found


async def run(engine: Engine, ids: list[list[int]], tokens: int, static: bool) -> dict[str, object]:
    params = SamplingParams(max_tokens=tokens, temperature=0, ignore_eos=True)
    peak, fragmentation = 0, []
    done = False

    async def poll() -> None:
        nonlocal peak
        while not done:
            peak = max(peak, engine.slots.active)
            stats = engine.blocks.stats()
            if static and engine.slots.active:  # what a max_model_len reservation per slot leaves unfilled
                fragmentation.append(1 - stats.filled_tokens / (engine.slots.active * engine.max_len))
            elif not static and stats.usage >= 0.5:
                fragmentation.append(stats.fragmentation)
            await asyncio.sleep(0.005)

    poller = asyncio.create_task(poll())
    started = time.perf_counter()
    streams = [engine.submit(GenerationRequest(f"r{i}", p, params)) for i, p in enumerate(ids)]
    answers = [(await stream.collect(1))[0].token_ids for stream in streams]
    elapsed = time.perf_counter() - started
    done = True
    await poller
    return {
        "peak": peak,
        "tok_s": sum(len(a) for a in answers) / elapsed,
        "fragmentation": statistics.mean(fragmentation) if fragmentation else 0.0,
        "preemptions": engine.blocks.stats().preemptions,
        "answers": answers,
        "blocks": engine.blocks.num_blocks,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=32)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--static-seqs", type=int, default=4)
    parser.add_argument("--max-len", type=int, default=512)
    args = parser.parse_args()
    folder = convert_llm(bundled_model_path("smollm2"), LLMPrecision.INT4, CACHE)
    static = build_engine("smollm2", folder, EngineConfig(max_num_seqs=args.static_seqs, max_model_len=args.max_len))
    budget_mb = static.blocks.num_blocks * static.decoder.bytes_per_token * 16 / (1 << 20)
    paged = build_engine(
        "smollm2",
        folder,
        EngineConfig(max_num_seqs=4 * args.static_seqs, max_model_len=args.max_len, kv_cache_mb=budget_mb + 0.01),
    )
    ids = prompts(static, args.requests)
    results = {}
    for name, engine in (("static reservation", static), ("paged blocks", paged)):
        results[name] = asyncio.run(run(engine, ids, args.tokens, static=engine is static))
        engine.close()
    print(
        f"KV budget {budget_mb:.1f} MiB ({static.blocks.num_blocks} blocks of 16 tokens); {args.requests} requests, "
        f"prompts ~{statistics.mean(len(p) for p in ids):.0f} tokens + {args.tokens} generated"
    )
    for name, row in results.items():
        print(
            f"  {name:18s} peak {row['peak']:3d} sequences  {row['tok_s']:6.1f} tok/s  "
            f"fragmentation {row['fragmentation']:.1%}  preemptions {row['preemptions']}"
        )
    ratio = results["paged blocks"]["peak"] / results["static reservation"]["peak"]  # type: ignore[operator]
    same = results["paged blocks"]["answers"] == results["static reservation"]["answers"]
    print(f"  concurrent sequences, paged / static: {ratio:.1f}x; greedy answers identical: {same}")


if __name__ == "__main__":
    main()
