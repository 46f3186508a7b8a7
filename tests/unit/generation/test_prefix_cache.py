"""Prefix caching: block keys, what is restored and remembered, LRU under the byte budget; and on the
real SmolLM2 decoder, greedy answers identical with and without the cache."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from mcp2026ai.generation.config import EngineConfig
from mcp2026ai.generation.engine import build_engine
from mcp2026ai.generation.prefix_cache import PrefixCache, block_keys
from mcp2026ai.generation.types import GenerationRequest, SamplingParams

pytestmark = pytest.mark.timeout(180)
BS = 4


class Slots:
    """Block storage over plain arrays: position p of slot s holds the value written there."""

    def __init__(self) -> None:
        self.kv = np.zeros((2, 1, 64, 1), np.float32)  # [slots, (layers x 2), positions, head]

    def prefill(self, slot: int, prompt: Sequence[int], cached: int) -> None:
        self.kv[slot, 0, cached : len(prompt), 0] = prompt[cached:]

    def read_block(self, slot: int, start: int, size: int) -> np.ndarray:
        return self.kv[slot, :, start : start + size].copy()[:, None]  # [1, kv_heads=1, size, 1]

    def write_blocks(self, slot: int, blocks: Sequence[np.ndarray]) -> None:
        for index, block in enumerate(blocks):
            self.kv[slot, :, index * BS : (index + 1) * BS] = block[:, 0]


def test_block_keys_name_whole_prefixes() -> None:
    a, b = block_keys([1, 2, 3, 4, 5, 6, 7, 8, 9], BS), block_keys([1, 2, 3, 4, 5, 6, 7, 0], BS)
    assert len(a) == 2 and len(b) == 2  # only full blocks
    assert a[0] == b[0] and a[1] != b[1]
    assert block_keys([9, 9, 9, 9, 5, 6, 7, 8], BS)[1] != a[1]  # same block, different prefix


def test_restore_copies_the_longest_cached_prefix_but_never_the_last_token() -> None:
    cache, slots = PrefixCache(1 << 20, BS), Slots()
    first = list(range(1, 13))  # three full blocks
    assert cache.restore(first, 0, slots) == 0
    slots.prefill(0, first, 0)
    cache.remember(first, 0, slots)
    shared = [*first[:8], 99, 98, 97, 96, 95]
    assert cache.restore(shared, 1, slots) == 8
    assert slots.kv[1, 0, :8, 0].tolist() == first[:8]
    assert cache.restore(first, 1, slots) == 8  # all 12 cached, but the last token is computed: 2 blocks
    assert cache.hit_tokens == 16 and cache.lookup_tokens == 12 + 13 + 12


def test_least_recently_used_blocks_go_first() -> None:
    slots = Slots()
    block_bytes = slots.read_block(0, 0, BS).nbytes
    cache = PrefixCache(2 * block_bytes, BS)
    for slot, prompt in enumerate(([1, 2, 3, 4, 5], [7, 7, 7, 7, 5])):
        slots.prefill(slot, prompt, 0)
        cache.remember(prompt, slot, slots)
    assert cache.restore([1, 2, 3, 4, 0], 0, slots) == 4  # touch the first: the second is now oldest
    slots.prefill(1, [8, 8, 8, 8, 5], 0)
    cache.remember([8, 8, 8, 8, 5], 1, slots)
    assert cache.used_bytes == 2 * block_bytes
    assert cache.restore([7, 7, 7, 7, 0], 0, slots) == 0
    assert cache.restore([1, 2, 3, 4, 0], 0, slots) == 4


def test_greedy_answers_are_the_same_with_the_cache(smollm2_int4: Path) -> None:
    system = "You are a careful assistant for a lighthouse. " * 12
    questions = ["How tall is it?", "When was it built?", "Who keeps it?"]

    def answers(prefix_cache_mb: float) -> tuple[list[list[int]], float]:
        engine = build_engine(
            "smollm2", smollm2_int4, EngineConfig(max_num_seqs=4, max_model_len=512, prefix_cache_mb=prefix_cache_mb)
        )
        try:
            found = []
            for question in questions:
                messages = [{"role": "system", "content": system}, {"role": "user", "content": question}]
                ids = engine.tokenizer.encode(engine.tokenizer.apply_chat_template(messages), add_special_tokens=False)
                params = SamplingParams(max_tokens=12, temperature=0, ignore_eos=True)

                async def one(ids: list[int] = ids, params: SamplingParams = params, name: str = question) -> list[int]:
                    stream = engine.submit(GenerationRequest(name, ids, params))
                    return (await stream.collect(1))[0].token_ids

                found.append(asyncio.run(one()))
            return found, engine.prefix_cache.hit_rate if engine.prefix_cache else 0.0
        finally:
            engine.close()

    cached, hit_rate = answers(64)
    plain, _ = answers(0)
    assert cached == plain
    assert hit_rate > 0.5  # the second and third prompts reuse the system prompt's blocks
