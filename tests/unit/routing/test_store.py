from datetime import UTC, datetime

import pytest

from mcp2026ai.errors import InvalidArgumentError, NotFoundError
from mcp2026ai.registry import ModelRegistry, Stage
from mcp2026ai.routing.config import RolloutConfig
from mcp2026ai.routing.store import MODEL_LEVEL, ROLLOUT_KIND, RolloutStore


def test_put_pins_the_default_stable_and_latest_wins(registry: ModelRegistry) -> None:
    store = RolloutStore(registry)
    assert store.get("clf") is None
    stored = store.put(RolloutConfig(name="clf", canary="1.1.0", weight=20))
    assert stored.stable == "1.0.0"  # the production version
    store.put(stored.model_copy(update={"weight": 50}), "raise weight")
    assert store.get("clf") == stored.model_copy(update={"weight": 50})
    assert [change.reason for change in store.history("clf")] == ["set", "raise weight"]
    rows = registry.catalog.annotations("clf", ROLLOUT_KIND)
    assert [version for version, _, _ in rows] == [MODEL_LEVEL, MODEL_LEVEL]


def test_default_stable_skips_the_canary_without_production(registry: ModelRegistry) -> None:
    registry.promote("clf", "1.0.0", Stage.STAGING)
    stored = RolloutStore(registry).put(RolloutConfig(name="clf", canary="1.2.0", weight=10))
    assert stored.stable == "1.1.0"


def test_clear_means_no_rollout(registry: ModelRegistry) -> None:
    store = RolloutStore(registry)
    store.put(RolloutConfig(name="clf", canary="1.1.0", weight=20))
    store.clear("clf")
    assert store.get("clf") is None
    assert store.history("clf")[-1].reason == "cleared"


@pytest.mark.parametrize(
    ("config", "error", "message"),
    [
        (
            RolloutConfig(name="clf", canary="9.0.0", weight=5),
            NotFoundError,
            "canary: model 'clf' has no version 9.0.0",
        ),
        (RolloutConfig(name="clf", stable="0.9.0"), InvalidArgumentError, "stable: clf:0.9.0 is archived"),
        (RolloutConfig(name="clf", shadow="3.0.0"), NotFoundError, "shadow: model 'clf' has no version 3.0.0"),
        (RolloutConfig(name="nope"), NotFoundError, "unknown model 'nope'"),
        (RolloutConfig(name="clf", fallback_model="ghost"), NotFoundError, "fallback_model: unknown model 'ghost'"),
    ],
)
def test_versions_must_exist(registry: ModelRegistry, config: RolloutConfig, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        RolloutStore(registry).put(config)
    assert RolloutStore(registry).get(config.name) is None


def test_no_version_left_for_stable(registry: ModelRegistry) -> None:
    with pytest.raises(InvalidArgumentError, match="no other version to serve as stable"):
        RolloutStore(registry).put(RolloutConfig(name="clf-small", canary="1.0.0", weight=5))


def test_decisions_use_the_policy_trace_keys(registry: ModelRegistry) -> None:
    at = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    store = RolloutStore(registry, wallclock=lambda: at)
    store.record_decision("clf", "1.1.0", "rollback", chosen="clf:1.0.0", reason="too slow", figures={"p95_ms": 900.0})
    [row] = store.decisions("clf", "rollback")
    assert row == {
        "version": "1.1.0",
        "time": at.isoformat(),
        "trigger": "rollback",
        "chosen": "clf:1.0.0",
        "reason": "too slow",
        "candidates": [],
        "figures": {"p95_ms": 900.0},
    }
    assert store.decisions("clf", "plan") == []
