"""Prompt-lookup drafting for speculative decoding (the seeds' ``strategy: speculative_decoding``).

A draft is the tokens that followed the latest earlier occurrence of the context's last n tokens
(n from 3 down to 1), in the prompt or in what was generated so far: cheap, and right often when
the answer copies from its input (extracting, rewriting, editing code). Every running sequence
drafts (backing off after misses); the engine feeds a drafting sequence's last token and its k
drafted ones in one decoder run of its own (the others decode together as usual) and keeps the
drafts for as long as each is the token the sequence chooses there, plus the next one. Greedy: the
most likely token, so the output is that of one token at a time (on the int4 decoder, up to
near-ties: a k+1-token run sums in another order than a one-token step, see
tests/unit/generation/test_batched_speculation.py). Sampled: the sampler accepts a draft with its
probability and otherwise draws from the rest (rejection sampling with a certain proposal), so the
distribution is unchanged. A step that accepts nothing still yields one token.
"""

from __future__ import annotations

from collections.abc import Sequence

MAX_NGRAM = 3
DEFAULT_DRAFT_TOKENS = 4


def prompt_lookup(context: Sequence[int], k: int, max_ngram: int = MAX_NGRAM) -> list[int]:
    """Up to ``k`` tokens that followed the latest earlier occurrence of the context's last n tokens,
    trying the longest n first; empty when no n-gram recurs."""
    tokens = list(context)
    for n in range(min(max_ngram, len(tokens) - 1), 0, -1):
        tail = tokens[-n:]
        for start in range(len(tokens) - n - 1, -1, -1):
            if tokens[start : start + n] == tail:
                follow = tokens[start + n : start + n + k]
                if follow:
                    return follow
    return []
