"""When a generation's tokens reached the data plane: its time to first token, the gaps between
tokens, and how many it produced, as one :class:`StreamSample` for canary analysis and shadows."""

from __future__ import annotations

import time

from mcp2026ai.generation.types import Delta
from mcp2026ai.routing.outcome import Outcome
from mcp2026ai.routing.stream_window import StreamSample

MAX_GAPS = 4096
"""Inter-token gaps kept per generation (a long answer's first ones are enough for a p99)."""


class StreamTimer:
    """Fed every delta of one generation; :meth:`sample` once it ended."""

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.first_at: float | None = None
        self.last_at: float | None = None
        self.gaps_ms: list[float] = []
        self.tokens = 0
        self.token_ids: list[int] = []
        """The first choice's tokens (a shadow's agreement compares them)."""

    def delta(self, delta: Delta) -> None:
        count = len(delta.token_ids)
        if not count:
            return
        now = time.monotonic()
        if self.first_at is None:
            self.first_at = now
        elif self.last_at is not None and len(self.gaps_ms) < MAX_GAPS:
            self.gaps_ms.extend([(now - self.last_at) * 1000 / count] * min(count, MAX_GAPS - len(self.gaps_ms)))
        self.last_at = now
        self.tokens += count
        if delta.index == 0:
            self.token_ids.extend(delta.token_ids)

    @property
    def ttft_ms(self) -> float | None:
        return None if self.first_at is None else (self.first_at - self.started) * 1000

    def sample(self, outcome: Outcome) -> StreamSample:
        return StreamSample(outcome, self.started, time.monotonic(), self.ttft_ms, tuple(self.gaps_ms), self.tokens)
