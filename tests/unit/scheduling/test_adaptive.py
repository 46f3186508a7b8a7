"""The adaptive batching window, driven by an injected clock."""

from __future__ import annotations

import pytest

from mcp2026ai.scheduling.adaptive import AdaptiveDelay, next_delay, percentile
from mcp2026ai.scheduling.config import AdaptiveConfig
from tests.support.clock import FakeClock

RULE = AdaptiveConfig()


def _delay(latency_ms: float, initial_ms: float = 100.0, **config: object) -> tuple[AdaptiveDelay, FakeClock]:
    clock = FakeClock()
    delay = AdaptiveDelay(AdaptiveConfig.model_validate(config), initial_ms, clock)
    for _ in range(50):
        delay.observe(latency_ms)
    clock.advance(1.0)
    return delay, clock


def test_defaults_are_the_documented_rule() -> None:
    assert (RULE.high_p99_ms, RULE.high_backlog, RULE.low_p99_ms, RULE.low_backlog) == (200, 1000, 80, 100)
    assert (RULE.grow_factor, RULE.shrink_factor, RULE.max_delay_ms, RULE.min_delay_ms) == (1.2, 0.8, 500, 50)


def test_high_p99_and_large_backlog_widen_the_window_up_to_500ms() -> None:
    assert next_delay(RULE, 100.0, 250.0, 1500) == pytest.approx(120.0)
    assert next_delay(RULE, 450.0, 250.0, 1500) == 500.0
    assert next_delay(RULE, 500.0, 250.0, 1500) == 500.0


def test_low_p99_and_small_backlog_narrow_the_window_down_to_50ms() -> None:
    assert next_delay(RULE, 100.0, 20.0, 10) == pytest.approx(80.0)
    assert next_delay(RULE, 55.0, 20.0, 10) == 50.0
    assert next_delay(RULE, 50.0, 20.0, 10) == 50.0


def test_a_window_below_the_floor_is_not_raised_to_it() -> None:
    assert next_delay(RULE, 2.0, 20.0, 10) == 2.0
    assert next_delay(RULE, 2.0, 250.0, 5000) == pytest.approx(2.4)


def test_mixed_signals_leave_the_window_alone() -> None:
    assert next_delay(RULE, 100.0, 250.0, 500) == 100.0
    assert next_delay(RULE, 100.0, 50.0, 500) == 100.0
    assert next_delay(RULE, 100.0, 150.0, 10) == 100.0


def test_update_applies_the_rule_once_per_interval() -> None:
    delay, clock = _delay(latency_ms=300.0)
    assert delay.p99_ms() == 300.0
    assert delay.update(backlog=2000) == pytest.approx(120.0)
    assert delay.update(backlog=2000) == pytest.approx(120.0), "same interval: unchanged"
    clock.advance(1.0)
    assert delay.update(backlog=2000) == pytest.approx(144.0)


def test_no_adjustment_before_enough_samples() -> None:
    clock = FakeClock()
    delay = AdaptiveDelay(AdaptiveConfig(min_samples=20), 100.0, clock)
    delay.observe(1.0)
    clock.advance(5.0)
    assert delay.p99_ms() is None
    assert delay.update(backlog=0) == 100.0


def test_disabled_adaptation_keeps_the_window() -> None:
    delay, _ = _delay(latency_ms=1.0, enabled=False)
    assert delay.update(backlog=0) == 100.0


def test_p99_is_the_nearest_rank() -> None:
    assert percentile([float(v) for v in range(1, 101)], 0.99) == 99.0
    assert percentile([5.0], 0.99) == 5.0
