"""The collector's settings once a server has started (app.freeze_startup_heap)."""

from __future__ import annotations

import gc

from mcp2026ai.app import FULL_COLLECTION_AFTER, freeze_startup_heap


def test_startup_freezes_the_heap_and_makes_full_collections_rarer() -> None:
    before = gc.get_threshold()
    try:
        freeze_startup_heap()
        assert gc.get_freeze_count() > 0  # modules, models and sessions are out of the collector's reach
        young, middle, full = gc.get_threshold()
        assert (young, middle) == before[:2]  # young collections as before
        assert full == FULL_COLLECTION_AFTER > before[2]
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
