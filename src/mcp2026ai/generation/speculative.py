"""Prompt-lookup drafting for speculative decoding (the seeds' ``strategy: speculative_decoding``).

A draft is the tokens that followed the latest earlier occurrence of the context's last n tokens
(n from 3 down to 1), in the prompt or in what was generated so far: cheap, and right often when
the answer copies from its input (extracting, rewriting, editing code). The engine feeds the last
token and the k drafted ones in one decoder run and keeps the drafts for as long as each equals
the token the sequence would have chosen there, plus the next one: the output is the same as one
token at a time, and a step that accepts nothing still yields one token.
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
