"""top-p's bucketed nucleus and the logprobs' top tokens give what a full sort gives."""

from __future__ import annotations

import numpy as np
import pytest

from mcp2026ai.generation.sampling import _nucleus, top_tokens


def sorted_nucleus(probs: np.ndarray, top_p: float) -> set[int]:
    order = np.argsort(-probs, kind="stable")
    keep = int(np.searchsorted(np.cumsum(probs[order]), top_p)) + 1
    return set(order[:keep].tolist())


@pytest.mark.parametrize("spread", [0.5, 2.0, 8.0])
@pytest.mark.parametrize("top_p", [0.1, 0.5, 0.9, 0.95, 0.999])
def test_the_nucleus_is_the_smallest_most_likely_set_holding_top_p(spread: float, top_p: float) -> None:
    rng = np.random.default_rng(int(spread * 10) + int(top_p * 1000))
    for _ in range(5):
        logits = rng.normal(0, spread, 4096).astype(np.float32)
        probs = np.exp(logits - logits.max())
        probs /= probs.sum()
        index, kept = _nucleus(np.arange(len(probs)), probs, top_p)
        assert set(index.tolist()) == sorted_nucleus(probs, top_p)
        assert np.array_equal(kept, probs[index])


def test_a_nucleus_over_a_few_candidates_and_zeros() -> None:
    probs = np.array([0.0, 0.6, 0.0, 0.3, 0.1], dtype=np.float32)
    index, _ = _nucleus(np.array([10, 11, 12, 13, 14]), probs, 0.8)
    assert sorted(index.tolist()) == [11, 13]


def test_top_tokens_are_the_largest_values_largest_first() -> None:
    rng = np.random.default_rng(3)
    for spread in (0.01, 1.0, 30.0):
        values = rng.normal(0, spread, 49_152).astype(np.float32)
        for count in (1, 5, 20):
            assert top_tokens(values, count).tolist() == np.argsort(-values, kind="stable")[:count].tolist()
    assert top_tokens(np.array([-np.inf, 1.0, -np.inf], dtype=np.float32), 3).tolist() == [1, 0, 2]
