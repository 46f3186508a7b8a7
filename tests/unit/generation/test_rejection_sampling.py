"""Sampled sequences keep their distribution under speculation (a fixed logits source, no model).

A prompt-lookup draft is proposed with certainty, so rejection sampling (keep the draft with its
probability, else draw from the rest) is the same as drawing the sequence's own token at each
verified row and keeping the draft while the draw equals it (``verify_drafts``). Checked here as
token histograms over many seeds against plain one-token-at-a-time sampling's distribution, and per
seed against plain sampling itself.

The toy model's next token depends on the last one only, so plain sampling's distribution at each
position is exact: the filtered softmax of each row (temperature, top-k, top-p) as a transition
matrix, its powers applied to the prompt's last token. The histograms are compared with that instead
of with 4,000 more plain sampled sequences (half the test's time, and no sampling noise on that side)."""

from __future__ import annotations

import numpy as np
import pytest

from mcp2026ai.generation.sampling import Sampler
from mcp2026ai.generation.speculative import prompt_lookup, verify_drafts
from mcp2026ai.generation.types import SamplingParams

VOCAB = 12
PROMPT = [1, 2, 3, 4, 1, 2, 3, 5, 1, 2]
TOKENS = 8
SEEDS = 4000
TABLE = np.random.default_rng(5).normal(0, 1.5, (VOCAB, VOCAB)).astype(np.float32)
"""The toy model: the next token's logits depend on the last token only."""


def plain(params: SamplingParams, seed: int) -> list[int]:
    sampler = Sampler(params.model_copy(update={"seed": seed}), PROMPT, VOCAB)
    context = list(PROMPT)
    for _ in range(TOKENS):
        context.append(sampler.sample(TABLE[context[-1]])[0])
    return context[len(PROMPT) :]


def transition(params: SamplingParams) -> np.ndarray:
    """Plain sampling's next-token distribution after each token (row): the temperature's softmax of
    ``TABLE``'s row, cut to the ``top_k`` most likely, then to the fewest most likely holding ``top_p``."""
    rows = []
    for logits in TABLE.astype(np.float64):
        probs = np.exp((logits - logits.max()) / params.temperature)
        order = np.argsort(-probs, kind="stable")
        if 0 < params.top_k < VOCAB:
            probs[order[params.top_k :]] = 0.0
        probs /= probs.sum()
        if params.top_p < 1.0:
            kept = int(np.searchsorted(np.cumsum(probs[order]), params.top_p)) + 1
            probs[order[kept:]] = 0.0
        rows.append(probs / probs.sum())
    return np.array(rows)


def plain_distributions(params: SamplingParams) -> list[np.ndarray]:
    """The exact distribution of plain sampling's token at each of the ``TOKENS`` positions."""
    step = transition(params)
    found = [step[PROMPT[-1]]]
    while len(found) < TOKENS:
        found.append(found[-1] @ step)
    return found


def speculative(params: SamplingParams, seed: int, k: int = 3) -> tuple[list[int], int]:
    """The engine's loop: draft by prompt lookup, choose every row's token, keep drafts while equal."""
    sampler = Sampler(params.model_copy(update={"seed": seed}), PROMPT, VOCAB)
    context = list(PROMPT)
    kept = 0
    while len(context) - len(PROMPT) < TOKENS:
        room = TOKENS - (len(context) - len(PROMPT)) - 1
        draft = prompt_lookup(context, min(k, room)) if room > 0 else []
        fed = [context[-1], *draft]  # row i's logits come after fed[i]

        def choose(row: int, fed: list[int] = fed) -> int:
            token = sampler.sample(TABLE[fed[row]])[0]
            context.append(token)
            return token

        kept += verify_drafts(draft, choose)
    return context[len(PROMPT) :], kept


@pytest.mark.parametrize(
    "params",
    [SamplingParams(temperature=1.0), SamplingParams(temperature=0.8, top_p=0.9), SamplingParams(top_k=4)],
    ids=["plain", "top_p", "top_k"],
)
def test_speculative_sampling_keeps_the_token_distribution(params: SamplingParams) -> None:
    drafted = [speculative(params, seed + SEEDS) for seed in range(SEEDS)]
    assert sum(kept for _, kept in drafted) > SEEDS // 4  # drafts were kept: the speculative path ran
    tokens = np.array([answer for answer, _ in drafted])
    for position, expected in enumerate(plain_distributions(params)):
        found = np.bincount(tokens[:, position], minlength=VOCAB) / SEEDS
        assert 0.5 * np.abs(found - expected).sum() < 0.06, f"position {position}"


def test_plain_sampling_follows_the_exact_distribution() -> None:
    """The reference above is the sampler's: 1,000 plain sequences' histograms (top-p, the cut most
    easily got wrong) are near it."""
    params, seeds = SamplingParams(temperature=0.8, top_p=0.9), 1000
    tokens = np.array([plain(params, seed) for seed in range(seeds)])
    for position, expected in enumerate(plain_distributions(params)):
        found = np.bincount(tokens[:, position], minlength=VOCAB) / seeds
        assert 0.5 * np.abs(found - expected).sum() < 0.08, f"position {position}"


def test_a_seeded_sequence_gets_the_same_tokens_with_and_without_drafts() -> None:
    params = SamplingParams(temperature=1.0)
    for seed in range(50):
        assert speculative(params, seed)[0] == plain(params, seed)
