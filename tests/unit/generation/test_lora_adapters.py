"""LoRA adapters on SmolLM2-135M: the fp32 import with an adapter gives transformers + peft (merged)'s
greedy tokens, the base's answers are unchanged with adapters loaded, and the int4 import's agreement
with fp32 is not lowered by an adapter by more than 5 points.

Marked slow: the engines and the transformers reference take about a minute on two cores (the fp32
and int4 conversions and the reference folder are cached in .cache/llm). To keep it there: the
references run torch on one thread (``tests/support/torch_reference.py``), the fp32 engine's answers
without an adapter are computed once for the module (``base_answers``), and the int4 test's fp32
reference answers run in batches of 8 (``max_num_seqs``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from mcp2026ai.generation.config import EngineConfig
from mcp2026ai.generation.engine import Engine, build_engine
from mcp2026ai.generation.types import GenerationRequest, SamplingParams
from mcp2026ai.ir.lora_adapter import read_adapter
from tests.support.llm import chat_ids
from tests.support.lora import PROMPTS, make_adapter, merged_reference
from tests.support.torch_reference import reference_greedy

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]
TOKENS = 24
EOS = {2}
LORA = {"max_loras": 2, "max_lora_rank": 8, "max_num_seqs": 8, "max_model_len": 256, "prefix_cache_mb": 0}
CHECKED = PROMPTS[:8]
"""The prompts whose greedy tokens are compared with transformers + peft: 8 of the 20 (each costs a
transformers generate); a wrong adapter delta (scale, target, layer) changes tokens within these 8 x 24."""


@pytest.fixture(scope="module")
def adapters(tmp_path_factory: pytest.TempPathFactory, smollm2_hf: Path) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("adapters")
    return {name: make_adapter(smollm2_hf, root / name, seed) for name, seed in (("sql", 1), ("poet", 2))}


@pytest.fixture(scope="module")
def fp32_lora(smollm2_fp32: Path, adapters: dict[str, Path]) -> Iterator[Engine]:
    engine = build_engine("smollm2-fp32", smollm2_fp32, EngineConfig(**LORA))
    for name, folder in adapters.items():
        engine.load_adapter(name, read_adapter(folder))
    yield engine
    engine.close()


def greedy(engine: Engine, ids: list[int], adapter: str | None, tokens: int = TOKENS) -> list[int]:
    async def run() -> list[int]:
        params = SamplingParams(max_tokens=tokens, temperature=0)
        stream = engine.submit(GenerationRequest(f"{adapter}-{len(ids)}", ids, params, adapter=adapter))
        return (await stream.collect(1))[0].token_ids

    return asyncio.run(run())


@pytest.fixture(scope="module")
def base_answers(fp32_lora: Engine) -> dict[str, list[int]]:
    """The fp32 engine's greedy answers without an adapter (each prompt alone, as ``greedy``), once for
    the module: both adapters' tests and the base test compare with them."""
    return {text: greedy(fp32_lora, chat_ids(fp32_lora, text), None) for text in CHECKED}


@pytest.mark.parametrize("name", ["sql", "poet"])
def test_fp32_adapter_greedy_tokens_equal_transformers_peft_merged(
    name: str, fp32_lora: Engine, adapters: dict[str, Path], smollm2_hf: Path, base_answers: dict[str, list[int]]
) -> None:
    reference = merged_reference(smollm2_hf, adapters[name])
    changed = 0
    for text in CHECKED:
        ids = chat_ids(fp32_lora, text)
        ours = greedy(fp32_lora, ids, name)
        assert ours == reference_greedy(reference, ids, TOKENS, EOS), text
        changed += ours != base_answers[text]
    assert changed >= len(CHECKED) // 2  # the adapter does change the answers (else the test proves little)


def test_base_answers_are_unchanged_with_adapters_loaded(
    fp32_lora: Engine, smollm2_fp32: Path, base_answers: dict[str, list[int]]
) -> None:
    plain = build_engine("plain", smollm2_fp32, EngineConfig(**{**LORA, "max_loras": 0}))
    try:
        assert plain.decoder.lora is None
        for text in CHECKED[:6]:
            ids = chat_ids(plain, text)
            assert base_answers[text] == greedy(plain, ids, None), text
        ids = chat_ids(plain, PROMPTS[0])
        with_adapters = fp32_lora.decoder.prompt_logits(3, ids)
        alone = plain.decoder.prompt_logits(3, ids)
        assert np.array_equal(with_adapters, alone)  # bit for bit: a row without an adapter adds exact zeros
    finally:
        plain.close()
        for engine in (plain, fp32_lora):
            engine.decoder.release(3)


def reference_answers(
    reference: Engine, adapters: list[str | None], tokens: int = 32
) -> dict[tuple[str | None, str], list[int]]:
    """``reference``'s greedy answer to every prompt under every adapter (None: the base), submitted
    together (the engine batches them): any fp32 answer serves as the teacher-forced text."""

    async def run() -> list[list[int]]:
        params = SamplingParams(max_tokens=tokens, temperature=0)
        streams = [
            reference.submit(
                GenerationRequest(f"{adapter}-{index}", chat_ids(reference, text), params, adapter=adapter)
            )
            for adapter in adapters
            for index, text in enumerate(PROMPTS)
        ]
        return [(await stream.collect(1))[0].token_ids for stream in streams]

    keys = [(adapter, text) for adapter in adapters for text in PROMPTS]
    return dict(zip(keys, asyncio.run(run()), strict=True))


def agreement(
    candidate: Engine, reference: Engine, adapter: str | None, answers: dict[tuple[str | None, str], list[int]]
) -> float:
    """Teacher-forced greedy agreement (as policy/generation.py measures precisions): ``candidate`` fed
    ``reference``'s greedy answer, the share of positions where it picks the same token."""
    agreed = total = 0
    slot = -1 if adapter is None or candidate.adapters is None else candidate.adapters.take(adapter)[0]
    for text in PROMPTS:
        prompt = chat_ids(reference, text)
        answer = answers[adapter, text]
        logits = candidate.decoder.verify(0, [*prompt, *answer[:-1]], len(prompt) + len(answer) - 1, slot)
        agreed += int(np.sum(np.argmax(logits[-len(answer) :], axis=1) == np.asarray(answer)))
        total += len(answer)
        candidate.decoder.release(0)
    return agreed / total


def test_int4_agreement_with_an_adapter_is_within_five_points_of_the_base(
    fp32_lora: Engine, smollm2_int4: Path, adapters: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    int4 = build_engine("smollm2-int4", smollm2_int4, EngineConfig(**LORA))
    try:
        for name, folder in adapters.items():
            int4.load_adapter(name, read_adapter(folder))
        answers = reference_answers(fp32_lora, [None, *adapters])
        base = agreement(int4, fp32_lora, None, answers)
        figures = {name: agreement(int4, fp32_lora, name, answers) for name in adapters}
    finally:
        int4.close()
    with capsys.disabled():
        adapters_line = ", ".join(f"{name} {value:.1%}" for name, value in figures.items())
        print(f"\nint4 vs fp32 greedy agreement: base {base:.1%}, {adapters_line}")
    for name, value in figures.items():
        assert value >= base - 0.05, (name, value, base)
