"""Best-effort models compute at a lower CPU priority: their onnxruntime sessions are built lowered.

A model's load creates the threads it computes on: onnxruntime's intra-op workers start when its
session is built, with the nice value of the thread that builds it (runtime/thread_priority.py). With
``best_effort_nice`` (host tuning ``best_effort_load_nice``, off by default) a best-effort model's load
runs inside :func:`~mcp2026ai.runtime.thread_priority.sessions_lowered`: each of its sessions (a
language model's decoder sessions too, the one built later for contended CPUs included) is built on a
short-lived thread that much nicer, so its workers compute below the latency-critical models' threads
for the session's life, and block instead of spinning. The load itself and the Python threads it
starts (a language-model engine's step thread) keep their priority: a niced Python thread descheduled
while it holds the GIL would keep the event loop, and so every latency-critical request, waiting.
Models of the other classes, and every model with the knob off, are built as before.

Under the memory budget's mixed workload (benchmarks/lifecycle/budget.py) the best-effort models'
cold loads, ResNet-50 runs and decode steps are what takes the cores from the pinned latency-critical
model (docs/model-lifecycle.md, "The pinned model's tail").
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypeVar

from mcp2026ai.contract import InferenceContract, SLAClass
from mcp2026ai.runtime.thread_priority import THREAD_PRIORITIES, sessions_lowered

T = TypeVar("T")


def sla_class_of(contract: InferenceContract | None) -> SLAClass:
    """A model's class: its contract's, best-effort without one."""
    return contract.sla_class if contract is not None else SLAClass.BEST_EFFORT


class LoadThreads:
    """Runs a model's build off the event loop; a best-effort model's sessions built ``best_effort_nice``
    nicer (Linux)."""

    def __init__(self, best_effort_nice: int | None = None) -> None:
        self.best_effort_nice = best_effort_nice if THREAD_PRIORITIES else None

    def lowers(self, sla_class: SLAClass) -> bool:
        """Whether the sessions of a model of ``sla_class`` are built lowered."""
        return bool(self.best_effort_nice) and sla_class is SLAClass.BEST_EFFORT

    async def run(self, sla_class: SLAClass, build: Callable[..., T], *args: object) -> T:
        """``build(*args)`` on a worker thread, its sessions lowered for a best-effort model."""
        by = self.best_effort_nice if self.lowers(sla_class) else None
        return await asyncio.to_thread(_lowered_build, by, build, *args)


def _lowered_build(by: int | None, build: Callable[..., T], *args: object) -> T:
    with sessions_lowered(by):
        return build(*args)
