"""KV slots stay dense: a sequence leaving from the middle is replaced by the last one."""

from __future__ import annotations

import pytest

from mcp2026ai.generation.kv_slots import SlotMove, SlotTable


def test_slots_stay_dense_and_report_the_move() -> None:
    table = SlotTable(num_slots=3, max_len=100)
    assert [table.allocate(name, 10 * (i + 1)) for i, name in enumerate("abc")] == [0, 1, 2]
    table.grow("c", 5)
    assert table.free("a") == SlotMove(source=2, target=0, length=35)
    assert table.order() == ["c", "b"] and table.used_tokens == 55
    assert table.free("b") is None and table.order() == ["c"]


def test_admission_needs_a_free_slot_and_room_in_it() -> None:
    table = SlotTable(num_slots=1, max_len=8)
    assert not table.can_admit(9)
    table.allocate("a", 7)
    assert not table.can_admit(1)
    table.grow("a")
    with pytest.raises(ValueError, match="over the slot's 8"):
        table.grow("a")
