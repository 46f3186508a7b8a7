"""Canary analysis of a language model's chats: the error rates and its contract's generation
promises (TTFT p99, ITL p99, tokens/s), judged per analysis window."""

import pytest

from mcp2026ai.contract import GenerationSpec
from mcp2026ai.routing.config import AnalysisSpec
from mcp2026ai.routing.outcome import Outcome
from mcp2026ai.routing.rollout import CanaryAnalyzer
from mcp2026ai.routing.stream_window import StreamSample, StreamWindow, busy_seconds
from tests.support.clock import FakeClock


def chat(clock: FakeClock, *, ttft_ms: float = 50.0, itl_ms: float = 20.0, tokens: int = 5,
         outcome: Outcome = Outcome.OK) -> StreamSample:  # fmt: skip
    started = clock()
    seconds = (ttft_ms + itl_ms * (tokens - 1)) / 1000
    return StreamSample(outcome, started, started + seconds, ttft_ms, (itl_ms,) * (tokens - 1), tokens)


def verdict_of(clock: FakeClock, promises: GenerationSpec, **figures: float) -> tuple[bool, str, dict[str, float]]:
    analyzer = CanaryAnalyzer("smollm2", "2.0.0", AnalysisSpec(interval_s=10, min_requests=10), clock)
    failing = int(figures.pop("failing", 0))
    for index in range(20):
        outcome = Outcome.SERVER_ERROR if index < failing else Outcome.OK
        analyzer.observe_stream(chat(clock, outcome=outcome, **figures), promises)  # type: ignore[arg-type]
        clock.advance(0.2)
    clock.advance(6)
    verdict = analyzer.evaluate(clock())
    return verdict.rollback, verdict.reason, verdict.figures


@pytest.mark.parametrize(
    ("promises", "figures", "rollback", "reason"),
    [
        (GenerationSpec(ttft_p99_ms=1), {}, True, "TTFT p99 50.0 ms > contract 1 ms"),
        (GenerationSpec(ttft_p99_ms=50), {}, False, "within thresholds"),
        (GenerationSpec(itl_p99_ms=10), {}, True, "ITL p99 20.0 ms > contract 10 ms"),
        (GenerationSpec(itl_p99_ms=20), {}, False, "within thresholds"),
        (GenerationSpec(min_tokens_per_s=100), {}, True, "tokens/s < contract 100 tokens/s"),
        (GenerationSpec(min_tokens_per_s=30), {}, False, "within thresholds"),
        (GenerationSpec(), {"failing": 2}, True, "5xx rate 10.00% > 3.50%"),
        (GenerationSpec(), {"ttft_ms": 5000.0}, False, "within thresholds"),  # no promise: a slow chat is fine
    ],
)
def test_each_promise_triggers_and_not_at_its_bound(
    clock: FakeClock, promises: GenerationSpec, figures: dict[str, float], rollback: bool, reason: str
) -> None:
    got_rollback, got_reason, data = verdict_of(clock, promises, **figures)
    assert got_rollback is rollback, got_reason
    assert reason in got_reason
    assert data["requests"] == 20 and data["ttft_p99_ms"] > 0


def test_a_rollback_names_the_canary_and_the_window(clock: FakeClock) -> None:
    _, reason, _ = verdict_of(clock, GenerationSpec(ttft_p99_ms=1, itl_p99_ms=1))
    assert reason.startswith("canary smollm2:2.0.0 over 10s: TTFT p99")
    assert "ITL p99" in reason


def test_too_few_chats_give_no_verdict(clock: FakeClock) -> None:
    analyzer = CanaryAnalyzer("smollm2", "2.0.0", AnalysisSpec(interval_s=10, min_requests=10), clock)
    for _ in range(9):
        analyzer.observe_stream(chat(clock, ttft_ms=900), GenerationSpec(ttft_p99_ms=1))
    clock.advance(10)
    verdict = analyzer.evaluate(clock())
    assert not verdict.rollback and "9 chats < min_requests 10" in verdict.reason


def test_the_window_forgets_chats_older_than_its_span(clock: FakeClock) -> None:
    window = StreamWindow(10)
    window.add(chat(clock, ttft_ms=900))
    clock.advance(20)
    window.add(chat(clock, ttft_ms=10))
    figures = window.figures(clock() + 1)
    assert figures.requests == 1 and figures.ttft_p99_ms == 10


def test_tokens_per_second_counts_concurrent_chats_once_in_time() -> None:
    assert busy_seconds([(0, 2), (1, 3), (5, 6)]) == 4
    window = StreamWindow(100)
    window.add(StreamSample(Outcome.OK, 0, 2, 10, (), 20))
    window.add(StreamSample(Outcome.OK, 0, 2, 10, (), 20))
    assert window.figures(2).tokens_per_s == 20  # 40 tokens over the 2 s both ran
