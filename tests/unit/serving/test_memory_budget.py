"""The memory budget's choice of what to evict (serving/memory_budget.py)."""

from __future__ import annotations

import pytest

from mcp2026ai.contract import SLAClass
from mcp2026ai.errors import UnavailableError
from mcp2026ai.serving.memory_budget import Resident, plan_room

BEST, STANDARD, CRITICAL = SLAClass.BEST_EFFORT, SLAClass.THROUGHPUT_GUARANTEED, SLAClass.LATENCY_CRITICAL


def test_nothing_is_evicted_while_the_load_fits() -> None:
    assert plan_room(1000, 300, "new", [Resident("a", 500, BEST, 1.0)]) == []


def test_the_lowest_class_goes_first_then_the_least_recently_used() -> None:
    residents = [
        Resident("critical-old", 200, CRITICAL, 0.0),
        Resident("best-recent", 200, BEST, 9.0),
        Resident("standard-old", 200, STANDARD, 1.0),
        Resident("best-old", 200, BEST, 2.0),
    ]
    assert plan_room(1000, 400, "new", residents) == ["best-old"]
    assert plan_room(1000, 600, "new", residents) == ["best-old", "best-recent"]
    assert plan_room(1000, 800, "new", residents) == ["best-old", "best-recent", "standard-old"]


def test_a_pinned_model_is_never_evicted_and_the_refusal_names_the_budget() -> None:
    residents = [Resident("smollm2", 600, CRITICAL, 0.0, pinned=True), Resident("other", 300, BEST, 0.0)]
    assert plan_room(1000, 400, "gemma3", residents) == ["other"]
    with pytest.raises(UnavailableError, match=r"needs about 500 MiB: the memory budget is 1000 MiB .*smollm2"):
        plan_room(1000, 500, "gemma3", residents)
