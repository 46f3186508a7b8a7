"""Rejection sampling of speculated tokens: a sampled sequence keeps its distribution with drafts.

A prompt-lookup draft is one token, proposed with certainty; the sampler accepts it with its
probability and otherwise draws from the rest, so the token it returns follows the same
distribution as a plain draw. Compared as token histograms on fixed logits."""

from __future__ import annotations

import numpy as np
import pytest

from mcp2026ai.generation.sampling import Sampler
from mcp2026ai.generation.types import SamplingParams

VOCAB = 64
DRAWS = 20_000


def histogram(params: SamplingParams, row: np.ndarray, draft: int | None, seed: int) -> np.ndarray:
    sampler = Sampler(params.model_copy(update={"seed": seed}), [], VOCAB)
    tokens = [sampler.sample(row, draft)[0] for _ in range(DRAWS)]
    return np.bincount(tokens, minlength=VOCAB) / DRAWS


@pytest.mark.parametrize(
    "params",
    [
        SamplingParams(temperature=1.0),
        SamplingParams(temperature=0.7, top_p=0.9),
        SamplingParams(temperature=1.3, top_k=8),
        SamplingParams(temperature=1.0, min_p=0.05),
    ],
    ids=["plain", "top_p", "top_k", "min_p"],
)
def test_draws_with_a_draft_follow_the_plain_distribution(params: SamplingParams) -> None:
    row = np.random.default_rng(7).normal(0, 2, VOCAB).astype(np.float32)
    ranked = np.argsort(-row)
    plain = histogram(params, row, None, seed=1)
    # a likely draft, a middling one, and one the filters drop (top-k/top-p/min-p) or nearly never drawn
    for draft in (int(ranked[0]), int(ranked[3]), int(ranked[-1])):
        drafted = histogram(params, row, draft, seed=2)
        assert 0.5 * np.abs(drafted - plain).sum() < 0.03, f"draft {draft}: total variation too large"
        assert drafted[draft] == pytest.approx(plain[draft], abs=0.015)


def test_a_draft_is_kept_as_often_as_it_would_be_drawn() -> None:
    row = np.zeros(VOCAB, np.float32)
    row[5] = np.log(3 * (VOCAB - 1))  # token 5 holds 3/4 of the probability
    sampler = Sampler(SamplingParams(temperature=1.0, seed=3), [], VOCAB)
    kept = sum(sampler.sample(row, 5)[0] == 5 for _ in range(DRAWS)) / DRAWS
    assert kept == pytest.approx(0.75, abs=0.015)


def test_greedy_ignores_the_draft() -> None:
    row = np.random.default_rng(1).normal(0, 2, VOCAB).astype(np.float32)
    sampler = Sampler(SamplingParams(temperature=0), [], VOCAB)
    assert sampler.sample(row, int(np.argsort(row)[0]))[0] == int(np.argmax(row))
