"""Speculative decoding (prompt lookup) against one token per step, on a task that copies from its
input and on one that does not, at ``--concurrency`` (every running sequence drafts; sampled ones,
``--temperature`` above 0, keep their distribution by rejection sampling).

SmolLM2-135M-Instruct int4 (converted once into .cache/llm), the engine alone (no HTTP), greedy,
``--tokens`` output tokens; the two engines run the same prompts, interleaved round by round.
Prints output tokens/s per task and mode (all streams' tokens over the round's wall time, median and
range), the speed-up, the acceptance rate, and how far the first stream's answers agree (greedy
int4: identical up to near-ties, see docs/notebook/benchmarks.md).

    .venv/bin/python benchmarks/llm/speculative.py [--rounds 3] [--tokens 96] [--draft 4]
        [--concurrency 1] [--temperature 0]
"""

from __future__ import annotations

import argparse
import asyncio
import random
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
RANDOM_WORDS = "random words (free text, a prompt per stream)"
PASSAGE = (
    "The keeper climbed the one hundred and twelve stairs at dusk, lit the great lamp, wound the clockwork "
    "that turned the lens, and wrote in the log that the sea was calm, the wind came from the west, and the "
    "supply boat from the harbour would arrive on Thursday with oil, bread, two crates of apples and letters."
)
TASKS = {
    "rewrite (input-grounded)": f"Copy the following text, replacing 'keeper' with 'warden':\n\n{PASSAGE}",
    "story (open-ended)": "Write a short story about a lighthouse in winter.",
    RANDOM_WORDS: "",
}
"""Task -> the prompt every stream gets (the random-words task: each stream its own, as aiperf's synthetic prompts)."""


def prompts(engine: Engine, task: str, streams: int) -> list[list[int]]:
    """Each stream's prompt ids: the task's text for all, or 100 random words of PASSAGE for each."""
    texts = [TASKS[task]] * streams
    if task == RANDOM_WORDS:
        words = PASSAGE.replace(",", "").split()
        texts = [" ".join(random.Random(index).choices(words, k=100)) for index in range(streams)]
    chats = [engine.tokenizer.apply_chat_template([{"role": "user", "content": text}]) for text in texts]
    return [engine.tokenizer.encode(chat, add_special_tokens=False) for chat in chats]


async def timed(
    engine: Engine, prompt_ids: list[list[int]], tokens: int, temperature: float
) -> tuple[float, list[int]]:
    started = time.perf_counter()
    params = SamplingParams(max_tokens=tokens, temperature=temperature)
    streams = [engine.submit(GenerationRequest(f"b{i}", ids, params)) for i, ids in enumerate(prompt_ids)]
    answers = [(await stream.collect(1))[0].token_ids for stream in streams]
    return sum(len(answer) for answer in answers) / (time.perf_counter() - started), answers[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tokens", type=int, default=96)
    parser.add_argument("--draft", type=int, default=4)
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--temperature", type=float, default=0.0)
    args = parser.parse_args()
    folder = convert_llm(bundled_model_path("smollm2"), LLMPrecision.INT4, CACHE)
    seqs = args.concurrency
    engines = {
        "one token per step": build_engine("smollm2", folder, EngineConfig(max_num_seqs=seqs, max_model_len=1024)),
        "speculative": build_engine(
            "smollm2", folder, EngineConfig(max_num_seqs=seqs, max_model_len=1024, speculative_tokens=args.draft)
        ),
    }
    for task in TASKS:
        rates: dict[str, list[float]] = {mode: [] for mode in engines}
        answers: dict[str, list[int]] = {}
        spec = engines["speculative"].telemetry
        drafted, accepted = spec.drafted_tokens, spec.accepted_tokens
        for _ in range(args.rounds):
            for mode, engine in engines.items():
                rate, answers[mode] = asyncio.run(
                    timed(engine, prompts(engine, task, seqs), args.tokens, args.temperature)
                )
                rates[mode].append(rate)
        plain, fast = (statistics.median(rates[mode]) for mode in engines)
        acceptance = (spec.accepted_tokens - accepted) / max(1, spec.drafted_tokens - drafted)
        a, b = answers["speculative"], answers["one token per step"]
        same = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
        spread = {mode: f"{min(rates[mode]):.1f}-{max(rates[mode]):.1f}" for mode in engines}
        print(
            f"c={seqs}, temperature {args.temperature}, {task}: {plain:6.1f} ({spread['one token per step']}) -> "
            f"{fast:6.1f} ({spread['speculative']}) tok/s ({fast / plain:.2f}x), "
            f"drafted {spec.drafted_tokens - drafted} tokens, acceptance {acceptance:.0%}, "
            f"first stream's answers identical for the first {same} of {len(b)} tokens",
            flush=True,
        )
    for engine in engines.values():
        engine.close()


if __name__ == "__main__":
    main()
