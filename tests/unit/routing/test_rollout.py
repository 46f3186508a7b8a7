import pytest

from mcp2026ai.observability.metrics import REGISTRY
from mcp2026ai.registry import ModelRegistry
from mcp2026ai.routing.config import AnalysisSpec, RolloutConfig
from mcp2026ai.routing.manager import RolloutManager
from mcp2026ai.routing.outcome import Outcome
from mcp2026ai.routing.rollout import CanaryAnalyzer, Verdict
from mcp2026ai.routing.store import RolloutStore
from tests.support.clock import FakeClock


def feed(analyzer: CanaryAnalyzer, clock: FakeClock, *, ok: int, server: int = 0, client: int = 0,
         latency_ms: float = 10.0) -> None:  # fmt: skip
    for outcome, count in ((Outcome.OK, ok), (Outcome.SERVER_ERROR, server), (Outcome.CLIENT_ERROR, client)):
        for _ in range(count):
            analyzer.observe(outcome, latency_ms, clock())


def judged(clock: FakeClock, **traffic: float) -> tuple[bool, str]:
    analyzer = CanaryAnalyzer("clf", "1.1.0", AnalysisSpec(), clock)
    feed(analyzer, clock, **traffic)  # type: ignore[arg-type]
    clock.advance(60)
    verdict = analyzer.evaluate(clock())
    return verdict.rollback, verdict.reason


@pytest.mark.parametrize(
    ("traffic", "rollback", "reason"),
    [
        ({"ok": 960, "server": 40}, True, "5xx rate 4.00% > 3.50%"),
        ({"ok": 970, "server": 30}, False, "within thresholds"),
        ({"ok": 965, "server": 35}, False, "within thresholds"),  # exactly 3.5%: not above
        ({"ok": 940, "client": 60}, True, "error rate 6.00% > 5.00%"),
        ({"ok": 950, "client": 50}, False, "within thresholds"),
        ({"ok": 100, "latency_ms": 900.0}, True, "p95 latency 900.0 ms > 800 ms"),
        ({"ok": 100, "latency_ms": 800.0}, False, "within thresholds"),
    ],
)
def test_each_threshold_triggers_and_not_below(
    clock: FakeClock, traffic: dict[str, float], rollback: bool, reason: str
) -> None:
    got_rollback, got_reason = judged(clock, **traffic)
    assert got_rollback is rollback
    assert reason in got_reason


def test_p95_is_the_nearest_rank_over_the_window(clock: FakeClock) -> None:
    analyzer = CanaryAnalyzer("clf", "1.1.0", AnalysisSpec(), clock)
    feed(analyzer, clock, ok=94, latency_ms=100.0)
    feed(analyzer, clock, ok=6, latency_ms=2000.0)  # 6% slow: p95 is slow
    clock.advance(60)
    verdict = analyzer.evaluate(clock())
    assert verdict.figures["p95_ms"] == 2000.0 and verdict.rollback


def test_old_requests_leave_the_window(clock: FakeClock) -> None:
    analyzer = CanaryAnalyzer("clf", "1.1.0", AnalysisSpec(), clock)
    feed(analyzer, clock, ok=0, server=50)
    clock.advance(61)
    feed(analyzer, clock, ok=100)
    verdict = analyzer.evaluate(clock())
    assert not verdict.rollback and verdict.figures["requests"] == 100


def test_too_few_requests_give_no_verdict(clock: FakeClock) -> None:
    analyzer = CanaryAnalyzer("clf", "1.1.0", AnalysisSpec(min_requests=10), clock)
    feed(analyzer, clock, ok=0, server=9)
    clock.advance(60)
    verdict = analyzer.evaluate(clock())
    assert not verdict.rollback and "no verdict" in verdict.reason


def test_threshold_of_failed_checks_in_a_row(clock: FakeClock) -> None:
    analyzer = CanaryAnalyzer("clf", "1.1.0", AnalysisSpec(interval_s=10, threshold=2), clock)
    results = []
    for server in (20, 0, 20, 20):
        feed(analyzer, clock, ok=100 - server, server=server)
        clock.advance(10)
        results.append(analyzer.evaluate(clock()).rollback)
    assert results == [False, False, False, True]


def test_due_every_interval(clock: FakeClock) -> None:
    analyzer = CanaryAnalyzer("clf", "1.1.0", AnalysisSpec(interval_s=30), clock)
    assert not analyzer.due(clock() + 29.9)
    assert analyzer.due(clock() + 30)
    analyzer.evaluate(clock() + 30)
    assert not analyzer.due(clock() + 59) and analyzer.due(clock() + 60)


def canary_manager(registry: ModelRegistry, clock: FakeClock, **analysis: float) -> RolloutManager:
    manager = RolloutManager(RolloutStore(registry), clock)
    spec = AnalysisSpec(interval_s=10, **analysis)  # type: ignore[arg-type]
    manager.set(RolloutConfig(name="clf", canary="1.1.0", weight=20, shadow="1.1.0", shadow_percent=5, analysis=spec))
    return manager


def test_manager_rolls_back_persists_and_traces(registry: ModelRegistry, clock: FakeClock) -> None:
    manager = canary_manager(registry, clock)
    before = REGISTRY.get_sample_value("mcp_canary_rollbacks_total", {"model": "clf", "version": "1.1.0"}) or 0.0
    for i in range(100):
        manager.observe("clf", "1.1.0", Outcome.SERVER_ERROR if i < 10 else Outcome.OK, 5.0)
        manager.observe("clf", "1.0.0", Outcome.SERVER_ERROR, 5.0)  # stable errors are not the canary's
    assert manager.tick() == {}  # interval not over yet
    clock.advance(10)
    verdict = manager.tick()["clf"]
    assert verdict.rollback and "5xx rate 10.00% > 3.50%" in verdict.reason

    stored = RolloutStore(registry).get("clf")
    assert stored is not None and stored == manager.config("clf")
    assert (stored.stable, stored.canary, stored.weight, stored.shadow) == ("1.0.0", None, 0, None)
    assert RolloutStore(registry).history("clf")[-1].reason.startswith("rollback: canary clf:1.1.0")
    [event] = RolloutStore(registry).decisions("clf", "rollback")
    assert event["version"] == "1.1.0" and event["chosen"] == "clf:1.0.0" and event["candidates"] == []
    assert event["reason"] == verdict.reason and event["figures"]["server_error_rate"] == pytest.approx(0.1)
    assert REGISTRY.get_sample_value("mcp_canary_rollbacks_total", {"model": "clf", "version": "1.1.0"}) == before + 1
    gauge = {"model": "clf", "version": "1.1.0", "figure": "server_error_rate"}
    assert REGISTRY.get_sample_value("mcp_canary_analysis", gauge) == pytest.approx(0.1)

    clock.advance(10)
    assert manager.tick() == {}  # nothing left to analyse


def test_healthy_canary_stays(registry: ModelRegistry, clock: FakeClock) -> None:
    manager = canary_manager(registry, clock)
    for _ in range(50):
        manager.observe("clf", "1.1.0", Outcome.OK, 20.0)
    clock.advance(10)
    assert not manager.tick()["clf"].rollback
    config = manager.config("clf")
    assert config is not None and config.canary == "1.1.0"
    assert RolloutStore(registry).decisions("clf") == []


def test_refresh_picks_up_changes_from_another_process(registry: ModelRegistry, clock: FakeClock) -> None:
    manager = canary_manager(registry, clock)
    RolloutStore(registry).clear("clf")
    assert manager.config("clf") is not None  # cached
    manager.refresh()
    assert manager.config("clf") is None
    assert manager.tick(clock() + 100) == {}


def test_roll_back_without_canary_is_refused(registry: ModelRegistry, clock: FakeClock) -> None:
    manager = RolloutManager(RolloutStore(registry), clock)
    with pytest.raises(LookupError, match="no canary to roll back"):
        manager.roll_back("clf", Verdict(True, "forced"))
    assert RolloutStore(registry).decisions("clf") == []


def test_a_read_older_than_a_local_rollback_is_not_installed(registry: ModelRegistry, clock: FakeClock) -> None:
    """The sync reads rollouts on a worker thread while the loop may roll a canary back: installing
    that older read would bring the failed canary back until the next refresh."""
    manager = canary_manager(registry, clock)
    before_rollback = manager.read(manager.known_models())  # the worker thread's read...
    for _ in range(100):
        manager.observe("clf", "1.1.0", Outcome.SERVER_ERROR, 5.0)
    clock.advance(10)
    assert manager.tick()["clf"].rollback  # ...while the loop rolls back
    assert manager.install(before_rollback) is False
    config = manager.config("clf")
    assert config is not None and config.canary is None

    fresh = manager.read(manager.known_models())  # the next refresh reads the rollback
    assert manager.install(fresh) is True
    config = manager.config("clf")
    assert config is not None and (config.stable, config.canary) == ("1.0.0", None)


def test_current_window_is_shown_before_its_verdict() -> None:
    clock = FakeClock()
    analyzer = CanaryAnalyzer("clf", "1.1.0", AnalysisSpec(interval_s=60), clock)
    feed(analyzer, clock, ok=8, server=2)
    clock.advance(15)
    window = analyzer.current()
    assert window["requests"] == 10 and window["server_error_rate"] == pytest.approx(0.2)
    assert window["next_check_s"] == pytest.approx(45)
