"""What the pinned model's slow requests overlapped, and which threads of the server took the CPU.

- :class:`Phase`: the best-effort client says what it is sending (``first-of-burst smollm2``: the first request
  of a burst, which loads the model when it is not held; ``resnet50``: a request to a held model); each
  pinned request is tagged with the phase it started in, so the tail is split by what ran beside it.
- :func:`thread_cpu`: per thread of the server, its nice value and CPU seconds (``/proc/PID/task``),
  so a run shows how much of the server's CPU ran at a lowered priority.
"""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np

TICKS_PER_S = 100.0
"""Linux's USER_HZ: /proc reports CPU time in these ticks."""


class Phase:
    """What the best-effort client is sending now (thread-safe)."""

    def __init__(self) -> None:
        self._label = "idle"
        self._previous_model = ""
        self._lock = threading.Lock()

    def sending(self, model: str) -> None:
        with self._lock:
            self._label = model if model == self._previous_model else f"first-of-burst {model}"
            self._previous_model = model

    def now(self) -> str:
        with self._lock:
            return self._label


def by_phase(samples: list[tuple[float, str]], slow_ms: float) -> dict[str, dict[str, float]]:
    """Per phase: the pinned requests that started in it, their p99 and how many took over ``slow_ms``."""
    phases: dict[str, list[float]] = {}
    for ms, label in samples:
        phases.setdefault(label, []).append(ms)
    return {
        label: {
            "n": len(values),
            "p99_ms": round(float(np.percentile(values, 99)), 1),
            "over_slow": sum(value > slow_ms for value in values),
        }
        for label, values in sorted(phases.items())
    }


def thread_cpu(pid: int) -> dict[int, tuple[int, float]]:
    """Each live thread of ``pid``: (nice value, CPU seconds so far)."""
    threads: dict[int, tuple[int, float]] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # the thread ended meanwhile
            continue
        # after the command's closing parenthesis: state is field 3, utime 14, stime 15, nice 19
        threads[int(task.name)] = (int(fields[16]), (int(fields[11]) + int(fields[12])) / TICKS_PER_S)
    return threads


def cpu_by_nice(before: dict[int, tuple[int, float]], after: dict[int, tuple[int, float]]) -> dict[str, float]:
    """CPU seconds the server's threads used between two readings, by nice value (threads that ended
    meanwhile are not counted)."""
    spent: dict[str, float] = {}
    for tid, (nice, seconds) in after.items():
        used = seconds - before.get(tid, (nice, 0.0))[1]
        spent[f"nice {nice}"] = round(spent.get(f"nice {nice}", 0.0) + used, 2)
    return spent
