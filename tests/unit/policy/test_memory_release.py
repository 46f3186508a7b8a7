"""release_when_freed: the heap is trimmed once now and again when an object still referenced
elsewhere (a stream's frame, a worker thread) is finally collected, so the memory an unloaded engine
held goes back to the OS whenever its last reference drops."""

from __future__ import annotations

import gc

import pytest

from mcp2026ai.policy import memory


class Held:
    """Stands for an engine: any object that weak references can follow."""


def test_an_object_referenced_elsewhere_is_trimmed_for_when_it_is_collected(monkeypatch: pytest.MonkeyPatch) -> None:
    trims: list[str] = []
    monkeypatch.setattr(memory, "_trim_heap", lambda: trims.append("trim"))
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
    memory.release_when_freed([Held(), Held()])
    gc.collect()
    assert trims == ["trim"]
