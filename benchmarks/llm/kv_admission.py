"""Concurrent sequences at one KV memory budget: paged blocks vs a static max_model_len reservation.

Drives the real block pool (``mcp2026ai.generation.kv_blocks``) with a seeded request trace and a
decode loop (every running sequence writes one token per step; a sequence that cannot grow is
preempted and re-queued, youngest first; a waiting one is admitted when its prompt's blocks are
free, keeping one block per running sequence in reserve). The static baseline reserves
``max_model_len`` tokens per sequence, as a server without paging must. Memory per token is
SmolLM2-135M's (30 layers x keys and values x 3 KV heads x 64 dims, fp32).

    .venv/bin/python benchmarks/llm/kv_admission.py [--budget-mib 256] [--max-model-len 2048] [--requests 400]
"""

from __future__ import annotations

import argparse
import random
import statistics
from collections import deque
from dataclasses import dataclass

from mcp2026ai.generation.kv_blocks import KVBlockPool

BYTES_PER_TOKEN = 30 * 2 * 3 * 64 * 4


@dataclass
class Request:
    id: int
    prompt: list[int]
    output_tokens: int
    generated: int = 0


def trace(count: int, seed: int) -> list[Request]:
    """Chat-like lengths: prompts 64-512 tokens, answers 32-512 tokens."""
    rng = random.Random(seed)
    requests = []
    for index in range(count):
        prompt = [rng.randrange(49152) for _ in range(rng.randint(64, 512))]
        requests.append(Request(index, prompt, rng.randint(32, 512)))
    return requests


def run_paged(requests: list[Request], pool: KVBlockPool) -> dict[str, float]:
    waiting: deque[Request] = deque(requests)
    running: list[Request] = []
    concurrency: list[int] = []
    fragmentation: list[float] = []
    while waiting or running:
        while waiting and pool.can_allocate(waiting[0].prompt, reserve_blocks=len(running)):
            request = waiting.popleft()
            request.generated = 0  # a preempted sequence is recomputed from its prompt
            pool.allocate(request.id, request.prompt)
            running.append(request)
        for request in list(running):
            if request not in running:
                continue  # preempted earlier in this step
            while not pool.append(request.id, 1):
                victim = running.pop()  # youngest first
                pool.preempt(victim.id)
                waiting.appendleft(victim)
                if victim is request:
                    break
            else:
                request.generated += 1
                if request.generated >= request.output_tokens:
                    running.remove(request)
                    pool.free(request.id)
        if running:
            concurrency.append(len(running))
            fragmentation.append(pool.stats().fragmentation)
    stats = pool.stats()
    return {
        "peak_sequences": max(concurrency),
        "mean_sequences": statistics.fmean(concurrency),
        "mean_fragmentation": statistics.fmean(fragmentation),
        "max_fragmentation": max(fragmentation),
        "preemptions": stats.preemptions,
        "steps": len(concurrency),
    }


def run_static(requests: list[Request], budget_bytes: int, max_model_len: int) -> dict[str, float]:
    slots = budget_bytes // (max_model_len * BYTES_PER_TOKEN)
    used = [len(r.prompt) + r.output_tokens / 2 for r in requests]  # mean filled while a slot is held
    return {
        "peak_sequences": slots,
        "mean_sequences": slots,
        "mean_fragmentation": 1 - statistics.fmean(used) / max_model_len,
        "max_fragmentation": 1 - min(used) / max_model_len,
        "preemptions": 0,
        "steps": 0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget-mib", type=int, default=256)
    parser.add_argument("--max-model-len", type=int, default=2048)
    parser.add_argument("--block-size", type=int, default=16)
    parser.add_argument("--requests", type=int, default=400)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    budget = args.budget_mib << 20
    requests = trace(args.requests, args.seed)
    pool = KVBlockPool.from_memory_budget(budget, BYTES_PER_TOKEN, args.block_size, prefix_caching=False)
    paged = run_paged(requests, pool)
    static = run_static(requests, budget, args.max_model_len)
    print(
        f"KV budget {args.budget_mib} MiB = {pool.num_blocks} blocks of {args.block_size} tokens "
        f"({BYTES_PER_TOKEN} B/token); {args.requests} requests; max_model_len {args.max_model_len}"
    )
    print("| allocator | peak seqs | mean seqs | mean fragmentation | max fragmentation | preemptions |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, row in (("static max_model_len", static), ("paged blocks", paged)):
        print(
            f"| {name} | {row['peak_sequences']:.0f} | {row['mean_sequences']:.1f} | "
            f"{row['mean_fragmentation']:.1%} | {row['max_fragmentation']:.1%} | {row['preemptions']:.0f} |"
        )
    print(f"paged / static mean concurrent sequences: {paged['mean_sequences'] / static['mean_sequences']:.1f}x")


if __name__ == "__main__":
    main()
