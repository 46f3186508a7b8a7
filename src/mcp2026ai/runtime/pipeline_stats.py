"""A pipeline's statistics: Triton's per-model shape (GET .../stats) plus one entry per step.

Each step counts, per request, its time waiting for its runner (``queue``: a model step's queue and
batching window, a Python step's wait for its thread) and its run (``compute``: the batch it ran in,
or ``execute()``), successes and failures; the HTTP statistics add them as ``steps`` to the
pipeline's model entry.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any

from mcp2026ai.runtime.stats import DurationStat, ModelStats


@dataclass
class StepStats:
    name: str
    kind: str
    """``model <name>:<version>`` or ``python <Class>``."""
    success: DurationStat = field(default_factory=DurationStat)
    fail: DurationStat = field(default_factory=DurationStat)
    queue: DurationStat = field(default_factory=DurationStat)
    compute: DurationStat = field(default_factory=DurationStat)

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "runs": self.kind,
            "success": self.success.as_dict(),
            "fail": self.fail.as_dict(),
            "queue": self.queue.as_dict(),
            "compute": self.compute.as_dict(),
        }


@dataclass
class PipelineStats(ModelStats):
    steps: dict[str, StepStats] = field(default_factory=dict)
    _steps_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add_step(self, name: str, kind: str) -> None:
        self.steps[name] = StepStats(name, kind)

    def record_step(self, name: str, ok: bool, total_ns: int, queue_ns: int, compute_ns: int) -> None:
        step = self.steps[name]
        with self._steps_lock:
            (step.success if ok else step.fail).add(total_ns)
            step.queue.add(queue_ns)
            step.compute.add(compute_ns)

    def as_dict(self) -> dict[str, Any]:
        document = super().as_dict()
        with self._steps_lock:
            document["steps"] = [step.as_dict() for step in self.steps.values()]
        return document
