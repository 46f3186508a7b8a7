"""Prompt log-probabilities and the token-id checks of generation/prompt_scoring.py."""

from __future__ import annotations

import numpy as np
import pytest

from mcp2026ai.errors import InvalidArgumentError
from mcp2026ai.generation.prompt_scoring import check_token_ids, prompt_token_logprobs
from mcp2026ai.generation.sampling import log_softmax
from mcp2026ai.generation.types import SamplingParams


def test_each_prompt_token_is_scored_by_the_row_before_it() -> None:
    rows = np.random.default_rng(0).normal(size=(3, 6)).astype(np.float32)
    scored = prompt_token_logprobs(rows, [4, 1, 5], top=2)
    assert scored[0] is None
    second, third = scored[1], scored[2]
    assert second is not None and third is not None
    assert second.token_id == 1 and second.logprob == pytest.approx(log_softmax(rows[0])[1])
    assert third.logprob == pytest.approx(log_softmax(rows[1])[5])
    assert [token for token, _ in second.top] == list(np.argsort(-rows[0])[:2])


def test_token_ids_outside_the_vocabulary_name_their_field() -> None:
    with pytest.raises(InvalidArgumentError, match="logit_bias: token id 9") as raised:
        check_token_ids(SamplingParams(logit_bias={9: 1.0}), 8)
    assert raised.value.param == "logit_bias"
    with pytest.raises(InvalidArgumentError) as raised:
        check_token_ids(SamplingParams(stop_token_ids=(8,)), 8)
    assert raised.value.param == "stop_token_ids"
    check_token_ids(SamplingParams(logit_bias={7: 1.0}, stop_token_ids=(0,)), 8)
