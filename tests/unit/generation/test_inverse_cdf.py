"""The two-level draw over a whole vocabulary picks what a plain running sum picks."""

from __future__ import annotations

import numpy as np

from mcp2026ai.generation.sampling import Sampler, inverse_cdf, log_softmax
from mcp2026ai.generation.types import SamplingParams

VOCAB = 49_152 + 77  # not a multiple of the block: the tail counts too


def reference(probs: np.ndarray, fraction: float) -> int:
    cumulative = np.cumsum(probs.astype(np.float64))
    return min(int(np.searchsorted(cumulative, fraction * cumulative[-1], side="right")), len(probs) - 1)


def test_inverse_cdf_matches_a_float64_running_sum() -> None:
    rng = np.random.default_rng(0)
    probs = np.exp(rng.normal(0, 3, VOCAB)).astype(np.float32)
    fractions = [0.0, 1e-9, 0.5, 1.0 - 1e-9, *rng.random(500).tolist()]
    for fraction in fractions:
        got, want = inverse_cdf(probs, fraction), reference(probs, fraction)
        low, high = sorted((got, want))
        # float32 block sums may move a boundary by rounding: only onto a neighbour holding ~no mass
        assert got == want or probs[low:high].sum() < 1e-5 * probs.sum(), (fraction, got, want)


def test_inverse_cdf_never_lands_on_a_zero_probability_token() -> None:
    probs = np.zeros(VOCAB, np.float32)
    probs[[3, 20_000, VOCAB - 1]] = (1.0, 2.0, 1.0)
    picks = {inverse_cdf(probs, f) for f in np.linspace(0, 0.999, 400)}
    assert picks == {3, 20_000, VOCAB - 1}


def test_full_vocabulary_draws_follow_the_softmax() -> None:
    rng = np.random.default_rng(1)
    row = rng.normal(0, 1, VOCAB).astype(np.float32)
    row[[5, 30_000, VOCAB - 2]] = (9.0, 8.5, 8.0)  # three tokens hold most of the mass
    sampler = Sampler(SamplingParams(seed=7), [], VOCAB)
    counts = np.bincount([sampler.sample(row)[0] for _ in range(3000)], minlength=VOCAB) / 3000
    expected = np.exp(log_softmax(row))
    for token in (5, 30_000, VOCAB - 2):
        assert abs(counts[token] - expected[token]) < 0.04
