"""The fp32 decoder's greedy tokens agree with transformers' on the same (de-quantized GGUF) weights.

Marked slow: the first run on a machine converts the fp32 decoder (519 MB, about 35 s) and the
reference folder (about 20 s), both cached in .cache/llm; later runs take a few seconds (transformers
on one torch thread: ``tests/support/torch_reference.py``).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from mcp2026ai.generation.config import EngineConfig
from mcp2026ai.generation.engine import build_engine
from mcp2026ai.generation.types import GenerationRequest, SamplingParams
from tests.support.torch_reference import one_torch_thread, reference_greedy

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]
PROMPTS = ["What is the capital of France?", "Write a haiku about autumn.", "How do I sort a list in Python?"]
TOKENS = 24
EOS = {2}


def test_fp32_greedy_tokens_match_transformers(smollm2_fp32: Path, smollm2_hf: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM

    engine = build_engine("smollm2-fp32", smollm2_fp32, EngineConfig(max_num_seqs=4, max_model_len=256))
    with one_torch_thread():
        model = AutoModelForCausalLM.from_pretrained(str(smollm2_hf), dtype=torch.float32)
    try:
        for text in PROMPTS:
            prompt = engine.tokenizer.apply_chat_template([{"role": "user", "content": text}])
            ids = engine.tokenizer.encode(prompt, add_special_tokens=False)
            expected = reference_greedy(model, ids, TOKENS, EOS)  # EOS ends both

            async def ours(ids: list[int] = ids, request_id: str = text) -> list[int]:
                params = SamplingParams(max_tokens=TOKENS, temperature=0)
                stream = engine.submit(GenerationRequest(request_id, ids, params))
                return (await stream.collect(1))[0].token_ids

            assert asyncio.run(ours()) == expected, text
    finally:
        engine.close()
