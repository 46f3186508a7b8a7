"""When a sequence ends: stop token ids, end-of-sequence, max_tokens, and stop strings.

Stop strings are matched on the decoded text, so they may span token boundaries; the text a choice
returns (streamed or not) ends just before the stop string. To stream without ever sending part of
a stop string, the last ``len(longest stop) - 1`` characters are held back until the next token
shows they do not begin one.
"""

from __future__ import annotations

from collections.abc import Iterable

from mcp2026ai.generation.types import FinishReason, SamplingParams


class TokenStop:
    """Stops on token ids (stop_token_ids, and end-of-sequence unless ignore_eos) and on max_tokens."""

    def __init__(self, params: SamplingParams, eos_token_ids: Iterable[int], max_tokens: int) -> None:
        self.stop_ids = set(params.stop_token_ids) | (set() if params.ignore_eos else set(eos_token_ids))
        self.max_tokens = max_tokens

    def is_stop_token(self, token_id: int) -> bool:
        """A stop token ends the choice and is not part of its text."""
        return token_id in self.stop_ids

    def reached_limit(self, generated: int) -> bool:
        return generated >= self.max_tokens


class StopStrings:
    """Holds back text that may start a stop string; reports the text safe to emit."""

    def __init__(self, stops: Iterable[str]) -> None:
        self.stops = tuple(stop for stop in stops if stop)
        self._hold = max((len(stop) for stop in self.stops), default=1) - 1
        self._pending = ""

    def feed(self, text: str) -> tuple[str, bool]:
        """Add newly decoded ``text``: (text safe to emit now, whether a stop string was found)."""
        if not self.stops:
            return text, False
        pending = self._pending + text
        found = min((i for i in (pending.find(stop) for stop in self.stops) if i >= 0), default=-1)
        if found >= 0:
            self._pending = ""
            return pending[:found], True
        cut = max(len(pending) - self._hold, 0)
        self._pending = pending[cut:]
        return pending[:cut], False

    def flush(self) -> str:
        """The held-back text, when the choice ends for another reason."""
        pending, self._pending = self._pending, ""
        return pending


def finish_reason(stopped_by_text: bool, stop_token: bool, at_limit: bool) -> FinishReason | None:
    if stopped_by_text or stop_token:
        return FinishReason.STOP
    return FinishReason.LENGTH if at_limit else None
