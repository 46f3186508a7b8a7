"""A latency-critical prompt's time to first token on the engine alone and beside best-effort work, with
the step scheduler's class precedence on and off (``generation/class_precedence.py``), interleaved one
measurement at a time so that the host's load falls on every condition alike.

Each measurement of the ``beside`` conditions first starts ``--decoding`` best-effort sequences (a
batch's lines, ``--be-tokens`` forced tokens each) and waits until they decode, then submits one more
best-effort prompt together with the latency-critical one (a batch line arriving with it), and times
the latency-critical prompt from submission to its first token; the best-effort work is then aborted
and the engine left idle. ``alone`` submits the latency-critical prompt only. The conditions rotate
``alone``, ``on``, ``off`` for ``--rounds`` rounds. Prints p50/p90/p99 per condition and their
ratios to ``alone``; also, read off the plans, how many best-effort decode rows and prompt tokens ran
between the latency-critical prompt's admission and its first token.

    .venv/bin/python benchmarks/engine/class_precedence.py [--rounds 30]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from pathlib import Path
from typing import Any

from mcp2026ai.bundled import bundled_model_path
from mcp2026ai.contract import SLAClass
from mcp2026ai.generation.config import BatchInvariance, EngineConfig
from mcp2026ai.generation.engine import Engine, build_engine
from mcp2026ai.generation.step_plan import StepPlan
from mcp2026ai.generation.stream import GenerationStream
from mcp2026ai.generation.types import GenerationRequest, SamplingParams
from mcp2026ai.ir.llm_convert import convert_llm
from mcp2026ai.ir.llm_info import LLMPrecision

CACHE = Path(__file__).resolve().parents[2] / ".cache" / "llm"
CONDITIONS = ("alone", "on", "off")


def request(engine: Engine, text: str, sla_class: SLAClass, tokens: int) -> GenerationRequest:
    ids = engine.tokenizer.chat_ids([{"role": "user", "content": text}])
    params = SamplingParams(max_tokens=tokens, temperature=0, ignore_eos=True)
    return GenerationRequest(f"{sla_class.value}-{time.monotonic_ns()}", ids, params, sla_class=sla_class)


async def first_token(stream: GenerationStream) -> float:
    async for delta in stream:
        if delta.token_ids:
            return time.perf_counter()
    return time.perf_counter()


async def idle(engine: Engine) -> None:
    while engine.busy:
        await asyncio.sleep(0.005)


async def measure(engine: Engine, condition: str, decoding: int, be_tokens: int, number: int) -> float:
    """Milliseconds from submission to the first token of one latency-critical prompt."""
    engine.scheduler.class_precedence = condition == "on"
    lines: list[GenerationStream] = []
    if condition != "alone":
        lines = [engine.submit(request(engine, f"Write about {number}-{i}.", SLAClass.BEST_EFFORT, be_tokens))
                 for i in range(decoding)]  # fmt: skip
        await asyncio.gather(*(first_token(line) for line in lines))
        lines.append(engine.submit(request(engine, f"Write about {number}.", SLAClass.BEST_EFFORT, be_tokens)))
    started = time.perf_counter()
    chat = engine.submit(request(engine, f"Question {number}: name a fruit.", SLAClass.LATENCY_CRITICAL, 2))
    first = await first_token(chat)
    async for _ in chat:
        pass
    for line in lines:
        line.abort()
    await idle(engine)
    return (first - started) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--decoding", type=int, default=2)
    parser.add_argument("--be-tokens", type=int, default=200)
    args = parser.parse_args()
    folder = convert_llm(bundled_model_path("smollm2"), LLMPrecision.INT4, CACHE)
    config = EngineConfig(max_num_seqs=8, max_model_len=512, batch_invariance=BatchInvariance.AUTO)
    engine = build_engine("smollm2", folder, config)
    plans: list[StepPlan] = []
    schedule = engine.scheduler.schedule

    def recorded(*call: Any, **named: Any) -> StepPlan:
        plans.append(schedule(*call, **named))
        return plans[-1]

    engine.scheduler.schedule = recorded  # type: ignore[method-assign]
    figures: dict[str, list[float]] = {condition: [] for condition in CONDITIONS}

    async def run() -> None:
        await measure(engine, "on", args.decoding, args.be_tokens, -1)  # warm-up
        for number in range(args.rounds):
            for condition in CONDITIONS[number % 3 :] + CONDITIONS[: number % 3]:
                figures[condition].append(await measure(engine, condition, args.decoding, args.be_tokens, number))

    try:
        asyncio.run(run())
    finally:
        engine.close()
    alone = statistics.quantiles(figures["alone"], n=100, method="inclusive")
    for condition, values in figures.items():
        cuts = statistics.quantiles(values, n=100, method="inclusive")
        print(
            f"{condition:6s} TTFT p50 {cuts[49]:6.1f} ms  p90 {cuts[89]:6.1f} ms  p99 {cuts[98]:6.1f} ms"
            f"  p90/alone {cuts[89] / alone[89]:.2f}  p99/alone {cuts[98] / alone[98]:.2f}  (n={len(values)})"
        )
    paused = sum(len(plan.precedence.paused) for plan in plans if plan.precedence)
    deferred = sum(1 for plan in plans if plan.precedence and plan.precedence.deferred)
    print(f"precedence: {paused} best-effort decode rows sat out, best-effort chunks deferred in {deferred} steps")


if __name__ == "__main__":
    main()
