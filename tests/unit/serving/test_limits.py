"""GenerationLimits: each limit refused naming the field and the limit; `mcp serve --limit` parsing."""

from __future__ import annotations

import pytest

from mcp2026ai.cli.serve_limits import parse_limits
from mcp2026ai.errors import InvalidArgumentError, InvalidFieldError
from mcp2026ai.serving.limits import GenerationLimits

LIMITS = GenerationLimits(max_messages=4, max_prompt_chars=100, max_tokens=50, max_n=2, max_stop_strings=2)


@pytest.mark.parametrize(
    ("fields", "param", "limit"),
    [
        ({"max_tokens": 51}, "max_tokens", "max_tokens"),
        ({"n": 3}, "n", "max_n"),
        ({"logprobs": 21}, "logprobs", "max_top_logprobs"),
        ({"stop": ["a", "b", "c"]}, "stop", "max_stop_strings"),
        ({"stop": ["x" * 257]}, "stop", "max_stop_chars"),
    ],
)
def test_sampling_limits_name_the_field_and_the_limit(fields: dict[str, object], param: str, limit: str) -> None:
    with pytest.raises(InvalidFieldError, match=limit) as refused:
        LIMITS.check_sampling(fields)
    assert refused.value.param == param


def test_values_within_the_limits_and_unset_fields_pass() -> None:
    LIMITS.check_sampling({"max_tokens": 50, "n": 2, "logprobs": 20, "stop": ("a", "b"), "seed": None})
    LIMITS.check_sampling({})
    LIMITS.check_prompt(100, 4)
    GenerationLimits().check_sampling({"max_tokens": 10**9})  # no max_tokens limit: the context decides


def test_messages_are_counted_before_characters() -> None:
    with pytest.raises(InvalidFieldError, match="5 messages exceed the limit of 4 \\(max_messages\\)"):
        LIMITS.check_prompt(10**9, 5)
    with pytest.raises(InvalidFieldError, match="max_prompt_chars") as refused:
        LIMITS.check_prompt(101, 0)
    assert refused.value.param == "prompt"


def test_serve_limit_flags() -> None:
    parsed = parse_limits(["max_messages=256", "max-tokens=none", "max_stop_chars=64"])
    assert (parsed.max_messages, parsed.max_tokens, parsed.max_stop_chars) == (256, None, 64)
    with pytest.raises(InvalidArgumentError, match="--limit 'max_widgets=3': expected NAME=VALUE"):
        parse_limits(["max_widgets=3"])
    with pytest.raises(InvalidArgumentError, match="--limit max_messages"):
        parse_limits(["max_messages=-1"])
