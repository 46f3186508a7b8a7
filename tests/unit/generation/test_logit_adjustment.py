"""logit_bias and min_tokens in the sampler (generation/logit_adjustment.py), on small logit rows."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

from mcp2026ai.generation.sampling import Sampler
from mcp2026ai.generation.types import SamplingParams

VOCAB = 8


def row(best: int) -> np.ndarray:
    logits = np.zeros(VOCAB, dtype=np.float32)
    logits[best] = 5.0
    return logits


def test_a_positive_bias_wins_and_a_negative_one_bans() -> None:
    sampler = Sampler(SamplingParams(temperature=0, logit_bias={3: 100.0}), [], VOCAB)
    assert [sampler.sample(row(1))[0] for _ in range(3)] == [3, 3, 3]
    banned = Sampler(SamplingParams(temperature=0.9, seed=4, logit_bias={1: -100.0}), [], VOCAB)
    assert all(banned.sample(row(1))[0] != 1 for _ in range(50))


def test_logprobs_stay_those_of_the_raw_distribution() -> None:
    plain = Sampler(SamplingParams(temperature=0, logprobs=0), [], VOCAB).sample(row(1))[1]
    biased = Sampler(SamplingParams(temperature=0, logprobs=0, logit_bias={3: 100.0}), [], VOCAB).sample(row(1))[1]
    assert plain is not None and biased is not None and biased.token_id == 3
    assert biased.logprob == pytest.approx(float(np.log(1 / (np.exp(5) + VOCAB - 1))))
    assert plain.logprob > biased.logprob


def test_min_tokens_masks_the_stop_ids_until_reached() -> None:
    sampler = Sampler(SamplingParams(temperature=0, min_tokens=3), [], VOCAB, stop_ids=[2])
    assert [sampler.sample(row(2))[0] for _ in range(4)] == [0, 0, 0, 2]  # 2 ends it only from the 4th token


def test_biases_outside_the_range_are_refused() -> None:
    with pytest.raises(ValidationError, match=r"biases lie in \[-100, 100\]"):
        SamplingParams(logit_bias={1: 100.5})
