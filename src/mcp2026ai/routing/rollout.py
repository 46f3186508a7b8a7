"""Canary analysis: judge a canary version's last window against absolute thresholds (Flagger-style).

Every ``interval_s`` the analyzer looks at the canary requests of the last interval: a server
error share above ``max_5xx_rate``, an error share above ``max_error_rate`` or a p95 latency above
``max_p95_ms`` fails the check; ``threshold`` failed checks in a row mean roll back. A window with
fewer than ``min_requests`` requests gives no verdict either way.

A language model's canary is judged on its finished chats instead (:meth:`CanaryAnalyzer.observe_stream`):
the error rates as above, and the promises of the canary's contract (``generation``: TTFT p99, ITL
p99, tokens/s; routing/stream_window.py) in place of the whole request's p95, which for a stream
measures its length rather than the version's speed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from mcp2026ai.clock import Clock
from mcp2026ai.contract import GenerationSpec
from mcp2026ai.observability.metrics import CANARY_ANALYSIS
from mcp2026ai.routing.config import AnalysisSpec
from mcp2026ai.routing.outcome import Outcome
from mcp2026ai.routing.stream_window import StreamFigures, StreamSample, StreamWindow
from mcp2026ai.routing.stream_window import breaches as promise_breaches
from mcp2026ai.routing.window import SlidingWindow, WindowFigures


@dataclass(frozen=True)
class Verdict:
    rollback: bool
    reason: str
    figures: dict[str, float] = field(default_factory=dict)
    """requests, server_error_rate, error_rate, p95_ms, failed_checks."""


class CanaryAnalyzer:
    """Sliding-window statistics of one canary version and its periodic verdicts."""

    def __init__(self, model: str, version: str, spec: AnalysisSpec, clock: Clock = time.monotonic) -> None:
        self.model, self.version, self.spec = model, version, spec
        self._clock = clock
        self._window = SlidingWindow(spec.interval_s)
        self._streams = StreamWindow(spec.interval_s)
        self.promises: GenerationSpec | None = None
        """The canary's contract promises for generation (set by its first observed stream)."""
        self._next_at = clock() + spec.interval_s
        self._failed_in_a_row = 0

    def observe(self, outcome: Outcome, latency_ms: float, now: float | None = None) -> None:
        self._window.add(self._clock() if now is None else now, outcome, latency_ms)

    def observe_stream(self, sample: StreamSample, promises: GenerationSpec | None) -> None:
        """One finished generation of the canary, and what its contract promises."""
        self.promises = promises or self.promises
        self._streams.add(sample)

    @property
    def judges_streams(self) -> bool:
        return len(self._streams) > 0 or self.promises is not None

    def current(self) -> dict[str, float]:
        """The window so far (requests, error rates, p95) and the seconds until its verdict, for display."""
        now = self._clock()
        if self.judges_streams:
            figures = self._streams.figures(now).as_dict()
            return {**figures, "failed_checks": float(self._failed_in_a_row), "next_check_s": self._next_at - now}
        return {**_as_dict(self._window.figures(now), self._failed_in_a_row), "next_check_s": self._next_at - now}

    def due(self, now: float) -> bool:
        return now >= self._next_at

    def evaluate(self, now: float) -> Verdict:
        """Judge the window ending at ``now`` and schedule the next check one interval later."""
        self._next_at = now + self.spec.interval_s
        if self.judges_streams:
            return self._evaluate_streams(self._streams.figures(now))
        figures = self._window.figures(now)
        self._export(figures)
        if figures.requests < self.spec.min_requests:
            return Verdict(
                False,
                f"{figures.requests} requests < min_requests {self.spec.min_requests}: no verdict",
                _as_dict(figures, self._failed_in_a_row),
            )
        return self._judged(breaches(figures, self.spec), _as_dict(figures, self._failed_in_a_row))

    def _evaluate_streams(self, figures: StreamFigures) -> Verdict:
        data = {**figures.as_dict(), "failed_checks": float(self._failed_in_a_row)}
        self._export_figures(data)
        if figures.requests < self.spec.min_requests:
            reason = f"{figures.requests} chats < min_requests {self.spec.min_requests}: no verdict"
            return Verdict(False, reason, data)
        problems = _rate_breaches(figures.server_error_rate, figures.error_rate, self.spec)
        problems += promise_breaches(figures, self.promises) if self.promises is not None else []
        return self._judged(problems, data)

    def _judged(self, problems: list[str], data: dict[str, float]) -> Verdict:
        self._failed_in_a_row = self._failed_in_a_row + 1 if problems else 0
        data = {**data, "failed_checks": float(self._failed_in_a_row)}
        if not problems:
            return Verdict(False, "within thresholds", data)
        text = "; ".join(problems)
        if self._failed_in_a_row < self.spec.threshold:
            return Verdict(False, f"{text} (failed check {self._failed_in_a_row} of {self.spec.threshold})", data)
        return Verdict(True, f"canary {self.model}:{self.version} over {self.spec.interval_s:g}s: {text}", data)

    def _export_figures(self, data: dict[str, float]) -> None:
        for name, value in data.items():
            if name != "failed_checks":
                CANARY_ANALYSIS.labels(model=self.model, version=self.version, figure=name).set(value)

    def _export(self, figures: WindowFigures) -> None:
        self._export_figures(_as_dict(figures, self._failed_in_a_row))


def breaches(figures: WindowFigures, spec: AnalysisSpec) -> list[str]:
    """The thresholds a window exceeds (strictly), as one readable phrase each."""
    problems = _rate_breaches(figures.server_error_rate, figures.error_rate, spec)
    if figures.p95_ms > spec.max_p95_ms:
        problems.append(f"p95 latency {figures.p95_ms:.1f} ms > {spec.max_p95_ms:g} ms")
    return problems


def _rate_breaches(server_error_rate: float, error_rate: float, spec: AnalysisSpec) -> list[str]:
    problems = []
    if server_error_rate > spec.max_5xx_rate:
        problems.append(f"5xx rate {server_error_rate:.2%} > {spec.max_5xx_rate:.2%}")
    if error_rate > spec.max_error_rate:
        problems.append(f"error rate {error_rate:.2%} > {spec.max_error_rate:.2%}")
    return problems


def _as_dict(figures: WindowFigures, failed_checks: int) -> dict[str, float]:
    return {
        "requests": float(figures.requests),
        "server_error_rate": figures.server_error_rate,
        "error_rate": figures.error_rate,
        "p95_ms": figures.p95_ms,
        "failed_checks": float(failed_checks),
    }
