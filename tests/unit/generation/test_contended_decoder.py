"""While the CPUs are contended the decoder runs a blocking session: the same greedy tokens."""

from __future__ import annotations

import asyncio
from pathlib import Path

from mcp2026ai.generation.config import EngineConfig
from mcp2026ai.generation.engine import Engine, build_engine
from mcp2026ai.generation.types import GenerationRequest, SamplingParams
from mcp2026ai.runtime.cpu_load import LoadProbe

PROMPTS = ["What is the capital of France?", "Write a haiku about rain.", "List three prime numbers."]


async def greedy(engine: Engine, texts: list[str]) -> list[list[int]]:
    async def one(index: int, text: str) -> list[int]:
        chat = engine.tokenizer.apply_chat_template([{"role": "user", "content": text}])
        ids = engine.tokenizer.encode(chat, add_special_tokens=False)
        params = SamplingParams(max_tokens=16, temperature=0, ignore_eos=True)
        return (await engine.submit(GenerationRequest(f"c{index}", ids, params)).collect(1))[0].token_ids

    return list(await asyncio.gather(*(one(i, text) for i, text in enumerate(texts))))


def test_a_contended_machine_gets_the_blocking_session_and_the_same_tokens(smollm2_int4: Path) -> None:
    config = EngineConfig(max_num_seqs=4, max_model_len=256, threads=2, prefix_cache_mb=0)
    idle, busy = build_engine("idle", smollm2_int4, config), build_engine("busy", smollm2_int4, config)
    idle.decoder.load_probe = LoadProbe(cores=2, read=lambda: 0.0)
    busy.decoder.load_probe = LoadProbe(cores=2, read=lambda: 100.0)
    try:
        expected = asyncio.run(greedy(idle, PROMPTS))
        got = asyncio.run(greedy(busy, PROMPTS))
        assert not idle.decoder.last_run_blocking
        assert busy.decoder.last_run_blocking
        assert got == expected and all(len(tokens) == 16 for tokens in got)
    finally:
        idle.close()
        busy.close()
