"""The memory budget's choice of what to evict (serving/memory_budget.py)."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

import pytest

from mcp2026ai.contract import SLAClass
from mcp2026ai.errors import UnavailableError
from mcp2026ai.registry import ModelRegistry
from mcp2026ai.serving.budget import MemoryBudget
from mcp2026ai.serving.memory_budget import Resident, plan_room
from support.models import add_sub_model

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


class _Table:
    """A tenant of the budget holding plain residents (the budget's seam, not a served model)."""

    def __init__(self, residents: list[Resident]) -> None:
        self.held = {resident.name: resident for resident in residents}
        self.evicted: list[str] = []

    def residents(self, pinned: set[str]) -> list[Resident]:
        return [replace(resident, pinned=resident.name in pinned) for resident in self.held.values()]

    async def evict(self, name: str) -> None:
        self.evicted.append(name)
        del self.held[name]


def test_a_load_the_estimate_got_wrong_is_made_good_after_it() -> None:
    budget = MemoryBudget(500)
    table = _Table([Resident("old", 200, BEST, 1.0), Resident("recent", 200, BEST, 2.0)])
    budget.attach(table)

    async def load() -> None:
        async with budget.admit("resnet50", 1):  # a 76 KiB file
            table.held["resnet50"] = Resident("resnet50", 270, BEST, 3.0)  # what it took, measured
            await budget.loaded("resnet50", "1.0.0", 270 << 20)

    asyncio.run(load())
    assert table.evicted == ["old"] and budget.held_mb() == 470
    assert budget.eviction_reason("old") == "evicted (memory budget)"
    assert budget.measured_mb("resnet50", "1.0.0") == 270


def test_footprints_are_kept_in_the_catalog_for_a_later_server(tmp_path: Path) -> None:
    registry = ModelRegistry(tmp_path / "home")
    registry.register("add_sub", add_sub_model(tmp_path / "add_sub.onnx"))
    asyncio.run(MemoryBudget(100, registry.catalog).loaded("add_sub", "1.0.0", 30 << 20))
    assert MemoryBudget(100, registry.catalog).measured_mb("add_sub", "1.0.0") == 30
    assert MemoryBudget(100, registry.catalog).measured_mb("add_sub", "9.9.9") is None


def test_memory_the_process_holds_beyond_its_baseline_and_the_footprints_is_made_room_for() -> None:
    budget = MemoryBudget(500)
    table = _Table([Resident("old", 200, BEST, 1.0), Resident("recent", 200, BEST, 2.0)])
    budget.attach(table)
    budget.measure_baseline()  # the process now: the baseline and what the table holds
    assert budget.baseline_mb is not None
    budget.baseline_mb -= 150  # as if 150 MiB more were held than the footprints say (allocator retention)
    assert budget.unaccounted_mb() >= 150

    async def load() -> None:
        async with budget.admit("small", 50):  # fits the footprints (450), not the 150 MiB held beyond
            pass

    asyncio.run(load())
    assert table.evicted == ["old"]
