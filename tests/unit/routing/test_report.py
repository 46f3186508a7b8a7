from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from mcp2026ai.observability.metrics import REGISTRY
from mcp2026ai.registry import ModelRegistry
from mcp2026ai.routing.diff import Observation, compare
from mcp2026ai.routing.outcome import Outcome
from mcp2026ai.routing.report import SHADOW_DIFF_KIND, ShadowKey, ShadowReporter, ShadowStats, shadow_report

KEY = ShadowKey("clf", "1.0.0", "1.1.0")
PRIMARY = np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=np.float32)
SHADOW = np.array([[1.0, 2.0, 3.5], [6.0, 5.0, 4.0]], dtype=np.float32)


def good() -> Observation:
    return Observation(Outcome.OK, 12.0, {"scores": SHADOW})


def primary() -> Observation:
    return Observation(Outcome.OK, 10.0, {"scores": PRIMARY})


class Ticking:
    def __init__(self) -> None:
        self.at = datetime(2026, 5, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.at += timedelta(minutes=1)
        return self.at


def sample(name: str, labels: dict[str, str]) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def test_flushes_aggregate_and_merge_across_restarts(registry: ModelRegistry) -> None:
    labels = {"model": "clf", "version": "1.0.0", "shadow_version": "1.1.0"}
    ok_before = sample("mcp_shadow_requests_total", {**labels, "result": "ok"})
    agreed_before = sample("mcp_shadow_top1_rows_total", {**labels, "agreed": "true"})

    reporter = ShadowReporter(registry.catalog, Ticking())
    reporter.add(KEY, compare(primary(), good()))
    reporter.add(KEY, compare(primary(), Observation(Outcome.SERVER_ERROR, 30.0)))
    assert reporter.flush() == 1
    assert reporter.flush() == 0  # nothing new: nothing written
    restarted = ShadowReporter(registry.catalog, Ticking())
    restarted.add(KEY, compare(primary(), Observation(Outcome.OK, 8.0, {"scores": PRIMARY})))
    restarted.dropped(KEY)
    restarted.flush()

    assert len(registry.catalog.annotations("clf", SHADOW_DIFF_KIND)) == 2
    [row] = shadow_report(registry.catalog, "clf")
    assert (row["primary"], row["shadow"], row["requests"], row["dropped"]) == ("1.0.0", "1.1.0", 3, 1)
    assert row["status_match_rate"] == pytest.approx(2 / 3)
    assert row["shadow_error_rate"] == pytest.approx(1 / 3)
    assert row["max_abs_diff"] == 2.0
    assert row["rel_l2_max"] == pytest.approx((8.25 / 91) ** 0.5)
    assert row["rel_l2_mean"] == pytest.approx((8.25 / 91) ** 0.5 / 2)
    assert row["top1_agreement"] == pytest.approx(3 / 4)
    assert row["primary_latency_ms_mean"] == pytest.approx(10.0)
    assert row["shadow_latency_ms_mean"] == pytest.approx(50.0 / 3)

    assert sample("mcp_shadow_requests_total", {**labels, "result": "ok"}) == ok_before + 2
    assert sample("mcp_shadow_requests_total", {**labels, "result": "error"}) >= 1
    assert sample("mcp_shadow_requests_total", {**labels, "result": "dropped"}) >= 1
    assert sample("mcp_shadow_top1_rows_total", {**labels, "agreed": "true"}) == agreed_before + 3
    assert sample("mcp_shadow_rel_l2_count", labels) >= 2
    assert sample("mcp_shadow_latency_seconds_count", {**labels, "role": "shadow"}) >= 3


def test_pairs_are_reported_separately(registry: ModelRegistry) -> None:
    reporter = ShadowReporter(registry.catalog)
    reporter.add(KEY, compare(primary(), good()))
    reporter.add(ShadowKey("clf", "1.0.0", "1.2.0"), compare(primary(), good()))
    reporter.flush()
    assert [(r["primary"], r["shadow"]) for r in shadow_report(registry.catalog, "clf")] == [
        ("1.0.0", "1.1.0"),
        ("1.0.0", "1.2.0"),
    ]
    assert shadow_report(registry.catalog, "clf-small") == []


def test_empty_stats_summary_has_no_made_up_numbers() -> None:
    summary = ShadowStats().summary()
    assert summary["requests"] == 0 and summary["max_abs_diff"] is None and summary["top1_agreement"] is None
