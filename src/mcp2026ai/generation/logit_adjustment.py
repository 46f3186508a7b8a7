"""What a request adds to the logits before the sampler reads them: ``logit_bias`` and ``min_tokens``.

``logit_bias`` (OpenAI's) adds a bias in [-100, 100] to chosen token ids: -100 in practice bans a
token, +100 all but forces it. ``min_tokens`` (vLLM's) masks the end-of-sequence and stop token ids
until a choice has generated that many tokens, so it cannot end earlier on a token (a stop string or
max_tokens still ends it). Log-probabilities stay those of the model's raw distribution.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from mcp2026ai.generation.types import SamplingParams


class LogitAdjustment:
    """The bias and the early-stop mask of one choice; counts the tokens it has seen sampled."""

    def __init__(self, params: SamplingParams, stop_ids: Iterable[int]) -> None:
        bias = params.logit_bias or {}
        self._bias_ids = np.fromiter(bias.keys(), dtype=np.int64, count=len(bias))
        self._bias = np.fromiter(bias.values(), dtype=np.float32, count=len(bias))
        self._min_tokens = params.min_tokens
        self._stop_ids = np.fromiter(sorted(set(stop_ids)), dtype=np.int64)
        self.generated = 0

    @property
    def active(self) -> bool:
        return bool(len(self._bias_ids)) or self._masking

    @property
    def _masking(self) -> bool:
        return self.generated < self._min_tokens and bool(len(self._stop_ids))

    def apply(self, logits: np.ndarray) -> np.ndarray:
        """Adjust ``logits`` (a copy the caller owns) in place and count one sampled token."""
        if len(self._bias_ids):
            logits[self._bias_ids] += self._bias
        if self._masking:
            logits[self._stop_ids] = -np.inf
        self.generated += 1
        return logits
