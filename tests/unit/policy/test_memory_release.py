"""release_when_freed: the heap is trimmed once now and again when an object still referenced
elsewhere (a stream's frame, a worker thread) is finally collected, so the memory an unloaded engine
held goes back to the OS whenever its last reference drops."""

from __future__ import annotations

import gc
import threading
import time
import weakref

import pytest

from mcp2026ai.policy import memory


class Held:
    """Stands for an engine: any object that weak references can follow."""


def test_an_object_referenced_elsewhere_is_trimmed_for_when_it_is_collected(monkeypatch: pytest.MonkeyPatch) -> None:
    trims: list[str] = []
    monkeypatch.setattr(memory, "_trim_heap", lambda: trims.append("trim"))
    monkeypatch.setattr(memory, "LATE_TRIMS_S", ())
    still_used, done_with = Held(), Held()
    objects = [still_used, done_with]
    del done_with

    memory.release_when_freed(objects)

    assert objects == []  # the caller's list no longer holds them
    assert trims == ["trim"]  # once now: the object nobody else held is freed already
    del still_used
    gc.collect()
    assert trims == ["trim", "trim"]  # again when the last reference dropped


def test_nothing_left_referenced_needs_no_later_trim(monkeypatch: pytest.MonkeyPatch) -> None:
    trims: list[str] = []
    monkeypatch.setattr(memory, "_trim_heap", lambda: trims.append("trim"))
    monkeypatch.setattr(memory, "LATE_TRIMS_S", ())
    memory.release_when_freed([Held(), Held()])
    gc.collect()
    assert trims == ["trim"]


def test_the_heap_is_trimmed_again_later_for_parts_freed_after_the_objects(monkeypatch: pytest.MonkeyPatch) -> None:
    """A part of an engine (a session in a worker thread's locals) may be freed after the engine itself."""
    trimmed = threading.Semaphore(0)
    monkeypatch.setattr(memory, "_trim_heap", trimmed.release)
    monkeypatch.setattr(memory, "LATE_TRIMS_S", (0.01, 0.02))
    memory.release_when_freed([Held()])
    assert all(trimmed.acquire(timeout=10) for _ in range(3))  # now, then at each late moment


def test_a_footprint_baseline_collects_earlier_garbage_and_trims_first(monkeypatch: pytest.MonkeyPatch) -> None:
    """Garbage of earlier work collected during a load would read as the load holding less."""
    trims: list[str] = []
    monkeypatch.setattr(memory, "_trim_heap", lambda: trims.append("trim"))
    cycle: list[object] = [Held()]
    cycle.append(cycle)
    left = weakref.ref(cycle[0])
    del cycle

    baseline = memory.footprint_baseline(collect=True)

    assert left() is None and trims == ["trim"]
    assert baseline is not None and baseline > 0  # /proc is readable on the hosts the suite runs on


def test_without_a_budget_the_baseline_only_trims(monkeypatch: pytest.MonkeyPatch) -> None:
    """No collection (it holds the GIL) where the footprint decides nothing."""
    monkeypatch.setattr(memory.gc, "collect", lambda: pytest.fail("collected"))
    trims: list[str] = []
    monkeypatch.setattr(memory, "_trim_heap", lambda: trims.append("trim"))
    assert memory.footprint_baseline(collect=False) is not None and trims == ["trim"]


class Cyclic:
    """An engine whose parts refer back to it: freed only by a collection."""

    def __init__(self) -> None:
        self.me = self


def test_an_object_in_a_cycle_let_go_of_later_is_collected_by_a_late_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stream's frame holds the engine at the release, then lets go; no automatic collection runs."""
    monkeypatch.setattr(memory, "_trim_heap", lambda: None)
    monkeypatch.setattr(memory, "LATE_TRIMS_S", (0.05, 0.1))
    gc.disable()
    try:
        held_by_a_frame = Cyclic()
        left = weakref.ref(held_by_a_frame)
        memory.release_when_freed([held_by_a_frame])
        del held_by_a_frame  # the frame lets go: the cycle keeps it alive
        deadline = time.monotonic() + 10
        while left() is not None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert left() is None
    finally:
        gc.enable()
