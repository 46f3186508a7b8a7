"""Checks and scores on the prompt side of a request: token ids a request names must lie in the
vocabulary, and each prompt token's log-probability (``echo`` with ``logprobs`` on /v1/completions,
lm-eval's loglikelihood tasks) from the logits of every prompt position."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mcp2026ai.errors import InvalidFieldError
from mcp2026ai.generation.sampling import log_softmax
from mcp2026ai.generation.types import SamplingParams, TokenLogprob


def check_token_ids(params: SamplingParams, vocab_size: int) -> None:
    """InvalidArgumentError naming the field when ``logit_bias`` or ``stop_token_ids`` names a token
    outside ``[0, vocab_size)``."""
    fields = {"logit_bias": list(params.logit_bias or {}), "stop_token_ids": list(params.stop_token_ids)}
    for name, ids in fields.items():
        outside = [token for token in ids if not 0 <= token < vocab_size]
        if outside:
            raise InvalidFieldError(
                f"{name}: token id {outside[0]} lies outside the vocabulary [0, {vocab_size})", name
            )


def prompt_token_logprobs(rows: np.ndarray, prompt: Sequence[int], top: int) -> list[TokenLogprob | None]:
    """Each prompt token's log-probability given the tokens before it (``rows[i]`` are the logits after
    position ``i``), with its ``top`` most likely alternatives; the first token has none (None)."""
    scored: list[TokenLogprob | None] = [None]
    for position in range(1, len(prompt)):
        logprobs = log_softmax(rows[position - 1])
        token = prompt[position]
        best: tuple[tuple[int, float], ...] = ()
        if top:
            candidates = np.argpartition(-logprobs, top - 1)[:top]
            candidates = candidates[np.argsort(-logprobs[candidates], kind="stable")]
            best = tuple((int(t), float(logprobs[t])) for t in candidates)
        scored.append(TokenLogprob(int(token), float(logprobs[token]), best))
    return scored
