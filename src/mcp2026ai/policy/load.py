"""How busy the CPUs this process may use were with *other* work while a plan was measured.

:class:`CpuLoadMeter` reads ``/proc/stat`` (the busy time of each CPU in this process's affinity
mask) and this process's own CPU time (``os.times``): the busy time that is not ours, divided by the
wall time, is the outside load in cores. ``os.getloadavg`` is recorded beside it (machine-wide, for
the trace). Where ``/proc/stat`` cannot be read the outside load is None and nothing is flagged.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field

from mcp2026ai.clock import Clock

_IDLE_FIELDS = (3, 4)  # idle, iowait (after the cpu label: user nice system idle iowait irq softirq steal)


class LoadReading(BaseModel):
    """The machine's load over one measured slot."""

    model_config = ConfigDict(frozen=True)

    outside_cores: float | None = Field(None, description="Cores busy with other processes, on this process's CPUs.")
    load_avg_1m: float | None = Field(None, description="os.getloadavg()[0] at the end (machine-wide).")


@dataclass(frozen=True)
class LoadMark:
    """Where a measurement window started: CPU busy seconds, own CPU seconds, wall time."""

    busy_s: float | None
    own_s: float
    wall_s: float


class LoadMeter(Protocol):
    def mark(self) -> LoadMark: ...

    def since(self, mark: LoadMark) -> LoadReading: ...


def _affinity() -> set[int]:
    try:
        return set(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return set(range(os.cpu_count() or 1))


def busy_seconds(stat_text: str, cpus: set[int], ticks_per_s: float) -> float | None:
    """Busy (non-idle) seconds of ``cpus`` from ``/proc/stat`` text; None if none of them is listed."""
    total, seen = 0, False
    for line in stat_text.splitlines():
        label, *fields = line.split()
        if not label.startswith("cpu") or not label[3:].isdigit() or int(label[3:]) not in cpus:
            continue
        values = [int(value) for value in fields[:8]]
        total += sum(value for index, value in enumerate(values) if index not in _IDLE_FIELDS)
        seen = True
    return total / ticks_per_s if seen else None


def _own_cpu_s() -> float:
    times = os.times()
    return times.user + times.system


def _load_avg() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


class CpuLoadMeter:
    """Outside load on this process's CPUs between :meth:`mark` and :meth:`since`."""

    def __init__(
        self,
        stat: Path = Path("/proc/stat"),
        clock: Clock = time.monotonic,
        own_cpu: Callable[[], float] = _own_cpu_s,
        cpus: set[int] | None = None,
    ) -> None:
        self.stat = stat
        self.clock = clock
        self.own_cpu = own_cpu
        self.cpus = cpus if cpus is not None else _affinity()
        self.ticks_per_s = float(os.sysconf("SC_CLK_TCK")) if hasattr(os, "sysconf") else 100.0

    def _busy(self) -> float | None:
        try:
            return busy_seconds(self.stat.read_text(encoding="ascii", errors="replace"), self.cpus, self.ticks_per_s)
        except OSError:
            return None

    def mark(self) -> LoadMark:
        return LoadMark(busy_s=self._busy(), own_s=self.own_cpu(), wall_s=self.clock())

    def since(self, mark: LoadMark) -> LoadReading:
        busy, own, wall = self._busy(), self.own_cpu(), self.clock()
        elapsed = wall - mark.wall_s
        if busy is None or mark.busy_s is None or elapsed <= 0:
            return LoadReading(load_avg_1m=_load_avg())
        outside = max(0.0, (busy - mark.busy_s) - (own - mark.own_s)) / elapsed
        return LoadReading(outside_cores=round(min(outside, float(len(self.cpus))), 2), load_avg_1m=_load_avg())
