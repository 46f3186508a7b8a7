"""The text-generation use case's own decisions: drain, model lookup, prompts, counting."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from mcp2026ai.dataplane.gate import AcceptGate
from mcp2026ai.dataplane.generation import GenerationHandlers, Prompt, ResultCodes, TextRequest
from mcp2026ai.errors import NotFoundError, UnavailableError
from mcp2026ai.generation.tokenizer import TextTokenizer
from mcp2026ai.observability import metrics
from mcp2026ai.registry import ModelRegistry
from mcp2026ai.serving.llms import GenerationModels

CODES = ResultCodes("openai", ok="200", cancelled="499", unexpected="500", of_error=lambda exc: type(exc).__name__)


def counted(code: str) -> float:
    labels = {"model": metrics.UNKNOWN_MODEL, "version": "", "protocol": "openai", "sla_class": "_unknown"}
    return metrics.REGISTRY.get_sample_value("mcp_requests_total", {**labels, "code": code}) or 0.0


def handlers(registry: ModelRegistry) -> tuple[GenerationHandlers, AcceptGate]:
    gate = AcceptGate()
    return GenerationHandlers(GenerationModels(registry), gate), gate


def test_an_unknown_model_is_refused_and_counted_under_the_unknown_label(registry: ModelRegistry) -> None:
    generation, _ = handlers(registry)
    before = counted("NotFoundError")
    with pytest.raises(NotFoundError, match="not a served language model"):
        asyncio.run(generation.start(TextRequest("nope", Prompt(text="hi")), CODES))
    assert counted("NotFoundError") == before + 1


def test_a_draining_server_refuses_before_anything_else(registry: ModelRegistry) -> None:
    generation, gate = handlers(registry)
    gate.close()
    before = counted("UnavailableError")
    with pytest.raises(UnavailableError, match="shutting down"):
        asyncio.run(generation.start(TextRequest("nope", Prompt(text="hi")), CODES))
    assert counted("UnavailableError") == before + 1


def test_prompts_become_token_ids_as_each_protocol_means_them(smollm2_int4: Path) -> None:
    tokenizer = TextTokenizer(smollm2_int4)
    assert Prompt(token_ids=(1, 2, 3)).token_ids_for(tokenizer) == [1, 2, 3]
    assert Prompt(text="Hello there").token_ids_for(tokenizer) == tokenizer.encode("Hello there")
    turns = ({"role": "user", "content": "Hi"},)
    templated = tokenizer.encode(tokenizer.apply_chat_template(turns), add_special_tokens=False)
    assert Prompt(messages=turns).token_ids_for(tokenizer) == templated
    assert Prompt(messages=turns).characters() == 2 and Prompt(text="abc").characters() == 3
