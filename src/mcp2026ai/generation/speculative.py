"""Prompt-lookup drafting for speculative decoding (the seeds' ``strategy: speculative_decoding``).

A draft is the tokens that followed the latest earlier occurrence of the context's last n tokens
(n from 3 down to 1), in the prompt or in what was generated so far: cheap, and right often when
the answer copies from its input (extracting, rewriting, editing code). Every running sequence
drafts (backing off after misses); the engine feeds a drafting sequence's last token and its k
drafted ones in one decoder run of its own (the others decode together as usual) and keeps the
drafts for as long as each is the token the sequence chooses there, plus the next one
(:func:`verify_drafts`). The sequence chooses exactly as without drafts (greedy: the most likely
token; sampled: its own draw, from its own generator), so the output is that of one token at a time:
for a draft proposed with certainty, rejection sampling (keep it with its probability, else draw from
the rest) is the same as drawing and keeping the draft when the draw equals it, and this way a
seeded sequence even gets the same tokens with and without speculation. On the int4 decoder the
rows' logits differ slightly from single steps' (a k+1-token run sums in another order: near-ties,
see tests/unit/generation/test_batched_speculation.py). A step that accepts nothing still yields
one token.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

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


def verify_drafts(draft: Sequence[int], choose: Callable[[int], int | None]) -> int:
    """How many drafts a verification keeps. ``choose(row)`` takes the sequence's token from row
    ``row`` (the last token's, then each draft's logits) exactly as one step would, and returns it,
    or None once the sequence has ended; rows are taken until a token differs from its draft, the
    sequence ends, or the row after the last draft (the bonus token) is taken."""
    for row in range(len(draft) + 1):
        token = choose(row)
        if token is None or row == len(draft) or token != draft[row]:
            return row
    return len(draft)


GATE_PAUSE = 16
"""Steps a sequence waits to draft again after the draft gate first found its drafts not worth a run."""
MAX_GATE_PAUSE = 256
MISS_PAUSE_LIMIT = 16
"""Longest pause after verifications in a row that kept nothing (1, 2, 4 ... steps)."""


def gate_pause(refusals: int) -> int:
    """Steps to wait after the gate's ``refusals + 1``-th refusal in a row: each one doubles the pause,
    since every retry of a sequence whose drafts miss (free text) costs a verification run of its own
    (measured: 2.5-7x fewer verifications of free text at batch 8, ``docs/notebook/benchmarks.md``)."""
    return min(GATE_PAUSE << min(refusals, 16), MAX_GATE_PAUSE)


class DraftGate:
    """Whether a sequence's draft is worth its own verification run, from measured run times.

    Batched decode already shares the weight reads that speculation saves: at one sequence a
    verification run costs about one decode step and yields 1 + accepted tokens, but at eight it
    replaces a row that cost an eighth of a step. The gate keeps moving averages of the batched
    decode's time per row and of a verification run, and lets a sequence draft while its average
    accepted tokens per verification (1 + accepted) times the per-row time exceeds the run's time.
    A run's first use of a slot range is slow (onnxruntime binds it): each average starts from the
    lesser of its first two runs, and a later run counts at most 3x the average. Until both are
    measured, drafts go ahead.
    """

    def __init__(self, weight: float = 0.1) -> None:
        self.weight = weight
        self.row_s: float | None = None
        self.verify_s: float | None = None
        self._runs = {"row": 0, "verify": 0}

    def observe_decode(self, rows: int, seconds: float) -> None:
        self.row_s = self._average("row", self.row_s, seconds / max(rows, 1))

    def observe_verify(self, seconds: float) -> None:
        self.verify_s = self._average("verify", self.verify_s, seconds)

    def worth(self, expected_accepted: float) -> bool:
        if self.row_s is None or self.verify_s is None or min(self._runs.values()) < 2:
            return True
        return (1.0 + expected_accepted) * self.row_s >= self.verify_s

    def _average(self, kind: str, current: float | None, value: float) -> float:
        self._runs[kind] += 1
        if current is None:
            return value
        if self._runs[kind] == 2:
            return min(current, value)
        return current + self.weight * (min(value, 3 * current) - current)


@dataclass
class DraftState:
    """One sequence's speculation so far: its back-off and how many drafts it keeps."""

    pause: int = 0
    """Steps to skip before drafting again."""
    misses: int = 0
    """Verifications in a row that kept nothing (each doubles the pause, up to ``MISS_PAUSE_LIMIT``)."""
    refusals: int = 0
    """The draft gate's refusals since a verification last paid for its run (see :func:`gate_pause`)."""
    accepted_average: float = 1.0
    """Moving average of the drafts kept per verification (the gate weighs it against run times)."""


class Speculation:
    """Which running sequences draft this step, and how each backs off: the policy of speculative
    decoding (the engine drafts by :func:`prompt_lookup` and runs the verifications)."""

    def __init__(self, draft_tokens: int) -> None:
        self.draft_tokens = draft_tokens
        """Tokens drafted per verification (0: off; the serving config may change it while running)."""
        self.gate = DraftGate()

    def wants_draft(self, state: DraftState) -> bool:
        """Not while paused; not when the gate finds the sequence's drafts not worth a run of their own:
        it then pauses (longer after each refusal in a row) and grows more hopeful, so that a sequence
        that starts copying is tried again."""
        if state.pause:
            state.pause -= 1
            return False
        if not self.gate.worth(state.accepted_average):
            state.pause = gate_pause(state.refusals)
            state.refusals += 1
            state.accepted_average += 0.5 * (self.draft_tokens - state.accepted_average)
            return False
        return True

    def verified(self, state: DraftState, accepted: int) -> None:
        """A verification kept ``accepted`` drafts."""
        state.accepted_average += 0.25 * (accepted - state.accepted_average)
        if self.gate.worth(accepted):
            state.refusals = 0
        state.misses = 0 if accepted else state.misses + 1
        state.pause = min(MISS_PAUSE_LIMIT, 2 ** (state.misses - 1)) if state.misses else 0
