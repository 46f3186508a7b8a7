"""Time to first token with and without prefix caching, on prompts sharing a long system prompt.

SmolLM2-135M-Instruct int4 (converted once into .cache/llm), the engine alone (no HTTP): each
request is a ~512-token system prompt shared by all, plus a short question of its own; one request
at a time, ``--requests`` of them per mode, the two modes interleaved round by round so outside load
hits both alike. Prints TTFT p50 / p90 per mode, their ratio, and the cache's hit rate. Greedy
answers are compared too: the cache must not change a token.

    .venv/bin/python benchmarks/llm/prefix_cache.py [--requests 12] [--system-tokens 512]
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
QUESTIONS = [
    "How tall is the tower?",
    "Who lit the lamp last night?",
    "What is the keeper's name?",
    "When do ships pass?",
    "Is the fog thick today?",
    "What colour is the door?",
    "How many steps are there?",
    "Where is the boat?",
]


def system_prompt(engine: Engine, tokens: int) -> str:
    text = "You are the assistant of an old lighthouse; answer briefly, kindly and with care. " * 40
    return str(engine.tokenizer.decode(engine.tokenizer.encode(text, add_special_tokens=False)[:tokens]))


async def ttft(engine: Engine, ids: list[int], tag: str) -> tuple[float, list[int]]:
    started = time.perf_counter()
    stream = engine.submit(GenerationRequest(tag, ids, SamplingParams(max_tokens=8, temperature=0, ignore_eos=True)))
    first = None
    tokens: list[int] = []
    async for delta in stream:
        if first is None and delta.token_ids:
            first = time.perf_counter() - started
        tokens += delta.token_ids
    assert first is not None
    return first, tokens


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=12)
    parser.add_argument("--system-tokens", type=int, default=512)
    args = parser.parse_args()
    folder = convert_llm(bundled_model_path("smollm2"), LLMPrecision.INT4, CACHE)
    engines = {
        mode: build_engine("smollm2", folder, EngineConfig(max_num_seqs=2, max_model_len=1024, prefix_cache_mb=mb))
        for mode, mb in (("prefix cache", 128.0), ("no cache", 0.0))
    }
    system = system_prompt(engines["no cache"], args.system_tokens)
    times: dict[str, list[float]] = {mode: [] for mode in engines}
    answers: dict[str, list[list[int]]] = {mode: [] for mode in engines}
    prompt_tokens = 0
    for index in range(args.requests):
        messages = [{"role": "system", "content": system}, {"role": "user", "content": QUESTIONS[index % 8]}]
        for mode, engine in engines.items():
            ids = engine.tokenizer.encode(engine.tokenizer.apply_chat_template(messages), add_special_tokens=False)
            prompt_tokens = len(ids)
            seconds, tokens = asyncio.run(ttft(engine, ids, f"{mode}-{index}"))
            times[mode].append(seconds * 1000)
            answers[mode].append(tokens)
    print(f"{args.requests} requests per mode, prompts of {prompt_tokens} tokens ({args.system_tokens} shared)")
    for mode, values in times.items():
        ordered = sorted(values)
        p90 = ordered[int(0.9 * (len(ordered) - 1))]
        print(f"  {mode:13s} TTFT p50 {statistics.median(values):7.1f} ms  p90 {p90:7.1f} ms")
    ratio = statistics.median(times["no cache"]) / statistics.median(times["prefix cache"])
    cached = engines["prefix cache"].prefix_cache
    hit_rate = cached.hit_rate if cached else 0.0
    print(f"  TTFT p50 ratio (no cache / cache): {ratio:.2f}x; hit rate {hit_rate:.0%}")
    print(f"  greedy answers identical: {answers['prefix cache'] == answers['no cache']}")
    for engine in engines.values():
        engine.close()


if __name__ == "__main__":
    main()
