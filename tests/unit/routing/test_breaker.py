import pytest

from mcp2026ai.errors import UnavailableError
from mcp2026ai.observability.metrics import REGISTRY
from mcp2026ai.routing.breaker import BreakerBoard, BreakerState, CircuitBreaker, Target, pick_target
from mcp2026ai.routing.config import BreakerSpec, RolloutConfig
from tests.support.clock import FakeClock


def feed(breaker: CircuitBreaker, ok: int, failed: int) -> None:
    for success in [True] * ok + [False] * failed:
        assert breaker.allow()
        breaker.record(success)


def state_metric(model: str, version: str) -> float | None:
    return REGISTRY.get_sample_value("mcp_circuit_state", {"model": model, "version": version})


def test_opens_above_half_failures_with_twenty_requests(clock: FakeClock) -> None:
    breaker = CircuitBreaker("m-open", "1.0.0", BreakerSpec(), clock)
    assert state_metric("m-open", "1.0.0") == 0
    feed(breaker, ok=9, failed=10)  # 19 requests: too few to judge, even at 53% failures
    assert breaker.state is BreakerState.CLOSED
    breaker.record(False)  # 20 requests, 11 failed = 55%
    assert breaker.state is BreakerState.OPEN and not breaker.allow()
    assert state_metric("m-open", "1.0.0") == 2


def test_exactly_half_failures_stay_closed(clock: FakeClock) -> None:
    breaker = CircuitBreaker("m", "1.0.0", BreakerSpec(), clock)
    feed(breaker, ok=10, failed=10)
    assert breaker.state is BreakerState.CLOSED


def test_failures_older_than_the_window_do_not_count(clock: FakeClock) -> None:
    breaker = CircuitBreaker("m", "1.0.0", BreakerSpec(), clock)
    feed(breaker, ok=0, failed=15)
    clock.advance(10.5)
    feed(breaker, ok=6, failed=5)  # 11 in the window
    assert breaker.state is BreakerState.CLOSED


def opened(clock: FakeClock, probes: int = 2) -> CircuitBreaker:
    breaker = CircuitBreaker("m-half", "1.0.0", BreakerSpec(cooldown_s=5, half_open_probes=probes), clock)
    feed(breaker, ok=0, failed=20)
    assert breaker.state is BreakerState.OPEN
    return breaker


def test_half_open_after_cooldown_limits_probes(clock: FakeClock) -> None:
    breaker = opened(clock)
    clock.advance(4.9)
    assert not breaker.allow()
    clock.advance(0.1)
    assert breaker.state is BreakerState.HALF_OPEN and state_metric("m-half", "1.0.0") == 1
    assert [breaker.allow() for _ in range(3)] == [True, True, False]


def test_probe_successes_close(clock: FakeClock) -> None:
    breaker = opened(clock)
    clock.advance(5)
    assert breaker.allow() and breaker.allow()
    breaker.record(True)
    assert breaker.state is BreakerState.HALF_OPEN
    breaker.record(True)
    assert breaker.state is BreakerState.CLOSED and breaker.allow()
    assert state_metric("m-half", "1.0.0") == 0


def test_probe_failure_reopens(clock: FakeClock) -> None:
    breaker = opened(clock)
    clock.advance(5)
    assert breaker.allow()
    breaker.record(False)
    assert breaker.state is BreakerState.OPEN and not breaker.allow()
    clock.advance(5)
    assert breaker.state is BreakerState.HALF_OPEN


def test_lost_probes_are_reissued_after_a_cooldown(clock: FakeClock) -> None:
    breaker = opened(clock, probes=1)
    clock.advance(5)
    assert breaker.allow() and not breaker.allow()  # the probe never reports back
    clock.advance(5)
    assert breaker.allow()


def test_transitions_are_counted(clock: FakeClock) -> None:
    labels = {"model": "m-count", "version": "2.0.0", "state": "open"}
    before = REGISTRY.get_sample_value("mcp_circuit_transitions_total", labels) or 0.0
    breaker = CircuitBreaker("m-count", "2.0.0", BreakerSpec(), clock)
    feed(breaker, ok=0, failed=20)
    assert REGISTRY.get_sample_value("mcp_circuit_transitions_total", labels) == before + 1


CONFIG = RolloutConfig(name="clf", stable="1.0.0", canary="1.1.0", weight=20, fallback_model="clf-small")


def trip(board: BreakerBoard, version: str) -> None:
    breaker = board.get("clf", version, CONFIG.breaker)
    feed(breaker, ok=0, failed=CONFIG.breaker.min_requests)


def test_pick_target_routed_stable_fallback(clock: FakeClock) -> None:
    board = BreakerBoard(clock)
    assert pick_target("clf", "1.1.0", CONFIG, board) == Target("clf", "1.1.0", "routed")
    trip(board, "1.1.0")
    assert pick_target("clf", "1.1.0", CONFIG, board) == Target("clf", "1.0.0", "stable")
    trip(board, "1.0.0")
    assert pick_target("clf", "1.1.0", CONFIG, board) == Target("clf-small", None, "fallback")
    assert pick_target("clf", "1.0.0", CONFIG, board) == Target("clf-small", None, "fallback")
    assert board.states()[("clf", "1.0.0")] is BreakerState.OPEN


def test_pick_target_without_fallback_is_unavailable(clock: FakeClock) -> None:
    board = BreakerBoard(clock)
    config = CONFIG.model_copy(update={"fallback_model": None})
    trip(board, "1.0.0")
    with pytest.raises(UnavailableError, match=r"circuit open for clf:1\.0\.0 and no fallback model"):
        pick_target("clf", "1.0.0", config, board)


def test_pick_target_without_rollout_uses_default_breaker(clock: FakeClock) -> None:
    board = BreakerBoard(clock)
    assert pick_target("plain", "1.0.0", None, board) == Target("plain", "1.0.0", "routed")
    for _ in range(20):
        board.record("plain", "1.0.0", False)
    with pytest.raises(UnavailableError):
        pick_target("plain", "1.0.0", None, board)


def test_board_rebuilds_a_breaker_when_its_settings_change(clock: FakeClock) -> None:
    board = BreakerBoard(clock)
    first = board.get("clf", "1.0.0", BreakerSpec())
    assert board.get("clf", "1.0.0") is first
    assert board.get("clf", "1.0.0", BreakerSpec(min_requests=5)) is not first
