"""The cost of structure: a 20-property ``json_schema`` against free text at concurrency 8, and the
time to compile that schema (issue 37: tokens/s ratio at least 0.7, compile at most 100 ms, cached after).

SmolLM2-135M-Instruct int4 (converted once into .cache/llm), the engine alone (no HTTP), 8 requests at
once (max_num_seqs 8), temperature 0.8 with fixed seeds, ``--tokens`` max tokens. Rounds alternate
constrained and free batches; each prints output tokens/s (all tokens of the batch over its wall
time). The compile time is that of a schema new to the compiler each round (a new title); the cached
figure is a second compile of the same schema. The sampling figure is the grammar's share of one token (mask,
bits to booleans, masking) beside an unconstrained draw. Prints medians with min-max.

    .venv/bin/python benchmarks/llm/structured.py [--rounds 5] [--tokens 256]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from pathlib import Path

import numpy as np

from mcp2026ai.bundled import bundled_model_path
from mcp2026ai.generation.config import EngineConfig
from mcp2026ai.generation.engine import Engine, build_engine
from mcp2026ai.generation.sampling import Sampler
from mcp2026ai.generation.types import Constraint, ConstraintKind, GenerationRequest, SamplingParams
from mcp2026ai.ir.llm_convert import convert_llm
from mcp2026ai.ir.llm_info import LLMPrecision

CACHE = Path(__file__).resolve().parents[2] / ".cache" / "llm"
CONCURRENCY = 8
_KINDS = [
    {"type": "string", "maxLength": 24},
    {"type": "integer", "minimum": 0, "maximum": 1000},
    {"type": "number"},
    {"type": "boolean"},
    {"type": "string", "enum": ["low", "medium", "high"]},
]
FIELDS = [
    "name", "city", "country", "age", "height_cm", "weight_kg", "employed", "married", "risk", "priority",
    "email", "street", "zip", "children", "score", "rating", "verified", "active", "level", "tier",
]  # fmt: skip
SCHEMA = {
    "type": "object",
    "properties": {name: _KINDS[i % len(_KINDS)] for i, name in enumerate(FIELDS)},
    "required": FIELDS,
    "additionalProperties": False,
}
CONSTRAINT = Constraint(ConstraintKind.JSON_SCHEMA, json.dumps(SCHEMA, separators=(",", ":")), "benchmark")
PROMPT = "Invent a customer record with name, city, country, age and the other details, as JSON."


async def batch(engine: Engine, ids: list[int], tokens: int, constrained: bool, round_: int) -> float:
    """Output tokens/s of CONCURRENCY requests submitted at once."""
    started = time.perf_counter()
    streams = [
        engine.submit(
            GenerationRequest(
                f"r{round_}-{i}",
                ids,
                SamplingParams(max_tokens=tokens, temperature=0.8, seed=round_ * 100 + i),
                constraint=CONSTRAINT if constrained else None,
            )
        )
        for i in range(CONCURRENCY)
    ]
    choices = [(await stream.collect(1))[0] for stream in streams]
    if constrained:
        valid = sum(_is_json(choice.text) for choice in choices)
        print(f"  round {round_}: {valid}/{CONCURRENCY} constrained answers are complete JSON objects")
    return sum(len(choice.token_ids) for choice in choices) / (time.perf_counter() - started)


def _is_json(text: str) -> bool:
    try:
        return isinstance(json.loads(text), dict)
    except json.JSONDecodeError:
        return False


def compile_times(engine: Engine, rounds: int) -> tuple[list[float], list[float], float]:
    """Cold compile times (ms: a schema the compiler has not seen, the 20 properties under a new title
    each round), cached lookups (ms), and the one-off tokenizer setup (ms)."""
    started = time.perf_counter()
    engine.grammars.compile(Constraint(ConstraintKind.JSON_OBJECT, ""))
    setup = (time.perf_counter() - started) * 1000
    fresh, cached = [], []
    for round_ in range(rounds):
        schema = {**SCHEMA, "title": f"customer {round_} {time.time_ns()}"}
        constraint = Constraint(ConstraintKind.JSON_SCHEMA, json.dumps(schema, separators=(",", ":")))
        started = time.perf_counter()
        engine.grammars.compile(constraint)
        fresh.append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        engine.grammars.compile(constraint)
        cached.append((time.perf_counter() - started) * 1000)
    return fresh, cached, setup


def mask_overhead_us(engine: Engine) -> tuple[float, float]:
    """Per token, along a valid 20-property document: the grammar's share of the sampler (mask, its
    bits to booleans, masking the logits) and an unconstrained draw, in µs (medians: robust to noise)."""
    document = json.dumps({name: _example(kind) for name, kind in SCHEMA["properties"].items()})
    ids = engine.tokenizer.encode(document, add_special_tokens=False)
    matcher = engine.grammars.matcher(CONSTRAINT)
    sampler = Sampler(SamplingParams(temperature=0.8, seed=1), [], engine.info.vocab_size)
    logits = np.random.default_rng(0).standard_normal(engine.info.vocab_size).astype(np.float32)
    masked, free = [], []
    for token in ids:
        started = time.perf_counter()
        sampler.sample(logits, matcher.allowed())
        masked.append(time.perf_counter() - started)
        started = time.perf_counter()
        sampler.sample(logits)
        free.append(time.perf_counter() - started)
        matcher.accept(token)
    return statistics.median(masked) * 1e6, statistics.median(free) * 1e6


def _example(kind: dict[str, object]) -> object:
    if "enum" in kind:
        return "low"
    return {"string": "Ada", "integer": 7, "number": 1.5, "boolean": True}[str(kind["type"])]


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} (min {min(values):.2f}, max {max(values):.2f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--tokens", type=int, default=256)
    args = parser.parse_args()
    folder = convert_llm(bundled_model_path("smollm2"), LLMPrecision.INT4, CACHE)
    engine = build_engine("smollm2", folder, EngineConfig(max_num_seqs=CONCURRENCY, max_model_len=1024))
    fresh, cached, setup = compile_times(engine, args.rounds)
    masked_us, free_us = mask_overhead_us(engine)
    chat = engine.tokenizer.apply_chat_template([{"role": "user", "content": PROMPT}])
    ids = engine.tokenizer.encode(chat, add_special_tokens=False)
    rates: dict[bool, list[float]] = {True: [], False: []}
    for round_ in range(args.rounds):
        for constrained in (False, True):
            rates[constrained].append(asyncio.run(batch(engine, ids, args.tokens, constrained, round_)))
    engine.close()
    ratios = [c / f for c, f in zip(rates[True], rates[False], strict=True)]
    print(f"free text      tokens/s: {spread(rates[False])}")
    print(f"20-prop schema tokens/s: {spread(rates[True])}")
    print(f"ratio (per round)      : {spread(ratios)}  (target >= 0.7)")
    print(f"schema compile ms      : {spread(fresh)}  (target <= 100)")
    print(f"cached compile ms      : {spread(cached)}")
    print(f"tokenizer setup ms     : {setup:.0f} (once per engine, at its first constrained request)")
    print(f"sampling us per token  : {masked_us:.0f} constrained vs {free_us:.0f} free (medians)")


if __name__ == "__main__":
    main()
