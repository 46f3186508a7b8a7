"""Token choice: greedy, seeded draws, top-k / top-p / min-p, penalties, log-probabilities."""

from __future__ import annotations

import numpy as np
import pytest

from mcp2026ai.generation.sampling import Sampler, log_softmax
from mcp2026ai.generation.types import SamplingParams

VOCAB = 64


def logits(seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).normal(0, 2, VOCAB).astype(np.float32)


def draws(params: SamplingParams, row: np.ndarray, count: int, choice: int = 0) -> list[int]:
    sampler = Sampler(params, [], VOCAB, choice)
    return [sampler.sample(row)[0] for _ in range(count)]


def test_greedy_takes_the_most_likely_token() -> None:
    row = logits()
    assert draws(SamplingParams(temperature=0), row, 3) == [int(np.argmax(row))] * 3


def test_a_seed_repeats_its_draws_and_choices_differ() -> None:
    params = SamplingParams(temperature=1.0, seed=42)
    row = logits()
    assert draws(params, row, 50) == draws(params, row, 50)
    assert draws(params, row, 50, choice=1) != draws(params, row, 50, choice=0)


def test_draws_follow_the_softmax_at_temperature_one() -> None:
    row = logits(3)
    counts = np.bincount(draws(SamplingParams(seed=1), row, 4000), minlength=VOCAB) / 4000
    expected = np.exp(log_softmax(row))
    assert np.abs(counts - expected).max() < 0.03


def test_top_k_one_and_tiny_top_p_are_greedy() -> None:
    row = logits(5)
    best = int(np.argmax(row))
    assert set(draws(SamplingParams(top_k=1, seed=3), row, 40)) == {best}
    assert set(draws(SamplingParams(top_p=1e-6, seed=3), row, 40)) == {best}


def test_top_k_and_top_p_keep_only_the_most_likely() -> None:
    row = logits(7)
    top3 = set(np.argsort(-row)[:3].tolist())
    assert set(draws(SamplingParams(top_k=3, temperature=2.0, seed=4), row, 300)) <= top3
    probs = np.exp(log_softmax(row))
    order = np.argsort(-probs)
    nucleus = set(order[: int(np.searchsorted(np.cumsum(probs[order]), 0.5)) + 1].tolist())
    assert set(draws(SamplingParams(top_p=0.5, seed=4), row, 300)) <= nucleus


def test_min_p_drops_tokens_far_below_the_best() -> None:
    row = logits(9)
    probs = np.exp(log_softmax(row))
    allowed = set(np.flatnonzero(probs >= 0.3 * probs.max()).tolist())
    assert set(draws(SamplingParams(min_p=0.3, seed=2), row, 300)) <= allowed


def test_repetition_penalty_moves_away_from_seen_tokens() -> None:
    row = np.zeros(VOCAB, np.float32)
    row[[3, 4]] = [2.0, 1.9]
    sampler = Sampler(SamplingParams(temperature=0, repetition_penalty=1.5), [3], VOCAB)
    assert sampler.sample(row)[0] == 4  # 3 was in the prompt: 2.0 / 1.5 < 1.9


def test_presence_and_frequency_penalties_count_generated_tokens() -> None:
    row = np.zeros(VOCAB, np.float32)
    row[[3, 4]] = [2.0, 1.5]
    sampler = Sampler(SamplingParams(temperature=0, frequency_penalty=0.3), [], VOCAB)
    assert [sampler.sample(row)[0] for _ in range(3)] == [3, 3, 4]  # 2.0, 1.7, then 1.4 < 1.5
    sampler = Sampler(SamplingParams(temperature=0, presence_penalty=1.0), [], VOCAB)
    assert [sampler.sample(row)[0] for _ in range(2)] == [3, 4]


def test_logprobs_are_the_models_with_sorted_alternatives() -> None:
    row = logits(11)
    token, logprob = Sampler(SamplingParams(temperature=0, logprobs=3), [], VOCAB).sample(row)
    assert logprob is not None and logprob.token_id == token
    reference = log_softmax(row)
    assert logprob.logprob == pytest.approx(reference[token])
    assert [t for t, _ in logprob.top] == np.argsort(-reference)[:3].tolist()
    assert np.exp([lp for _, lp in logprob.top]).sum() < 1.0


@pytest.mark.parametrize(
    "field, value",
    [
        ("temperature", -0.1),
        ("top_p", 0.0),
        ("top_k", -2),
        ("min_p", 1.5),
        ("n", 0),
        ("logprobs", 21),
        ("max_tokens", 0),
    ],
)
def test_out_of_range_parameters_are_refused(field: str, value: float) -> None:
    with pytest.raises(ValueError, match=field):
        SamplingParams.model_validate({field: value})
