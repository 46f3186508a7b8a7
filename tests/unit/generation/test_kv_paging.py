"""The engine on a small KV block budget (real SmolLM2 int4): more sequences than a static
reservation would admit, preemption with recompute when the blocks run out, answers unchanged."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.generation.config import BatchInvariance, EngineConfig
from mcp2026ai.generation.engine import Engine, build_engine
from mcp2026ai.generation.types import GenerationRequest, SamplingParams
from tests.support.llm import chat_ids

pytestmark = pytest.mark.timeout(240)
QUESTIONS = ["Name a river.", "What is rain?", "Count to five.", "Say hello.", "Name a bird.", "What is ice?"]
BLOCK_MB = 60 * 3 * 64 * 4 * 16 / (1 << 20)  # SmolLM2: 30 layers x K,V x 3 KV heads x 64 x fp32, 16 tokens


async def generate_all(engine: Engine, prompts: list[list[int]], tokens: int) -> list[list[int]]:
    params = SamplingParams(max_tokens=tokens, temperature=0, ignore_eos=True)
    streams = [engine.submit(GenerationRequest(f"r{i}", ids, params)) for i, ids in enumerate(prompts)]
    return [(await stream.collect(1))[0].token_ids for stream in streams]


def test_a_small_block_budget_preempts_and_recomputes_without_changing_answers(smollm2_int4: Path) -> None:
    invariant = BatchInvariance.AUTO  # preemption changes what runs beside each sequence
    roomy = build_engine(
        "smollm2", smollm2_int4, EngineConfig(max_num_seqs=6, max_model_len=256, batch_invariance=invariant)
    )
    tight = build_engine(
        "smollm2",
        smollm2_int4,
        EngineConfig(max_num_seqs=6, max_model_len=256, kv_cache_mb=24 * BLOCK_MB + 0.01, batch_invariance=invariant),
    )
    try:
        assert tight.blocks.num_blocks == 24 and roomy.blocks.num_blocks == 6 * 256 // 16
        prompts = [chat_ids(tight, text) for text in QUESTIONS]  # ~30 tokens each, +60 generated: 6 blocks each
        expected = asyncio.run(generate_all(roomy, prompts, 60))
        found = asyncio.run(generate_all(tight, prompts, 60))
        assert found == expected
        assert tight.blocks.stats().preemptions > 0  # 6 x 6 blocks do not fit in 24: some were recomputed
        deadline = time.monotonic() + 5  # the last sequences leave right after their final delta
        while tight.blocks.stats().used_blocks or tight.slots.active:
            assert time.monotonic() < deadline, f"blocks not given back: {tight.blocks.stats()}"
            time.sleep(0.01)
    finally:
        roomy.close()
        tight.close()


def test_a_request_larger_than_the_whole_cache_is_refused(smollm2_int4: Path) -> None:
    engine = build_engine("smollm2", smollm2_int4, EngineConfig(max_num_seqs=2, max_model_len=512, kv_cache_mb=4))
    try:
        ids = chat_ids(engine, "Tell me a story.")

        async def submit() -> None:
            engine.submit(GenerationRequest("big", ids, SamplingParams(max_tokens=200)))

        with pytest.raises(InvalidArgumentError, match=r"need \d+ KV blocks of 16 tokens; the KV cache holds 5"):
            asyncio.run(submit())
    finally:
        engine.close()


def test_the_contract_memory_budget_sizes_the_kv_pool(tmp_path: Path) -> None:
    from mcp2026ai.contract import parse_contract
    from mcp2026ai.errors import ContractError
    from mcp2026ai.policy.generation import PROCESS_OVERHEAD_MB
    from mcp2026ai.registry import ModelVersion, Stage
    from mcp2026ai.registry.llm_bundle import TEXT_SIGNATURE
    from mcp2026ai.serving.llms import engine_config

    (tmp_path / "model.onnx").write_bytes(b"\0" * (1 << 20))
    (tmp_path / "model.onnx.data").write_bytes(b"\0" * (99 << 20))  # 100 MiB of weights

    def record(memory_mb: float | None) -> ModelVersion:
        contract = parse_contract({"resources": {"memory_mb": memory_mb}} if memory_mb else {})
        return ModelVersion(
            name="m",
            version="1.0.0",
            stage=Stage.DEV,
            format="llm",
            digest="0" * 64,
            signature=TEXT_SIGNATURE,
            contract=contract,
        )

    base = EngineConfig()
    assert engine_config(base, record(None), tmp_path) is base
    sized = engine_config(base, record(400 + PROCESS_OVERHEAD_MB), tmp_path)
    assert sized.kv_cache_mb == pytest.approx(300)
    assert engine_config(EngineConfig(kv_cache_mb=50), record(900), tmp_path).kv_cache_mb == 50  # the server's wins
    with pytest.raises(ContractError, match=r"memory_mb 250 leaves no KV cache: the weights take 100 MiB"):
        engine_config(base, record(250), tmp_path)
