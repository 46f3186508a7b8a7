"""LoadProbe: contended above cores + 1 (by default), idle again below cores + 0.5, read at most once a period."""

from __future__ import annotations

import pytest

from mcp2026ai.runtime.cpu_affinity import usable_cores
from mcp2026ai.runtime.cpu_load import LoadProbe, load_average


class Readings:
    def __init__(self, *values: float) -> None:
        self.values = list(values)
        self.reads = 0

    def __call__(self) -> float:
        self.reads += 1
        return self.values.pop(0)


def test_contention_starts_above_the_upper_mark_and_ends_below_the_lower_one() -> None:
    now = [0.0]
    readings = Readings(2.9, 3.2, 2.7, 2.4)  # 2 cores: contended above 3.0, idle again below 2.5
    probe = LoadProbe(cores=2, read=readings, clock=lambda: now[0])
    seen = []
    for _ in range(4):
        seen.append(probe.contended())
        now[0] += 1.0
    assert seen == [False, True, True, False]


def test_the_load_average_is_read_at_most_once_per_period() -> None:
    now = [0.0]
    readings = Readings(5.0, 0.0)
    probe = LoadProbe(cores=2, period_s=1.0, read=readings, clock=lambda: now[0])
    assert all(probe.contended() for _ in range(50))
    assert readings.reads == 1
    now[0] = 1.0
    assert not probe.contended() and readings.reads == 2


def test_marks_must_be_ordered() -> None:
    with pytest.raises(ValueError, match="leave_below"):
        LoadProbe(cores=2, enter_above=0.5, leave_below=1.0)


def test_the_real_load_average_is_a_number() -> None:
    assert load_average() >= 0.0


def test_the_default_core_count_is_what_this_process_may_use() -> None:
    assert LoadProbe().cores == usable_cores() >= 1
