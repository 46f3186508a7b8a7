"""Choosing the next token of one sequence from its logits.

Order (vLLM's): ``logit_bias`` and the ``min_tokens`` mask (logit_adjustment.py), repetition
penalty (prompt and generated tokens), presence and frequency penalties
(generated tokens), temperature, top-k, top-p, min-p, then a draw. Each sequence owns its random
generator, seeded from the request's ``seed`` (and the choice index), so a seeded request draws
the same tokens whatever else shares its batch. Temperature 0 takes the most likely token.

Log-probabilities are those of the model's raw distribution (before penalties and temperature).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from mcp2026ai.generation.logit_adjustment import LogitAdjustment
from mcp2026ai.generation.types import SamplingParams, TokenLogprob

_STEPS = 32
_BUCKETS = 64 * _STEPS
"""top-p's probability buckets: 64 powers of 2 below the best token (the last gathers everything
less likely), each cut in ``_STEPS`` by the mantissa."""
_CDF_BLOCK = 256
"""Tokens per block of the two-level draw (:func:`inverse_cdf`)."""


def log_softmax(logits: np.ndarray) -> np.ndarray:
    """In float32, the sum of exponentials accumulated in float64 (the whole row in float64 took
    0.6 ms of every token that asked for logprobs)."""
    shifted: np.ndarray = logits - np.float32(np.max(logits))
    result: np.ndarray = shifted - np.float32(np.log(np.sum(np.exp(shifted), dtype=np.float64)))
    return result


class Sampler:
    """The next-token choice of one sequence; it remembers the tokens it has to penalize."""

    def __init__(
        self,
        params: SamplingParams,
        prompt_ids: Sequence[int],
        vocab_size: int,
        choice: int = 0,
        stop_ids: Iterable[int] = (),
    ) -> None:
        self.params = params
        self.vocab_size = vocab_size
        self._adjust = LogitAdjustment(params, stop_ids)
        entropy = [params.seed, choice] if params.seed is not None else None
        self.rng = np.random.default_rng(entropy)
        self._counts: dict[int, int] = {}
        self._seen = {token for token in prompt_ids if 0 <= token < vocab_size}
        self._penalized = (
            params.repetition_penalty != 1.0 or params.presence_penalty != 0.0 or params.frequency_penalty != 0.0
        )

    def sample(
        self, logits: np.ndarray, allowed: np.ndarray | None = None, with_logprob: bool = True
    ) -> tuple[int, TokenLogprob | None]:
        """The chosen token for ``logits`` (one row, float32) and, if asked (and ``with_logprob``), its
        log-probability (the engine computes it later, off its step: :func:`token_logprob`).
        ``allowed`` (a boolean mask over the vocabulary, from a grammar) rules out every other token
        before penalties and the draw, so a constrained row shares its batch with free ones."""
        logprob = self._logprob_of if self.params.logprobs is not None and with_logprob else None
        raw = logits
        if allowed is not None:
            logits = np.where(allowed, logits, np.float32(-np.inf))
        if self._adjust.active:
            logits = self._adjust.apply(logits if logits is not raw else logits.copy())
        if self._penalized:
            logits = self._penalize(logits if logits is not raw else logits.copy())
        token = int(np.argmax(logits)) if self.params.greedy else self._draw(logits)
        self._counts[token] = self._counts.get(token, 0) + 1
        self._seen.add(token)
        return token, (logprob(raw, token) if logprob is not None else None)

    def _penalize(self, logits: np.ndarray) -> np.ndarray:
        params = self.params
        if params.repetition_penalty != 1.0 and self._seen:
            seen = np.fromiter(self._seen, dtype=np.int64)
            values = logits[seen]
            logits[seen] = np.where(values > 0, values / params.repetition_penalty, values * params.repetition_penalty)
        if (params.presence_penalty or params.frequency_penalty) and self._counts:
            tokens = np.fromiter(self._counts, dtype=np.int64)
            counts = np.fromiter(self._counts.values(), dtype=np.float32)
            logits[tokens] -= params.frequency_penalty * counts + params.presence_penalty
        return logits

    def _draw(self, logits: np.ndarray) -> int:
        """In float32 and in place where it can be (a full-vocabulary draw costs about 0.2 ms, where
        float64 took 0.8-1.2 ms: at 8 sequences per step that was a third of a decode step)."""
        params = self.params
        scaled = logits * np.float32(1.0 / params.temperature)  # a new float32 array
        index: np.ndarray | None = None
        if 0 < params.top_k < len(scaled):
            index = np.argpartition(-scaled, params.top_k - 1)[: params.top_k]
            scaled = scaled[index]
        scaled -= scaled.max()
        probs = np.exp(scaled, out=scaled)  # unnormalized
        if params.top_p < 1.0 or params.min_p > 0.0:
            probs /= probs.sum()
            index = np.arange(len(probs)) if index is None else index
            if params.top_p < 1.0:
                index, probs = _nucleus(index, probs, params.top_p)
            if params.min_p > 0.0:
                keep = probs >= params.min_p * probs.max()
                index, probs = index[keep], probs[keep]
        position = inverse_cdf(probs, self.rng.random())
        return int(index[position]) if index is not None else position

    def _logprob_of(self, logits: np.ndarray, token: int) -> TokenLogprob:
        return token_logprob(logits, token, self.params.logprobs or 0)


def token_logprob(logits: np.ndarray, token: int, count: int) -> TokenLogprob:
    """``token``'s log-probability under the raw ``logits`` row, with the ``count`` most likely tokens."""
    logprobs = log_softmax(logits)
    top: tuple[tuple[int, float], ...] = ()
    if count:
        best = top_tokens(logprobs, count)
        top = tuple((int(t), float(logprobs[t])) for t in best)
    return TokenLogprob(token, float(logprobs[token]), top)


def top_tokens(values: np.ndarray, count: int) -> np.ndarray:
    """Indices of the ``count`` largest values, largest first. Looks among the values within a margin
    of the best first (widening it until enough are in): an ``argpartition`` of a 49,152-token row took
    0.43 ms of every token that asked for logprobs."""
    best = float(values.max())
    margin = 2.0
    while True:
        candidates = np.flatnonzero(values >= best - margin)
        if len(candidates) >= count or margin > 1e4:
            break
        margin *= 4
    if len(candidates) < count:
        candidates = np.arange(len(values))
    if len(candidates) > count:
        candidates = candidates[np.argpartition(-values[candidates], count - 1)[:count]]
    return candidates[np.argsort(-values[candidates], kind="stable")]


def inverse_cdf(probs: np.ndarray, fraction: float) -> int:
    """The index where the running sum of ``probs`` (unnormalized, >= 0) first exceeds ``fraction`` of
    their total. Over a whole vocabulary in two levels: sums of blocks of :data:`_CDF_BLOCK`, then a
    running sum inside the one block that holds the target (a 49,152-token ``np.cumsum`` took 0.14 ms
    of a 0.17 ms draw; this takes about 0.02 ms)."""
    size = len(probs)
    if size <= 4 * _CDF_BLOCK:
        cumulative = np.cumsum(probs)
        return min(int(np.searchsorted(cumulative, fraction * cumulative[-1], side="right")), size - 1)
    whole = size - size % _CDF_BLOCK
    sums = probs[:whole].reshape(-1, _CDF_BLOCK).sum(axis=1)
    if whole < size:
        sums = np.append(sums, probs[whole:].sum())
    totals = np.cumsum(sums)
    target = fraction * totals[-1]
    block = min(int(np.searchsorted(totals, target, side="right")), len(totals) - 1)
    start = block * _CDF_BLOCK
    inside = np.cumsum(probs[start : start + _CDF_BLOCK])
    before = totals[block - 1] if block else 0.0
    return start + min(int(np.searchsorted(inside, target - before, side="right")), len(inside) - 1)


def _nucleus(index: np.ndarray, probs: np.ndarray, top_p: float) -> tuple[np.ndarray, np.ndarray]:
    """The smallest set of most likely tokens holding ``top_p`` (normalized ``probs``). Tokens fall in
    buckets by their float exponent and mantissa (ordered from most to least likely); whole buckets
    are kept while their mass stays below ``top_p``, and only the tokens of the bucket where it is
    reached are sorted. At temperature 1 a nucleus of 0.95 can hold 15,000 of 49,152 tokens: sorting
    them took 3.6 ms per token (benchmarks/engine/host_path.py)."""
    mantissas, exponents = np.frexp(probs)  # mantissa in [0.5, 1): _STEPS finer buckets inside each power of 2
    level = np.minimum(int(exponents.max()) - exponents, _BUCKETS // _STEPS - 1)
    bucket = level * _STEPS + (_STEPS - 1) - np.minimum(((mantissas - 0.5) * (2 * _STEPS)).astype(np.int64), _STEPS - 1)
    bucket[probs <= 0] = _BUCKETS - 1
    mass = np.cumsum(np.bincount(bucket, weights=probs, minlength=_BUCKETS))
    edge = min(int(np.searchsorted(mass, top_p)), _BUCKETS - 1)
    before = float(mass[edge - 1]) if edge else 0.0
    inside = np.flatnonzero(bucket == edge)
    inside = inside[np.argsort(-probs[inside], kind="stable")]
    keep = min(int(np.searchsorted(np.cumsum(probs[inside]), top_p - before)) + 1, len(inside))
    chosen = np.concatenate([np.flatnonzero(bucket < edge), inside[:keep]])
    return index[chosen], probs[chosen]
