"""Constrained decoding on SmolLM2's tokenizer: compile, cache, refuse by name, and masks that the
sampler honours while free sequences share the batch."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.generation.config import EngineConfig
from mcp2026ai.generation.engine import Engine, build_engine
from mcp2026ai.generation.grammar import closed_objects
from mcp2026ai.generation.sampling import Sampler
from mcp2026ai.generation.types import Constraint, ConstraintKind, GenerationRequest, SamplingParams

SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string", "maxLength": 12}, "rank": {"type": "integer", "maximum": 99}},
    "required": ["city", "rank"],
}
JSON = Constraint(ConstraintKind.JSON_SCHEMA, json.dumps(SCHEMA), "response_format")


@pytest.fixture(scope="module")
def engine(smollm2_int4: Path) -> Iterator[Engine]:
    running = build_engine("smollm2", smollm2_int4, EngineConfig(max_num_seqs=4, max_model_len=512))
    yield running
    running.close()


def test_compiled_grammars_are_cached_by_constraint(engine: Engine) -> None:
    first = engine.grammars.compile(JSON)
    assert engine.grammars.cached(JSON) and engine.grammars.compile(JSON) is first
    assert engine.grammars.compile(Constraint(ConstraintKind.JSON_SCHEMA, JSON.spec, "other")) is first


def test_what_the_engine_cannot_honour_is_refused_naming_field_and_feature(engine: Engine) -> None:
    for spec, feature in [
        ({"type": "object", "not": {"type": "string"}}, '"not"'),
        ({"type": "array", "uniqueItems": True}, "uniqueItems"),
        ({"type": "wat"}, "wat"),
    ]:
        with pytest.raises(InvalidArgumentError, match=f"response_format.*{feature}"):
            engine.grammars.compile(Constraint(ConstraintKind.JSON_SCHEMA, json.dumps(spec), "response_format"))
    with pytest.raises(InvalidArgumentError, match="guided_regex"):
        engine.grammars.compile(Constraint(ConstraintKind.REGEX, "[a-z", "guided_regex"))


def test_the_mask_limits_the_draw_and_advances_with_each_token(engine: Engine) -> None:
    matcher = engine.grammars.matcher(Constraint(ConstraintKind.CHOICE, '["yes", "no"]'))
    allowed = matcher.allowed()
    assert allowed.dtype == bool and 0 < allowed.sum() < 10
    sampler = Sampler(SamplingParams(temperature=1.0, seed=3), [], engine.info.vocab_size)
    logits = np.random.default_rng(0).standard_normal(engine.info.vocab_size).astype(np.float32)
    token, _ = sampler.sample(logits, allowed)
    assert allowed[token]
    matcher.accept(token)
    assert engine.tokenizer.decode([token]) in {"yes", "no", "y", "n", "ye"}


def test_constrained_and_free_sequences_share_a_batch(engine: Engine) -> None:
    ids = engine.tokenizer.encode(engine.tokenizer.apply_chat_template([{"role": "user", "content": "A city?"}]))

    async def together() -> list[str]:
        streams = [
            engine.submit(
                GenerationRequest(
                    f"r{i}",
                    ids,
                    SamplingParams(max_tokens=40, temperature=0.8, seed=i),
                    constraint=JSON if i % 2 == 0 else None,
                )
            )
            for i in range(4)
        ]
        return [(await stream.collect(1))[0].text for stream in streams]

    texts = asyncio.run(together())
    for text in texts[0::2]:
        city = json.loads(text)
        assert set(city) == {"city", "rank"} and len(city["city"]) <= 12 and city["rank"] <= 99
    assert not all(text.startswith("{") for text in texts[1::2])


def test_objects_are_closed_unless_the_schema_says_otherwise() -> None:
    closed = closed_objects({"type": "object", "properties": {"a": {"type": "object", "properties": {}}}})
    assert closed["additionalProperties"] is False and closed["properties"]["a"]["additionalProperties"] is False
    assert "additionalProperties" not in closed_objects({"type": "object"})
    open_ = {"type": "object", "properties": {}, "additionalProperties": {"type": "integer"}}
    assert closed_objects(open_) == open_
