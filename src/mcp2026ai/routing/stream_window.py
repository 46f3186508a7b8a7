"""A time-bounded window of finished generations (streams) and the contract figures it gives.

A language model's canary is judged on what its contract promises (``generation`` section): time to
first token p99, inter-token latency p99 and output tokens per second, besides the error rates every
canary is judged on. Each finished chat is one :class:`StreamSample`; :meth:`StreamWindow.figures`
turns the samples of the last ``span_s`` seconds into :class:`StreamFigures`, and :func:`breaches`
names each promise the window breaks.

Tokens per second is the aggregate rate while the version was serving: the window's output tokens
over the time at least one of its chats ran (the union of their intervals), so that an idle gap
between chats is not counted against the version, and concurrent chats add up.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from mcp2026ai.contract import GenerationSpec
from mcp2026ai.routing.outcome import Outcome
from mcp2026ai.routing.window import percentile


@dataclass(frozen=True)
class StreamSample:
    """One finished generation as canary analysis sees it (times in seconds on one monotonic clock)."""

    outcome: Outcome
    started: float
    ended: float
    ttft_ms: float | None = None
    """Time to its first token; None when it produced none."""
    itl_ms: tuple[float, ...] = ()
    """The gaps between its successive tokens."""
    tokens: int = 0


@dataclass(frozen=True)
class StreamFigures:
    requests: int
    server_errors: int
    errors: int
    ttft_p99_ms: float
    itl_p99_ms: float
    tokens_per_s: float
    busy_s: float = field(default=0.0)

    @property
    def server_error_rate(self) -> float:
        return self.server_errors / self.requests if self.requests else 0.0

    @property
    def error_rate(self) -> float:
        return self.errors / self.requests if self.requests else 0.0

    def as_dict(self) -> dict[str, float]:
        return {
            "requests": float(self.requests),
            "server_error_rate": self.server_error_rate,
            "error_rate": self.error_rate,
            "ttft_p99_ms": self.ttft_p99_ms,
            "itl_p99_ms": self.itl_p99_ms,
            "tokens_per_s": self.tokens_per_s,
        }


class StreamWindow:
    """The generations that ended in the last ``span_s`` seconds (at most ``max_samples``)."""

    def __init__(self, span_s: float, max_samples: int = 20_000) -> None:
        self.span_s = span_s
        self._samples: deque[StreamSample] = deque(maxlen=max_samples)

    def add(self, sample: StreamSample) -> None:
        self._samples.append(sample)

    def __len__(self) -> int:
        return len(self._samples)

    def figures(self, now: float) -> StreamFigures:
        horizon = now - self.span_s
        while self._samples and self._samples[0].ended < horizon:
            self._samples.popleft()
        samples = list(self._samples)
        ttfts = sorted(sample.ttft_ms for sample in samples if sample.ttft_ms is not None)
        itls = sorted(gap for sample in samples for gap in sample.itl_ms)
        busy = busy_seconds([(sample.started, sample.ended) for sample in samples if sample.tokens])
        tokens = sum(sample.tokens for sample in samples)
        return StreamFigures(
            requests=len(samples),
            server_errors=sum(sample.outcome is Outcome.SERVER_ERROR for sample in samples),
            errors=sum(sample.outcome.failed for sample in samples),
            ttft_p99_ms=percentile(ttfts, 99.0),
            itl_p99_ms=percentile(itls, 99.0),
            tokens_per_s=tokens / busy if busy > 0 else 0.0,
            busy_s=busy,
        )


def busy_seconds(intervals: list[tuple[float, float]]) -> float:
    """The length of the union of ``intervals`` (start, end)."""
    total, reach = 0.0, float("-inf")
    for start, end in sorted(intervals):
        if end <= reach:
            continue
        total += end - max(start, reach)
        reach = end
    return total


def breaches(figures: StreamFigures, promises: GenerationSpec) -> list[str]:
    """The contract promises a window breaks, as one readable phrase each (strictly over/under)."""
    problems = []
    if promises.ttft_p99_ms is not None and figures.ttft_p99_ms > promises.ttft_p99_ms:
        problems.append(f"TTFT p99 {figures.ttft_p99_ms:.1f} ms > contract {promises.ttft_p99_ms:g} ms")
    if promises.itl_p99_ms is not None and figures.itl_p99_ms > promises.itl_p99_ms:
        problems.append(f"ITL p99 {figures.itl_p99_ms:.1f} ms > contract {promises.itl_p99_ms:g} ms")
    if promises.min_tokens_per_s and figures.busy_s > 0 and figures.tokens_per_s < promises.min_tokens_per_s:
        problems.append(f"{figures.tokens_per_s:.1f} tokens/s < contract {promises.min_tokens_per_s:g} tokens/s")
    return problems
